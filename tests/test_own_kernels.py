"""On a GPU the profiler names a kernel and nothing else, and a library's Triton kernel may bear any
name the learner's source also declares. The worker compiles every Triton kernel of the learner's own
file under a marked name (autograder.honesty.OWN_MARK); kernels of any other file keep theirs. Checked
with Triton's real compiler for a Hopper GPU, which needs none."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from autograder import honesty

ROOT = Path(__file__).resolve().parent.parent
KERNEL = '''
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + {increment}, mask=mask)


@triton.autotune(configs=[triton.Config({{"BLOCK": 256}})], key=["n"])
@triton.jit
def tuned_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n), mask=offsets < n)


def make_kernel():
    @triton.jit
    def inner_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n), mask=offsets < n)

    return inner_kernel
'''
COMPILE = '''
import importlib.util, json, sys
from autograder import honesty

learner_file, library_file = sys.argv[1:3]
honesty.mark_learner_kernels((learner_file,))


def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource, compile

signature = {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}
names = {}
for role, path in (("learner", learner_file), ("library", library_file)):
    module = load(role, path)
    for kernel in (module.add_kernel, module.tuned_kernel.fn, module.make_kernel()):
        compiled = compile(ASTSource(kernel, signature, constexprs={"BLOCK": 256}), target=GPUTarget("cuda", 90, 32))
        entry = [line for line in compiled.asm["ptx"].splitlines() if ".entry" in line]
        names.setdefault(role, []).append([compiled.metadata.name, entry[0].split()[-1].rstrip("(")])
print(json.dumps(names))
'''


def test_the_learners_triton_kernels_compile_under_the_marked_name_and_no_other_files(tmp_path):
    (tmp_path / "learner.py").write_text(KERNEL.format(increment="1.0"))
    # Triton's cache keys hold a kernel's source and first line, not its file or name: a kernel with
    # the same text at the same line would load the other's binary (the same code, whoever ran it).
    (tmp_path / "library.py").write_text("# another file\n" + KERNEL.format(increment="2.0"))
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env.update(PYTHONPATH=str(ROOT), TRITON_CACHE_DIR=str(tmp_path / "cache"))
    done = subprocess.run([sys.executable, "-c", COMPILE, str(tmp_path / "learner.py"), str(tmp_path / "library.py")], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    names = json.loads(done.stdout.strip().splitlines()[-1])
    mark = honesty.OWN_MARK
    # The compiled kernel's name (what CUPTI and the profiler report) and its PTX entry agree.
    assert names["learner"] == [[f"add_kernel{mark}"] * 2, [f"tuned_kernel{mark}"] * 2, [f"inner_kernel{mark}"] * 2]
    assert names["library"] == [["add_kernel"] * 2, ["tuned_kernel"] * 2, ["inner_kernel"] * 2]


def test_a_kernel_of_the_learners_name_from_another_file_is_library_work_on_a_gpu():
    code = "import triton\n\n@triton.jit\ndef add_kernel(x_ptr):\n    pass\n"
    own = honesty.own_kernel_names(code, "cuda")

    def judged(name: str) -> dict:
        return honesty.judge_gpu({"calls": {"kernels": [{"name": name, "calls": 1, "total_us": 100.0}]}}, own, (), {})

    theirs, other = judged("add_kernel" + honesty.OWN_MARK), judged("add_kernel")
    assert theirs["ok"] and theirs["message"] == "kernels launched: add_kernel"
    assert not other["ok"]
    assert "add_kernel is also a kernel in your source, but the one that ran was compiled from another file" in other["message"]


def test_a_triton_kernel_named_like_a_librarys_is_still_the_learners():
    """cuBLAS names its GEMV kernels gemv2T_kernel and the like, Inductor its kernels triton_poi_...: a
    learner's Triton kernel of such a name was refused as library work while kernels were known by name.
    Now it is theirs under the mark (GPU) or by its file (CPU); the library's kernel of that name is not."""
    code = "import triton\n\n@triton.jit\ndef gemv_kernel(x_ptr):\n    pass\n\n@triton.jit\ndef triton_poi_fused_add_0(x_ptr):\n    pass\n"
    assert honesty.own_kernel_names(code, "cpu") == {"gemv_kernel", "triton_poi_fused_add_0"}
    own = honesty.own_kernel_names(code, "cuda")
    assert own == {"gemv_kernel" + honesty.OWN_MARK, "triton_poi_fused_add_0" + honesty.OWN_MARK}
    for name in ("gemv_kernel", "triton_poi_fused_add_0"):
        assert honesty.judge_gpu({"calls": {"kernels": [{"name": name + honesty.OWN_MARK, "calls": 1, "total_us": 100.0}]}}, own, (), {})["ok"]
        assert not honesty.judge_gpu({"calls": {"kernels": [{"name": name, "calls": 1, "total_us": 100.0}]}}, own, (), {})["ok"]
    # A CUDA kernel is known by its name alone: a library's name stays the library's.
    assert honesty.own_kernel_names('k = """extern "C" __global__ void gemv2T_kernel(float* x) {}"""', "cuda") == set()


def test_kernels_compiled_under_other_names_are_not_loaded_from_an_older_cache(tmp_path, monkeypatch):
    from autograder import judge_grading

    monkeypatch.setenv("AUTOGRADER_CACHE_DIR", str(tmp_path))
    folder = judge_grading._kernel_cache("def vector_add(x, y): ...")
    # The folder a grader without the mark used for the same text (Triton's cache keys leave names out).
    import hashlib

    unmarked = tmp_path / "kernels" / hashlib.sha256(b"def vector_add(x, y): ...").hexdigest()[:24]
    assert Path(folder).parent == unmarked.parent and Path(folder) != unmarked
