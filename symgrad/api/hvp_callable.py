"""A compiled Hessian-vector product callable: :func:`symgrad.hessian_vector_product`.

``sg.hvp(f, (x,), (v,))`` finds its compiled kernel on every call; a user who multiplies by
the Hessian many times (a Newton-CG or trust-region solver) wants what a JAX user builds with
``jax.jit(lambda x, v: jax.jvp(jax.grad(f), (x,), (v,))[1])``: a function of ``(x, v)`` made
once.  :class:`HvpCallable` is that function.  Its arguments are those of the HVP kernel
(the function's arguments, then one tangent per differentiated argument), so once a call has
shown that the generated entry point returns exactly what the user gets (every argument a plain
number or array, no captured values to watch), calls go straight to that entry point, as for
``grad`` (:class:`symgrad.api.compiled.Compiled`); anything else (pytrees, another core shape, a
Dask array) comes back to :meth:`HvpCallable._call` through the entry point's fallback.
"""
from __future__ import annotations

import functools

import numpy as np

from ..errors import format_error
from ..emit.names import spec_name
from ..trace.pytree import same_structure, tree_flatten, tree_text, tree_unflatten
from ..trace.tracer import Tracer
from ..runtime.gufunc import PLAIN_TYPES
from .argnums import normalize_argnums
from .compiled import Compiled, run_entry

__all__ = ["HvpCallable"]


class HvpCallable:
    """State of ``hessian_vector_product(fun, argnums, signature)``; users get :attr:`public`.

    Args:
      fun: the function (one scalar core output).
      argnums: int or tuple of ints, validated at the first call (when the number of arguments is known).
      signature, stabilize, tiered: as for :func:`symgrad.jit`.
    """

    def __init__(self, fun, argnums=0, signature=None, *, stabilize=True, tiered=None):
        single = isinstance(argnums, (int, np.integer)) and not isinstance(argnums, bool)
        if not single and not (isinstance(argnums, (tuple, list)) and argnums):
            raise TypeError(f"argnums must be an int or a non-empty tuple of ints; got {argnums!r}.\n"
                            f"  Do instead: argnums=0, or argnums=(0, 1) for several arguments.")
        self.argnums = int(argnums) if single else tuple(argnums)
        self.n_tangents = 1 if single else len(argnums)
        self.kern = Compiled(fun, "hvp", signature, self.argnums, stabilize, tiered=tiered)
        self.name = self.kern.name
        call = self._call

        def hvp_call(*args, **kwargs):
            if kwargs:
                raise TypeError(format_error(
                    f"hessian_vector_product of {self.name} takes positional arguments only (got "
                    f"{', '.join(map(str, kwargs))} by keyword)",
                    "h(*args, *tangents): the function's arguments, then one tangent per differentiated argument",
                    "pass every argument positionally"))
            return call(args)
        self.public = functools.partial(hvp_call)
        self.public.__dict__.update(
            __doc__=f"symgrad.hessian_vector_product of {self.name}: h(*args, *tangents) = H(args) @ tangents",
            compiled=self.kern, fn=fun, kind="hessian_vector_product", wait_compiled=self.kern.wait_compiled)

    def __call__(self, *args):
        return self.public(*args)

    def _call(self, args: tuple, _routed: bool = False):
        """The general path: split primals from tangents, check them, run the kernel, rebuild pytrees."""
        args = tuple(args)
        k = self.n_tangents
        if len(args) <= k:
            raise TypeError(format_error(
                f"hessian_vector_product of {self.name}: got {len(args)} argument(s), but it takes the "
                f"function's arguments and then {k} tangent(s)",
                "h(*args, *tangents) returns H(args) @ tangents, one tangent per differentiated argument",
                f"call h(x, v) (or h(*args, v_0, ..., v_{k - 1}) for argnums={self.argnums!r})"))
        primals, tangents = args[:-k], args[-k:]
        nums, single = normalize_argnums(self.argnums, len(primals), self.name)
        wrt = tuple(primals[a] for a in nums)
        _, w_tree = tree_flatten(wrt)
        t_leaves, t_tree = tree_flatten(tangents)
        if not same_structure(w_tree, t_tree):
            raise ValueError(format_error(
                f"hessian_vector_product of {self.name}: tangents have pytree structure "
                f"{tree_text(t_tree)} but the differentiated arguments have {tree_text(w_tree)}",
                "each differentiated argument needs a tangent of its structure, in argnums order",
                "give one tangent per argnums argument, shaped like it"))
        p_leaves, in_tree = tree_flatten(primals)
        if any(isinstance(leaf, Tracer) for leaf in (*p_leaves, *t_leaves)):
            raise TypeError(format_error(
                f"hessian_vector_product of {self.name} was called inside another symgrad transformation",
                "the compiled HVP callable runs compiled code on numbers; it is not traced through",
                "call symgrad.hvp(f, primals, tangents) inside the traced function, or differentiate "
                "symgrad.grad(f) with jvp"))
        entry = self.kern.entry_for(primals, p_leaves, in_tree)
        leaves = [leaf if isinstance(leaf, PLAIN_TYPES) or type(leaf).__module__.startswith("dask.")
                  else np.asarray(leaf) for leaf in (*p_leaves, *t_leaves)]
        flat = run_entry(entry, leaves, self.name)
        n_out = sum(in_tree.children[a].num_leaves for a in nums)
        flat = [flat] if n_out == 1 else list(flat)
        trees, start = [], 0
        for a in nums:
            child = in_tree.children[a]
            trees.append(tree_unflatten(child, flat[start:start + child.num_leaves]))
            start += child.num_leaves
        if not _routed and entry.tiered is None:
            self._try_route(entry, in_tree, nums, single, leaves)
        return trees[0] if single else tuple(trees)

    def _try_route(self, entry, in_tree, nums, single, leaves) -> None:
        """Send calls straight to the generated entry point when it returns what :meth:`_call`
        returns: every argument one plain number or array, one output (an int ``argnums``) or a
        tuple of several, and nothing captured from outside the arguments (those are checked on
        every call, in :meth:`Compiled.entry_for`)."""
        if (self.kern._captures or not all(c.kind == "leaf" for c in in_tree.children)
                or not (single or len(nums) > 1) or not all(isinstance(leaf, PLAIN_TYPES) for leaf in leaves)):
            return
        spec = getattr(entry.fn, "__globals__", {}).get(spec_name(getattr(entry.fn, "__name__", "")))
        if spec is None or entry.fn.__code__.co_argcount != len(leaves):
            return
        spec.fallback = lambda args: self._call(args, _routed=True)
        self.public.__setstate__((entry.fn, (), {}, self.public.__dict__))

