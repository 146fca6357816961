"""Every act's problem definitions; importing this package registers them."""

from . import act0, act1, act2, act4_sgemm, act4_triton  # noqa: F401
