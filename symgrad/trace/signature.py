"""NumPy generalized-ufunc signatures: ``"(n),(n)->()"``.

Every argument has a *core* shape named by the signature; extra leading
dimensions are batch dimensions that compiled functions loop over.  With no
signature, every argument and output is a scalar core and functions broadcast
elementwise like ufuncs.  The grammar is NumPy's; parsing uses NumPy's own
parser (the one ``np.vectorize`` uses).
"""
from __future__ import annotations

from dataclasses import dataclass

from numpy.lib._function_base_impl import _parse_gufunc_signature

from ..errors import ShapeError, SignatureError

__all__ = ["Signature", "parse_signature"]


@dataclass(frozen=True)
class Signature:
    """Parsed signature: one tuple of dimension names per input and per output."""

    text: str
    inputs: tuple[tuple[str, ...], ...]
    outputs: tuple[tuple[str, ...], ...]

    def bind(self, shapes: list[tuple[int, ...]], fn_name: str) -> tuple[list[tuple[int, ...]], dict]:
        """Core shape of each argument and the size of every named dimension.

        Raises:
          SignatureError: wrong number of arguments, or an argument of too low rank.
          ShapeError: one dimension name bound to two different sizes.
        """
        if len(shapes) != len(self.inputs):
            raise SignatureError(
                f"{fn_name}: signature {self.text!r} declares {len(self.inputs)} input(s) but "
                f"{len(shapes)} argument(s) were given.\n  Do instead: give one core per argument, "
                f"e.g. \"(n),()->()\" for f(x, t) with a vector x and a scalar t.")
        sizes: dict[str, int] = {}
        cores = []
        for k, (shape, dims) in enumerate(zip(shapes, self.inputs)):
            if len(shape) < len(dims):
                raise SignatureError(
                    f"{fn_name}: argument {k} has shape {shape} but signature {self.text!r} needs "
                    f"core dimensions {dims}.\n  Do instead: pass an array with at least {len(dims)} "
                    f"dimension(s), or fix the signature.")
            core = tuple(shape[len(shape) - len(dims):])
            for name, size in zip(dims, core):
                if name.isdigit() and int(name) != size:  # NumPy's fixed-size core dimension
                    raise ShapeError(
                        f"{fn_name}: argument {k} has shape {shape}, but signature {self.text!r} fixes that "
                        f"core dimension to {name}.\n  Do instead: pass an array whose trailing dimensions "
                        f"match, or name the dimension (e.g. \"(n)\") to accept any size.")
                if sizes.setdefault(name, size) != size:
                    raise ShapeError(
                        f"{fn_name}: core dimension {name!r} is {sizes[name]} in one argument and {size} "
                        f"in argument {k} (shape {shape}) for signature {self.text!r}.\n  Do instead: "
                        f"make the sizes agree.")
            cores.append(core)
        return cores, sizes


def parse_signature(text: str | None, fn_name: str = "function") -> Signature | None:
    """Parse a gufunc signature, or return None for the default scalar-core model.

    Raises:
      SignatureError: the text is not a valid gufunc signature.
    """
    if text is None:
        return None
    if not isinstance(text, str):
        raise SignatureError(f"{fn_name}: signature must be a string like \"(n)->()\"; got {type(text).__name__}")
    try:
        ins, outs = _parse_gufunc_signature(text.replace(" ", ""))
    except ValueError:
        raise SignatureError(
            f"{fn_name}: {text!r} is not a valid gufunc signature.\n  Do instead: write core dimensions "
            f"per argument, e.g. \"(n)->()\" or \"(d),(d),(),()->()\".") from None
    return Signature(text, tuple(map(tuple, ins)), tuple(map(tuple, outs)))
