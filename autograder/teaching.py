"""The instructor's guide's tables, made from the exercise registry so they cannot go stale.

``cpu_points_table()`` is the Markdown table of the points a machine without a GPU can award, per
act and exercise (``python -m autograder points`` prints it). This module is also a Sphinx
extension (_config.yml, local_extensions): a page that writes ``{{ cpu_points_table }}`` gets the
table in its place before MyST reads the page.
"""

from __future__ import annotations

from . import problem as problem_mod
from . import registry, verdict

CPU_POINTS_TABLE = "{{ cpu_points_table }}"


def _why(problem) -> str:
    if problem.needs_gpu:
        return "everything: it measures this GPU" if problem_mod.is_measured(problem) else "everything: CuPy kernels run only on an NVIDIA GPU"
    if problem_mod.has_speed_grade(problem) and problem.speed_points:
        return "speed (timed against the library on the GPU)"
    return "nothing"


def cpu_points_table() -> str:
    """One row per exercise and one total per act: what it is worth, what a CPU grading awards
    (correctness of Triton kernels under the interpreter and of Python answers), and what needs a GPU."""
    acts: dict = {}
    for p in registry.all_problems():
        acts.setdefault(p.notebook.split("/")[0], []).append(p)
    lines = ["| act | exercise | language | worth | a CPU awards | needs a GPU |", "|---|---|---|---:|---:|---|"]
    for act in sorted(acts):
        worth = here = 0.0
        for p in sorted(acts[act], key=lambda p: p.name):
            cpu = verdict.max_points_on(p, "cpu")
            worth, here = worth + p.max_points, here + cpu
            lines.append(f"| {act} | `{p.name}` | {p.language} | {p.max_points:g} | {cpu:g} | {_why(p)} |")
        lines.append(f"| **{act}** | **total** | | **{worth:g}** | **{here:g}** | |")
    return "\n".join(lines)


def setup(app) -> dict:
    app.connect("source-read", _fill_in)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


def _fill_in(app, docname, source) -> None:
    if CPU_POINTS_TABLE in source[0]:
        source[0] = source[0].replace(CPU_POINTS_TABLE, cpu_points_table())
