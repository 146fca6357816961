"""Probe for the judge's reading of a worker's outputs: when does opening a worker's IPC handle fail?

Three verdicts of the GPU suite (Act 0's vector add and SAXPY, three gradings a GPU) ended in "the
grader failed: CudaError: cuIpcOpenMemHandle failed with CUDA driver error 1" (invalid value) in the
judge. The judge keeps every output allocation it has opened mapped until the timed run ends, while
the worker's allocator may give that memory back to the driver (an allocation that fails under
memory pressure makes torch's caching allocator and CuPy's pool free their cached blocks) and get
memory again at the same address. Each scenario below is one such order of events between an
exporting process (the worker's role) and an importing one (the judge's); printed and written as
JSON: whether each open succeeded (or its error), whether the importer read what the exporter wrote.

    python tests/gpu/probe_ipc_reuse.py OUT.json
"""

from __future__ import annotations

import json
import sys
import time

import torch
import torch.multiprocessing as mp

NBYTES = 256 << 20


def exporter(conn) -> None:
    """The worker's role: allocations by torch's caching allocator (or CuPy's pool), exported as
    the worker exports outputs (autograder.shared.describe_output)."""
    from autograder import cuda_driver

    held: dict[str, object] = {}
    while True:
        command, *args = conn.recv()
        try:
            if command == "alloc":
                name, fill, pool = args
                if pool == "cupy":
                    import cupy

                    held[name] = cupy.full(NBYTES // 4, fill, dtype=cupy.float32)
                    ptr = held[name].data.ptr
                else:
                    held[name] = torch.full((NBYTES // 4,), float(fill), device="cuda")
                    ptr = held[name].data_ptr()
                torch.cuda.synchronize()
                base, size = cuda_driver.allocation_of(ptr)
                conn.send({"handle": cuda_driver.ipc_handle(base), "base": base, "size": size, "offset": ptr - base, "buffer_id": cuda_driver.buffer_id(base)})
            elif command == "free":
                held.pop(args[0])
                torch.cuda.empty_cache()
                try:
                    import cupy

                    cupy.get_default_memory_pool().free_all_blocks()
                except ImportError:
                    pass
                torch.cuda.synchronize()
                conn.send({"freed": True})
            elif command == "stop":
                conn.send({})
                return
        except Exception as exc:  # noqa: BLE001 -- the probe reports every failure
            conn.send({"error": f"{type(exc).__name__}: {exc}"})


class Importer:
    """The judge's role: opens handles, reads the first float of what they map, closes them."""

    def __init__(self) -> None:
        from autograder import cuda_driver

        self.driver = cuda_driver
        self.opened: dict[str, int] = {}

    def open(self, exported: dict) -> dict:
        started = time.perf_counter()
        try:
            ptr = self.driver.ipc_open(exported["handle"])
        except Exception as exc:  # noqa: BLE001 -- the outcome being probed
            return {"opened": False, "error": str(exc), "open_us": round(1e6 * (time.perf_counter() - started), 1)}
        open_us = 1e6 * (time.perf_counter() - started)
        self.opened[exported["handle"]] = ptr
        return {"opened": True, "open_us": round(open_us, 1), **self.read(exported)}

    def read(self, exported: dict) -> dict:
        ptr = self.opened[exported["handle"]]
        view = self.driver.as_tensor(ptr + exported["offset"], 4, torch.float32, (1,), (1,))
        return {"reads": float(view.item())}

    def close(self, exported: dict) -> dict:
        started = time.perf_counter()
        self.driver.ipc_close(self.opened.pop(exported["handle"]))
        return {"close_us": round(1e6 * (time.perf_counter() - started), 1)}


def scenario(conn, steps: list[tuple]) -> list[dict]:
    importer = Importer()
    exported: dict[str, dict] = {}
    log = []
    for step in steps:
        what, name, *rest = step
        if what == "alloc":
            conn.send(("alloc", name, rest[0], rest[1]))
            exported[name] = conn.recv()
            entry = {k: exported[name].get(k) for k in ("base", "buffer_id", "error")}
            entry["same_handle_as"] = [other for other, e in exported.items() if other != name and e.get("handle") == exported[name].get("handle")]
        elif what == "free":
            conn.send(("free", name))
            entry = conn.recv()
        elif what == "open":
            entry = importer.open(exported[name])
        elif what == "read":
            entry = importer.read(exported[name])
        else:
            entry = importer.close(exported[name])
        log.append({"step": " ".join(str(s) for s in step), **entry})
    for handle in list(importer.opened):
        importer.driver.ipc_close(importer.opened.pop(handle))
    return log


SCENARIOS = {
    # The worker frees an output (its allocator gives the memory back) before the judge opens it.
    "freed_before_open": [("alloc", "a", 1.0, "torch"), ("free", "a"), ("open", "a")],
    # The judge still maps the old allocation when the worker's new one, likely at the same
    # address, is opened: the timed windows' reader keeps its mappings to the end.
    "reallocated_while_mapped": [("alloc", "a", 1.0, "torch"), ("open", "a"), ("free", "a"), ("alloc", "b", 2.0, "torch"), ("open", "b"), ("read", "a")],
    "reallocated_after_close": [("alloc", "a", 1.0, "torch"), ("open", "a"), ("close", "a"), ("free", "a"), ("alloc", "b", 2.0, "torch"), ("open", "b")],
    "cupy_reallocated_while_mapped": [("alloc", "a", 1.0, "cupy"), ("open", "a"), ("free", "a"), ("alloc", "b", 2.0, "cupy"), ("open", "b"), ("read", "a")],
    # What opening afresh each window would cost: the same allocation opened, closed and opened.
    "reopen_cost": [("alloc", "a", 1.0, "torch"), ("open", "a"), ("close", "a"), ("open", "a"), ("close", "a"), ("open", "a")],
}


def main() -> None:
    torch.cuda.init()
    results = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "bytes": NBYTES, "scenarios": {}}
    context = mp.get_context("spawn")
    for name, steps in SCENARIOS.items():
        parent, child = context.Pipe()
        process = context.Process(target=exporter, args=(child,))
        process.start()
        try:
            results["scenarios"][name] = scenario(parent, steps)
        except Exception as exc:  # noqa: BLE001 -- the probe reports every failure
            results["scenarios"][name] = [{"error": f"{type(exc).__name__}: {exc}"}]
        parent.send(("stop",))
        parent.recv()
        process.join(30)
        print(name)
        for entry in results["scenarios"][name]:
            print("   ", entry)
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
