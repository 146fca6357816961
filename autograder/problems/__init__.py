"""Every act's problem definitions; importing this package registers them: the modules listed here,
and every folder that holds a ``spec.toml`` (autograder.problems.folders)."""

from ..problem import register
from . import act2, folders  # noqa: F401
from .act1 import exact  # noqa: F401
from .act3 import compile_stream, cuda_graph, profiling  # noqa: F401

for _folder in folders.spec_folders():
    register(folders.load(_folder))
