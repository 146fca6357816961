# expect: ERROR REJECT
# problem: act6.block_manager
# devices: cpu cuda
# entry: BlockManager
# says: Permission denied
# Cheat: the reference solution's notebook is read from disk (the repository's solutions/ beside the
# package) and its solution cells run, so the class graded is the reference's.
import json
import os

import autograder

_notebook = os.path.join(os.path.dirname(autograder.__file__), "..", "solutions", "act6-serving", "block_manager.ipynb")
_cells = json.load(open(_notebook, encoding="utf-8"))["cells"]
_code = "\n".join("".join(c["source"]) for c in _cells if c.get("metadata", {}).get("nbgrader", {}).get("solution"))
_namespace: dict = {}
exec(compile(_code, "stolen_solution.py", "exec"), _namespace)


class BlockManager(_namespace["BlockManager"]):
    """The reference's class, under the name the grader asks for."""
