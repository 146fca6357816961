"""The adversarial submissions and the verdicts the grader must give them.

Each file in submissions/ starts with comment lines: ``# expect:`` (one or more verdicts, any of
which is right), ``# problem:``, ``# devices:`` (cpu, cuda) and optionally ``# entry:``,
``# timeout:`` and ``# speed_at_most:`` (for a cheat that must earn only its honest speed: the
speed metric, a copy fraction or a ratio to the library, may not exceed it on a GPU), and
``# alone: yes`` for one that keeps the GPU busy beyond its own calls (the GPU run grades it with
nothing else on the GPU, where its load cannot slow other gradings). Each submission is a whole learner file, self-contained on purpose (the grader ships
one file to its child process), so the honest kernel appears in several of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

SUBMISSIONS = Path(__file__).parent / "submissions"


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

    @property
    def name(self) -> str:
        return self.path.stem

    @property
    def source(self) -> str:
        return self.path.read_text()


def _parse(path: Path) -> Case:
    fields: dict[str, str] = {}
    for line in path.read_text().splitlines():
        if not line.startswith("# ") or ":" not in line:
            break
        key, _, value = line[2:].partition(":")
        fields[key.strip()] = value.strip()
    problem = fields["problem"]
    expect = tuple(v.replace("_", " ") for v in fields["expect"].replace("COMPILE ERROR", "COMPILE_ERROR").split())
    return Case(
        path=path,
        expect=expect,
        problem=problem,
        devices=tuple(fields["devices"].split()),
        entry=fields.get("entry", problem.split(".")[1]),
        timeout=float(fields["timeout"]) if "timeout" in fields else None,
        speed_at_most=float(fields["speed_at_most"]) if "speed_at_most" in fields else None,
        alone=fields.get("alone") == "yes",
    )


def cases(device: str, alone: bool | None = None) -> list[Case]:
    """The cases for ``device``; ``alone`` picks those graded with the GPU to themselves (True) or
    the others (False)."""
    return [c for c in map(_parse, sorted(SUBMISSIONS.glob("*.py"))) if device in c.devices and alone in (None, c.alone)]
