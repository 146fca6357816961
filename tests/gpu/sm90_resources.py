"""What Triton makes of issue 14's kernel designs for an H100, without one: registers, spills, shared memory, SASS.

Compiles the tuning scripts' kernels (tests/gpu/tune_act4_flash.py's ``attention_fwd`` in each design,
tests/gpu/tune_act4_epilogue.py's ``epilogue_kernel`` with each GELU and its ``persistent_kernel``), the
FlashAttention reference solution's kernel in each of its autotune configurations
(solutions/act4-kernels/flash_attention.ipynb) and the reference solution of act4.matmul_bias_gelu
(from its notebook) for sm_90 with the Triton that
is installed, then reads each cubin with the cuobjdump and nvdisasm that Triton ships: registers a
thread and its spill stack (the local memory a thread spills to), shared memory, whether every wgmma
waits for its result at once (``wgmma.wait_group 0``: nothing overlaps inside a program), and for the
epilogues the instructions after the last wgmma, per thread. No GPU and no PyTorch: the kernels are
lifted from the scripts' source (and the notebook's solution cell) into a module of their own.

    python3 tests/gpu/sm90_resources.py            # every table
    python3 tests/gpu/sm90_resources.py flash      # or epilogue, persistent, flash_solution, epilogue_solution

The numbers quoted in the tuning scripts came from Triton 3.6.0 (the GPU machines' version), in a
virtual environment holding only its wheel and NumPy.
"""

from __future__ import annotations

import ast
import collections
import importlib.util
import json
import re
import subprocess
import sys
import tempfile
import types
from pathlib import Path

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

HERE = Path(__file__).resolve().parent
TARGET = GPUTarget("cuda", 90, 32)
TOOLS = Path(triton.__file__).parent / "backends" / "nvidia" / "bin"
# (design, switches, (BLOCK_M, BLOCK_N, warps, stages[, maxnreg]), HEAD_DIM)
FLASH = [
    ("pointer", {}, (128, 64, 8, 3), 128), ("pointer", {}, (128, 64, 8, 3), 64), ("pointer", {}, (128, 128, 8, 2), 128),
    ("tma", {"TMA": 1}, (128, 64, 8, 3), 128), ("tma", {"TMA": 1}, (128, 64, 8, 2), 128), ("tma", {"TMA": 1}, (128, 128, 8, 3), 128),
    ("tma_2cta", {"TMA": 1}, (128, 64, 8, 2, 128), 128), ("tma_2cta", {"TMA": 1}, (64, 64, 4, 2), 128),
    ("pointer_2cta", {}, (128, 64, 8, 2, 128), 128), ("pointer_2cta", {}, (128, 64, 8, 2, 128), 64), ("pointer", {}, (128, 64, 8, 2), 128),
    ("lazy", {"LAZY": True}, (128, 64, 8, 3), 128), ("overlap", {"OVERLAP": True}, (128, 64, 8, 2), 128), ("wide", {}, (256, 64, 16, 2), 128),
    ("tma_2cta_poly2", {"TMA": 1, "POLY": 2}, (128, 64, 8, 2, 128), 128),
]
EPILOGUES = {"exp_div": 0, "tanh_approx": 1, "exp2_folded": 2, "tanh_folded": 3, "bias_only": 4}


def lifted(script: str, names: set[str], source: str | None = None):
    """The functions ``names`` of ``script`` (or of ``source``), as a module of their own: a
    ``@triton.jit`` function with that decorator alone (an autotuner's is left out)."""
    source = source if source is not None else (HERE / script).read_text()
    lines = source.splitlines()
    parts = ["import os\n\nimport triton\nimport triton.language as tl\n"]
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef) and node.name in names:
            body = "\n".join(lines[(node.decorator_list[-1].end_lineno if node.decorator_list else node.lineno - 1) : node.end_lineno])
            parts.append(("@triton.jit\n" if node.decorator_list else "") + body)
    path = Path(tempfile.mkdtemp(prefix="sm90-")) / f"lifted_{Path(script).stem}.py"
    path.write_text("\n\n\n".join(parts) + "\n")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def compiled(kernel, types: dict, constants: dict, options: dict):
    """Compile ``kernel`` for sm_90 (every int argument divisible by 16, as the benchmark sizes are)."""
    signature = {name: "constexpr" if name in constants else types[name] for name in kernel.arg_names}
    index = {name: i for i, name in enumerate(signature)}
    aligned = {(index[name],): [["tt.divisibility", 16]] for name, kind in signature.items() if kind in ("i32", "*bf16")}
    source = ASTSource(kernel, signature, constexprs={(index[k],): v for k, v in constants.items()}, attrs=aligned)
    return triton.compile(source, target=TARGET, options=options)


def resources(binary, name: str) -> tuple[str, str]:
    """(registers and spill stack, SASS) of one compiled kernel."""
    cubin = Path(tempfile.mkdtemp(prefix="sm90-")) / f"{name}.cubin"
    cubin.write_bytes(binary.asm["cubin"])
    usage = subprocess.run([TOOLS / "cuobjdump", "-res-usage", cubin], capture_output=True, text=True).stdout
    sass = subprocess.run([TOOLS / "nvdisasm", "-c", cubin], capture_output=True, text=True).stdout
    return " ".join(re.findall(r"REG:\d+|STACK:\d+", usage)), sass


def flash() -> None:
    module = lifted("tune_act4_flash.py", {"kv_loop", "online_softmax_step", "exp2_poly", "exp2_shared", "kv_loop_overlap", "attention_fwd"})
    types = {"q_ptr": "*bf16", "k_ptr": "*bf16", "v_ptr": "*bf16", "out_ptr": "*bf16", "qk_scale": "fp32", "H": "i32", "S": "i32"}
    types.update({f"stride_{t}{d}": "i32" for t in "qkvo" for d in "bhs"})
    print(f"attention_fwd for sm_90, Triton {triton.__version__}, non-causal (registers a thread, spill stack in bytes, shared memory)")
    for design, switches, config, head_dim in FLASH:
        constants = {"HEAD_DIM": head_dim, "CAUSAL": False, "BLOCK_M": config[0], "BLOCK_N": config[1],
                     "TMA": 0, "WARP_SPEC": False, "LAZY": False, "OVERLAP": False, "POLY": 0, **switches}
        options = {"num_warps": config[2], "num_stages": config[3], **({"maxnreg": config[4]} if len(config) > 4 else {})}
        binary = compiled(module.attention_fwd, types, constants, options)
        usage, sass = resources(binary, design)
        waits = sorted(set(re.findall(r"wgmma.wait_group.sync.aligned (\d+)", binary.asm["ptx"])))
        # Exponentials on the MUFU and layout changes through shared memory, in the whole kernel.
        exps, converts = sass.count("MUFU.EX2"), binary.asm["ttgir"].count("ttg.convert_layout")
        print(f"  {design:9} {config!s:22} D={head_dim:<4} {usage:18} shared {binary.metadata.shared:>7,} B  wgmma waits for {waits}; "
              f"{exps} MUFU.EX2, {converts} layout changes")


def flash_solution() -> None:
    """The reference solution's flash_attention_kernel in the configuration it launches at each head
    dim on a Hopper GPU (attention_config), on host descriptors in that configuration's tiles."""
    notebook = json.loads((HERE.parents[1] / "solutions" / "act4-kernels" / "flash_attention.ipynb").read_text())
    [cell] = [c for c in notebook["cells"] if c["metadata"].get("nbgrader", {}).get("solution")]
    code = re.sub(r"^\s*### (BEGIN|END) SOLUTION\n", "", "".join(cell["source"]) + "\n", flags=re.MULTILINE)
    module = lifted("flash_attention_solution.py", {"attention_config", "before_hopper", "load_rows", "attention_block_loop", "flash_attention_kernel"}, code)
    # The configurations for Hopper: no PyTorch here, so no GPU older than Hopper is found.
    module.torch = types.SimpleNamespace(cuda=types.SimpleNamespace(is_available=lambda: False))
    print(f"flash_attention_kernel (the solution) for sm_90, Triton {triton.__version__} (registers a thread, spill stack in bytes, shared memory)")
    for head_dim, causal in ((128, False), (128, True), (64, False), (64, True)):
        config = module.attention_config(head_dim)
        block_m, block_n = config.kwargs["BLOCK_M"], config.kwargs["BLOCK_N"]
        signature = {"q_src": f"tensordesc<bf16[{block_m},{head_dim}]>", "k_src": f"tensordesc<bf16[{block_n},{head_dim}]>",
                     "v_src": f"tensordesc<bf16[{block_n},{head_dim}]>", "out_ptr": "*bf16", "qk_scale": "fp32", "H": "i32", "S": "i32",
                     "rows": "i32", "stride_ob": "i32", "stride_oh": "i32", "stride_os": "i32"}
        constants = {"HEAD_DIM": head_dim, "CAUSAL": causal, "DESCRIPTORS": True, "BLOCK_M": block_m, "BLOCK_N": block_n}
        options = {"num_warps": config.num_warps, "num_stages": config.num_stages, **({"maxnreg": config.maxnreg} if config.maxnreg else {})}
        binary = compiled(module.flash_attention_kernel, signature, constants, options)
        usage, _ = resources(binary, "solution")
        label = f"{block_m}x{block_n} w{config.num_warps} s{config.num_stages}" + (f" r{config.maxnreg}" if config.maxnreg else "")
        print(f"  {label:20} D={head_dim:<4} {'causal' if causal else 'full  '} {usage:18} shared {binary.metadata.shared:>7,} B")


def epilogue() -> None:
    module = lifted("tune_act4_epilogue.py", {"epilogue_kernel"})
    types = {"x_ptr": "*bf16", "w_ptr": "*bf16", "bias_ptr": "*bf16", "out_ptr": "*bf16", "M": "i32", "N": "i32", "K": "i32"}
    types.update({f"stride_{name}": "i32" for name in ("xm", "xk", "wk", "wn", "om", "on")})
    print(f"epilogue_kernel 128x256x64, 8 warps, 3 stages, for sm_90, Triton {triton.__version__}: SASS after the last wgmma, per thread")
    for name, variant in EPILOGUES.items():
        # Unit strides are constants, as Triton specialises them for contiguous tensors.
        constants = {"stride_xk": 1, "stride_wn": 1, "stride_on": 1, "BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8, "EPILOGUE": variant}
        binary = compiled(module.epilogue_kernel, types, constants, {"num_warps": 8, "num_stages": 3})
        usage, sass = resources(binary, name)
        instructions = [line for line in sass.splitlines() if re.search(r"/\*[0-9a-f]{4,}\*/", line)]
        last = max(i for i, line in enumerate(instructions) if "HGMMA" in line or "WARPGROUP" in line)
        opcodes = collections.Counter(m.group(1) for line in instructions[last + 1 :] if (m := re.search(r"\*/\s+(?:@!?U?P\w+\s+)?([A-Z0-9_]+)", line)))
        print(f"  {name:12} {usage:16} {len(instructions) - last - 1:5} instructions: MUFU {opcodes['MUFU']}, FMUL {opcodes['FMUL']}, "
              f"FFMA {opcodes['FFMA']}, FADD {opcodes['FADD']}, FSETP {opcodes['FSETP']}")

def persistent() -> None:
    module = lifted("tune_act4_epilogue.py", {"gelu_tanh", "persistent_kernel"})
    print(f"persistent_kernel (descriptors, two-half epilogue) for sm_90, Triton {triton.__version__}: 132 programs")
    for block_m, block_n, block_k, warps, stages in [(128, 256, 64, 8, 3), (128, 256, 64, 8, 4), (128, 128, 64, 8, 4)]:
        types = {"x_desc": f"tensordesc<bf16[{block_m},{block_k}]>", "w_desc": f"tensordesc<bf16[{block_k},{block_n}]>",
                 "out_desc": f"tensordesc<bf16[{block_m},{block_n // 2}]>", "bias_ptr": "*bf16", "M": "i32", "N": "i32", "K": "i32"}
        constants = {"BLOCK_M": block_m, "BLOCK_N": block_n, "BLOCK_K": block_k, "GROUP_M": 8, "NUM_SMS": 132}
        binary = compiled(module.persistent_kernel, types, constants, {"num_warps": warps, "num_stages": stages})
        usage, _ = resources(binary, "persistent")
        print(f"  {block_m}x{block_n}x{block_k} w{warps} s{stages}   {usage:18} shared {binary.metadata.shared:>7,} B")


def epilogue_solution() -> None:
    """act4.matmul_bias_gelu's reference solution (its notebook's solution cell) in both of its paths:
    over descriptors, as the benchmark sizes take it, whose SASS must be persistent_kernel's (the
    design that was timed), and over pointers, as shapes with K or N not a multiple of 8 take it
    (M, N, K and the row strides of no known divisibility)."""
    notebook = json.loads((HERE.parents[1] / "solutions" / "act4-kernels" / "matmul_bias_gelu.ipynb").read_text())
    cell = next("".join(c["source"]) for c in notebook["cells"] if c["metadata"].get("nbgrader", {}).get("solution"))
    cell = re.sub(r"^\s*### (BEGIN|END) SOLUTION\n", "", cell + "\n", flags=re.MULTILINE)
    kernel = lifted("matmul_bias_gelu.py", {"load_tile", "store_tile", "gelu_tanh", "matmul_bias_gelu_kernel"}, cell).matmul_bias_gelu_kernel
    timed = lifted("tune_act4_epilogue.py", {"gelu_tanh", "persistent_kernel"}).persistent_kernel
    print(f"act4.matmul_bias_gelu's solution for sm_90, Triton {triton.__version__}: 132 programs")
    for block_m, block_n, block_k, warps, stages in [(128, 256, 64, 8, 3), (128, 256, 64, 8, 4), (128, 128, 64, 8, 3)]:
        options = {"num_warps": warps, "num_stages": stages}
        blocks = {"BLOCK_M": block_m, "BLOCK_N": block_n, "BLOCK_K": block_k, "GROUP_M": 8, "NUM_SMS": 132}
        descriptors = {"x": f"tensordesc<bf16[{block_m},{block_k}]>", "w": f"tensordesc<bf16[{block_k},{block_n}]>",
                       "out": f"tensordesc<bf16[{block_m},{block_n // 2}]>"}
        sizes = {"bias_ptr": "*bf16", "M": "i32", "N": "i32", "K": "i32", "stride_xm": "i32", "stride_wk": "i32", "stride_om": "i32"}
        unit = {"stride_xk": 1, "stride_wn": 1, "stride_on": 1}
        binary = compiled(kernel, {**descriptors, **sizes}, {**blocks, **unit, "DESCRIPTORS": True}, options)
        usage, sass = resources(binary, "solution")
        reference = compiled(timed, {f"{name}_desc": kind for name, kind in descriptors.items()} | sizes, blocks, options)
        same = _instructions(sass) == _instructions(resources(reference, "persistent")[1])
        print(f"  descriptors {block_m}x{block_n}x{block_k} w{warps} s{stages}   {usage:18} shared {binary.metadata.shared:>7,} B  "
              f"{'the same SASS as persistent_kernel' if same else 'SASS DIFFERS from persistent_kernel'}")
        pointers, fixed = {"x": "*bf16", "w": "*bf16", "out": "*bf16", **sizes}, {**blocks, **unit, "DESCRIPTORS": False}
        index = {name: i for i, name in enumerate(kernel.arg_names)}
        signature = {name: "constexpr" if name in fixed else pointers[name] for name in kernel.arg_names}
        constants = {(index[name],): value for name, value in fixed.items()}
        aligned = {(index[name],): [["tt.divisibility", 16]] for name, kind in signature.items() if kind == "*bf16"}
        binary = triton.compile(ASTSource(kernel, signature, constexprs=constants, attrs=aligned), target=TARGET, options=options)
        usage, _ = resources(binary, "solution_pointers")
        print(f"  pointers    {block_m}x{block_n}x{block_k} w{warps} s{stages}   {usage:18} shared {binary.metadata.shared:>7,} B")


def _instructions(sass: str) -> list[str]:
    """The SASS instructions, without their addresses."""
    return [re.sub(r"/\*[0-9a-f]{4,}\*/", "", line).split(";")[0].strip() for line in sass.splitlines() if re.search(r"/\*[0-9a-f]{4,}\*/", line)]


if __name__ == "__main__":
    chosen = sys.argv[1:] or ["flash", "epilogue", "persistent", "flash_solution", "epilogue_solution"]
    tables = {"flash": flash, "epilogue": epilogue, "persistent": persistent, "flash_solution": flash_solution, "epilogue_solution": epilogue_solution}
    for table in chosen:
        tables[table]()
