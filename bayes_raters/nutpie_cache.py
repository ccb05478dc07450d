"""nutpie's compiled model with its C entry points kept in PyTensor's on-disk Numba cache.

``nutpie.compile_pymc_model`` compiles the model's log density and gradient twice: PyTensor
compiles the graph into one Numba function (kept on disk, so a later process loads it), and
nutpie then wraps it in a ``numba.cfunc`` that its Rust sampler calls. That wrapper closes over
the data arrays and random keys, so Numba cannot cache it, and LLVM links and optimises the
whole graph into it again in every process: most of a small model's fit and, on the judges
model, most of its compile (``models/implementation.md`` gives the figures).

:func:`compile_nutpie` builds the same wrappers from generated source that names the data only
through the pointer table nutpie hands to every call, registers that source with PyTensor's
cache locator under a key of the source and of the wrapped graph's own cache key, and compiles
it with ``cache=True``: a later process (or a second fit of the same design with other data)
loads the wrapper's machine code instead of compiling it. The log density, gradient and
draws are the same machine code whether compiled or loaded. Where PyTensor cannot cache the
graph itself (no key), nutpie's own compile runs.

The pointer table (``user_data``) is a flat ``uint64`` vector: for each shared variable in
the graph's order, its data address, then its shape.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib

import numpy as np

#: Bumped when the generated source or the table's layout changes (a new cache key).
WRAPPER_VERSION = 2

#: The helpers of ``nutpie.compile_pymc`` this module builds on (nutpie 0.16); where one is
#: missing, :func:`compile_nutpie` leaves the compile to nutpie.
NUTPIE_HELPERS = ("_make_functions", "_wrap_with_lock", "_prepare_dims_and_coords", "address_as_void_pointer", "CompiledPyMCModel")

_LOGP = '''
def nutpie_logp(dim, x_, out_, logp_, user_data_):
    if dim != {n_dim}:
        return -1
    try:
{arrays}
        x = numba.carray(x_, ({n_dim},))
        out = numba.carray(out_, ({n_dim},))
        logp = numba.carray(logp_, ())
        logp_val, grad = inner(x{args})
        logp[()] = logp_val
        out[...] = grad
        if not np.all(np.isfinite(out)):
            return 3
        if not np.isfinite(logp_val):
            return 4
    except Exception:  # noqa: BLE001
        return 1
    return 0
'''

_EXPAND = '''
def nutpie_expand(dim, expanded, x_, out_, user_data_):
    if dim != {n_dim}:
        return -1
    if expanded != {n_expanded}:
        return -1
    try:
{arrays}
        x = numba.carray(x_, ({n_dim},))
        out = numba.carray(out_, ({n_expanded},))
        (values,) = inner(x{args})
        out[...] = values
    except Exception:  # noqa: BLE001
        return -2
    return 0
'''


def pointer_table(arrays: list[np.ndarray]) -> np.ndarray:
    """The flat ``uint64`` table of ``arrays``: each one's address, then its shape."""
    words = []
    for array in arrays:
        words.append(array.ctypes.data)
        words.extend(array.shape)
    return np.array(words or [0], dtype=np.uint64)


def table_offsets(arrays: list[np.ndarray]) -> list[int]:
    """Where each of ``arrays`` starts in its :func:`pointer_table`."""
    return list(np.cumsum([0] + [1 + array.ndim for array in arrays])[:-1])


def wrapper_source(template: str, arrays: list[np.ndarray], offsets: list[int], n_meta: int, **sizes: int) -> str:
    """The wrapper's source: ``template`` with the pointer table (``n_meta`` words) viewed as
    ``meta`` and one line per shared array that views it through the table at ``offsets`` (its
    dtype and rank fixed, its shape read at each call)."""
    lines = [f"        meta = numba.carray(user_data_, ({n_meta},), np.uint64)"]
    for i, (array, offset) in enumerate(zip(arrays, offsets, strict=True)):
        shape = "".join(f"int(meta[{offset + 1 + k}]), " for k in range(array.ndim))
        lines.append(f"        a{i} = numba.carray(address_as_void_pointer(meta[{offset}]), ({shape}), np.{np.dtype(array.dtype).name})")
    args = "".join(f", a{i}" for i in range(len(arrays)))
    return template.format(arrays="\n".join(lines), args=args, **sizes)


def cached_cfunc(source: str, name: str, inner, signature):
    """``numba.cfunc(signature, cache=True)`` of the function ``name`` in ``source``, which calls
    ``inner`` (a PyTensor-compiled Numba function); None where PyTensor keeps no cache key for
    ``inner`` (its compiled code is not on disk, so neither can the wrapper be)."""
    import numba
    import pytensor
    from nutpie.compile_pymc import address_as_void_pointer
    from pytensor.link.numba.cache import CACHED_SRC_FUNCTIONS, compile_numba_function_src

    inner_key = CACHED_SRC_FUNCTIONS.get(getattr(inner, "py_func", None))
    if inner_key is None:
        return None
    text = f"{WRAPPER_VERSION}|{inner_key}|{pytensor.config.numba__fastmath}|{source}"
    key = hashlib.sha256(text.encode()).hexdigest()
    # ``__name__``: Numba rebuilds a cached function's environment from its module's name.
    function = compile_numba_function_src(source, name, global_env={"__name__": __name__, "numba": numba, "np": np, "inner": inner,
                                                                    "address_as_void_pointer": address_as_void_pointer}, cache_key=key)
    try:
        return numba.cfunc(signature, cache=True)(function)
    except Exception:  # noqa: BLE001 - an unreadable cache entry: nutpie's own compile serves
        return None


def compile_nutpie(model, *, var_names=None, initial_points=None):
    """What ``nutpie.compile_pymc_model(model, backend="numba", var_names=...,
    initial_points=...)`` returns, with the C wrappers loaded from the on-disk cache where they
    were compiled before (module docstring); nutpie's own compile where the graph has no cache
    key. The model's shared variables are read through the pointer table at each call, so
    :meth:`with_data` swaps data without a compile."""
    from nutpie import compile_pymc as npc
    from pymc.initial_point import make_initial_point_fn

    if not all(hasattr(npc, name) for name in NUTPIE_HELPERS):  # another nutpie: its own compile
        return nutpies_own_compile(model, var_names, initial_points)
    initial_point_fn = npc._wrap_with_lock(make_initial_point_fn(model=model, overrides=initial_points, default_strategy="support_point",
                                                                 jitter_rvs=set(model.free_RVs), return_transformed=True))
    n_dim, n_expanded, logp_pt, expand_pt, point_fn, shape_info, renamed = npc._make_functions(
        model, mode="NUMBA", compute_grad=True, join_expanded=True, pymc_initial_point_fn=initial_point_fn, var_names=var_names)
    shared = list(dict.fromkeys([*logp_pt.get_shared(), *expand_pt.get_shared()]))
    arrays = {var: _frozen(var.get_value()) for var in shared}
    table = pointer_table(list(arrays.values()))
    offsets = dict(zip(shared, table_offsets(list(arrays.values())), strict=True))

    def source(template, variables, **sizes):
        return wrapper_source(template, [arrays[v] for v in variables], [offsets[v] for v in variables], len(table), **sizes)

    logp_c = cached_cfunc(source(_LOGP, logp_pt.get_shared(), n_dim=n_dim), "nutpie_logp", logp_pt.vm.jit_fn, _LOGP_SIG())
    expand_c = cached_cfunc(source(_EXPAND, expand_pt.get_shared(), n_dim=n_dim, n_expanded=n_expanded), "nutpie_expand",
                            expand_pt.vm.jit_fn, _EXPAND_SIG())
    if logp_c is None or expand_c is None:
        return nutpies_own_compile(model, var_names, initial_points)
    dims, coords = npc._prepare_dims_and_coords(model, shape_info, renamed)
    keys = {var: f"s{i}" for i, var in enumerate(shared)}
    return cached_model_class()(
        _n_dim=n_dim, dims=dims, _coords=coords, _shapes={name: tuple(shape) for name, _, shape in zip(*shape_info)},
        compiled_logp_func=logp_c, compiled_expand_func=expand_c, initial_point_func=point_fn,
        shared_data={keys[v]: array for v, array in arrays.items()}, shared_var_keys=keys, user_data=table,
        n_expanded=n_expanded, shape_info=shape_info, logp_func=logp_pt, expand_func=expand_pt, reparameterized_names=renamed,
    )


def nutpies_own_compile(model, var_names=None, initial_points=None):
    """``nutpie.compile_pymc_model`` with Numba, as ``pm.sample(nuts_sampler="nutpie")`` calls it."""
    import nutpie

    return nutpie.compile_pymc_model(model, var_names=var_names, backend="numba",
                                     **({"initial_points": initial_points} if initial_points else {}))


def _frozen(value) -> np.ndarray:
    array = np.array(value, order="C", copy=True)
    array.flags.writeable = False
    return array


def _LOGP_SIG():
    import numba.types as t

    return t.int64(t.uint64, t.CPointer(t.double), t.CPointer(t.double), t.CPointer(t.double), t.voidptr)


def _EXPAND_SIG():
    import numba.types as t

    return t.int64(t.uint64, t.uint64, t.CPointer(t.double), t.CPointer(t.double), t.voidptr)


@functools.cache
def cached_model_class():
    """The class of :func:`compile_nutpie`'s models (defined on first use: nutpie imports late)."""
    from nutpie.compile_pymc import CompiledPyMCModel

    @dataclasses.dataclass(frozen=True)
    class CachedPyMCModel(CompiledPyMCModel):
        """nutpie's compiled PyMC model whose two wrappers read their data through one pointer
        table (:func:`pointer_table` of ``shared_data`` in order): ``user_data``."""

        def with_data(self, **updates):
            """The model with the shared variables named in ``updates`` given new values (same
            dtype and rank; any length): no compile."""
            shared = dict(self.shared_data)
            by_name = {var.name: key for var, key in self.shared_var_keys.items()}
            for name, value in updates.items():
                if name not in by_name:
                    raise KeyError(f"Unknown shared variable: {name}")
                old = shared[by_name[name]]
                new = _frozen(np.asarray(value, dtype=old.dtype))
                if new.ndim != old.ndim:
                    raise ValueError(f"Shared variable {name} must have rank {old.ndim}")
                shared[by_name[name]] = new
            return dataclasses.replace(self, shared_data=shared, user_data=pointer_table(list(shared.values())))

    return CachedPyMCModel

