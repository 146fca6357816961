"""Triton's native modules for a GPU learner's worker come from a builder outside its sandbox
(autograder.launchers). What a worker can send the builder is checked here: the builder runs outside
the sandbox, so a request must never put text of the worker's in front of its C compiler. Building
and loading need Triton 3.6 or 3.7 and a GPU (the GPU run's native-code cases and every Triton grading)."""

from __future__ import annotations

import os
import sys
import tempfile

import pytest

from autograder import launchers
from autograder.learner_code import GRADINGS_FOLDER

# As Triton 3.6's launcher gets them: pointers, scalars, constexprs, a tuple argument, a descriptor.
SIGNATURES = [
    ["*fp32", "*fp32", "i32", "constexpr"],
    ["*bf16", ["*fp16", "i64"], "fp32", "u8", "nvTmaDesc"],
    ["tensordesc<fp16[64, 64]>", "*fp32", "i32"],
]


@pytest.mark.parametrize("signature", SIGNATURES, ids=range(len(SIGNATURES)))
def test_triton_signatures_are_built(signature):
    meta = [{"swizzle": 128, "elem_size": 2, "elem_type": 1, "block_size": [64, 64], "fp4_padded": False}] if "tensordesc" in signature[0] else None
    recipe = {"kind": "launcher", "signature": signature, "tensordesc_meta": meta, "key": "k"}
    assert launchers.valid(recipe) == {"kind": "launcher", "signature": signature, "tensordesc_meta": meta}


def test_the_driver_utilities_need_no_recipe():
    assert launchers.valid({"kind": "cuda_utils", "source": "int main;"}) == {"kind": "cuda_utils"}


C_TEXT = 'i32 x); } int main() { system("id"); {'


@pytest.mark.parametrize(
    "recipe",
    [
        {"kind": "launcher", "signature": [C_TEXT]},
        {"kind": "launcher", "signature": ["*fp32\n#include </etc/passwd>"]},
        {"kind": "launcher", "signature": ["*fp32"], "tensordesc_meta": [{"swizzle": C_TEXT}]},
        {"kind": "launcher", "signature": ["*fp32"], "tensordesc_meta": [{C_TEXT: 1}]},
        {"kind": "launcher", "signature": [{"swizzle": 1}]},
        {"kind": "launcher", "signature": "*fp32"},
        {"kind": "launcher", "signature": ["i32"] * 513},
        {"kind": "launcher", "signature": [[[[[[[[[["i32"]]]]]]]]]]},
        {"kind": "cuda_utils.c"},
        {"kind": "module", "source": "int x;"},
    ],
    ids=["c_text", "include", "meta_value", "meta_key", "dict_entry", "not_a_list", "too_long", "too_deep", "utils_by_another_name", "other_kind"],
)
def test_anything_else_is_refused_before_the_compiler(recipe):
    with pytest.raises(ValueError):
        launchers.valid(recipe)


def test_the_builders_import_path_leaves_out_the_gradings_and_relative_folders(monkeypatch):
    grading = os.path.join(tempfile.gettempdir(), GRADINGS_FOLDER, "judge-1", "submission")
    monkeypatch.setattr(sys, "path", ["", "relative", grading, "/usr/lib/python3/dist-packages"])
    path = launchers._search_path()
    assert path == [launchers.PACKAGE_PARENT, "/usr/lib/python3/dist-packages"]


@pytest.mark.parametrize(("version", "builds"), [("3.6.0", True), ("3.7.1", True), ("3.9.0", False), (None, False)])
def test_the_builder_serves_triton_3_6_and_3_7_only(monkeypatch, version, builds):
    from importlib import metadata

    def installed(name):
        if version is None:
            raise metadata.PackageNotFoundError(name)
        return version

    monkeypatch.setattr(metadata, "version", installed)
    assert launchers.triton_builds_here() is builds


def _launcher_3_6(constants, signature, tensordesc_meta):
    pass


def _launcher_other(signature, constants):
    pass


@pytest.mark.parametrize(("members", "served"), [
    ({"compile_module_from_src": print, "CudaUtils": object, "make_launcher": _launcher_3_6}, True),
    ({"compile_module_from_src": print, "CudaUtils": object}, True),
    ({"compile_module_from_src": print, "CudaUtils": object, "make_launcher": _launcher_other}, False),
    ({"compile_module_from_file": print, "CudaUtils": object}, False),
], ids=["3.6: a launcher a signature", "3.7: cuda_utils launches", "another launcher generator", "3.9: built from a file"])
def test_the_builder_stands_in_only_for_the_drivers_it_knows(monkeypatch, members, served):
    import types

    nvidia = pytest.importorskip("triton.backends.nvidia")
    monkeypatch.setattr(nvidia, "driver", types.SimpleNamespace(**members))
    differs = launchers.supported()
    assert (differs is None) is served, differs
    assert served or "builds its launchers otherwise" in differs


def test_the_builders_folder_is_the_graders_not_a_workers(monkeypatch, tmp_path):
    monkeypatch.setenv("AUTOGRADER_CACHE_DIR", str(tmp_path))
    assert launchers.folder() == str(tmp_path / "launchers")
    assert not launchers.folder().startswith(os.path.join(tempfile.gettempdir(), GRADINGS_FOLDER))


def _builder(tmp_path, *, max_builds=None):
    """A builder process as a worker starts one (its boot line, the folder of its own), optionally with
    a lower cap on new builds; returns (process, write end of its requests, its answers)."""
    import json
    import subprocess

    boot = launchers._BOOT if max_builds is None else launchers._BOOT.replace("launchers.serve", f"setattr(launchers, 'MAX_BUILDS', {max_builds}); launchers.serve")
    requests_r, requests_w = os.pipe()
    answers_r, answers_w = os.pipe()
    process = subprocess.Popen(
        [sys.executable, "-I", "-c", boot, json.dumps(launchers._search_path()), str(requests_r), str(answers_w), str(tmp_path)],
        pass_fds=(requests_r, answers_w), stdin=subprocess.DEVNULL, cwd=tmp_path,
    )
    os.close(requests_r)
    os.close(answers_w)
    return process, requests_w, os.fdopen(answers_r, "rb")


def test_a_request_too_long_stops_the_builder(tmp_path):
    import json

    process, requests, answers = _builder(tmp_path)
    os.write(requests, b'{"kind": "launcher", "signature": ["' + b"i" * launchers.MAX_REQUEST_BYTES + b'"]}\n')
    assert "more than" in json.loads(answers.readline())["error"]
    assert process.wait(timeout=60) == 0 and answers.readline() == b""
    os.close(requests)


def test_new_builds_past_the_cap_are_refused(tmp_path):
    import json

    process, requests, answers = _builder(tmp_path, max_builds=0)
    os.write(requests, json.dumps({"key": "k", "kind": "cuda_utils"}).encode() + b"\n")
    answer = json.loads(answers.readline())
    assert answer["key"] == "k" and "more than 0 new launchers" in answer["error"] and "path" not in answer
    os.close(requests)
    assert process.wait(timeout=60) == 0
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").rglob("*.so"))
