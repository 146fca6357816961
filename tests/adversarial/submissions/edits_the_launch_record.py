# expect: REJECT FAIL
# problem: act0.vector_add
# devices: cpu
# Adds with NumPy, launches nothing, and writes into the interpreter's launch record what an honest
# kernel would have left there: a launch of its add_kernel (defined, never launched), both inputs loaded once, the
# output stored with the values it now holds. It finds the record by name, as anything reachable
# from the grader's and Triton's modules (their globals, classes, containers and the closures of
# their functions), without frames or the garbage collector. On the tree where the record was kept
# in a list of autograder.interpreter, this earned full marks on a CPU; now the record is held by one
# frame of the worker while the learner's function runs, and nothing the learner can name leads to it.
import sys

import numpy as np
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


def _reachable_records() -> list:
    from autograder.launch_record import LaunchRecord

    seen, found = set(), []

    def visit(value, depth):
        if id(value) in seen or depth > 4:
            return
        seen.add(id(value))
        if isinstance(value, LaunchRecord):
            found.append(value)
        elif isinstance(value, (list, tuple, set, frozenset)):
            for item in list(value):
                visit(item, depth + 1)
        elif isinstance(value, dict):
            for item in list(value.values()):
                visit(item, depth + 1)
        elif isinstance(value, type):
            for item in list(vars(value).values()):
                visit(item, depth + 1)
        elif callable(value):
            for cell in getattr(value, "__closure__", None) or ():
                try:
                    visit(cell.cell_contents, depth + 1)
                except ValueError:
                    pass
            for item in getattr(value, "__defaults__", None) or ():
                visit(item, depth + 1)

    for name, module in list(sys.modules.items()):
        if module is not None and name.startswith(("autograder", "triton")):
            for item in list(vars(module).values()):
                visit(item, 0)
    return found


def _bytes_of(tensor):
    start = tensor.data_ptr()
    return start, start + tensor.numel() * tensor.element_size()


def vector_add(x, y):
    from autograder.bounds import KernelSource

    out = torch.from_numpy(x.numpy() + y.numpy())
    for record in _reachable_records():
        record.launches.append(KernelSource("add_kernel", __file__, add_kernel.fn.__code__.co_firstlineno))
        for tensor, stored in ((x, False), (y, False), (out, True)):
            start, end = _bytes_of(tensor)
            record.cover(start, end)
            addresses = np.arange(start, end, dtype=np.uint64)
            values = tensor.contiguous().view(torch.uint8).numpy().reshape(-1) if stored else None
            record.mark(addresses, values, loaded=not stored)
    return out
