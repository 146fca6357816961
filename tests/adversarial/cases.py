"""The adversarial submissions and the verdicts the grader must give them.

Two places hold them. A submission about one problem lives beside it, in the problem's folder:
``autograder/problems/<act>/<problem>/submissions/`` (the problem is the folder's); one about an
act's problems kept in a module, in ``autograder/problems/<act>/submissions/``. Cheats that attack
the grader itself whatever the problem (the sandbox, the timer, the process) live in
``tests/adversarial/submissions/``. The tests find every one of them; none is listed by hand.

Each file starts with comment lines: ``# expect:`` (one or more verdicts, any of which is right),
``# problem:`` (not in a problem folder, where the folder says it), ``# devices:`` (cpu, cuda) and
optionally ``# entry:``, ``# timeout:``, ``# says:`` (words the verdict's message or one of its cases,
written "passed <case>: <message>" or "failed <case>: <message>", must contain: the reason the
grader gives, not only its verdict; checked on every device the case names when that is the GPU
alone, else on the CPU only, where another reason may come first on a GPU) and ``# speed_at_most:`` (for a cheat that must earn only
its honest speed: the speed metric, a copy fraction or a ratio to the library, may not exceed it on
a GPU), ``# alone: yes`` for one that keeps the GPU busy beyond its own calls, or its memory growing
with every call (the GPU run
grades it with nothing else on the GPU, where its load cannot slow other gradings; a case that
must PASS and nothing else is graded alone too, as a learner's grading is: its time accounting
would count another grading's GPU work as its own), and ``# slow:``
with the reason for one whose CPU grading is a slow duplicate of what another case or test covers
(``make test-all`` grades it on the CPU, ``make test`` does not; the GPU run grades it). Each submission
is a whole learner file, self-contained on purpose (the grader ships one file to its child
process), so the honest kernel appears in several of them.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

from autograder.problems.folders import PROBLEMS_ROOT, SPEC

SUBMISSIONS = Path(__file__).parent / "submissions"
FOLDER = "submissions"


@dataclass
class Case:
    path: Path
    expect: tuple[str, ...]
    problem: str
    devices: tuple[str, ...]
    entry: str
    timeout: float | None
    speed_at_most: float | None = None
    alone: bool = False
    says: str | None = None
    slow: str | None = None

    @property
    def name(self) -> str:
        """The file's stem for a cross-cutting cheat; ``<problem>/<stem>`` for one beside its problem."""
        if self.path.parent == SUBMISSIONS:
            return self.path.stem
        return f"{self.problem}/{self.path.stem}"

    @property
    def source(self) -> str:
        return self.path.read_text()


def _folder_problem(path: Path) -> str | None:
    """The problem whose folder holds ``path`` (in its submissions/), None outside a problem folder."""
    spec = path.parent.parent / SPEC
    return tomllib.loads(spec.read_text())["name"] if spec.is_file() else None


def _parse(path: Path) -> Case:
    fields: dict[str, str] = {}
    for line in path.read_text().splitlines():
        if not line.startswith("# ") or ":" not in line:
            break
        key, _, value = line[2:].partition(":")
        fields[key.strip()] = value.strip()
    folder_problem = _folder_problem(path)
    if folder_problem and fields.get("problem", folder_problem) != folder_problem:
        raise ValueError(f"{path}: '# problem: {fields['problem']}' in the folder of {folder_problem}; move it to its own problem's folder")
    problem = folder_problem or fields.get("problem")
    if problem is None:
        raise ValueError(f"{path}: outside a problem folder a submission says its problem in a '# problem:' line")
    expect = tuple(v.replace("_", " ") for v in fields["expect"].replace("COMPILE ERROR", "COMPILE_ERROR").split())
    return Case(
        path=path,
        expect=expect,
        problem=problem,
        devices=tuple(fields["devices"].split()),
        entry=fields.get("entry", problem.split(".")[1]),
        timeout=float(fields["timeout"]) if "timeout" in fields else None,
        speed_at_most=float(fields["speed_at_most"]) if "speed_at_most" in fields else None,
        alone=fields.get("alone") == "yes" or expect == ("PASS",),
        says=fields.get("says"),
        slow=fields.get("slow"),
    )


def submission_files() -> list[Path]:
    """Every submission: the cross-cutting cheats, then those kept with an act or a problem."""
    beside_problems = sorted(PROBLEMS_ROOT.glob(f"*/{FOLDER}/*.py")) + sorted(PROBLEMS_ROOT.glob(f"*/*/{FOLDER}/*.py"))
    return sorted(SUBMISSIONS.glob("*.py")) + beside_problems


def cases(device: str, alone: bool | None = None) -> list[Case]:
    """The cases for ``device``; ``alone`` picks those graded with the GPU to themselves (True) or
    the others (False)."""
    return [c for c in map(_parse, submission_files()) if device in c.devices and alone in (None, c.alone)]
