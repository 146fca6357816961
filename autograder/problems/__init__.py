"""Every act's problem definitions; importing this package registers them."""

from . import act0  # noqa: F401
