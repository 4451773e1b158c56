"""The scalar double-double functions of :mod:`symgrad.ir.ddmath` as Numba functions, compiled once.

A generated module that symgrad loads imports the ``_dd_*`` functions its double-double region
helpers call from here, as it imports :mod:`symgrad.emit.vecmath`: compiled on first use in a
process and cached on disk by Numba (``cache=True``).  Copied into each module, they were compiled
again for every program: the sixteen that a region with exp and cos calls took 4-5 s of a build.
Standalone modules (``symgrad compile``) still copy the text they call.

The text is ddmath's copied block exactly as modules copy it (:func:`.prelude.dd_library_text`),
compiled under ddmath's file name: Numba's cache entries are keyed to that file, so an edit of
ddmath.py makes them stale.
"""
import math  # noqa: F401 - the block's functions use it

import numba  # noqa: F401 - their decorator

from ..ir import ddmath as _ddmath
from .prelude import dd_library_text

exec(compile(dd_library_text(), _ddmath.__file__, "exec"), globals())  # noqa: S102 - symgrad's own text
