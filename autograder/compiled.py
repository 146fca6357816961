"""Exercises graded on what torch.compile did: graph breaks, compiled graphs and the padding a
shape-bucketing policy costs, over a stream of inputs whose shapes vary.

The learner writes two functions: a block (tensor code, traced by Dynamo) and a bucketing policy
(a sequence length -> the length to pad it to). The grader's harness runs in the learner's worker:
it pads each input of a hidden stream to its bucket, calls the block compiled with
``torch.compile(fullgraph=True, dynamic=False)`` (a graph break is an error there, and every new
shape is a new graph), and reports the outputs and Dynamo's counters. The judge checks the outputs
against its float64 reference, counts the compiles itself from the buckets (and requires Dynamo to
have compiled exactly one graph per bucket: a block that escaped the compiler compiled none), and
computes the padding waste.

Dynamo's eager backend runs the traced graph without code generation: the graph breaks,
guards and recompiles are exactly those of the default backend, and a compile costs a fraction of
a second instead of Inductor's seconds. The backend also notes every call in a graph that Dynamo
did not trace into (an operator of the learner's own, a function kept whole): code hidden there
keeps its breaks and is never compiled, so it fails the graph-breaks check as a break would.
"""

from __future__ import annotations

import pickle
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from .python_problems import CorrectnessOnly
from .result import CaseResult

try:
    import torch
except ImportError:  # the package's lightweight users (the CLI's listing) import this without torch
    torch = None
# torch.compile, Dynamo's reset and its counters, taken by the worker before the learner's module is
# loaded (``capture``): a submission that replaces them in its own module does not replace these.
# Not at import: Dynamo's import takes a second, and the judge, which imports this module with the
# problem definitions, never compiles.
_HARNESS: dict = {}


def capture() -> None:
    from torch._dynamo.utils import counters

    _HARNESS.update(compile=torch.compile, reset=torch._dynamo.reset, counters=counters)

RECOMPILE_LIMIT = 512


@dataclass
class CompiledProblem(CorrectnessOnly):
    """make_stream(seed) -> {"xs": list of (length, width) float32 arrays, "weight": (width, width)}.
    reference(x, weight) -> the exact answer for one unpadded input, float64. max_compiles and
    max_padding_waste are the bounds the learner's policy must meet on the hidden stream."""

    name: str
    title: str
    notebook: str
    function: str
    bucket_function: str
    make_stream: Callable[[int], dict]
    reference: Callable[..., Any]
    max_compiles: int
    max_padding_waste: float
    arguments: tuple[str, ...] = ("x", "mask", "weight")
    tolerance_factor: float = 8.0
    correctness_points: float = 3.0
    language: str = "python"
    speed_points: float = 0.0
    notes: dict = field(default_factory=dict)
    kind: ClassVar[str] = "compiled"

    @property
    def also_needs(self) -> tuple[str, ...]:
        """The learner's other function, collected with the graded one (autograder.source)."""
        return (self.bucket_function,)


# --- In the worker: the grader's harness around the learner's two functions -----------------------


def run_stream(module, entry: str, request: dict, payload: bytes, device: str, error) -> tuple[dict, bytes]:
    """Every input of the stream, padded to its bucket, through the compiled block. ``error`` turns
    the learner's exception into the judge's description of it."""
    bucket_name = request["bucket"]
    block, bucket = getattr(module, entry, None), getattr(module, bucket_name, None)
    if not callable(bucket):
        return {"missing": f"no function named {bucket_name!r} was found in your code"}, b""
    data = pickle.loads(payload)
    counters = _HARNESS["counters"]
    _HARNESS["reset"]()
    counters.clear()
    for name in ("recompile_limit", "cache_size_limit"):
        if hasattr(torch._dynamo.config, name):
            setattr(torch._dynamo.config, name, RECOMPILE_LIMIT)
    opaque: list[str] = []
    compiled = _HARNESS["compile"](block, fullgraph=True, dynamic=False, backend=_eager_noting(opaque))
    weight = torch.from_numpy(data["weight"]).to(device)
    outputs, padded = [], []
    for array in data["xs"]:
        x = torch.from_numpy(array).to(device)
        length, width = x.shape
        try:
            size = bucket(length)
        except Exception as exc:  # noqa: BLE001 -- the learner's exception is the verdict
            return {"error": error(exc), "while": f"{bucket_name}({length})"}, b""
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < length:
            return {"bad_bucket": f"{bucket_name}({length}) returned {size!r}: it must return an int at least as long as the sequence"}, b""
        size = int(size)
        padded_x = torch.zeros(size, width, device=device)
        padded_x[:length] = x
        mask = torch.arange(size, device=device) < length
        try:
            out = compiled(padded_x, mask, weight)
        except Exception as exc:  # noqa: BLE001 -- a graph break, a failed trace or the learner's own error
            dynamo = isinstance(exc, getattr(torch._dynamo.exc, "TorchDynamoException", ()))
            return {"compile_error" if dynamo else "error": error(exc), "while": f"{entry} at length {size}"}, b""
        if not isinstance(out, torch.Tensor) or tuple(out.shape) != (size, width):
            return {"wrong_type": f"{entry} must return a tensor of shape ({size}, {width}); it returned {_what(out)}"}, b""
        outputs.append(out[:length].detach().to("cpu", torch.float32).contiguous().numpy().tobytes())
        padded.append(size)
    facts = {"padded": padded, "graph_breaks": int(sum(counters["graph_break"].values())), "unique_graphs": int(counters["stats"]["unique_graphs"]),
             "opaque_calls": sorted(set(opaque))}
    return {"stream": facts}, b"".join(outputs)


# What a traced graph may call: PyTorch's own operators and functions, and Python's arithmetic.
TRACEABLE_NAMESPACES = ("aten", "prims")
TRACEABLE_MODULES = ("torch", "_operator", "operator", "math", "builtins")


def _eager_noting(opaque: list):
    """Dynamo's eager backend (the graph run as traced, no code generation), noting each call in a
    graph that Dynamo did not trace into: an operator of the learner's own (``torch.library.custom_op``)
    or a function kept whole (``allow_in_graph``). Code hidden there keeps its breaks (an ``.item()``
    feeding a branch, a print) and is never compiled, though the graph shows none."""

    def backend(graph_module, example_inputs):
        for node in graph_module.graph.nodes:
            if node.op == "call_function":
                target = node.target
                namespace = getattr(target, "namespace", None)
                if namespace is not None:
                    if namespace not in TRACEABLE_NAMESPACES:
                        opaque.append(f"{namespace}::{getattr(target, '__name__', '?')}")
                elif str(getattr(target, "__module__", "") or "").partition(".")[0] not in TRACEABLE_MODULES:
                    opaque.append(f"{getattr(target, '__module__', '?')}.{getattr(target, '__qualname__', getattr(target, '__name__', '?'))}")
        return graph_module.forward

    return backend


def _what(out) -> str:
    return f"shape {tuple(out.shape)}" if isinstance(out, torch.Tensor) else f"a {type(out).__name__}"


# --- In the judge ------------------------------------------------------------------------------------


def grade(g) -> None:
    problem = g.problem
    stream = problem.make_stream(secrets.randbits(62))
    payload = pickle.dumps({"xs": stream["xs"], "weight": stream["weight"]})
    header, data = g.learner.ask({"op": "harness", "bucket": problem.bucket_function}, payload, timeout=g.remaining())
    g.learner.end()
    g.stage("stream compiled and run")
    failure = _failure(header)
    if failure:
        g.fail_hard("FAIL", failure)
        return
    g.result.cases = [CaseResult.from_dict(case) for case in judge_stream(problem, stream, header["stream"], data)]
    g.pass_if_all("no graph breaks, few compiles, little padding, and the right outputs", "see the failing checks")


def _failure(header: dict) -> str | None:
    if "stream" in header:
        return None
    for key in ("missing", "bad_bucket", "wrong_type"):
        if key in header:
            return header[key]
    error = header.get("compile_error") or header.get("error")
    if error:
        what = "torch.compile(fullgraph=True) could not compile your block (a graph break or a failed trace)" if "compile_error" in header else "your code raised"
        return f"{what} in {header.get('while')}: {error['type']}: {error['message'][:1200]}"
    return "the stream could not be run"


def judge_stream(problem, stream: dict, facts: dict, data: bytes) -> list[dict]:
    """The four checks, each a case of the report."""
    lengths = [x.shape[0] for x in stream["xs"]]
    width = stream["weight"].shape[0]
    padded = facts["padded"]
    cases = [_outputs_case(problem, stream, data, lengths, width)]
    buckets = len(set(padded))
    graphs = facts["unique_graphs"]
    cases.append(_case("graph breaks", facts["graph_breaks"] == 0, f"{facts['graph_breaks']} graph breaks"))
    opaque = facts.get("opaque_calls", [])
    if opaque:
        cases.append(_case("traced", False, f"your block's graph calls {', '.join(opaque)}, which Dynamo does not trace into: the code inside keeps "
                           "its breaks and is never compiled. Remove the breaks from the block itself, with PyTorch's operators"))
    if graphs != buckets:
        cases.append(_case("compiles", False, f"{buckets} bucket sizes but Dynamo compiled {graphs} graphs: each bucket must compile your block exactly once"))
    else:
        cases.append(_case("compiles", buckets <= problem.max_compiles, f"{buckets} compiles for {len(set(lengths))} distinct lengths (at most {problem.max_compiles})"))
    waste = (sum(padded) - sum(lengths)) / sum(lengths)
    cases.append(_case("padding waste", waste <= problem.max_padding_waste, f"{waste:.1%} of the real tokens added as padding (at most {problem.max_padding_waste:.0%})"))
    return cases


def _outputs_case(problem, stream: dict, data: bytes, lengths: list[int], width: int) -> dict:
    expected_bytes = 4 * width * sum(lengths)
    if len(data) != expected_bytes:
        return _case("outputs", False, "the outputs did not come back whole")
    got = np.frombuffer(data, dtype=np.float32)
    worst, offset = 0.0, 0
    for x, length in zip(stream["xs"], lengths, strict=True):
        exact = problem.reference(x.astype(np.float64), stream["weight"].astype(np.float64))
        eager = problem.reference(x, stream["weight"])
        tolerance = problem.tolerance_factor * float(np.max(np.abs(eager - exact))) + 1e-6
        mine = got[offset : offset + length * width].reshape(length, width)
        offset += length * width
        error = float(np.max(np.abs(mine - exact)))
        if not np.isfinite(error) or error > tolerance:
            return _case("outputs", False, f"at length {length}: off by {error:.3g}, tolerance {tolerance:.3g} (padded positions must not change the real ones: mask them)")
        worst = max(worst, error / tolerance)
    return _case("outputs", True, f"{len(lengths)} sequences match the float64 reference (worst error {worst:.0%} of its tolerance)")


def _case(size: str, passed: bool, message: str) -> dict:
    return {"size": size, "passed": bool(passed), "message": message}
