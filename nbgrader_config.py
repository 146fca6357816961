"""nbgrader: solutions/ is the source folder, exercises/ the release folder (committed, for Colab).

`make exercises` regenerates exercises/ from solutions/; the tests check they agree. The points that
`nbgrader autograde` records come from a fresh grading of each notebook's source, never from what
its kernel computed (autograder/nbgrader_plugin.py; book/act0-start/instructors.md explains).
"""

import os
import tempfile

from autograder import nbgrader_plugin, validate_cells

c = get_config()  # noqa: F821 -- injected by nbgrader when it loads this file

ROOT = os.path.dirname(os.path.abspath(__file__))
c.CourseDirectory.root = ROOT
# release_assignment, fetch, submit and collect need a course id and an exchange (nbgrader's default
# exchange, /usr/local/share/nbgrader/exchange, is system-wide and created as a side effect). Both
# default to this course folder; a class on a shared server overrides them on the command line,
# `--CourseDirectory.course_id=... --Exchange.root=...` (book/teaching/index.md).
c.CourseDirectory.course_id = "gpu-brrr"
c.Exchange.root = os.path.join(ROOT, "exchange")
# submit and list keep a cache of what was submitted (default: the user's Jupyter data folder).
c.Exchange.cache = os.path.join(ROOT, "exchange", ".cache")
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "exercises"
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__"]
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
# Grading re-runs each exercise in a child process, compiles kernels and, on a GPU, times them.
c.Execute.timeout = 900
c.Execute.interrupt_on_timeout = True
# Kernels talk to nbgrader over Unix sockets, not TCP on localhost: nothing listens on a port, and
# ipykernel's "Kernel is running over TCP without encryption" warning goes away. The sockets need an
# absolute path (the kernel starts in the notebook's folder), at most 107 bytes long: .kernels/ in
# the course folder (git-ignored), or a private temporary folder where that path would be too long.
KERNEL_SOCKETS = os.path.join(ROOT, ".kernels")
if len(KERNEL_SOCKETS) > 80:
    KERNEL_SOCKETS = tempfile.mkdtemp(prefix="gpu-brrr-kernels-")
os.makedirs(KERNEL_SOCKETS, exist_ok=True)
c.KernelManager.transport = "ipc"
c.KernelManager.ip = os.path.join(KERNEL_SOCKETS, f"kernel-{os.getpid()}")
# autograde: the notebook is not run (its cells would run unsandboxed as this user); FreshGrades
# grades its source in sandboxed processes and overwrites the graded cells' outputs before
# SaveAutoGrades reads them.
c.Autograde.autograde_preprocessors = nbgrader_plugin.autograde_preprocessors()
# A cell's metadata claiming an old nbgrader schema would stop the whole run, every later student
# ungraded: the course releases only the current schema, so any other is the learner's and dropped.
c.Autograde.sanitize_preprocessors = validate_cells.sanitize_preprocessors()
# validate: the graded cells get the same fresh grades before the kernel runs, and the kernel skips them.
c.Execute.on_notebook_start = nbgrader_plugin.fresh_grades_for_validate
# ... and it compares each notebook given (several at once too) with the release it is a copy of.
validate_cells.follow_validated_notebooks()
