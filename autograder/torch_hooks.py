"""PyTorch's own ways to run code inside another's tensor operations, as the sealed worker left them.

Once the learner's function returns, the worker's code still handles its output with PyTorch: it
reads the output's layout and address and, on a CPU, copies its bytes for the judge and compares them
with what the kernels stored. PyTorch lets any code put itself inside such operations without
replacing a single name the fingerprint watches (autograder.fingerprint):

- a function mode or a dispatch mode entered and never left (``TorchFunctionMode``,
  ``TorchDispatchMode``; their stacks are PyTorch's per-thread state in C), which then sees every
  operation of the thread: the worker's ``data_ptr()``, ``contiguous()`` and ``view()`` included;
- the thread's dispatch keys turned on or off (the Python dispatcher, a key excluded by hand);
- a kernel of its own registered for an existing operator (``torch.library.Library("aten", "IMPL")``
  or ``torch.library.impl``), which every later call of that operator runs, whoever calls it.

Each can tell the worker's reading of the output from the kernels' record of it (a different chain of
operations, a new tensor object) and hand the judge bytes computed with NumPy while the record sees
what the kernels stored (the cases ``hook_swaps_output_bytes``, ``aten_kernel_swaps_output_bytes``).
So the seal takes this state when it closes and compares it before every reply, as it compares the
fingerprint: a change is the learner's, and the grading is rejected instead of trusting the report.

The operators' kernels are compared through the dispatcher's own listing of each operator of the
``aten`` namespace (every kernel with where it was registered): about 0.1 s on a CPU, so it is
compared as the learner's module loads and as each of its calls returns (before the worker touches
what it returned), not before every interpreted launch and reply. Registering kernels for operators of
a namespace of its own (``torch.library.custom_op``) stays the learner's to do: the worker never
calls them.
"""

from __future__ import annotations

import torch

# The namespace whose operators the worker's own code runs on the learner's tensors.
NAMESPACE = "aten::"


def _lazy_registrations() -> None:
    """Kernels PyTorch registers for aten operators the first time a feature is used, so that the
    learner's first use of it is not taken for a change of theirs: functorch's batching rules for
    some losses and ``addr`` (seen with torch 2.13: the first ``torch.func.vmap`` registers eight)."""
    torch.func.vmap(torch.sin)(torch.zeros(1, 1))


def _reader():
    """A function with no free names that reads the calling thread's modes and dispatch keys (cheap:
    compared before every launch and reply). PyTorch's functions are bound now, before the learner's
    code loads: torch._C is not fingerprinted, and a rebound ``_len_torch_function_stack`` must not
    answer for it."""
    C = torch._C
    function_stack, dispatch_stack, dispatch_mode = C._len_torch_function_stack, C._len_torch_dispatch_stack, C._get_dispatch_mode
    include, exclude, str_, tuple_ = C._dispatch_tls_local_include_set, C._dispatch_tls_local_exclude_set, str, tuple
    infra = (C._TorchDispatchModeKey.FAKE, C._TorchDispatchModeKey.PROXY, C._TorchDispatchModeKey.FUNCTIONAL)

    def state() -> tuple:
        return (function_stack(), dispatch_stack(), tuple_(dispatch_mode(key) is not None for key in infra), str_(include()), str_(exclude()))

    return state


def _kernels_reader():
    """A function with no free names that lists every aten operator's kernels, as the dispatcher
    does (each with where it was registered)."""
    dump, names, namespace = torch._C._dispatch_dump, torch._C._dispatch_get_all_op_names, NAMESPACE

    def kernels() -> dict[str, str]:
        return {name: dump(name) for name in names() if name.startswith(namespace)}

    return kernels


def make_check(with_kernels: bool):
    """Take the state now; returns ``check(with_them)``: what changed since (None if nothing). The
    operators' kernels are compared only when ``with_them`` is true, and only if ``with_kernels``."""
    if with_kernels:
        _lazy_registrations()
    state_, kernels_ = _reader(), _kernels_reader()
    first_state, first_kernels = state_(), kernels_() if with_kernels else {}

    def check(with_them: bool) -> str | None:
        now = state_()
        if now != first_state:
            return ("a PyTorch mode or dispatch key left in place by your code (a TorchFunctionMode or TorchDispatchMode entered "
                    "and not exited, or a dispatch key set by hand): the worker's own handling of your output would run through it")
        if with_them and first_kernels:
            current = kernels_()
            changed = [name for name, listing in first_kernels.items() if current.get(name) != listing]
            if changed:
                return (f"a kernel registered by your code for PyTorch's operator {changed[0]} (torch.library on an existing "
                        "operator): the worker's own handling of your output would run it")
        return None

    return check
