"""The child process that runs one learner's exercise: ``python -m autograder._child`` with the job
on standard input. Its standard output and error go to a log the parent reads only as text; the
verdict goes to a result file stamped with a nonce the learner's code never sees on disk.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import sys
import traceback


def _read_job() -> dict:
    job = json.loads(sys.stdin.read())
    sys.stdin.close()
    return job


def _writer(path: str, nonce: str):
    def write(payload: dict) -> None:
        payload = dict(payload, nonce=nonce)
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(payload, f, default=str)
        os.replace(tmp, path)

    return write


# Learner code that reaches for the grader's own answers.
REFERENCE_IMPORT = re.compile(r"autograder\s*\.\s*problems|from\s+autograder\s+import\s+[^\n]*\bproblems?\b|__import__\(\s*['\"]autograder\.problems")

COMPILE_ERRORS = {"CompilationError", "CompileTimeAssertionFailure", "OutOfResources", "CompileException", "UnsupportedLanguageConstruct"}


def _classify(exc: BaseException) -> str:
    names = {cls.__name__ for cls in type(exc).__mro__}
    if names & COMPILE_ERRORS:
        return "COMPILE ERROR"
    return "ERROR"


def _learner_traceback(exc: BaseException, module_path: str) -> str:
    """The traceback from the learner's own frames down, without the grader's frames above them."""
    frames = traceback.extract_tb(exc.__traceback__)
    first = next((i for i, f in enumerate(frames) if f.filename == module_path), 0)
    lines = traceback.format_list(frames[first:]) + traceback.format_exception_only(type(exc), exc)
    return "".join(lines)[-6000:]


def main() -> None:
    job = _read_job()
    write = _writer(job["result"], job.pop("nonce"))
    result: dict = {"problem": job["problem"], "status": "ERROR", "message": "", "cases": [], "speed": []}
    try:
        _run(job, result)
    except BaseException as exc:  # noqa: BLE001 -- every failure becomes a verdict, never a crash
        result["status"] = _classify(exc)
        result["message"] = f"{type(exc).__name__}: {str(exc)[:2000]}"
        result["traceback"] = _learner_traceback(exc, job["module"])
    write(result)
    sys.stdout.flush()
    sys.stderr.flush()
    # Learner code may have left threads or CUDA work behind; leave without waiting for them.
    os._exit(0)


def _run(job: dict, result: dict) -> None:
    import importlib.util
    import inspect

    # Grader modules first, so they hold the original functions before learner code can patch them.
    import torch

    from . import checking, honesty, tamper, timing
    from . import problem as problem_mod

    device = job["device"]
    problem = problem_mod.get(job["problem"])
    result["device"] = device
    result["versions"] = _versions()
    if device == "cuda":
        result["device_name"] = torch.cuda.get_device_name(0)
    watch = tamper.Snapshot()

    with open(job["module"], encoding="utf-8") as f:
        if REFERENCE_IMPORT.search(f.read()):
            result["status"] = "REJECT"
            result["message"] = "your code uses the grader's problem definitions (its reference answers); write your own"
            return

    spec = importlib.util.spec_from_file_location("learner_submission", job["module"])
    module = importlib.util.module_from_spec(spec)
    sys.modules["learner_submission"] = module
    try:
        spec.loader.exec_module(module)
    except BaseException as exc:
        result["status"] = "COMPILE ERROR" if isinstance(exc, SyntaxError) else _classify(exc)
        result["message"] = f"your code failed while being loaded: {type(exc).__name__}: {str(exc)[:2000]}"
        result["traceback"] = _learner_traceback(exc, job["module"])
        return
    fn = getattr(module, job["entry"], None)
    if not callable(fn):
        result["message"] = f"no function named {job['entry']!r} was found in your code"
        return
    exact = problem_mod.is_exact(problem)
    measured = problem_mod.is_measured(problem)
    if measured:
        arg_names = list(problem.arguments)
    else:
        arg_names = list(problem.make_cases(0)[0]) if exact else list(problem.make_inputs(problem.test_sizes[0], 0, device))
    try:
        if exact:
            inspect.signature(fn).bind(**dict.fromkeys(arg_names))
        else:
            inspect.signature(fn).bind(*arg_names)
    except TypeError:
        result["message"] = f"{job['entry']} must take {len(arg_names)} arguments ({', '.join(arg_names)}); yours is {job['entry']}{inspect.signature(fn)}"
        return
    except ValueError:
        pass

    if measured:
        from . import ceilings
        from . import measured as measured_mod

        entry = ceilings.load()
        result["ceilings"] = entry
        result["cases"] = measured_mod.check(problem, fn, device, entry)
        all_passed = all(c["passed"] for c in result["cases"])
        result["status"] = "PASS" if all_passed else "FAIL"
        result["message"] = "your measurements agree with the grader's" if all_passed else "some of your measurements disagree with the grader's"
        _tamper_verdict(watch, result)
        return

    if exact:
        from . import exact as exact_mod

        result["cases"] = exact_mod.check_cases(problem, fn, secrets.randbits(62))
        all_passed = all(c["passed"] for c in result["cases"])
        result["status"] = "PASS" if all_passed else "FAIL"
        result["message"] = "all cases correct" if all_passed else "some cases are wrong"
        _tamper_verdict(watch, result)
        return

    all_passed = True
    for index, size in enumerate(problem.sizes_for(device)):
        seed = secrets.randbits(62)
        try:
            case = checking.check_case(problem, fn, size, seed, device, reference_first=index % 2 == 0)
        except BaseException as exc:
            result["cases"].append({"size": size, "passed": False, "message": f"{type(exc).__name__}: {str(exc)[:500]}"})
            result["status"] = _classify(exc)
            result["message"] = f"your function raised {type(exc).__name__} at size {size}"
            result["traceback"] = _learner_traceback(exc, job["module"])
            _tamper_verdict(watch, result)
            return
        result["cases"].append(case.to_dict())
        all_passed &= case.passed
    result["status"] = "PASS" if all_passed else "FAIL"
    result["message"] = "all cases correct" if all_passed else "some cases are wrong"
    if all_passed and device == "cpu":
        from . import arrays

        inputs = problem.make_inputs(problem.sizes_for(device)[-1], secrets.randbits(62), device)
        args = [arrays.to_learner(v, problem.language) for v in inputs.values()]
        ok, message = honesty.judge_cpu(honesty.cpu_operators(lambda: fn(*args)))
        result["honesty"] = {"ok": ok, "message": message}
    if all_passed and device == "cuda" and job.get("speed", True):
        from . import ceilings

        entry = ceilings.load()
        result["ceilings"] = entry
        for size in problem.bench_sizes:
            measured = timing.measure(problem, fn, size, secrets.randbits(62), entry)
            result["speed"].append(measured.to_dict())
        result["persisting_l2_reset"] = timing._PersistingL2().available
        inputs = problem.make_inputs(problem.bench_sizes[0], secrets.randbits(62), device)
        from . import arrays

        args = [arrays.to_learner(v, problem.language) for v in inputs.values()]
        kernels = honesty.launched_kernels(lambda: fn(*args))
        with open(job["module"], encoding="utf-8") as f:
            own = honesty.own_kernel_names(f.read())
        ok, message = honesty.judge(kernels, problem.allowed_library_kernels, own)
        result["honesty"] = {"ok": ok, "message": message, "kernels": sorted(set(kernels))[:20]}
    _tamper_verdict(watch, result)


def _tamper_verdict(watch, result: dict) -> None:
    changed = watch.changed()
    if changed:
        result["status"] = "REJECT"
        result["message"] = "your code replaced functions the grader relies on: " + ", ".join(changed)


def _versions() -> dict:
    import platform

    import torch

    versions = {"python": platform.python_version(), "torch": torch.__version__}
    for name in ("triton", "cupy"):
        try:
            versions[name] = __import__(name).__version__
        except Exception:  # noqa: BLE001 -- a missing or broken optional package is just absent
            versions[name] = None
    if torch.cuda.is_available():
        versions["cuda"] = torch.version.cuda
    return versions


if __name__ == "__main__":
    main()
