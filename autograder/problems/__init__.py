"""Every act's problem definitions; importing this package registers every folder that holds a
``spec.toml`` (autograder.problems.folders)."""

from ..problem import register
from . import folders
from .act3 import compile_stream, cuda_graph, memory, profiling  # noqa: F401
from .act5 import collectives, data_parallel, tensor_parallel  # noqa: F401
from .act6 import block_manager as act6_block_manager  # noqa: F401
from .act6 import scheduler as act6_scheduler  # noqa: F401

for _folder in folders.spec_folders():
    register(folders.load(_folder))
