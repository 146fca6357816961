"""What a graded cell of the course is: exactly one call of the grader, read from its source.

``autograder.<grade|grade_correctness|grade_speed>("<problem>", <function>)``, nothing else (comments
aside): nbgrader's preprocessor (autograder.nbgrader_plugin), the validate hook's check of points
(autograder.validate_cells) and the gradebook writer read a cell with ``graded_call``.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

# The grader's function -> (the part of the grade it returns, the result's key for its points).
PARTS = {"grade": ("all", "points"), "grade_correctness": ("correctness", "correctness_points"), "grade_speed": ("speed", "speed_points")}


@dataclass(frozen=True)
class GradedCall:
    problem: str
    entry: str
    part: str
    points_key: str


def graded_call(cell_source: str) -> GradedCall | None:
    """The one call ``autograder.<grade|grade_correctness|grade_speed>("<problem>", <function>)``
    that a graded cell consists of (comments aside), or None for anything else."""
    try:
        tree = ast.parse(cell_source)
    except SyntaxError:
        return None
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.Expr):
        return None
    call = tree.body[0].value
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr in PARTS):
        return None
    if not (isinstance(call.func.value, ast.Name) and call.func.value.id == "autograder"):
        return None
    if call.keywords or len(call.args) != 2:
        return None
    name, fn = call.args
    if not (isinstance(name, ast.Constant) and isinstance(name.value, str) and isinstance(fn, ast.Name)):
        return None
    return GradedCall(name.value, fn.id, *PARTS[call.func.attr])
