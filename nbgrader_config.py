"""nbgrader: solutions/ is the source folder, exercises/ the release folder (committed, for Colab).

`make exercises` regenerates exercises/ from solutions/; the tests check they agree.
"""

import os

c = get_config()  # noqa: F821 -- injected by nbgrader when it loads this file

c.CourseDirectory.root = os.path.dirname(os.path.abspath(__file__))
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "exercises"
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__"]
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
# Grading re-runs each exercise in a child process, compiles kernels and, on a GPU, times them.
c.Execute.timeout = 900
c.Execute.interrupt_on_timeout = True
