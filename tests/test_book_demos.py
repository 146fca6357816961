"""Every book demo runs top to bottom as its Colab button runs it, on a CPU.

One fresh virtual environment (no system site packages, the repository on no path) holds what a
Colab runtime has before the notebook runs: torch, Triton, numpy, matplotlib and a kernel. The only
way the course package gets into it is the demo's own install cell, whose repository URL is pointed
at a wheel built from this checkout; the package is uninstalled again after each demo, so every demo
installs it itself. Each demo runs as a copy in a scratch folder, so the committed notebooks keep
their GPU outputs, and must print what it would measure on a GPU instead of failing.

Building the wheel runs in every `make test`; the fresh environment and the demos (a few minutes of
pip and notebook kernels) are marked slow: `make test-all` runs them.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
DEMOS = sorted(p for p in (ROOT / "book").rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
REPOSITORY = re.search(r"url: &repository_url (\S+)", (ROOT / "_config.yml").read_text()).group(1)
INSTALL_SPEC = f"gpu-brrr @ git+{REPOSITORY}"
KERNEL = "gpu-brrr-fresh"
NO_GPU = "No CUDA GPU found: this notebook measures a GPU, so its measurements are skipped here."
NO_CUPY = "No GPU here: CuPy kernels need an NVIDIA GPU"
# What each demo must print on a CPU: why nothing is measured, and what it can show without a GPU.
EXPECTED = {
    "act1-hierarchy/measure-hierarchy.ipynb": [NO_CUPY, NO_GPU],
    "act2-rooflines/measured-roofline.ipynb": [NO_GPU],
    "act3-profiling/regimes-trace.ipynb": [NO_GPU, "The operators of one training step on the CPU", "aten::mm"],
    "act3-profiling/cuda-graph-timeline.ipynb": [NO_GPU, "one decode step launches 96 operators per token", "Capturing a CUDA graph needs a GPU."],
    "act4-kernels/sgemm-progression.ipynb": [
        NO_CUPY,
        "No CUDA GPU found: the SGEMM kernels are CUDA C, so the measurements are skipped here.",
        # The traffic model: 2 loads per FMA for steps 1-2, 1/64 for 128 x 128 tiles, 4.3 GB from L2 at 4096^3.
        "vectorized",
        "0.0156",
        "4.3 GB",
        # The nine kernels' sources, read from the solution notebooks inside the installed package.
        *(f"sgemm_{step}: " for step in ("naive", "coalesced", "smem", "1d_tiling", "2d_tiling", "vectorized", "conflict_free", "double_buffered", "warptiling")),
        "Compiling and timing them needs a GPU.",
    ],
    "act5-multi-gpu/bus-bandwidth.ipynb": [
        "Fewer than 2 GPUs here",
        # The model's crossover for 8 ranks over NDR InfiniBand (10 us, 50 GB/s), and the ring's half-bandwidth size.
        "8 ranks over InfiniBand NDR: the ring overtakes the tree at 941 KB",
        "64 ranks reach half the link's bandwidth at 82 MiB",
        "Not measured here: NCCL's collectives need 2 or more GPUs.",
    ],
    "act4-kernels/attention-vs-library.ipynb": [
        "No GPU here",
        "GiB of scores and probabilities",
        "The course's Triton FlashAttention: flash_attention, from the reference solution",
    ],
    # A simulation and the tiny model on the CPU: everything runs; batching changed no token.
    "act6-serving/batching-simulation.ipynb": ["continuous:", "every request's tokens equal generating it alone: True"],
    "act6-serving/decode-throughput.ipynb": [NO_GPU, "a decode step reads 0.85 GB of weights", "Timing the decode step needs a GPU."],
    # Runs entirely on a CPU: both tables, every format.
    "act7-quantization/error-vs-group-size.ipynb": ["--- no outliers", "--- with outliers", "int8 per channel", "fp8 e4m3 per tensor", "int4 groups of 128"],
    "act7-quantization/gemv-bits.ipynb": [
        NO_GPU,
        # What each format reads: 4 + 24/128 bits per weight for int4 with a bf16 scale and a uint8 zero per 128.
        "4.19 bits per weight",
        "The course's int4 GEMV: int4_gemv, from the reference solution",
    ],
    "act8-megakernels/decode-timeline.ipynb": [
        NO_GPU,
        "computing PyTorch operators",
        "The course's persistent decode step: decode_step, from the reference solution",
        "No measurements to plot on this machine.",
    ],
}


# One wheel and one fresh environment per run, on one pytest-xdist worker.
pytestmark = pytest.mark.xdist_group("book_demos")


@dataclass
class Wheel:
    path: Path
    build_log: str


@dataclass
class Fresh:
    python: Path
    wheel: Path
    jupyter_path: Path


def _run(command: list, **kwargs) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(c) for c in command], capture_output=True, text=True, timeout=900, **kwargs)
    assert proc.returncode == 0, f"{' '.join(map(str, command))} failed:\n{(proc.stdout + proc.stderr)[-4000:]}"
    return proc


def _pinned(name: str) -> str:
    """The package at the version these tests run with, less any local label (2.13.0+cpu -> 2.13.0)."""
    return f"{name}=={metadata.version(name).split('+')[0]}"


def _clean_env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MPLBACKEND", "VIRTUAL_ENV")}
    return {**env, "CUDA_VISIBLE_DEVICES": "", **extra}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Wheel:
    base = tmp_path_factory.mktemp("wheel")
    # The wheel is built from the files a clone has, as pip builds one from the repository URL.
    source = base / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, source / name)
    for folder in ("autograder", "solutions"):
        shutil.copytree(ROOT / folder, source / folder, ignore=shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints"))
    build = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", base / "wheels", source], env=_clean_env())
    [path] = (base / "wheels").glob("gpu_brrr-*.whl")
    return Wheel(path=path, build_log=build.stdout + build.stderr)


@pytest.fixture(scope="module")
def fresh(tmp_path_factory, wheel: Wheel) -> Fresh:
    base = tmp_path_factory.mktemp("fresh")
    venv = base / "venv"
    _run([sys.executable, "-m", "venv", venv])
    python = venv / "bin" / "python"
    colab_stack = [_pinned(n) for n in ("torch", "triton", "numpy", "matplotlib", "ipykernel")]
    _run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check", *colab_stack], env=_clean_env())
    probe = _run([python, "-c", "import importlib.util; print(importlib.util.find_spec('autograder'))"], cwd=base, env=_clean_env())
    assert probe.stdout.strip() == "None", "the fresh environment already finds the course package"

    kernel_dir = base / "jupyter" / "kernels" / KERNEL
    kernel_dir.mkdir(parents=True)
    spec = {"argv": [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"], "display_name": "fresh", "language": "python"}
    (kernel_dir / "kernel.json").write_text(json.dumps(spec))
    return Fresh(python=python, wheel=wheel.path, jupyter_path=base / "jupyter")


def _installed(fresh: Fresh) -> bool:
    proc = subprocess.run([fresh.python, "-m", "pip", "show", "-q", "gpu-brrr"], capture_output=True, env=_clean_env())
    return proc.returncode == 0


def test_every_demo_has_an_expectation():
    assert sorted(EXPECTED) == sorted(str(p.relative_to(ROOT / "book")) for p in DEMOS)


@pytest.mark.slow
@pytest.mark.parametrize("demo", DEMOS, ids=[p.stem for p in DEMOS])
def test_demo_runs_in_a_fresh_environment_through_its_install_cell(demo: Path, fresh: Fresh, tmp_path: Path, monkeypatch):
    nb = nbformat.read(demo, as_version=4)
    first_code = next(c for c in nb.cells if c.cell_type == "code")
    assert first_code.source.count(INSTALL_SPEC) == 1, f"the first code cell must install the package from {INSTALL_SPEC}"
    first_code.source = first_code.source.replace(INSTALL_SPEC, f"gpu-brrr @ {fresh.wheel.as_uri()}")

    for name, value in _clean_env(JUPYTER_PATH=str(fresh.jupyter_path)).items():
        monkeypatch.setenv(name, value)
    for name in ("PYTHONPATH", "MPLBACKEND", "VIRTUAL_ENV"):
        monkeypatch.delenv(name, raising=False)
    assert not _installed(fresh)
    client = NotebookClient(nb, timeout=600, kernel_name=KERNEL, resources={"metadata": {"path": str(tmp_path)}})
    try:
        client.execute()
    finally:
        nbformat.write(nb, tmp_path / demo.name)
        installed = _installed(fresh)
        subprocess.run([fresh.python, "-m", "pip", "uninstall", "-y", "-q", "gpu-brrr"], capture_output=True, env=_clean_env())
    assert installed, "the install cell did not install the course package"

    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o["output_type"] == "error"], "a cell raised"
    printed = "".join(o.get("text", "") for o in outputs if o["output_type"] == "stream" and o.get("name") == "stdout")
    missing = [text for text in EXPECTED[str(demo.relative_to(ROOT / "book"))] if text not in printed]
    assert not missing, f"{demo.name} did not print {missing}; it printed:\n{printed}"


def test_the_package_builds_without_setuptools_warnings(wheel: Wheel):
    assert "Warning" not in wheel.build_log, wheel.build_log
    shipped = zipfile.ZipFile(wheel.path).namelist()
    # What the demos read from the package: the problem specs and the Act 4 solution notebooks.
    assert "autograder/problems/act0/vector_add/spec.toml" in shipped
    assert "autograder/solutions/act4-kernels/flash_attention.ipynb" in shipped
    # Each problem's known-wrong and cheating submissions are test data, not part of the package.
    assert not [name for name in shipped if "/submissions/" in name], "the wheel ships adversarial submissions"
