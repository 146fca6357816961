"""The trusted helper's module: what the library runs on this GPU (its baseline, any extra
libraries) and the null call between timed windows, as the judge decides them. The judge writes it,
filled in with the problem's name and argument names, into the helper's folder, and the helper's
worker loads it as it would load a learner's file."""

SOURCE = '''
import torch
from autograder import registry as _registry

_problem = _registry.get({name!r})
_names = {names!r}
_null_out = torch.zeros(1, device="cuda")
# What the library runs on this GPU (SDPA's backend, say), decided here as the judge decides it.
_baseline = _problem.baseline_for("cuda")


def library_entry(*args):
    return _baseline.run(**dict(zip(_names, args)))


def null_entry(*args):
    # One trivial kernel: the calls of every worker pay the same switch between contexts.
    _null_out.zero_()
    return _null_out


def _extra(library):
    return lambda *args: library(**dict(zip(_names, args)))


for _index, (_, _library) in enumerate(_baseline.extra_libraries):
    globals()[f"extra_{{_index}}"] = _extra(_library)
'''
