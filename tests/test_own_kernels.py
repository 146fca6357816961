"""On a GPU the profiler names a kernel and nothing else, and a library's Triton kernel may bear any
name the learner's source also declares. The worker compiles every Triton kernel of the learner's own
file under a marked name (autograder.honesty.OWN_MARK), kernels of any other file keep theirs, and
Triton's compiler refuses the mark to code that is not the learner's (autograder.own_compile). Checked
with Triton's real compiler for a Hopper GPU, which needs none."""

from __future__ import annotations

import ast
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
COMPILE = """
import importlib.util, json, os, sys
from autograder import own_compile

learner_file, library_file, folder = sys.argv[1:4]
own_compile.install((learner_file,), "cuda")


def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

HOPPER = GPUTarget("cuda", 90, 32)
signature = {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}


def build(kernel, block=256, **options):
    try:
        compiled = triton.compile(ASTSource(kernel, signature, constexprs={"BLOCK": block}), target=HOPPER, options=options)
    except own_compile.NotYourKernel as refusal:
        return "refused: " + str(refusal)
    entry = [line for line in compiled.asm["ptx"].splitlines() if ".entry" in line]
    return [compiled.metadata.name, entry[0].split()[-1].rstrip("(")]


names = {}
learner, library = load("learner", learner_file), load("library", library_file)
for role, module in (("learner", learner), ("library", library)):
    names[role] = [build(k) for k in (module.add_kernel, module.tuned_kernel.fn, module.make_kernel())]
# Compiled again: from Triton's cache, as in a warm grading.
names["again"] = build(learner.add_kernel)
# The library's kernel given the learner's marked name through the attributes Triton names it by (at
# block sizes not compiled yet: Triton's cache keys leave the name out, so a compiled one would load).
library.add_kernel._repr = lambda _specialization: "add_kernel__yours"
names["forged repr"] = build(library.add_kernel, 128)
library.other_kernel.repr = lambda _specialization: "other_kernel__yours"
names["forged repr method"] = build(library.other_kernel, 128)
del library.other_kernel.repr
# The learner's marked kernel made to parse the library's source.
learner.tuned_kernel.fn._unsafe_update_src(library.other_kernel.src)
names["forged source"] = build(learner.tuned_kernel.fn, 512)
# A kernel of the learner's that inlines a library's Triton function.
names["triton tool"] = build(learner.calls_a_triton_tool)
own_helper, learner.calls_helper.__globals__["helper"] = learner.helper, library.helper
names["library callee"] = build(learner.calls_helper)
# The learner's kernel with its PTX replaced by the library's on the way to the binary.
ptx = triton.compile(ASTSource(library.other_kernel, signature, constexprs={"BLOCK": 256}), target=HOPPER).asm["ptx"]
override = os.path.join(folder, "override.ptx")
with open(override, "w") as f:
    f.write(ptx.replace("other_kernel", "calls_helper__yours"))
learner.calls_helper.__globals__["helper"] = own_helper
names["own callee"] = build(learner.calls_helper, 128)
names["ir_override"] = build(learner.calls_helper, 512, ir_override=override)
# A stage hook (Triton 3.9 also asks it, with no arguments, for a key to its cache entries).
triton.knobs.runtime.add_stages_inspection_hook = lambda *args: None if args else ("hook", "0")
names["stage hook"] = build(learner.calls_helper, 64)
triton.knobs.runtime.add_stages_inspection_hook = None
# The library's IR, renamed, compiled from a file.
ttir = os.path.join(folder, "renamed.ttir")
with open(ttir, "w") as f:
    f.write(triton.compile(ASTSource(library.other_kernel, signature, constexprs={"BLOCK": 256}), target=HOPPER).asm["ttir"].replace("other_kernel", "add_kernel__yours"))
try:
    names["ir file"] = triton.compile(ttir, target=HOPPER).metadata.name
except own_compile.NotYourKernel as refusal:
    names["ir file"] = "refused: " + str(refusal)
print(json.dumps(names))
"""
LIBRARY_EXTRA = """

@triton.jit
def helper(x):
    return x * 3.0


@triton.jit
def other_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n) * 5.0, mask=offsets < n)
"""
LEARNER_EXTRA = """

@triton.jit
def helper(x):
    return x + 1.0


# A Triton module nothing had imported when the worker's check was installed.
from triton.tools.ragged_tma import to_ragged_indices


@triton.jit
def calls_a_triton_tool(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    _, _, shifted = to_ragged_indices(0, n, offsets)
    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n) + shifted.to(tl.float32), mask=offsets < n)


@triton.jit
def calls_helper(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offsets, helper(tl.load(x_ptr + offsets, mask=offsets < n)), mask=offsets < n)
"""


def test_the_learners_triton_kernels_compile_under_the_marked_name_and_nothing_else_does(tmp_path):
    """Triton's compiler for a Hopper GPU (it needs none) with the worker's checks installed: the
    learner's kernels get the mark, other files' kernels keep their names, and every way of giving the
    mark to other code through Triton is refused before a binary is made."""
    (tmp_path / "learner.py").write_text(KERNEL.format(increment="1.0") + LEARNER_EXTRA)
    # Triton's cache keys hold a kernel's source and first line, not its file or name: a kernel with
    # the same text at the same line would load the other's binary (the same code, whoever ran it).
    (tmp_path / "library.py").write_text("# another file\n" + KERNEL.format(increment="2.0") + LIBRARY_EXTRA)
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env.update(PYTHONPATH=str(ROOT), TRITON_CACHE_DIR=str(tmp_path / "cache"))
    args = [str(tmp_path / "learner.py"), str(tmp_path / "library.py"), str(tmp_path)]
    done = subprocess.run([sys.executable, "-c", COMPILE, *args], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    names = json.loads(done.stdout.strip().splitlines()[-1])
    mark = honesty.OWN_MARK
    # The compiled kernel's name (what CUPTI and the profiler report) and its PTX entry agree.
    assert names["learner"] == [[f"add_kernel{mark}"] * 2, [f"tuned_kernel{mark}"] * 2, [f"inner_kernel{mark}"] * 2]
    assert names["library"] == [["add_kernel"] * 2, ["tuned_kernel"] * 2, ["inner_kernel"] * 2]
    assert names["again"] == [f"add_kernel{mark}"] * 2
    for forged in ("forged repr", "forged repr method", "forged source"):
        assert names[forged].startswith("refused: ") and "that is not yours was compiled under your kernel's name" in names[forged], names[forged]
    assert "calls helper, a Triton function from outside your code" in names["library callee"]
    assert names["own callee"] == [f"calls_helper{mark}"] * 2
    assert names["triton tool"] == [f"calls_a_triton_tool{mark}"] * 2
    assert names["ir_override"].startswith("refused: ") and "ir_override" in names["ir_override"]
    assert names["stage hook"].startswith("refused: ") and "add_stages_inspection_hook" in names["stage hook"]
    assert names["ir file"].startswith("refused: ") and "not generated from your code" in names["ir file"]


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


def test_triton_functions_loaded_after_the_check_was_installed_are_still_tritons():
    """triton.tools.ragged_tma's jitted helpers are Triton's own, but nothing imports the module until
    a learner does: they are found in Triton's installed files. A library's function is not there."""
    import triton

    from autograder import own_compile

    shapes = own_compile.triton_file_shapes(os.path.dirname(os.path.realpath(triton.__file__)))
    ragged = Path(triton.__file__).parent / "tools" / "ragged_tma.py"
    helpers = [node for node in ast.walk(ast.parse(ragged.read_text())) if isinstance(node, ast.FunctionDef) and node.name == "load_ragged"]
    assert helpers and own_compile.body_shape(helpers[0]) in shapes
    library = ast.parse(LIBRARY_EXTRA).body[0]
    assert own_compile.body_shape(library) not in shapes


def test_a_refused_language_function_is_known_by_its_code_under_any_name():
    import ast
    import inspect
    import textwrap

    import triton.language as tl

    from autograder import own_compile, registry

    assert registry.get("act4.softmax").refused_language == ("softmax",)
    renamed = ast.parse(textwrap.dedent(inspect.getsource(tl.standard.softmax.fn)).replace("def softmax(", "def normalize_rows(")).body[0]
    assert own_compile.anonymous_shape(renamed) == own_compile._jitted_shape(tl.softmax, anonymous=True)
    assert own_compile.body_shape(renamed) != own_compile._jitted_shape(tl.softmax)
