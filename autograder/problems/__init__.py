"""Every act's problem definitions; importing this package registers them: the modules listed here,
and every folder that holds a ``spec.toml`` (autograder.problems.folders)."""

from ..problem import register
from . import act2, folders  # noqa: F401
from .act1 import exact  # noqa: F401
from .act6 import block_manager as act6_block_manager  # noqa: F401
from .act6 import exact as act6_exact  # noqa: F401
from .act6 import scheduler as act6_scheduler  # noqa: F401

for _folder in folders.spec_folders():
    register(folders.load(_folder))
