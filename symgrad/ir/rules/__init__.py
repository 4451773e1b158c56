"""Importing this package registers every primitive in :data:`symgrad.ir.ops.REGISTRY`."""
from . import elementwise, structural  # noqa: F401
from . import linalg, norms  # noqa: F401
