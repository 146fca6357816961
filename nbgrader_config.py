"""nbgrader: solutions/ is the source folder, exercises/ the release folder (committed, for Colab).

`make exercises` regenerates exercises/ from solutions/; the tests check they agree. The points that
`nbgrader autograde` records come from a fresh grading of each notebook's source, never from what
its kernel computed (autograder/nbgrader_plugin.py; book/act0-start/instructors.md explains).
"""

import os

from autograder import nbgrader_plugin

c = get_config()  # noqa: F821 -- injected by nbgrader when it loads this file

c.CourseDirectory.root = os.path.dirname(os.path.abspath(__file__))
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "exercises"
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__"]
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
# Grading re-runs each exercise in a child process, compiles kernels and, on a GPU, times them.
c.Execute.timeout = 900
c.Execute.interrupt_on_timeout = True
# autograde: after the notebook has run, FreshGrades regrades its source and overwrites the graded
# cells' outputs before SaveAutoGrades reads them.
c.Autograde.autograde_preprocessors = nbgrader_plugin.autograde_preprocessors()
# validate: the graded cells get the same fresh grades before the kernel runs, and the kernel skips them.
c.Execute.on_notebook_start = nbgrader_plugin.fresh_grades_for_validate
