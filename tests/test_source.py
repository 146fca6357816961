"""Collecting a learner's code from notebook cells: what is kept and what is left behind."""

from __future__ import annotations

import json

import pytest

from autograder import source

KERNEL_CELL = '''
import torch
import triton
import triton.language as tl

BLOCK = 256


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr):
    pass


def vector_add(x, y):
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), BLOCK),)](x, y, out, x.numel(), BLOCK_SIZE=BLOCK)
    return out


print(vector_add)
'''

EXPERIMENT_CELL = '''
x = torch.randn(10**9)
y = x * 2
result = vector_add(x, y)
%timeit vector_add(x, y)
'''


def test_keeps_decorators_imports_and_constants_and_drops_experiments():
    code = source.extract([KERNEL_CELL, EXPERIMENT_CELL], "vector_add")
    assert "@triton.jit" in code
    assert "BLOCK = 256" in code
    assert "import triton.language as tl" in code
    assert "torch.randn" not in code and "timeit" not in code and "print(" not in code
    compile(code, "submission.py", "exec")


def test_parameters_are_not_mistaken_for_globals():
    cells = ["x = expensive_setup()", "def vector_add(x, y):\n    return x + y"]
    code = source.extract(cells, "vector_add")
    assert "expensive_setup" not in code


def test_a_methods_own_names_are_not_mistaken_for_globals():
    # The int4 GEMV notebook's tuner class names a local `error`; its "Try it" cell binds `error` too.
    cells = [
        "class Tuned:\n    def pick(self, configs):\n        error = None\n        for config in configs:\n            error = config\n        return error, LIMIT\n",
        "LIMIT = 3",
        "def vector_add(x, y):\n    return Tuned().pick([x, y])",
        "error = expensive_setup()",
    ]
    code = source.extract(cells, "vector_add")
    assert "expensive_setup" not in code and "LIMIT = 3" in code


def test_the_last_definition_wins():
    cells = ["def vector_add(x, y):\n    return 1", "def vector_add(x, y):\n    return 2"]
    code = source.extract(cells, "vector_add")
    assert "return 2" in code and "return 1" not in code


def test_module_level_kernels_and_their_source_are_kept():
    cells = ['import cupy as cp\nSRC = r"""kernel text"""\nkernel = cp.RawKernel(SRC, "k")', "def saxpy(a, x, y):\n    return kernel(a)"]
    code = source.extract(cells, "saxpy")
    assert "SRC = " in code and "kernel = cp.RawKernel" in code


def test_a_missing_function_is_a_clear_sentence():
    with pytest.raises(source.SourceError, match="no function named 'vector_add'"):
        source.extract(["def vectoradd(x, y):\n    return x + y"], "vector_add")


def test_notebook_cells_leave_out_locked_graded_cells(tmp_path):
    nb = {
        "cells": [
            {"cell_type": "code", "metadata": {}, "source": ["def f():\n", "    return 1\n"]},
            {"cell_type": "code", "metadata": {"nbgrader": {"grade": True, "solution": False}}, "source": "def f():\n    return 2"},
            {"cell_type": "markdown", "metadata": {}, "source": "text"},
        ]
    }
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps(nb))
    assert source.notebook_cells(str(path)) == ["def f():\n    return 1\n"]


def test_a_malformed_notebook_is_a_clear_sentence(tmp_path):
    path = tmp_path / "broken.ipynb"
    path.write_text("{not json")
    with pytest.raises(source.SourceError, match="cannot read the notebook"):
        source.notebook_cells(str(path))


def test_lambdas_are_refused():
    with pytest.raises(source.SourceError, match="not a lambda"):
        source.for_function(lambda x, y: x + y)
