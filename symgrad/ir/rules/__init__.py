"""Importing this package registers every primitive in :data:`symgrad.ir.ops.REGISTRY`."""
from . import elementwise, special, structural  # noqa: F401
