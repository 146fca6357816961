"""The setup cell's CuPy branch: which CuPy build a runtime gets, and what each case says and does."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

# The module, not the function of the same name that the package exports.
setup_mod = importlib.import_module("autograder.setup")


@pytest.mark.parametrize(
    ("cuda", "package"),
    [("12.4", "cupy-cuda12x"), ("12.8", "cupy-cuda12x"), ("13.0", "cupy-cuda13x"), ("11.8", "cupy-cuda11x"), ("10.2", None), (None, None), ("", None)],
)
def test_cupy_package_follows_the_cuda_major_version(cuda, package):
    assert setup_mod.cupy_package(cuda) == package


@pytest.fixture
def no_cupy(monkeypatch):
    """CuPy not importable, and every pip call recorded instead of run."""
    real_find_spec = setup_mod.importlib.util.find_spec
    monkeypatch.setattr(setup_mod.importlib.util, "find_spec", lambda name, *a: None if name == "cupy" else real_find_spec(name, *a))
    calls = []
    monkeypatch.setattr(setup_mod.subprocess, "run", lambda command, **kw: calls.append(command) or subprocess.CompletedProcess(command, 0))
    return calls


def _runtime(monkeypatch, has_gpu: bool, cuda: str | None) -> None:
    monkeypatch.setattr(setup_mod, "_torch_cuda", lambda: (has_gpu, cuda))


def test_a_gpu_runtime_without_cupy_gets_the_build_for_torchs_cuda(monkeypatch, no_cupy, capsys):
    _runtime(monkeypatch, True, "12.4")
    message = setup_mod.ensure_cupy()
    assert no_cupy == [[sys.executable, "-m", "pip", "install", "-q", "cupy-cuda12x"]]
    assert message == "Installed cupy-cuda12x, the CuPy build for CUDA 12.4 (the CUDA version torch was built with)."
    assert capsys.readouterr().out.strip() == message


def test_without_install_a_gpu_runtime_is_told_the_pip_command(monkeypatch, no_cupy):
    _runtime(monkeypatch, True, "13.0")
    assert "pip install cupy-cuda13x" in setup_mod.ensure_cupy(install=False)
    assert no_cupy == []


def test_without_a_gpu_nothing_is_installed_and_the_sentence_says_why(monkeypatch, no_cupy):
    _runtime(monkeypatch, False, "12.4")
    assert setup_mod.ensure_cupy().startswith("No GPU here: CuPy kernels need an NVIDIA GPU")
    _runtime(monkeypatch, False, None)  # a CPU build of torch
    assert setup_mod.ensure_cupy().startswith("No GPU here")
    assert no_cupy == []


def test_a_cuda_with_no_cupy_wheel_points_to_the_install_guide(monkeypatch, no_cupy):
    _runtime(monkeypatch, True, "10.2")
    message = setup_mod.ensure_cupy()
    assert "10.2" in message and setup_mod.CUPY_INSTALL_GUIDE in message
    assert no_cupy == []


def test_an_installed_cupy_is_left_alone(monkeypatch):
    monkeypatch.setattr(setup_mod.importlib.util, "find_spec", lambda name, *a: object())
    monkeypatch.setattr(setup_mod.subprocess, "run", lambda *a, **k: pytest.fail("pip must not run"))
    assert setup_mod.ensure_cupy() == "CuPy is installed."


def test_setup_checks_cupy_only_when_asked(monkeypatch):
    asked = []
    monkeypatch.setattr(setup_mod, "ensure_cupy", lambda: asked.append(True) or "")
    monkeypatch.setenv("AUTOGRADER_DEVICE", "cpu")
    # setup() switches the Triton interpreter on for a CPU; the tests after this one get theirs back.
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    assert setup_mod.setup() == "cpu" and asked == []
    assert setup_mod.setup(cupy=True) == "cpu" and asked == [True]
