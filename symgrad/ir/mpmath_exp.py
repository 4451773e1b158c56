"""mpmath's exp for arguments of large magnitude, by reduction with ln 2.

``mpmath.exp(-5e599)`` (the normal density at x = -1e300) takes about a millisecond in
``mpf_pow_int``; ``2**n exp(v - n ln 2)``, with ``ln 2`` to ``log2|v| + 16`` extra bits so that
``v - n ln 2`` keeps the working precision, takes tens of microseconds.  Shared by the op table's
mpmath facets (:mod:`symgrad.ir.rules.special`) and the stabiliser's reference evaluator
(:mod:`symgrad.stabilize.reference`).
"""
from __future__ import annotations

import mpmath

__all__ = ["exp_reduced"]


def exp_reduced(v):
    """exp(v) at mpmath's working precision for an mpf ``v``; by ln 2 reduction once |v| > 2**12."""
    if type(v) is mpmath.mpf and v._mpf_[1] and v._mpf_[2] + v._mpf_[3] > 12:
        mag = v._mpf_[2] + v._mpf_[3]
        with mpmath.extraprec(mag + 16):
            n = int(mpmath.floor(v / mpmath.ln2))
            r = v - n * mpmath.ln2
        return mpmath.ldexp(mpmath.exp(r), n)
    return mpmath.exp(v)
