"""The instruction registry: every fact about an instruction, declared once, in its own file.

An instruction file (``ascendc/whole_reduce.py``, ``tik/vec_reduce_add.py``, ...) builds its
kernel (:class:`ascend_ref.engine.Instruction`: operands, alignment, overlap rule, effects)
and declares an :class:`Instruction` here: public name and aliases, the public signature,
the numeric parameters, the static option (``order`` / ``reduce_type`` / ``cal_index``: how
it is parsed and what the engine compiles for it), the result layout (fields, roles, byte
sizes per dtype and option), the work-tensor need, the repeat range, what it computes (min /
max / sum) and its host-side checks in the order the documentation lists them. Every tool --
``Case.call``, the batch tables, dump and golden schemas, the fuzz generator, coverage and
mismatch roles, explain, audit -- reads these facts through :func:`lookup` / :func:`all`;
nothing else dispatches on an API-name string.

The scalar oracle (:mod:`ascend_ref.oracle`) is an independent implementation and never
imports this module.

How to add an instruction
-------------------------
1. Write ``ascendc/<name>.py`` (or ``tik/<name>.py``), its docstring closing with a worked
   example from the documentation page as a doctest (:mod:`ascend_ref.docstrings` appends
   it to the public functions' docstrings; a family module without one fails the package's
   import): the effects over the engine (see ``whole_reduce.py``), its kernel
   (``_slots.instruction`` / ``_common.instruction``), and
   ``register(Instruction(name=..., family=..., kernel=..., signature=..., option=...,
   kind=..., layout=..., repeat_range=..., work_need=..., checks=...))``. The public function
   is one line: ``return INS.run(ub, {"dst": dst, "src": src}, mask, {...}, chip=chip, ...)``.
2. Add the module to :data:`MODULES` below (the one registration line: it fixes the order in
   which tools list the instructions) and export the public function from its package
   ``__init__`` (``ascendc/__init__.py`` / ``tik/__init__.py``: importing the package
   registers it).
3. Give the products that have it a row under ``[apis]`` in ``configs/chips/*.toml``. A
   per-product rule only this instruction has is a :class:`ProfileField` it declares
   (``profile_fields=``): a top-level key of every profile that lists the instruction, read
   in the effects as ``field.holds(p, value)`` (traced data, like every product rule); if a
   profile marks it ``assumed``, ``verify
   --audit`` checks it by counterfactual (the reference rerun with each other choice).
4. Write its oracle function (``oracle/_api.py``, independently, from the documentation),
   tests and docs. Batch, fuzz, verify, golden and explain need no edit.
"""

from __future__ import annotations

import abc
import dataclasses
import functools
from dataclasses import dataclass
from typing import (TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple,
                    Union)

from . import batch_args
from .chips import chip as get_chip
from .chips import on_load as _on_profile_load
from .constraints import DESCRIPTIONS, HOST, TRACED, Code, Constraint, ConstraintError, HostCheck
from .enums import ReduceOrder, ReduceType, parse_enum
from .params import ChipFacts, Params

if TYPE_CHECKING:  # pragma: no cover
    from .engine import Instruction as Kernel, Prepared

#: The instruction modules, in the order tools list their instructions (one line each).
MODULES = (
    "ascend_ref.ascendc.whole_reduce",
    "ascend_ref.ascendc.reduce_data_block",
    "ascend_ref.ascendc.pair_reduce_sum",
    "ascend_ref.ascendc.repeat_reduce_sum",
    "ascend_ref.ascendc.reduce",
    "ascend_ref.ascendc.reduce_count",
    "ascend_ref.tik.vec_reduce_minmax",
    "ascend_ref.tik.vec_reduce_add",
    "ascend_ref.tik.vc",
)

BLOCK = 32                  # bytes per DataBlock
REPEAT_BYTES = 256          # bytes one repeat reads (8 DataBlocks)


# ------------------------------------------------------------------ layout ------------------

@dataclass(frozen=True)
class Field:
    """One word of a result: ``name`` (``"value"``, ``"index"``, ``"b3"``, ...), ``role``
    (``"value"`` or ``"index"``: how a mismatch in it is classified) and its byte size."""

    name: str
    role: str
    nbytes: int


@dataclass(frozen=True)
class Layout:
    """Where a call's results go.

    ``dst``: the fields of one result slot. ``per_repeat`` True (Ascend C): repeat ``r``'s
    slot is at ``dst + r * dst_rep_stride * slot_bytes`` (the slot is also the unit of
    ``dst_rep_stride`` and dst's alignment); False (TIK): the fields are ``dst[0:k]`` once.
    ``work``: the fields of one stage-1 entry, repeat ``r``'s at ``work + r * entry_bytes``.
    """

    dst: Tuple[Field, ...]
    per_repeat: bool
    work: Tuple[Field, ...] = ()

    @property
    def slot_bytes(self) -> int:
        return sum(f.nbytes for f in self.dst)

    @property
    def entry_bytes(self) -> int:
        return sum(f.nbytes for f in self.work)

    @property
    def groups(self) -> int:
        """Independent results per repeat: one per value field of a per-repeat slot
        (ReduceDataBlock: its 8 DataBlocks), else 1 (value and index decided together)."""
        if not self.per_repeat:
            return 1
        return max(1, sum(f.role == "value" for f in self.dst))

    def dst_bytes(self, repeat: int, dst_rep_stride: int = 1) -> int:
        """Bytes from dst to the end of the last slot a call of ``repeat`` repeats writes."""
        if not self.per_repeat:
            return self.slot_bytes
        return self.slot_bytes * ((max(int(repeat), 1) - 1) * int(dst_rep_stride) + 1)

    def field_at(self, tensor: str, offset: int) -> Optional[Field]:
        """The field holding byte ``offset`` of ``tensor`` (``"dst"`` / ``"work_tensor"``)."""
        fields = self.dst if tensor == "dst" else self.work if tensor == "work_tensor" else ()
        unit = sum(f.nbytes for f in fields)
        if not unit or offset < 0 or (tensor == "dst" and not self.per_repeat
                                      and offset >= unit):
            return None
        off = offset % unit
        for f in fields:
            if off < f.nbytes:
                return f
            off -= f.nbytes
        return None  # pragma: no cover

    def role(self, tensor: str, offset: int) -> str:
        f = self.field_at(tensor, offset)
        return f.role if f is not None else "value"


def fields(*spec: Tuple[str, str], nbytes: int) -> Tuple[Field, ...]:
    """``fields(("value", "value"), ("index", "index"), nbytes=2)``."""
    return tuple(Field(n, r, nbytes) for n, r in spec)


# ------------------------------------------------------------------ options -----------------

class Option(abc.ABC):
    """A static option of an instruction (one compiled kernel per value).

    ``key``: the public keyword (also the golden TOML key and what a dump's ``option``
    holds); canonical values are what :class:`~ascend_ref.case.Case` ``.option`` holds.
    """

    key: str = ""
    positional: bool = True          # the public function takes it positionally
    default: Any = None              # None: no default (required)

    @abc.abstractmethod
    def values(self, prof: Any = None) -> list:
        """Every canonical value (on ``prof`` when given)."""

    @abc.abstractmethod
    def parse(self, value: Any, *, api: str, chip: Any = None) -> Any:
        """The public function's argument -> canonical value (raises ConstraintError)."""

    @abc.abstractmethod
    def normalise(self, value: Any) -> Any:
        """A value from a file (dump, golden TOML, CLI) -> canonical; ValueError(reason)."""

    @abc.abstractmethod
    def engine(self, value: Any) -> str:
        """The engine's static option string (``Spec.option``) for a canonical value."""

    def label(self, value: Any) -> str:
        """Short text for coverage bins and reports."""
        return str(value)

    def example(self) -> Any:
        """A value to use when the caller gives none (explain, docs)."""
        return self.default if self.default is not None else self.values()[0]


class EnumOption(Option):
    """An option naming an enum member (``ReduceOrder``, ``ReduceType``)."""

    def __init__(self, key: str, enum_cls: Any, code: Code, *, default: Optional[str] = None,
                 prefix: str = "", positional: bool = True, product_attr: str = "") -> None:
        self.key, self.enum_cls, self.code = key, enum_cls, code
        self.default, self.prefix, self.positional = default, prefix, positional
        self.product_attr = product_attr     # profile field listing the supported values

    def values(self, prof: Any = None) -> list:
        if prof is not None and self.product_attr:
            return list(getattr(prof, self.product_attr))
        return [m.value for m in self.enum_cls]

    def parse(self, value: Any, *, api: str, chip: Any = None) -> str:
        try:
            return parse_enum(self.enum_cls, value, api=api, param=self.key, code=self.code,
                              chip=chip).value
        except ConstraintError as e:
            if e.code != self.code or chip is None or not self.product_attr:
                raise
            try:                        # a name of no member: list the product's members
                prof = get_chip(chip, api=api)        # (a profile passes through)
            except (ConstraintError, ValueError):
                raise e from None
            raise ConstraintError(self.code, api=api, param=self.key, value=value,
                                  allowed=f"one of {self.values(prof)}", chip=prof.id) from None

    def normalise(self, value: Any) -> str:
        names = self._names()
        if value is None:
            if self.default is None:
                raise ValueError(f"missing ({', '.join(names)})")
            return self.default
        name = str(value).split(".")[-1].upper() if isinstance(value, str) else None
        if name and self.prefix and not name.startswith(self.prefix):
            name = self.prefix + name
        if name is None or name not in names:
            raise ValueError(f"{value!r} is not a {self.enum_cls.__name__}; expected one of "
                             f"{names}")
        return name

    def _names(self) -> List[str]:
        names = self.__dict__.get("_names_cache")
        if names is None:
            names = self.__dict__["_names_cache"] = [m.value for m in self.enum_cls]
        return list(names)

    def engine(self, value: Any) -> str:
        return str(getattr(value, "value", value))

    def label(self, value: Any) -> str:
        return str(getattr(value, "value", value))


class FlagOption(Option):
    """A bool option (``cal_index``): ``engine`` compiles ``on`` / ``""``."""

    def __init__(self, key: str, on: str) -> None:
        self.key, self.on, self.default, self.positional = key, on, False, True

    def values(self, prof: Any = None) -> list:
        return [False, True]

    def parse(self, value: Any, *, api: str, chip: Any = None) -> bool:
        """A bool, or an integer 0 / 1 (a Python or numpy int, or a concrete 0-d integer array:
        what the oracle's calIndex takes); anything else is BAD_ARGUMENT, never truthiness.

        >>> import numpy as np
        >>> CAL_INDEX.parse(np.int64(1), api="vec_reduce_min"), CAL_INDEX.parse(False, api="x")
        (True, False)
        """
        import numpy as np

        import jax

        value = batch_args.held_int(value)     # a traced value stays one: refused below
        if isinstance(value, (bool, np.bool_)) or (batch_args.is_int(value) and value in (0, 1)):
            return bool(value)
        if isinstance(value, jax.core.Tracer):
            raise ConstraintError(
                Code.BAD_ARGUMENT, api=api, param=self.key, value="a traced value",
                allowed="True / False (or an int 0 / 1), known when the call is traced",
                hint=f"{self.key} chooses the compiled kernel and the result's layout, so it "
                     f"cannot be a traced value: pass a Python bool (mark it static: "
                     f"jax.jit(f, static_argnames=...)), or make both calls and pick one "
                     f"with jnp.where")
        raise ConstraintError(Code.BAD_ARGUMENT, api=api, param=self.key, value=value,
                              allowed="True / False (or an int 0 / 1)")

    def normalise(self, value: Any) -> bool:
        if value is None:
            return False
        if not isinstance(value, bool):
            raise ValueError(f"{value!r}: {self.key} is true or false")
        return value

    def engine(self, value: Any) -> str:
        return self.on if value is True else ""

    def label(self, value: Any) -> str:
        return self.key if value else f"no_{self.key.split('_')[-1]}"


ORDER = EnumOption("order", ReduceOrder, Code.ORDER_UNSUPPORTED, default="ORDER_VALUE_INDEX",
                   prefix="ORDER_", product_attr="orders")
REDUCE_TYPE = EnumOption("reduce_type", ReduceType, Code.REDUCE_TYPE, positional=False)
CAL_INDEX = FlagOption("cal_index", on="index")


# ------------------------------------------------------------------ profile fields ----------

@dataclass(frozen=True)
class ProfileField:
    """A per-product rule that only one instruction reads, declared by that instruction.

    ``name``: its top-level key in ``configs/chips/*.toml`` (every profile that lists the
    instruction under ``[apis]`` must set it; a profile without the instruction may leave it
    out); ``choices``: the allowed
    values -- the alternatives ``verify --audit`` reruns the reference with where a profile
    marks the field ``assumed``; ``doc``: what it decides (audit report, explain).
    """

    name: str
    choices: Tuple[Any, ...]
    doc: str = ""
    #: the field decides only state outside the UB (the reduce special registers,
    #: :mod:`ascend_ref.spr`): a UB dump cannot tell its choices apart, so the audit does
    #: not rerun cases for it
    state_only: bool = False

    def holds(self, p: "Union[Params, ChipFacts]", value: Any) -> Any:
        """Inside an instruction's effects: the call's product has ``value`` (a traced bool:
        ``p.chip.fields[name]`` holds the index of the product's choice). ``p``: the call's
        :class:`~ascend_ref.params.Params`, or its product part ``p.chip``."""
        chip = p.chip if isinstance(p, Params) else p
        return chip.fields[self.name] == list(self.choices).index(value)


# ------------------------------------------------------------------ the declaration ---------

@dataclass(frozen=True, eq=False)
class Instruction:
    """Everything about one public instruction (one API name), declared in its own file.

    ``signature``: the public positional parameters after ``ub``, in order (tensor names,
    ``"mask"``, numeric parameters by their :attr:`params` name, the option key).
    ``params``: numeric parameters as :class:`~ascend_ref.case.Case` keys (``"repeat"`` is the
    repeat count, public name ``kernel.repeat_param``). ``kind(option)``: ``"min"``,
    ``"max"`` or ``"sum"``. ``layout(dtype, option)``: :class:`Layout`. ``repeat_range(option,
    dtype)``: documented ``(lo, hi)``. ``work_need(repeat, option, dtype)``: work_tensor
    elements a concrete call needs (None: no work tensor). ``checks``: host-side checks run
    before the kernel's rules, in order: :class:`~ascend_ref.constraints.HostCheck` s,
    called ``check(ins, prof, tensors, option)``, raising :class:`ConstraintError` (they
    appear in :meth:`rules` with their code and rule in words). ``alias_checks``: checks an
    alias function makes on its own arguments before it calls the instruction
    (ReducePairElem's ``reduce_type``), listed first by :meth:`rules`. ``assumptions``: profile assumption -> the code a device
    reports where the reference's assumed rule fires (dump verification).
    ``profile_rules``: product-profile fields only this instruction's effects read beyond the
    shared ones (``"block_fill"``, ``"add_order"``): what the audit checks it against.
    ``codes``: the error codes of the instruction's own rules, beyond the rules every
    instruction shares (``engine.rules``, ``mask.rules``): what a fuzz breaker may aim at.
    ``profile_fields``: :class:`ProfileField` s -- product rules only this instruction has,
    kept in the profiles as instruction facts (``chip.fact(name)``).
    ``arg_names``: operand key -> the public parameter's name where they differ (the tools
    key the temporary tensor of every instruction ``"work_tensor"``; level-2 ReduceMax calls
    it ``shared_tmp_buffer``, its documented ``sharedTmpBuffer``).
    ``aliases``: other public names of the same instruction (:func:`lookup` finds it by
    them); an alias may fix the option (``block_reduce_sum`` = ReduceDataBlock<SUM>), so a
    :class:`~ascend_ref.case.Case` always names the instruction itself. ``family``:
    ``"ascendc"`` or ``"tik"``, the namespace of the public function (``ar.<family>.<name>``,
    ``ascend_ref.oracle.<name>``).
    """

    name: str
    family: str
    kernel: "Kernel"
    signature: Tuple[str, ...]
    params: Tuple[str, ...]
    kind: Callable[[Any], str]
    layout: Callable[[str, Any], Layout]
    repeat_range: Callable[[Any, str], Tuple[int, int]]
    option: Optional[Option] = None
    work_need: Optional[Callable[[int, Any, str], int]] = None
    checks: Tuple[HostCheck, ...] = ()
    alias_checks: Tuple[HostCheck, ...] = ()
    aliases: Tuple[str, ...] = ()
    assumptions: Mapping[str, Code] = dataclasses.field(default_factory=dict)
    profile_rules: Tuple[str, ...] = ()
    codes: Tuple[Code, ...] = ()
    profile_fields: Tuple[ProfileField, ...] = ()
    #: public parameters the page documents as having no effect (RepeatReduceSum's
    #: ``dstBlkStride``: "此参数无效，可以配置任意值"), with the value :meth:`call_args` passes; a
    #: :class:`~ascend_ref.case.Case` does not carry them (nothing can depend on them)
    ignored: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    arg_names: Mapping[str, str] = dataclasses.field(default_factory=dict)
    summary: str = ""
    #: the public name this instruction is the other documented overload of (the level-2
    #: count form ``reduce_sum_count`` of ``reduce_sum``): ``explain`` lists its rules there
    overload_of: str = ""

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        return f"<instruction {self.family}.{self.name}>"

    # -------------------------------------------------------------- derived facts ----------

    @property
    def operands(self) -> Tuple[str, ...]:
        return tuple(self.kernel.operands)

    @property
    def saturating(self) -> bool:
        """Takes a ``saturate`` flag (half precision sums)."""
        return bool(self.kernel.saturating)

    @property
    def word_order(self) -> str:
        """Bit-mask word order: ``"ascendc"`` (lanes 0-63 first) or ``"tik"`` ([mask_h, mask_l])."""
        return str(self.kernel.word_order)

    @property
    def mask_modes(self) -> Tuple[str, ...]:
        """The mask modes the API takes: ``("count", "bits")``, or ``("count",)`` for an API
        with a continuous mask only (RepeatReduceSum: "不支持mask逐bit模式")."""
        return tuple(self.kernel.mask_modes)

    @property
    def has_blk_stride(self) -> bool:
        return bool(self.kernel.blk_stride)

    @property
    def repeat_param(self) -> str:
        return str(self.kernel.repeat_param)

    def public_arg(self, name: str) -> str:
        """The public function's name for signature entry ``name``."""
        if name == "repeat":
            return self.repeat_param
        return self.arg_names.get(name, name)

    def sums(self, option: Any) -> bool:
        return self.kind(option) == "sum"

    def dst_dtype(self, src_dtype: str) -> str:
        """The dst dtype a ``src_dtype`` source writes (:func:`dst_dtype`)."""
        return dst_dtype(self.name, src_dtype)

    def tensor_dtype(self, tensor: str, src_dtype: str) -> str:
        """The dtype of operand ``tensor`` in a call whose source is ``src_dtype`` (a
        :class:`~ascend_ref.case.Case` holds the source dtype only)."""
        return self.dst_dtype(src_dtype) if tensor == "dst" else src_dtype

    def has_index(self, option: Any, dtype: str = "float16") -> bool:
        lay = self.layout(dtype, option)
        return any(f.role == "index" for f in lay.dst)

    def options(self, prof: Any = None) -> list:
        """Canonical option values (on ``prof``: those it supports); ``[None]`` without one."""
        return [None] if self.option is None else self.option.values(prof)

    def engine_option(self, option: Any) -> str:
        return "" if self.option is None else self.option.engine(option)

    def normalise_option(self, value: Any) -> Any:
        """A file's option value -> canonical (ValueError with the reason)."""
        if self.option is None:
            if value is not None:
                raise ValueError(f"{value!r}: {self.name} has no static option (use null)")
            return None
        return self.option.normalise(value)

    def canonical_option(self, option: Any, chip: Any = None) -> Any:
        """``option`` as the public function would take it, its example value when None
        (``chip``: the product an error names)."""
        if self.option is None:
            return None
        return self.option.parse(self.option.example() if option is None else option,
                                 api=self.name, chip=chip)

    def option_label(self, option: Any) -> str:
        if self.option is None or option is None:
            return "-"
        return self.option.label(option)

    def supports(self, prof: Any, dtype: str, option: Any) -> bool:
        return dtype in prof.dtypes(self.name) and (
            self.option is None or option in self.option.values(prof))

    def src_footprint(self, repeat: int, rep_stride: int, blk_stride: Optional[int] = None,
                      dtype: Optional[str] = None) -> int:
        """Bytes from ``src`` to the end of the last DataBlock a call can read with any mask
        (the count form: the DataBlocks of the first ``repeat`` = count elements of
        ``dtype``; without it, of the widest modelled type, 8 bytes)."""
        if self.kernel.count_form:
            import numpy as np

            size = 8 if dtype is None else int(np.dtype(dtype).itemsize)
            return -(-max(int(repeat), 0) * size // BLOCK) * BLOCK
        fixed = BLOCK * (7 * int(blk_stride if self.has_blk_stride and blk_stride is not None
                                 else 1) + 1)
        if not self.has_blk_stride:
            fixed = REPEAT_BYTES
        return (max(int(repeat), 1) - 1) * int(rep_stride) * BLOCK + fixed

    def rep_stride_fitting(self, repeat: int, nbytes: int, blk_stride: Optional[int] = None,
                           dtype: Optional[str] = None) -> int:
        """The largest ``src_rep_stride`` whose :meth:`src_footprint` fits in ``nbytes`` (0
        when none does; ``2**31 - 1`` for at most one repeat, where the stride moves
        nothing)."""
        if self.kernel.count_form:        # no stride: fits or not
            return (1 << 31) - 1 if self.src_footprint(repeat, 0, dtype=dtype) <= int(nbytes) \
                else 0
        if int(repeat) <= 1:
            return (1 << 31) - 1
        return max(0, (int(nbytes) - self.src_footprint(1, 0, blk_stride))
                   // (BLOCK * (int(repeat) - 1)))

    def alignment(self, operand: str, dtype: str, option: Any) -> int:
        """The byte alignment the documentation requires of ``operand``: the dst of a slot
        reduction (``kernel.dst_align_slot``) to its result slot, read from the declared
        layout (not from the kernel's rule, which is what a fuzz campaign tests); any other
        operand by the kernel's declared alignment for this dtype and option (an option the
        kernel takes as data included)."""
        import numpy as np

        from .engine import Spec

        kern = self.kernel
        if operand == "dst" and kern.dst_align_slot:
            return self.slot_bytes(dtype, self.canonical_option(option))
        opt = self.engine_option(option)
        traced = opt in kern.traced_options
        align = kern.align(Spec(self.name, dtype, 1, "" if traced else opt)).get(operand, 1)
        if callable(align):
            # an alignment that depends on the option reads the call's Params.option only
            import types

            align = align(types.SimpleNamespace(option=np.int32(kern.traced_options.index(opt))))
        return int(align)

    def work_elements(self, repeat: int, option: Any, dtype: str) -> int:
        """work_tensor elements a concrete call needs (0: the instruction has none)."""
        return 0 if self.work_need is None else int(self.work_need(int(repeat), option, dtype))

    def slot_bytes(self, dtype: str, option: Any) -> int:
        """Bytes of one dst result slot (the declared layout; also the unit of
        ``dst_rep_stride`` where the instruction has one)."""
        return self.layout(dtype, getattr(option, "value", option)).slot_bytes

    def dst_extent(self, repeat: int, dtype: str, option: Any, dst_rep_stride: int = 1) -> int:
        """Bytes from ``dst`` to the end of the last result a call of ``repeat`` repeats
        writes (:meth:`Layout.dst_bytes`)."""
        return self.layout(dtype, getattr(option, "value", option)).dst_bytes(repeat,
                                                                           dst_rep_stride)

    def source_reads(self, dtype: str, mask: Any, repeat: int, rep_stride: int,
                     blk_stride: Optional[int] = None, *, base: int = 0,
                     rows: Optional[int] = None) -> Tuple[Any, Any, Any]:
        """The source gather of a concrete call, as numpy: ``(reads, lane_mask, active)`` --
        the byte each lane of each repeat reads ``(rows, L)`` (``rows`` default
        ``max(repeat, 1)``), the lanes ``mask`` enables ``(L,)`` (in this instruction's word
        order) and the lanes that take part. The shared table,
        :func:`ascend_ref.addressing.source_table`; ``mask`` must parse (ConstraintError)."""
        import numpy as np

        from . import mask as masks

        if self.kernel.count_form:       # element k: lane k % L of row k // L, no mask
            s = int(np.dtype(dtype).itemsize)
            lanes = 256 // s
            rows = -(-max(int(repeat), 1) // lanes) if rows is None else int(rows)
            flat = np.arange(rows)[:, None] * lanes + np.arange(lanes)[None, :]
            return (int(base) + flat * s, np.ones(lanes, bool), flat < int(repeat))
        m = masks.parse(mask, dtype, api=self.name, chip="", word_order=self.word_order)
        blk = blk_stride if self.has_blk_stride and blk_stride is not None else 1
        value, mode, count = m.value, m.mode, None
        if m.mode == "counter":         # counter mode: the count decides the repeats and lanes
            lanes = masks.lanes_per_repeat(dtype)
            count = int(m.value[0]) | int(m.value[1]) << 32
            repeat = masks.counter_repeats(count, lanes)
            value, mode = np.array([min(count, lanes), 0, 0, 0], np.uint32), "count"
        rows = max(int(repeat), 1) if rows is None else int(rows)
        height = next(h for h in (1, 16, 256, 4096, rows) if h >= rows)   # few compiles
        out = _host_gather(int(base), int(rep_stride), int(blk), value, int(repeat),
                           mode=mode, r_max=height, size=int(np.dtype(dtype).itemsize))
        reads, lane_mask, active = (np.asarray(x) for x in out)
        if count is not None:
            flat = np.arange(active.shape[0])[:, None] * active.shape[1] + \
                np.arange(active.shape[1])[None, :]
            active = active & (flat < count)
        return reads[:rows], lane_mask, active[:rows]

    def read_extent(self, dtype: str, mask: Any, repeat: int, rep_stride: int,
                    blk_stride: Optional[int] = None) -> int:
        """Bytes from ``src`` to the end of the last element a call reads with ``mask`` (0:
        it reads nothing): the smallest source tensor that is in bounds. Reads grow with
        the repeat, so this is the last repeat's row of :meth:`source_reads` (its first row,
        moved by ``(repeat - 1) * rep_stride`` DataBlocks)."""
        import numpy as np

        from . import mask as masks

        if isinstance(mask, masks.CounterMask):
            # counter mode (the repeat argument is ignored): the last repeat's highest lane,
            # or the one before's widest where the last is partial (strides >= 0)
            lanes = masks.lanes_per_repeat(dtype)
            n = int(mask.count)
            R = masks.counter_repeats(n, lanes)
            if R <= 0:
                return 0
            reads, _, _ = self.source_reads(dtype, lanes, 1, rep_stride, blk_stride)
            off = reads[0]
            step = int(rep_stride) * BLOCK
            top = (R - 1) * step + int(off[:n - (R - 1) * lanes].max())
            if R >= 2:
                top = max(top, (R - 2) * step + int(off.max()))
            return top + int(np.dtype(dtype).itemsize)
        if int(repeat) <= 0:
            return 0
        if self.kernel.count_form:                   # the first count elements
            return int(repeat) * int(np.dtype(dtype).itemsize)
        reads, lane_mask, _ = self.source_reads(dtype, mask, 1, rep_stride, blk_stride)
        if not lane_mask.any():
            return 0
        last = (int(repeat) - 1) * int(rep_stride) * BLOCK
        return last + int(reads[0][lane_mask].max()) + int(np.dtype(dtype).itemsize)
    # -------------------------------------------------------------- constraints ------------

    def rules(self, option: Any = None, dtype: str = "float16") -> List[Constraint]:
        """Every constraint of a call, in order: the host-stage checks as the call makes them
        (product, option, the instruction's own :attr:`checks` -- WholeReduceMin/Max's order
        on the product --, argument types, dtypes, mask structure; the first failing one
        raises) and then the traced rules the kernel evaluates, by code (the documentation's
        order; the lowest failing code is reported). ``option``: a canonical option (None:
        :meth:`canonical_option`'s example); ``dtype``: the element type (the mask and
        saturation rules differ between 16- and 32-bit types)."""
        from . import engine

        chip = Constraint(HOST, Code.CHIP_UNKNOWN, "chip",
                          "the product id has a profile in configs/chips/")
        out = [c.constraint() for c in self.alias_checks]
        if self.checks:                          # the checks read the profile: it comes first
            out.append(chip)
        if self.option is not None:
            o = self.option
            if isinstance(o, EnumOption):
                out.append(Constraint(HOST, o.code, o.key, f"{o.key} is a "
                                      f"{o.enum_cls.__name__} (a member or its name)"))
            out.append(Constraint(HOST, Code.BAD_ARGUMENT, o.key,
                                  f"{o.key} is " + ("True / False" if isinstance(o, FlagOption)
                                                    else "given, as a name or an enum member")))
        if not self.checks:
            out.append(chip)
        for check in self.checks:
            if not isinstance(check, HostCheck):
                raise TypeError(f"{self.name}: a check must be a constraints.HostCheck (its "
                                f"code, parameter and rule in words), got {check!r}")
            out.append(check.constraint())
        out += engine.host_constraints(self.kernel, self.params)
        spec = engine.Spec(self.name, dtype, self.repeat_range(self.canonical_option(option),
                                                               dtype)[1],
                           "" if self.kernel.traced_options else
                           self.engine_option(self.canonical_option(option)))
        out += [Constraint(TRACED, r.code, r.param, r.doc or DESCRIPTIONS[r.code], r)
                for r in engine.rules(self.kernel, spec)]
        return out

    # -------------------------------------------------------------- calls ------------------

    def check_case(self, case: Any) -> None:
        """A :class:`~ascend_ref.case.Case` of this instruction names every parameter and
        operand and nothing else (``case.params`` / ``case.tensors`` dicts holding them; each
        operand an ``(addr, size)`` pair): else a BAD_ARGUMENT error naming the first one
        missing, extra or malformed (was a KeyError, IndexError or ValueError from deep
        inside a call, or an argument dropped in silence). The UB is the public function's
        to judge, in its order of checks."""
        for group, names in (("params", self.params), ("tensors", self.operands)):
            have = getattr(case, group)
            if not isinstance(have, Mapping):
                raise ConstraintError(Code.BAD_ARGUMENT, api=self.name, param=f"case.{group}",
                                      value=type(have).__name__,
                                      allowed=f"a dict naming {', '.join(names)}")
            missing = [n for n in names if n not in have]
            if missing:
                raise ConstraintError(Code.BAD_ARGUMENT, api=self.name, param=missing[0],
                                      value=None, allowed=f"a value in case.{group} (which "
                                      f"names {', '.join(names)} for {self.name})")
            extra = [n for n in have if n not in names]
            if extra:           # not dropped in silence: a typo or another API's argument
                raise ConstraintError(Code.BAD_ARGUMENT, api=self.name,
                                      param=f"case.{group}", value=f"{extra[0]!r}",
                                      allowed=f"only {', '.join(names)} (what {self.name} "
                                              f"takes)")
        if self.option is None and case.option is not None:   # was dropped in silence
            raise ConstraintError(Code.BAD_ARGUMENT, api=self.name, param="case.option",
                                  value=case.option, allowed=f"None ({self.name} takes no "
                                                             f"option)")
        for t in self.operands:
            v = case.tensors[t]
            if not (isinstance(v, (tuple, list)) and len(v) == 2
                    or getattr(v, "shape", None) == (2,)):          # a numpy pair too
                raise ConstraintError(Code.BAD_ARGUMENT, api=self.name, param=t, value=v,
                                      allowed="an (addr, size) pair in case.tensors")

    def call_args(self, case: Any, tensor: Callable[[str], Any]) -> Tuple[list, dict]:
        """Positional and keyword arguments (after ``ub``) of the public function for
        ``case``; ``tensor(name)`` builds each tensor argument."""
        self.check_case(case)
        args: list = []
        kw: dict = {}
        for name in self.signature:
            if name in self.operands:
                args.append(tensor(name))
            elif name == "mask":
                args.append(case.mask)
            elif self.option is not None and name == self.option.key:
                args.append(case.option)
            elif name in self.ignored:
                args.append(self.ignored[name])
            else:
                args.append(case.params[name])
        if self.option is not None and not self.option.positional:
            kw[self.option.key] = case.option
        if self.saturating:
            kw["saturate"] = case.saturate
        return args, kw

    def public(self, impl: Any) -> Callable[..., Any]:
        """The public function of ``impl`` (``ascend_ref`` or ``ascend_ref.oracle``)."""
        return getattr(getattr(impl, self.family, impl), self.name)

    def _checked(self, ub: Any, tensors: Mapping[str, Any], mask: Any, params: Mapping[str, Any],
                 *, chip: Any, option: Any, saturate: Any, info: bool,
                 repeat_hi: Optional[int] = None, spr: bool = False,
                 faults: Optional[Dict[str, Any]] = None) -> "Prepared":
        from . import engine
        from .chips import chip as get_chip

        if self.checks:                       # they read the profile: an unknown chip first
            chip = get_chip(chip, api=self.name)
        if self.option is not None:
            option = self.option.parse(option, api=self.name, chip=chip)
        for check in self.checks:
            check(self, chip, tensors, option)
        return engine.prepare(self.kernel, ub, dict(tensors), mask, dict(params), chip=chip,
                              option=self.engine_option(option), saturate=saturate, info=info,
                              repeat_hi=repeat_hi, fields=self.profile_fields, spr=spr,
                              faults=faults)

    def prepare(self, ub: Any, tensors: Mapping[str, Any], mask: Any, params: Mapping[str, Any],
                *, chip: Any, option: Any = None, saturate: Any = None, info: bool = False,
                path: Optional[str] = None, repeat_hi: Optional[int] = None) -> "Prepared":
        """The direct path: every host-side check and the kernel's parameters, not run
        (raises :class:`ConstraintError` as the public function would). ``repeat_hi``: the
        largest repeat count the compiled tables hold (default: the top of the range)."""
        prep = self._checked(ub, tensors, mask, params, chip=chip, option=option,
                             saturate=saturate, info=info, repeat_hi=repeat_hi)
        if path is not None and path != prep.spec.path:
            prep = dataclasses.replace(prep, spec=dataclasses.replace(prep.spec, path=path))
        return prep

    def prepare_case(self, case: Any, *, info: bool = True, path: Optional[str] = None,
                     ub: Any = None) -> "Prepared":
        """:meth:`prepare` for a :class:`~ascend_ref.case.Case` (its UB unless ``ub``)."""
        from .ub import Tensor

        self.check_case(case)
        tensors = {k: Tensor(a, self.tensor_dtype(k, case.dtype), s)
                   for k, (a, s) in case.tensors.items()}
        params = {k: case.params[k] for k in self.params}
        return self.prepare(case.ub if ub is None else ub, tensors, case.mask, params,
                            chip=case.chip, option=case.option,
                            saturate=case.saturate if self.saturating else None, info=info,
                            path=path)

    def run(self, ub: Any, tensors: Mapping[str, Any], mask: Any, params: Mapping[str, Any], *,
            chip: Any, option: Any = None, saturate: Any = None,
            return_info: bool = False, spr: Any = None,
            faults: Optional[Dict[str, Any]] = None) -> Any:
        """The body of the public function: check, run, raise on a bad concrete call.
        ``spr``: the reduce special registers before the call (:class:`ascend_ref.ReduceSpr`;
        None: fresh); with ``return_info`` the info's ``spr`` is the state after it.
        ``faults``: traced arguments of the public function that are not kernel parameters,
        judged in the kernel (:func:`ascend_ref.engine.prepare`)."""
        from . import engine, spr as sprs

        try:
            return_info = batch_args.flag(self.name, "return_info", return_info)
            state = sprs.checked(spr, self.name)
            prep = self._checked(ub, tensors, mask, params, chip=chip, option=option,
                                 saturate=saturate, info=return_info, spr=return_info,
                                 faults=faults)
            return engine.run_prepared(prep, return_info, state)
        except ConstraintError as e:             # named as the public function names them
            if not self.arg_names:
                raise
            raise e.renamed(self.arg_names) from None

    @property
    def spr(self) -> Any:
        """The call's declared effect on a reduce special register
        (:class:`ascend_ref.spr.Sets`), or None: it passes them through."""
        return self.kernel.spr


def _gather(base: Any, rep_stride: Any, blk: Any, mask_value: Any, repeat: Any, *, mode: str,
            r_max: int, size: int) -> Tuple[Any, Any, Any]:
    from . import addressing, mask as masks

    lane_mask = masks.lane_bits(mode, mask_value, 256 // size)
    reads, active = addressing.source_table(base, rep_stride, blk, lane_mask, repeat,
                                            r_max=r_max, size=size)
    return reads, lane_mask, active


_HOST_GATHER: list = []


def _host_gather(*args: Any, **kw: Any) -> Tuple[Any, Any, Any]:
    """:func:`_gather` compiled (one dispatch per host call instead of one per table op)."""
    if not _HOST_GATHER:
        import jax

        _HOST_GATHER.append(jax.jit(_gather, static_argnames=("mode", "r_max", "size")))
    return _HOST_GATHER[0](*args, **kw)


# ------------------------------------------------------------------ the registry -----------

_BY_NAME: Dict[str, Instruction] = {}
_ALIASES: Dict[str, str] = {}
_profiles_checked = [False]


def register(ins: Instruction) -> Instruction:
    """Add ``ins`` (called once, at the end of its instruction file)."""
    if ins.name in _BY_NAME and _BY_NAME[ins.name] is not ins:
        raise ValueError(f"instruction {ins.name!r} registered twice")
    if ins.family not in ("ascendc", "tik"):
        raise ValueError(f"{ins.name}: family must be 'ascendc' or 'tik', got {ins.family!r}")
    _BY_NAME[ins.name] = ins
    for a in ins.aliases:
        _ALIASES[a] = ins.name
    return ins


def declared_fields() -> Dict[str, ProfileField]:
    """Every :class:`ProfileField` a registered instruction declares, by name."""
    out: Dict[str, ProfileField] = {}
    for ins in _BY_NAME.values():
        for f in ins.profile_fields:
            if f.name in out and out[f.name] != f:
                raise ValueError(f"profile field {f.name!r} declared twice, differently")
            out[f.name] = f
    return out


def check_profile(prof: Any, instructions: Sequence[Instruction]) -> None:
    """:class:`ascend_ref.chips.ProfileError` (a ValueError) naming the file ``prof`` was
    loaded from when it lists an unknown API, or its instruction facts do not match what
    ``instructions`` declare (an undeclared key, a value outside the choices, a missing key
    on a product that has the instruction). :func:`ascend_ref.chips.chip` runs it once per
    profile, when it loads the file."""
    from .chips import SHARED_KEYS, ProfileError, config_dir

    where = getattr(prof, "source", "") or str(config_dir() / "chips" / f"{prof.id}.toml")
    by_name = {i.name: i for i in instructions}
    unknown = sorted(set(prof.apis) - set(by_name))
    if unknown:
        raise ProfileError(where, "[apis]", unknown[0], f"registered instructions "
                           f"{sorted(by_name)}", what=f"[apis] lists {unknown[0]!r}, which "
                           "is not a registered instruction")
    fields_ = {f.name: (f, i) for i in instructions for f in i.profile_fields}
    facts = dict(prof.facts)
    for key, value in facts.items():
        if key not in fields_:
            raise ProfileError(where, key, value, f"a shared field {list(SHARED_KEYS)} or an "
                               f"instruction's field {sorted(fields_)}", what=f"{key!r} is "
                               "neither a shared profile field nor a field an instruction "
                               "declares")
        f, _ = fields_[key]
        if isinstance(value, bool) or value not in f.choices:
            raise ProfileError(where, key, value, str(list(f.choices)))
    for key, (f, ins) in sorted(fields_.items()):
        if prof.dtypes(ins.name) and key not in facts:
            raise ProfileError(where, key, None, f"{key} = one of {list(f.choices)} "
                               f"({f.doc or 'a per-product rule'})",
                               what=f"lists {ins.name} but does not set {key!r}")
    for ins in instructions:            # an option the product lists the values of
        opt = ins.option
        attr = getattr(opt, "product_attr", "")
        if opt is not None and attr and prof.dtypes(ins.name) and not getattr(prof, attr):
            raise ProfileError(where, f"[{attr}]", [], f"the {opt.key} values it has",
                               what=f"lists {ins.name} but no {opt.key} ([{attr}] is "
                               "missing or empty)")
    if prof.block_fill == "fill":       # every dtype an instruction that fills has, each type
        for ins in instructions:
            if "block_fill" not in ins.profile_rules:
                continue
            for rt, table in sorted(prof.block_fill_values.items()):
                missing = [d for d in prof.dtypes(ins.name) if d not in table]
                if missing:
                    raise ProfileError(where, f"[block_fill_values] {rt}", dict(table),
                                       f"a value for every dtype [apis] {ins.name} lists",
                                       what=f"[block_fill_values] {rt} has no {missing[0]}, "
                                       f"which [apis] {ins.name} lists")
    known = set(SHARED_KEYS) | set(fields_) | _audited()
    for ins in instructions:
        known |= set(ins.assumptions) | set(ins.profile_rules)
    unknown = [a for a in prof.assumed if a not in known]
    if unknown:
        raise ProfileError(where, "assumed", unknown[0], f"profile fields and named "
                           f"assumptions {sorted(known)}", what=f"assumed lists "
                           f"{unknown[0]!r}, which no field, instruction or audit check has")


def _audited() -> set:
    """The assumptions ``verify --audit`` checks by a name of its own (``minmax_rules``...)."""
    from .assumptions import AUDITED

    return {name.split(" (")[0] for name in AUDITED}


@functools.lru_cache(maxsize=None)
def _dst_dtypes(api: str) -> Dict[str, str]:
    from .chips import chip, chips

    out: Dict[str, str] = {}
    for c in chips():       # each pair is one of chips.DST_PAIRS: the products agree
        out.update(chip(c).dst_dtypes.get(api, {}))
    return out


def dst_dtype(api: str, src_dtype: str) -> str:
    """The dst dtype of ``api`` for a ``src_dtype`` source: the products' documented (dst,
    src) pair tables (``[dst_dtypes]`` in ``configs/chips/*.toml``; Ascend 950
    ReduceRepeat<SUM>: int16 -> int32, uint16 -> uint32), the same dtype where none pairs
    it. The products agree (one result layout per dtype: every pair is one of
    :data:`ascend_ref.chips.DST_PAIRS`); which pairs a product accepts is its own table
    (:meth:`ascend_ref.chips.ChipProfile.dst_dtype`)."""
    return _dst_dtypes(api).get(str(src_dtype), str(src_dtype))


def _checked_profiles() -> None:
    """Every product profile names registered instructions and sets their declared fields."""
    if not _profiles_checked[0]:
        from .chips import chip, chips

        for c in chips():          # loading a profile checks it (_check_loaded, on_load)
            chip(c)
        _profiles_checked[0] = True


def all() -> List[Instruction]:  # noqa: A001 - the registry's own vocabulary
    """Every registered instruction, in :data:`MODULES` order.

    The instruction modules register when the package is imported (``ascend_ref/__init__``
    imports ``ascendc`` and ``tik``, which import them), before any tool can ask."""
    _checked_profiles()
    rank = {m: k for k, m in enumerate(MODULES)}
    return sorted(_BY_NAME.values(), key=lambda i: rank.get(i.kernel.effects.__module__, 99))


def names() -> Tuple[str, ...]:
    """Every API name, in :data:`MODULES` order."""
    return tuple(i.name for i in all())


def lookup(name: str, *, api: str = "ascend_ref") -> Instruction:
    """The instruction called ``name`` (or an alias); BAD_ARGUMENT naming the known ones."""
    ins = get(name)                 # None for a name that is no str (a list: unhashable)
    if ins is None:
        raise ConstraintError(Code.BAD_ARGUMENT, api=api, param="api", value=name,
                              allowed=f"one of {list(names())}")
    return ins


def get(name: Any) -> Optional[Instruction]:
    """The instruction called ``name``, or None."""
    if not isinstance(name, str):
        return None
    return _BY_NAME.get(name) or _BY_NAME.get(_ALIASES.get(name, ""))


def where(pred: Callable[[Instruction], bool]) -> Tuple[str, ...]:
    """Names of the instructions for which ``pred`` holds (for messages and tables)."""
    return tuple(i.name for i in all() if pred(i))


def _check_loaded(prof: Any) -> None:
    """:func:`check_profile` of a profile :func:`ascend_ref.chips.chip` loads, against every
    instruction (each module registered first)."""
    import importlib

    for module in MODULES:
        importlib.import_module(module)
    check_profile(prof, list(_BY_NAME.values()))


_on_profile_load(_check_loaded)
