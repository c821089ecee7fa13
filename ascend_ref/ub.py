"""The Unified Buffer: a flat little-endian ``uint8`` array, tensors into it, typed access.

>>> import numpy as np, ascend_ref as ar
>>> ub = ar.new_ub("atlas_a2", size=64)
>>> ub = ar.store(ub, 32, np.array([1.5, -2.0], np.float16))
>>> ar.load(ub, 32, "float16", 2).tolist()
[1.5, -2.0]
>>> ar.Tensor(32, "half", 16)
Tensor(addr=32, dtype='float16', size=16)  # bytes [32, 64)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Tuple, Union

import jax
import jax.numpy as jnp
import numpy as np
from numpy.typing import DTypeLike

from .batch_args import held_int, is_int
from .chips import ChipProfile
from .constraints import Code, ConstraintError

#: ``ub``: the unified buffer, a flat ``uint8`` array (numpy, or JAX: concrete or traced)
UBLike = Union[np.ndarray, jax.Array]

#: Element types the instructions know, by canonical name.
#: int64 / uint64: the Ascend 950 level-2 count form only (ReduceSum / ReduceMax / ReduceMin
#: 数据类型; docs/SEMANTICS.md §N); kernels carry such an element as two uint32 words (lo, hi)
DTYPES = ("float16", "float32", "int16", "uint16", "int32", "uint32", "int64", "uint64")
_ALIASES = {"half": "float16", "float": "float32", "fp16": "float16", "fp32": "float32",
            "int16_t": "int16", "uint16_t": "uint16", "int32_t": "int32", "uint32_t": "uint32",
            "int64_t": "int64", "uint64_t": "uint64"}
DataBlock = 32
Repeat = 256


def dtype_name(dtype: DTypeLike, api: str = "Tensor") -> str:
    """Canonical element type name (``"half"`` → ``"float16"``, ``np.float32`` → ``"float32"``);
    ``api``: the function an unsupported one is reported for."""
    if isinstance(dtype, str) and dtype in _ALIASES:
        return _ALIASES[dtype]
    if isinstance(dtype, str) and dtype in DTYPES:      # already canonical (numpy's .name
        return dtype                                    # is a Python property: ~5 us)
    try:
        name = np.dtype(dtype).name
    except TypeError:
        name = None
    if name not in DTYPES:
        raise ConstraintError(Code.DTYPE_UNSUPPORTED, api=api, param="dtype", value=dtype,
                              allowed=f"one of {DTYPES} (or half / float)")
    return name


def dtype_from_text(text: object) -> "str | None":
    """The canonical name of a dtype written in a file (dump, golden TOML, CLI): a name of
    :data:`DTYPES` or one of its aliases (``half``, ``fp16``, ``float``, ``int16_t``, ...);
    None for anything else. The one alias table for every reader."""
    if not isinstance(text, str):
        return None
    name = _ALIASES.get(text, text)
    return name if name in DTYPES else None


#: the aliases a file or an argument may use for a dtype, as text for messages
ALIASES_TEXT = ", ".join(_ALIASES)


def itemsize(dtype: DTypeLike) -> int:
    return np.dtype(dtype_name(dtype)).itemsize


def bits_dtype(dtype: DTypeLike) -> str:
    """The unsigned integer type holding an element's raw bits (uint16, uint32 or, on the
    host, uint64; inside a kernel an 8-byte element is two uint32 words: :func:`element_view`)."""
    return f"uint{8 * itemsize(dtype)}"


@dataclass(frozen=True)
class Tensor:
    """A UB tensor: byte address, element type and size in elements.

    Its *declared extent* is bytes ``[addr, addr + size * itemsize)``; every access of an
    instruction must stay inside it.

    >>> import ascend_ref as ar
    >>> t = ar.Tensor(1024, "half", 8)
    >>> t
    Tensor(addr=1024, dtype='float16', size=8)  # bytes [1024, 1040)
    >>> t.nbytes, t.end
    (16, 1040)
    """

    addr: int
    dtype: str
    size: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "dtype", dtype_name(self.dtype))
        for name in ("addr", "size"):
            v = getattr(self, name)
            if isinstance(v, jax.core.Tracer) or (
                    isinstance(v, (jax.Array, np.ndarray)) and np.ndim(v) == 0
                    and np.issubdtype(v.dtype, np.integer) and not _concrete_negative(v)):
                continue  # traced (jit / vmap) or an integer scalar array: checked by the rules
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) or v < 0:
                raise ConstraintError(Code.BAD_ARGUMENT, api="Tensor", param=name, value=v,
                                      allowed="a non-negative int")
            object.__setattr__(self, name, int(v))

    @property
    def itemsize(self) -> int:
        return np.dtype(self.dtype).itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.itemsize

    @property
    def end(self) -> int:
        """One past the last byte of the declared extent."""
        return self.addr + self.nbytes

    def __repr__(self) -> str:
        try:
            extent = f"  # bytes [{int(self.addr)}, {int(self.end)})"
        except Exception:  # traced
            extent = ""
        return f"Tensor(addr={self.addr}, dtype={self.dtype!r}, size={self.size}){extent}"


def _concrete_negative(v: Any) -> bool:
    return not isinstance(v, jax.core.Tracer) and int(v) < 0


def _tensor_flatten(t: "Tensor") -> Tuple[Tuple[Any, Any], str]:
    return (t.addr, t.size), t.dtype


def _tensor_unflatten(dtype: str, children: Tuple[Any, Any]) -> "Tensor":
    t = object.__new__(Tensor)
    object.__setattr__(t, "dtype", dtype)
    object.__setattr__(t, "addr", children[0])
    object.__setattr__(t, "size", children[1])
    return t


jax.tree_util.register_pytree_node(Tensor, _tensor_flatten, _tensor_unflatten)


def _ub_bytes(chip_or_size: Union[str, ChipProfile]) -> int:
    from .chips import chip as _chip

    return _chip(chip_or_size).ub_bytes


def new_ub(chip: Optional[Union[str, ChipProfile]] = None, size: int | None = None) -> jax.Array:
    """A zeroed UB: ``uint8[chip.ub_bytes]``, or ``uint8[size]`` when ``size`` is given.

    >>> import ascend_ref as ar
    >>> ar.new_ub("atlas_a2").shape, ar.new_ub(size=1024).shape, str(ar.new_ub(size=8).dtype)
    ((196608,), (1024,), 'uint8')
    """
    if size is None:
        if chip is None:
            raise ConstraintError(Code.BAD_ARGUMENT, api="new_ub", param="chip", value=None,
                                  allowed="a product id / profile, or size=N")
        size = _ub_bytes(chip)
    if not is_int(size) or not 0 < int(size) < 2**31:
        raise ConstraintError(Code.BAD_ARGUMENT, api="new_ub", param="size", value=size,
                              allowed="an int number of bytes in [1, 2**31 - 1] (the kernels "
                                      "address the UB in int32)")
    return jnp.zeros((int(size),), jnp.uint8)


def as_ub(ub: Any, api: str = "ub") -> jax.Array:
    """Check and convert a UB argument (numpy or JAX, 1-D uint8); ``api``: the function a
    BAD_ARGUMENT names."""
    if getattr(ub, "dtype", None) != np.uint8 or getattr(ub, "ndim", None) != 1:
        raise ConstraintError(Code.BAD_ARGUMENT, api=api, param="ub",
                              value=f"{type(ub).__name__} {ub.dtype} shape {ub.shape}"
                              if hasattr(ub, "dtype") and hasattr(ub, "shape") else
                              f"{type(ub).__name__} (not an array)",
                              allowed="a 1-D uint8 array (see ascend_ref.new_ub)")
    return ub if isinstance(ub, jax.Array) else jnp.asarray(ub)   # a JAX array (or tracer) as is


def _check_span(api: str, ub_len: int, addr: int, nbytes: int, size_param: str,
                shown: Any = None, item: int = 1) -> None:
    """``[addr, addr + nbytes)`` inside the UB; else UB_BOUNDS naming ``addr``, or
    ``size_param`` (its value ``shown``, ``item``-byte elements) when no address fits."""
    if not is_int(addr):
        raise ConstraintError(Code.BAD_ARGUMENT, api=api, param="addr", value=addr,
                              allowed="an int byte address")
    if nbytes > ub_len:               # no address fits: say so, not a negative range
        unit = "bytes" if item == 1 else f"elements of {item} B"
        raise ConstraintError(Code.UB_BOUNDS, api=api, param=size_param,
                              value=f"{nbytes} bytes" if shown is None else shown,
                              allowed=f"at most {ub_len // item} {unit} (a {ub_len}-byte UB)")
    if addr < 0 or addr + nbytes > ub_len:
        raise ConstraintError(Code.UB_BOUNDS, api=api, param="addr", value=addr,
                              allowed=f"[0, {ub_len - nbytes}] for {nbytes} bytes in a "
                                      f"{ub_len}-byte UB")


def store(ub: UBLike, addr: int, values: Any, *,
          dtype: Optional[DTypeLike] = None) -> jax.Array:
    """Write ``values`` at byte ``addr``; the element type decides the bytes.

    Without ``dtype``, ``values`` must be a numpy / JAX array of a 2- or 4-byte UB element
    type (float16, float32, int16, uint16, int32, uint32) or of raw bytes (uint8, int8);
    anything else — Python numbers or lists, float64, int64, bool arrays — is a BAD_ARGUMENT
    error, since its bytes would silently be 8-byte or 1-byte words (numpy's default integer
    is int64). The 8-byte element types (int64 / uint64, the Ascend 950 count form) are
    stored by name: ``store(ub, addr, x, dtype="int64")``. With ``dtype`` (an element type name
    such as ``"float16"`` or ``"half"``), ``values`` is converted to it first
    (``store(ub, 0, [1.5, 2], dtype="half")`` writes 4 bytes). Inside ``jax.jit`` /
    ``jax.vmap`` a traced array of one of the types above is written as its own bytes
    (``jax.vmap(lambda x: ar.store(ub, 0, x))(xs)``); ``dtype=`` needs concrete values.

    >>> import numpy as np, ascend_ref as ar
    >>> ub = ar.store(ar.new_ub(size=64), 32, np.array([1.5, -2], np.float16))
    >>> np.asarray(ub[32:36]).tolist()           # 0x3E00, 0xC000, little-endian
    [0, 62, 0, 192]
    >>> ar.load(ar.store(ub, 0, [7, -1], dtype="int32"), 0, "int32", 2).tolist()
    [7, -1]
    """
    ub, addr = as_ub(ub, "store"), held_int(addr)
    if isinstance(values, jax.core.Tracer):   # under jit / vmap: its own type's bytes
        return _store_traced(ub, addr, values, dtype)
    if dtype is not None:
        v = _converted(values, dtype_name(dtype, "store"))
    else:
        if not isinstance(values, (np.ndarray, jax.Array, np.generic)):
            raise ConstraintError(Code.BAD_ARGUMENT, api="store", param="values",
                                  value=type(values).__name__,
                                  allowed="a numpy / JAX array of a UB element type, or pass "
                                          "dtype= (e.g. store(ub, addr, [1.5, 2], "
                                          "dtype='float16'))")
        v = np.asarray(values)
        narrow = tuple(d for d in DTYPES if np.dtype(d).itemsize <= 4)
        if v.dtype.name not in narrow + ("uint8", "int8"):
            eight = v.dtype.name in ("int64", "uint64")
            raise ConstraintError(Code.BAD_ARGUMENT, api="store", param="values",
                                  value=str(v.dtype),
                                  allowed=f"an array of {', '.join(narrow)} (or uint8 / int8 "
                                          f"raw bytes); convert it or pass dtype=",
                                  hint=f"8-byte words on purpose: store(ub, addr, x, "
                                       f"dtype={v.dtype.name!r})" if eight else "")
    if v.dtype.byteorder == ">":               # the UB is little-endian: the same values
        v = v.astype(v.dtype.newbyteorder("<"))
    raw = np.ascontiguousarray(v).reshape(-1).view(np.uint8)
    _check_span("store", ub.shape[0], addr, raw.size, "values")
    return jax.lax.dynamic_update_slice(ub, jnp.asarray(raw), (int(addr),))


def _store_traced(ub: jax.Array, addr: int, values: Any, dtype: Optional[DTypeLike]) -> jax.Array:
    """:func:`store` of traced values (inside ``jax.jit`` / ``jax.vmap``): their bytes as
    their element type has them; ``dtype=`` cannot judge values it cannot see."""
    narrow = tuple(d for d in DTYPES if np.dtype(d).itemsize <= 4) + ("uint8", "int8")
    name = np.dtype(values.dtype).name
    if dtype is not None or name not in narrow:
        raise ConstraintError(Code.BAD_ARGUMENT, api="store", param="values",
                              value=f"a traced {name} array"
                                    + (f" with dtype={dtype!r}" if dtype is not None else ""),
                              allowed=f"under jit / vmap: an array of {', '.join(narrow)} "
                                      f"and no dtype= (convert it with .astype first: "
                                      f"traced values cannot be checked against dtype=)")
    flat = values.reshape(-1)
    raw = jax.lax.bitcast_convert_type(flat, jnp.uint8).reshape(-1)   # little-endian words
    _check_span("store", ub.shape[0], addr, int(raw.size), "values")
    return jax.lax.dynamic_update_slice(ub, raw, (int(addr),))


def _converted(values: Any, name: str) -> np.ndarray:
    """``values`` (numbers) as ``name`` for :func:`store`: integers only where every value is
    a whole number the type holds; floats rounded to the nearest, but a finite value that
    would become an infinity is rejected; strings, bools and other objects are rejected."""
    def bad(why: str) -> ConstraintError:
        try:                          # a ragged list has no size: shown by its type
            shown = values if np.size(values) <= 8 else type(values).__name__
        except ValueError:
            shown = type(values).__name__
        return ConstraintError(Code.BAD_ARGUMENT, api="store", param="values", value=shown,
                               allowed=f"numbers {name} holds ({why})")
    try:
        given = np.asarray(values)
    except (TypeError, ValueError) as e:
        raise bad(str(e)) from None
    if given.dtype.kind not in "iuf":
        raise bad(f"got {given.dtype} values; pass ints or floats")
    target = np.dtype(name)
    with np.errstate(all="ignore"):
        if target.kind in "iu":
            info = np.iinfo(target)
            if given.dtype.kind == "f" and \
                    not np.all(np.isfinite(given) & (given == np.floor(given))):
                raise bad("a whole number each")
            lo, hi = (int(given.min()), int(given.max())) if given.size else (0, 0)
            if lo < info.min or hi > info.max:
                raise bad(f"each in [{info.min}, {info.max}]")
            return given.astype(target)
        out = given.astype(target)
        if np.any(np.isinf(out) & np.isfinite(given)):
            raise bad(f"each finite value within {target.name}'s range "
                      f"(±{float(np.finfo(target).max)})")
        return out


def load(ub: UBLike, addr: int, dtype: DTypeLike, count: int) -> np.ndarray:
    """Read ``count`` elements of ``dtype`` at byte ``addr`` (a numpy array, bits preserved).

    ``count`` must be a non-negative int (BAD_ARGUMENT otherwise: no float, string, bool or
    negative count); the bytes read must lie inside the UB (UB_BOUNDS). ``addr`` and
    ``count`` may be concrete 0-d integer arrays, judged as the int they hold. It returns
    numpy, so it reads a concrete UB only: inside ``jax.jit`` / ``jax.vmap`` a traced UB is
    BAD_ARGUMENT, which says how to read it there.

    >>> import numpy as np, ascend_ref as ar
    >>> ub = ar.store(ar.new_ub(size=64), 0, np.array([1.0, -0.0], np.float32))
    >>> [hex(w) for w in ar.load(ub, 0, "uint32", 2).tolist()], ar.load(ub, 4, "float32", 1)
    (['0x3f800000', '0x80000000'], array([-0.], dtype=float32))
    """
    ub, addr, count = as_ub(ub, "load"), held_int(addr), held_int(count)
    name = dtype_name(dtype, "load")
    if isinstance(ub, jax.core.Tracer):
        raise ConstraintError(Code.BAD_ARGUMENT, api="load", param="ub",
                              value="a traced uint8 array (inside jax.jit / jax.vmap)",
                              allowed=f"a concrete UB: load returns numpy. Call it on the "
                                      f"result outside jit / vmap, or read the traced UB with "
                                      f"jax.lax.bitcast_convert_type(ub[addr:addr + count * "
                                      f"{np.dtype(name).itemsize}].reshape(count, "
                                      f"{np.dtype(name).itemsize}), '{name}')")
    if not is_int(count) or count < 0:
        raise ConstraintError(Code.BAD_ARGUMENT, api="load", param="count", value=count,
                              allowed="a non-negative int number of elements")
    n = int(count) * np.dtype(name).itemsize
    _check_span("load", ub.shape[0], addr, n, "count", count, np.dtype(name).itemsize)
    return np.asarray(ub[int(addr):int(addr) + n]).view(name).copy()


# ---- typed views used by the kernels (inside jit) -------------------------------------------

def element_view(ub: jax.Array, size: int) -> jax.Array:
    """The UB as unsigned words of ``size`` bytes (element k = bytes [k*size, (k+1)*size)).

    ``size`` 8: ``(n, 2)`` uint32, the (lo, hi) words of each element (JAX runs with x64
    disabled: no uint64 inside a kernel)."""
    n = ub.shape[0]
    pad = (-n) % size
    if pad:
        ub = jnp.concatenate([ub, jnp.zeros((pad,), jnp.uint8)])
    words = ub.reshape(-1, size)
    if size == 1:
        return words[:, 0]
    return words_of(words, size)


def words_of(raw: jax.Array, size: int) -> jax.Array:
    """Elements of ``size`` bytes from raw bytes or narrower unsigned words whose last axis
    holds one element (``size`` bytes in all): ``(...)`` of ``uint{8 size}``, or for
    ``size`` 8 ``(..., 2)`` uint32 (lo, hi)."""
    if size == 8:
        if raw.dtype == jnp.uint32:
            return raw
        return jax.lax.bitcast_convert_type(raw.reshape(raw.shape[:-1] + (2, 4)), jnp.uint32)
    return jax.lax.bitcast_convert_type(raw, jnp.dtype(f"uint{8 * size}"))


def to_bytes(bits: jax.Array, size: int) -> jax.Array:
    """Little-endian bytes of unsigned words: shape (..., ) → (..., size)."""
    shifts = jnp.arange(size, dtype=jnp.uint32) * 8
    return ((bits.astype(jnp.uint32)[..., None] >> shifts) & 0xFF).astype(jnp.uint8)


def scatter_bytes(ub: jax.Array, addr: jax.Array, data: jax.Array, valid: jax.Array) -> jax.Array:
    """Write bytes ``data`` at byte addresses ``addr`` where ``valid`` (later entries win).

    Callers bounds-check every valid address first and order the tables so that no two valid
    entries share an address; invalid entries are sent one past the end and dropped.
    """
    n = ub.shape[0]
    target = jnp.where(valid, addr, n).reshape(-1)
    return ub.at[target].set(data.reshape(-1), mode="drop", unique_indices=False)


def mark(n: int, addr: jax.Array, valid: jax.Array) -> jax.Array:
    """Boolean byte mask of length ``n`` with the valid addresses set."""
    target = jnp.where(valid, addr, n).reshape(-1)
    return jnp.zeros((n,), bool).at[target].set(True, mode="drop")

