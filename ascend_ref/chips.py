"""Product (chip) profiles: every behavioural difference between products, as data.

One TOML file per product lives in ``configs/chips/``; :func:`chip` loads it into a frozen
:class:`ChipProfile`. Instruction code asks the profile (``chip.dtypes(api)``,
``chip.block_fill``, ...) and never tests a product id.

A top-level key that is not one of the shared fields below is a *fact* of one instruction:
the instruction declares it (:class:`ascend_ref.registry.ProfileField`, with its allowed
values; loading a profile checks it against them -- an undeclared key or a value outside
them is a :class:`ProfileError` naming the file, as is any malformed shared field); host
code reads it as ``chip.fact(name)`` -- or as an attribute, ``chip.<name>``, like a shared
field -- and a kernel as a traced parameter (``ProfileField.holds(p, value)``).

>>> import ascend_ref as ar
>>> p = ar.chip("atlas_a2")
>>> p.ub_bytes, p.block_fill, "minmax_rules" in p.assumed
(196608, 'keep', True)
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Tuple, Union

import numpy as np

from ._toml import tomllib
from .constraints import Code, ConstraintError



def __getattr__(name: str) -> Tuple[str, ...]:
    """``API_NAMES``: every API name the product profiles list under ``[apis]``, in the order
    the files list them (the instructions themselves are :func:`ascend_ref.registry.names`;
    the registry checks that every name here is one of them)."""
    if name == "API_NAMES":
        out: list = []
        for c in chips():
            out += [a for a in chip(c).apis if a not in out]
        return tuple(out)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: zero_mask / zero_repeat rules and ReduceDataBlock empty-block rules; a kernel reads a
#: profile's rule as its index here (``Params.chip.zero_mask``, ...: :mod:`ascend_ref.params`)
ZERO_RULES = ("nop", "undefined", "error")
FILL_RULES = ("keep", "fill", "undefined")
#: TIK vec_reduce_add accumulation orders (docs/SEMANTICS.md §F): "tree" (seed 003),
#: "group255" (Atlas A2 page), "odd_even" (Atlas 200I/500 A2 page)
ADD_ORDERS = ("tree", "group255", "odd_even")
#: the shared top-level keys of a profile; any other key is an instruction's fact
SHARED_KEYS = ("id", "product", "ub_bytes", "saturate_default", "fp32_ftz", "default_nan_f16",
               "default_nan_f32", "zero_mask", "zero_repeat", "dst_rep_stride_zero",
               "block_fill", "apis", "orders", "block_fill_values", "assumed", "saturate_only",
               "add_order", "minmax_nan", "dst_dtypes")


class _Facts:
    """Instruction-declared facts (``facts``: ``((name, value), ...)`` or a mapping) read
    as ``fact(name)`` or as attributes."""

    def fact(self, name: str) -> Any:
        """The value of the instruction-declared fact ``name`` (KeyError if not set)."""
        return dict(self.__dict__.get("facts", ()))[name]

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name == "facts":
            raise AttributeError(name)
        facts = dict(self.__dict__.get("facts", ()))
        if name in facts:
            return facts[name]
        raise AttributeError(f"{type(self).__name__!s} has no field or fact {name!r}")


def config_dir() -> Path:
    """Folder holding ``chips/``, ``campaigns/`` and ``kernels/`` (``*.toml``).

    ``$ASCEND_REF_CONFIGS`` if set; else the package data of an installed wheel
    (``ascend_ref/configs``, found through :mod:`importlib.resources`); else, in a source
    checkout, the repository's ``configs/`` (the wheel is built from that folder).
    """
    env = os.environ.get("ASCEND_REF_CONFIGS")
    if env:
        return Path(env)
    from importlib.resources import files

    packaged = files("ascend_ref") / "configs"
    if isinstance(packaged, Path) and (packaged / "chips").is_dir():
        return packaged
    return Path(__file__).resolve().parent.parent / "configs"


@dataclass(frozen=True)
class Behaviour(_Facts):
    """The part of a profile that changes results (everything but the UB size and the
    saturation default): products with equal behaviour form one *behaviour group* (Atlas A2
    and A3, for example), the unit of the campaign's coverage bins. Kernels do not compile it
    in: :func:`ascend_ref.engine.product_params` passes it as traced data.
    """

    zero_mask: str
    zero_repeat: str
    dst_rep_stride_zero: bool
    block_fill: str
    fill_values: tuple
    fp32_ftz: bool
    default_nan_f16: int
    default_nan_f32: int
    saturate_only: bool = False          # half: only saturation mode exists (Atlas training)
    add_order: str = "tree"              # TIK vec_reduce_add accumulation order
    minmax_nan: str = "payload"          # min/max NaN result: the lane's bits or default NaN
    facts: tuple = ()                    # instruction-declared facts, ((name, value), ...)

    def fill_bits(self, reduce_type: str, dtype: str) -> int:
        return dict(self.fill_values)[(reduce_type, dtype)]

    def default_nan(self, dtype: str) -> int:
        return self.default_nan_f16 if np.dtype(dtype).itemsize == 2 else self.default_nan_f32


@dataclass(frozen=True)
class ChipProfile(_Facts):
    """A product's behaviour, loaded from ``configs/chips/<id>.toml`` (see that folder)."""

    id: str
    product: str
    ub_bytes: int
    saturate_default: bool
    fp32_ftz: bool
    default_nan_f16: int
    default_nan_f32: int
    zero_mask: str
    zero_repeat: str
    dst_rep_stride_zero: bool
    block_fill: str
    apis: Mapping[str, tuple]
    orders: tuple
    block_fill_values: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    assumed: tuple = ()
    saturate_only: bool = False
    add_order: str = "tree"
    minmax_nan: str = "payload"
    #: instruction-declared facts (top-level keys outside :data:`SHARED_KEYS`), by name
    facts: Mapping[str, Any] = field(default_factory=dict)
    #: ``[dst_dtypes]``: per API, src dtype -> the dst dtype the page pairs with it where
    #: they differ (Ascend 950 ReduceRepeat<SUM>: int16 -> int32, uint16 -> uint32); a src
    #: dtype not listed pairs with a dst of its own dtype
    dst_dtypes: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    #: the file it was loaded from (for messages; not part of its identity)
    source: str = field(default="", compare=False, repr=False)

    def dtypes(self, api: str) -> tuple:
        """Element dtypes the product supports for ``api`` (empty: API not on this product).
        For an API whose dst type may differ, these are the *source* dtypes."""
        return self.apis.get(api, ())

    def dst_dtype(self, api: str, src_dtype: str) -> str:
        """The dst dtype ``api`` pairs with a ``src_dtype`` source on this product (the
        documented (dst, src) pair table; the same dtype unless ``[dst_dtypes]`` says)."""
        return dict(self.dst_dtypes.get(api, {})).get(src_dtype, src_dtype)

    def fill_bits(self, reduce_type: str, dtype: str) -> int:
        """Raw bits written into a ReduceDataBlock result whose block has no active lane."""
        return self.block_fill_values[reduce_type][dtype]

    def default_nan(self, dtype: str) -> int:
        return self.default_nan_f16 if np.dtype(dtype).itemsize == 2 else self.default_nan_f32

    @property
    def behaviour(self) -> Behaviour:
        fills = tuple(sorted(((rt, dt), bits) for rt, v in self.block_fill_values.items()
                             for dt, bits in v.items()))
        return Behaviour(self.zero_mask, self.zero_repeat, self.dst_rep_stride_zero,
                         self.block_fill, fills, self.fp32_ftz, self.default_nan_f16,
                         self.default_nan_f32, self.saturate_only, self.add_order,
                         self.minmax_nan, tuple(sorted(self.facts.items())))

    def __repr__(self) -> str:
        apis = ", ".join(f"{a}:{'/'.join(d)}" for a, d in self.apis.items() if d) or "none"
        return (f"ChipProfile({self.id!r}, {self.product!r}, ub_bytes={self.ub_bytes}, "
                f"apis=[{apis}], assumed={list(self.assumed)})")

    def __hash__(self) -> int:  # usable as a static jit argument
        return hash(self.id)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ChipProfile) and other.id == self.id


class ProfileError(ValueError):
    """A product profile file (``configs/chips/<id>.toml``) is malformed. The message names
    the file (its real path), the field, the value and what is allowed; ``path``,
    ``field``, ``value`` and ``allowed`` carry the same. A ValueError, so every command line
    reports it as one line (exit 2)."""

    def __init__(self, path: Union[str, Path], field: str, value: Any, allowed: str, *,
                 what: str = "") -> None:
        self.path, self.field, self.value, self.allowed = str(path), field, value, allowed
        said = what or (f"{field} is missing" if value is _MISSING else f"{field} = {value!r}")
        super().__init__(f"{path}: {said}; allowed {allowed}")


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


_MISSING: Any = _Missing()
#: element dtypes a profile may list (``[apis]``, ``[dst_dtypes]``, ``[block_fill_values]``)
DTYPES = ("float16", "float32", "int8", "uint8", "int16", "uint16", "int32", "uint32",
          "int64", "uint64")
REDUCE_TYPES = ("SUM", "MAX", "MIN")
MINMAX_NAN = ("payload", "default")
#: ``[orders]`` tables and the ReduceOrder names they may list
ORDER_TABLES = ("whole_reduce",)


#: the (src, dst) pairs of ``[dst_dtypes]`` the engine computes: integer sums whose 16-bit
#: lanes widen to 32 bits (Ascend 950 ReduceRepeat<SUM>); another pair would put the
#: source type's bits into a wider dst slot
DST_PAIRS = {"int16": "int32", "uint16": "uint32"}


def _is_nan(bits: int, width: int) -> bool:
    return bool(np.isnan(np.array(bits, f"uint{8 * width}").view(f"float{8 * width}")))


def _value_bits(text: str, dtype: str) -> int:
    width = np.dtype(dtype).itemsize
    return int(np.array(float(text), dtype=dtype).view(f"uint{8 * width}"))


class _Reader:
    """Typed reads of one parsed profile file; a wrong value raises :class:`ProfileError`."""

    def __init__(self, path: Path, raw: Mapping[str, Any]) -> None:
        self.path, self.raw = path, raw

    def fail(self, key: str, value: Any, allowed: str) -> ProfileError:
        if value is _MISSING:       # a key of no meaning that looks like it: say so
            import difflib

            near = difflib.get_close_matches(key, [k for k in self.raw if k not in SHARED_KEYS],
                                             n=1)
            if near:
                return ProfileError(self.path, key, value, allowed, what=f"{key} is missing "
                                    f"(the file sets {near[0]!r}: misspelt?)")
        return ProfileError(self.path, key, value, allowed)

    def get(self, key: str, default: Any = _MISSING) -> Any:
        return self.raw.get(key, default)

    def string(self, key: str, choices: Tuple[str, ...] = (), default: Any = _MISSING) -> str:
        v = self.get(key, default)
        ok = isinstance(v, str) and (v in choices if choices else v != "")
        if not ok:
            raise self.fail(key, v, f"one of {list(choices)}" if choices
                            else "a non-empty TOML string")
        return str(v)

    def boolean(self, key: str, default: Any = _MISSING) -> bool:
        v = self.get(key, default)
        if not isinstance(v, bool):
            raise self.fail(key, v, "a TOML boolean: true or false (unquoted)")
        return v

    def integer(self, key: str, lo: int, hi: int, default: Any = _MISSING, *,
                bits: bool = False) -> int:
        """An integer in [lo, hi] (``bits``: a bit pattern, said in hex)."""
        v = self.get(key, default)
        if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
            if bits:
                said = f"{key} = {v:#x}" if isinstance(v, int) and not isinstance(v, bool) else ""
                raise ProfileError(self.path, key, v, f"a TOML integer in [0, {hi:#x}] "
                                   f"({hi.bit_length()}-bit pattern)", what=said)
            raise self.fail(key, v, f"a TOML integer in [{lo}, {hi}]")
        return v

    def table(self, key: str, default: Any = _MISSING) -> Mapping[str, Any]:
        v = self.get(key, default)
        if not isinstance(v, dict):
            raise self.fail(key, v, f"a TOML table ([{key}])")
        return v

    def names(self, key: str, value: Any, choices: Tuple[str, ...] = ()) -> Tuple[str, ...]:
        """A list of strings (each one of ``choices`` when given), without repeats."""
        allowed = (f"a TOML list of names from {list(choices)}" if choices
                   else "a TOML list of non-empty strings")
        if not isinstance(value, list):
            raise self.fail(key, value, allowed)
        for x in value:
            if not isinstance(x, str) or not x or (choices and x not in choices):
                raise self.fail(key, value, allowed + f" ({x!r} is not)")
        if len(set(value)) != len(value):
            raise self.fail(key, value, allowed + ", each once")
        return tuple(value)


def _parse(path: Path) -> Mapping[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as e:
        raise ProfileError(path, "TOML syntax", None, "a valid TOML file",
                           what=f"not valid TOML ({e})") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ProfileError(path, "file", None, "a readable UTF-8 TOML file",
                           what=f"cannot be read ({e})") from None


def _load(path: Path) -> ChipProfile:
    """The profile in ``path``, its shared fields checked (types and allowed values); the
    instruction facts are checked against the registry by :func:`chip`."""
    from .enums import ReduceOrder

    r = _Reader(path, _parse(path))
    pid = r.string("id")
    if pid != path.stem:
        raise r.fail("id", pid, f"the file name, {path.stem!r}")
    apis = {a: r.names(f"[apis] {a}", v, DTYPES) for a, v in r.table("apis").items()}
    orders_raw = r.table("orders", {})
    for k, v in orders_raw.items():
        if k not in ORDER_TABLES:
            raise r.fail(f"[orders] {k}", v, f"a table named one of {list(ORDER_TABLES)}")
    orders = r.names("[orders] whole_reduce", orders_raw.get("whole_reduce", []),
                     tuple(o.name for o in ReduceOrder))
    fills: dict = {}
    for rt, vals in r.table("block_fill_values", {}).items():
        key = f"[block_fill_values] {rt}"
        if rt not in REDUCE_TYPES or not isinstance(vals, dict):
            raise r.fail(key, vals, f"a table named one of {list(REDUCE_TYPES)}")
        fills[rt] = {}
        for dt, v in vals.items():
            try:
                if dt not in DTYPES or isinstance(v, bool):
                    raise TypeError(dt)
                with np.errstate(over="raise"):
                    fills[rt][dt] = _value_bits(v, dt)
            except (TypeError, ValueError, OverflowError, FloatingPointError):
                raise r.fail(f"{key}.{dt}", v, f"a dtype key from {list(DTYPES)} with a "
                                               "number the dtype holds (finite: no rounding "
                                               "to inf) or a string like '-inf'") from None
    dst: dict = {}
    for a, pairs in r.table("dst_dtypes", {}).items():
        key = f"[dst_dtypes] {a}"
        if not isinstance(pairs, dict) or any(
                k not in DTYPES or v not in DTYPES for k, v in pairs.items()):
            raise r.fail(key, pairs, f"a table src dtype = dst dtype, both from {list(DTYPES)}")
        bad = [k for k in pairs if k not in apis.get(a, ())]
        if bad:
            raise r.fail(key, pairs, f"src dtypes [apis] {a} lists (not {bad})")
        bad = [f"{k} = {v!r}" for k, v in pairs.items() if DST_PAIRS.get(k) != v]
        if bad:
            raise r.fail(key, pairs, f"pairs the engine computes, {DST_PAIRS} (not {bad[0]})")
        dst[a] = dict(pairs)
    block_fill = r.string("block_fill", FILL_RULES)
    if block_fill == "fill" and set(fills) != set(REDUCE_TYPES):
        raise r.fail("block_fill_values", sorted(fills),
                     "tables for SUM, MAX and MIN when block_fill = 'fill'")
    if block_fill != "fill" and fills:      # values no call would read: a profile that misleads
        raise r.fail("block_fill_values", sorted(fills),
                     f"no [block_fill_values] table where block_fill = {block_fill!r} (only "
                     f"'fill' writes them: set block_fill = 'fill', or drop the table)")
    ub_bytes = r.integer("ub_bytes", 256, 2 ** 31 - 1)
    if ub_bytes % 32:
        raise r.fail("ub_bytes", ub_bytes, "a multiple of 32 (whole 32-byte DataBlocks)")
    nans = {}
    for key, width in (("default_nan_f16", 2), ("default_nan_f32", 4)):
        nans[key] = r.integer(key, 0, 2 ** (8 * width) - 1, bits=True)
        if not _is_nan(nans[key], width):
            raise ProfileError(path, key, nans[key], f"a NaN: exponent all ones, mantissa not "
                               f"0 (such as {0x7E00 if width == 2 else 0x7FC00000:#x})",
                               what=f"{key} = {nans[key]:#x} is no NaN")
    saturate_default = r.boolean("saturate_default")
    saturate_only = r.boolean("saturate_only", False)
    if saturate_only and not saturate_default:
        raise r.fail("saturate_default", saturate_default,
                     "true where saturate_only = true (the product's only mode is its default)")
    return ChipProfile(
        id=pid, product=r.string("product"), ub_bytes=ub_bytes,
        saturate_default=saturate_default, fp32_ftz=r.boolean("fp32_ftz"),
        default_nan_f16=nans["default_nan_f16"], default_nan_f32=nans["default_nan_f32"],
        zero_mask=r.string("zero_mask", ZERO_RULES),
        zero_repeat=r.string("zero_repeat", ZERO_RULES),
        dst_rep_stride_zero=r.boolean("dst_rep_stride_zero"), block_fill=block_fill,
        apis=apis, orders=orders, block_fill_values=fills,
        assumed=r.names("assumed", r.get("assumed", [])),
        saturate_only=saturate_only,
        add_order=r.string("add_order", ADD_ORDERS, "tree"),
        minmax_nan=r.string("minmax_nan", MINMAX_NAN, "payload"),
        facts={k: v for k, v in r.raw.items() if k not in SHARED_KEYS},
        dst_dtypes=dst, source=str(path),
    )


@functools.lru_cache(maxsize=None)
def _profiles() -> Dict[str, Path]:
    """Every profile file of :func:`config_dir`, by product id (the file name). Cached:
    tests that change ``$ASCEND_REF_CONFIGS`` call :func:`clear_cache`."""
    folder = config_dir() / "chips"
    return {p.stem: p for p in sorted(folder.glob("*.toml"))}


#: checks every profile gets when it loads, after its shared fields (:func:`_load`): the
#: registry adds its instruction facts' and API names' check
#: (:func:`ascend_ref.registry.check_profile`) when it is imported -- this module does not
#: import the registry (the registry imports it)
_ON_LOAD: List[Callable[["ChipProfile"], None]] = []


def on_load(check: Callable[["ChipProfile"], None]) -> None:
    """Run ``check(profile)`` on every profile :func:`chip` loads from now on (one loaded
    before is loaded again)."""
    _ON_LOAD.append(check)
    _checked.cache_clear()


@functools.lru_cache(maxsize=None)
def _checked(path: Path) -> ChipProfile:
    """The profile in ``path``, loaded and checked once: its shared fields (:func:`_load`),
    then every :func:`on_load` check."""
    prof = _load(path)
    for check in _ON_LOAD:
        check(prof)
    return prof


def clear_cache() -> None:
    """Forget the loaded profiles (after ``$ASCEND_REF_CONFIGS`` or a file changed)."""
    _profiles.cache_clear()
    _checked.cache_clear()


def chips() -> list:
    """Ids of every product profile (its file name), sorted. Listing does not load: a
    malformed file is a :class:`ProfileError` when a call loads it (:func:`chip`; anything
    that loads every product, such as the registry's check, names it too).

    >>> import ascend_ref as ar
    >>> "atlas_a2" in ar.chips(), ar.chips() == sorted(ar.chips())
    (True, True)
    """
    return list(_profiles())


def chip(id_or_profile: Union[str, ChipProfile], *, api: str = "chip") -> ChipProfile:
    """The frozen profile for a product id (a profile passes through unchanged). ``api``:
    the function an unknown id's CHIP_UNKNOWN names (the API a call's product is for).

    >>> import ascend_ref as ar
    >>> p = ar.chip("atlas_a2")
    >>> p.ub_bytes, ar.chip(p) is p
    (196608, True)
    >>> ar.chip("atlas_a9")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ascend_ref.constraints.ConstraintError: [CHIP_UNKNOWN] chip: chip = 'atlas_a9' is not allowed; ...
    """
    if isinstance(id_or_profile, ChipProfile):
        return id_or_profile
    files = _profiles()
    if not isinstance(id_or_profile, str) or id_or_profile not in files:
        allowed = f"one of {sorted(files)}"
        if not files:                   # a wrong $ASCEND_REF_CONFIGS, most likely
            where = config_dir() / "chips"
            allowed = (f"a product profile: {where} has no *.toml"
                       + (" ($ASCEND_REF_CONFIGS names the folder that holds chips/, "
                          "campaigns/ and kernels/)" if os.environ.get("ASCEND_REF_CONFIGS")
                          else ""))
        raise ConstraintError(Code.CHIP_UNKNOWN, api=api, param="chip", value=id_or_profile,
                              allowed=allowed)
    return _checked(files[id_or_profile])
