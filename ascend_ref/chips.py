"""Product (chip) profiles: every behavioural difference between products, as data.

One TOML file per product lives in ``configs/chips/``; :func:`chip` loads it into a frozen
:class:`ChipProfile`. Instruction code asks the profile (``chip.dtypes(api)``,
``chip.block_fill``, ...) and never tests a product id.

A top-level key that is not one of the shared fields below is a *fact* of one instruction:
the instruction declares it (:class:`ascend_ref.registry.ProfileField`, with its allowed
values; the registry rejects an undeclared key or a value outside them); host code reads it
as ``chip.fact(name)`` -- or as an attribute, ``chip.<name>``, like a shared field -- and a
kernel as a traced parameter (``ProfileField.holds(p, value)``).

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
from typing import Any, Mapping, Tuple, Union

import numpy as np

try:  # Python >= 3.11
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

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


def _value_bits(text: str, dtype: str) -> int:
    width = np.dtype(dtype).itemsize
    return int(np.array(float(text), dtype=dtype).view(f"uint{8 * width}"))


def _load(path: Path) -> ChipProfile:
    raw = tomllib.loads(path.read_text())
    apis = {a: tuple(v) for a, v in raw.get("apis", {}).items()}
    fills = {rt: {dt: _value_bits(v, dt) for dt, v in vals.items()}
             for rt, vals in raw.get("block_fill_values", {}).items()}
    prof = ChipProfile(
        id=raw["id"], product=raw["product"], ub_bytes=int(raw["ub_bytes"]),
        saturate_default=bool(raw["saturate_default"]), fp32_ftz=bool(raw["fp32_ftz"]),
        default_nan_f16=int(raw["default_nan_f16"]), default_nan_f32=int(raw["default_nan_f32"]),
        zero_mask=raw["zero_mask"], zero_repeat=raw["zero_repeat"],
        dst_rep_stride_zero=bool(raw["dst_rep_stride_zero"]), block_fill=raw["block_fill"],
        apis=apis, orders=tuple(raw.get("orders", {}).get("whole_reduce", ())),
        block_fill_values=fills, assumed=tuple(raw.get("assumed", ())),
        saturate_only=bool(raw.get("saturate_only", False)),
        add_order=str(raw.get("add_order", "tree")),
        minmax_nan=str(raw.get("minmax_nan", "payload")),
        facts={k: v for k, v in raw.items() if k not in SHARED_KEYS},
        dst_dtypes={a: dict(v) for a, v in raw.get("dst_dtypes", {}).items()},
    )
    if prof.id != path.stem:
        raise ValueError(f"{path}: id {prof.id!r} does not match the file name")
    if prof.zero_mask not in ZERO_RULES or prof.zero_repeat not in ZERO_RULES:
        raise ValueError(f"{path}: zero_mask/zero_repeat must be one of {ZERO_RULES}")
    if prof.minmax_nan not in ("payload", "default"):
        raise ValueError(f"{path}: minmax_nan must be 'payload' or 'default'")
    if prof.add_order not in ADD_ORDERS:
        raise ValueError(f"{path}: add_order must be one of {ADD_ORDERS}")
    if prof.block_fill not in FILL_RULES:
        raise ValueError(f"{path}: block_fill must be one of {FILL_RULES}")
    for a, pairs in prof.dst_dtypes.items():
        bad = [k for k in pairs if k not in prof.dtypes(a)]
        if bad:
            raise ValueError(f"{path}: [dst_dtypes] {a} pairs {bad} with a dst type, but "
                             f"[apis] {a} does not list them")
    if prof.block_fill == "fill" and set(fills) != {"SUM", "MAX", "MIN"}:
        raise ValueError(f"{path}: block_fill = 'fill' needs block_fill_values for SUM, MAX, MIN")
    return prof


@functools.lru_cache(maxsize=None)
def _profiles() -> dict:
    folder = config_dir() / "chips"
    return {p.stem: _load(p) for p in sorted(folder.glob("*.toml"))}


def chips() -> list:
    """Ids of every product profile, sorted."""
    return list(_profiles())


def chip(id_or_profile: Union[str, ChipProfile]) -> ChipProfile:
    """The frozen profile for a product id (a profile passes through unchanged)."""
    if isinstance(id_or_profile, ChipProfile):
        return id_or_profile
    profs = _profiles()
    if not isinstance(id_or_profile, str) or id_or_profile not in profs:
        raise ConstraintError(Code.CHIP_UNKNOWN, api="chip", param="chip", value=id_or_profile,
                              allowed=f"one of {sorted(profs)}")
    return profs[id_or_profile]
