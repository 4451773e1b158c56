"""Importing this package registers every primitive in :data:`symgrad.ir.ops.REGISTRY`."""
from . import elementwise, shift, special, structural  # noqa: F401
from . import gather, reductions  # noqa: F401  (NumPy vocabulary primitives)
from . import linalg, norms  # noqa: F401
from . import ddregion  # noqa: F401,E402  (last: its derivative builds nodes of every other op)
