"""autograder.torch_hooks: PyTorch's ways to run code inside the worker's own tensor operations (modes
left in place, dispatch keys set by hand, kernels registered for aten operators) are seen as changes;
what a learner may do with PyTorch (its own operators, vmap's first use, modes it leaves) is not."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

from autograder import torch_hooks


class PassFunctions(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


class PassOperators(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


def test_nothing_changed_is_none():
    check = torch_hooks.make_check(with_kernels=True)
    torch.randn(4).contiguous().view(torch.uint8)
    assert check(True) is None


@pytest.mark.parametrize("mode", [PassFunctions, PassOperators])
def test_a_mode_left_in_place_is_seen_and_one_left_is_not(mode):
    check = torch_hooks.make_check(with_kernels=False)
    entered = mode()
    entered.__enter__()
    try:
        assert "PyTorch mode" in check(False)
    finally:
        entered.__exit__(None, None, None)
    with mode():
        pass
    assert check(False) is None


def test_a_dispatch_key_set_by_hand_is_seen():
    check = torch_hooks.make_check(with_kernels=False)
    key = torch._C.DispatchKey.Python
    torch._C._dispatch_tls_set_dispatch_key_included(key, True)
    try:
        assert check(False) is not None
    finally:
        torch._C._dispatch_tls_set_dispatch_key_included(key, False)
    assert check(False) is None


def test_a_kernel_for_an_aten_operator_is_seen_only_where_kernels_are_compared():
    check = torch_hooks.make_check(with_kernels=True)
    library = torch.library.Library("aten", "IMPL")
    try:
        library.impl("view.dtype", lambda self, dtype: torch.from_numpy(np.zeros(1, np.uint8)), "AutogradCPU")
        assert "aten::view.dtype" in check(True)
        assert check(False) is None
    finally:
        library._destroy()
    assert check(True) is None


def test_without_kernels_an_aten_kernel_is_not_compared():
    check = torch_hooks.make_check(with_kernels=False)
    library = torch.library.Library("aten", "IMPL")
    try:
        library.impl("view.dtype", lambda self, dtype: self, "AutogradCPU")
        assert check(True) is None
    finally:
        library._destroy()


def test_the_learners_own_operator_and_vmap_are_not_changes():
    check = torch_hooks.make_check(with_kernels=True)

    @torch.library.custom_op("gpu_brrr_test::twice", mutates_args=())
    def twice(x: torch.Tensor) -> torch.Tensor:
        return x * 2

    assert torch.equal(twice(torch.ones(2)), torch.full((2,), 2.0))
    torch.func.vmap(torch.sin)(torch.randn(3, 2))
    assert check(True) is None


def test_a_rebound_torch_function_does_not_answer_for_the_check(monkeypatch):
    check = torch_hooks.make_check(with_kernels=False)
    monkeypatch.setattr(torch._C, "_len_torch_function_stack", lambda: 0)
    entered = PassFunctions()
    entered.__enter__()
    try:
        assert check(False) is not None
    finally:
        entered.__exit__(None, None, None)
