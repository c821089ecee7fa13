"""What the dump writers and readers of both layouts share: the file-level error and a case's
JSON ``meta`` (format.py writes and reads version 1 and dispatches; stacked.py is version 2 and
builds on this module, not on format.py, so the two do not import each other)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Dict, List, Literal, Optional, Sequence, Tuple, Union

import numpy as np

from .. import registry
from ..argtypes import PathLike
from ..batch_args import held_int, is_int
from ..case import Case
from ..chips import chips as all_chips
from ..constraints import Code, ConstraintError
from ..mask import U64, CounterMask, api_words
from ..ub import ALIASES_TEXT, DTYPES, dtype_from_text

#: the ``regions`` argument of the writers: None (the whole UB), ``"tensors"`` (each
#: tensor's declared extent) or ``{name: (addr, nbytes)}``
Regions = Union[None, Literal["tensors"], Mapping[str, Sequence[int]]]


class DumpError(ValueError):
    """A dump file (or one case in it) cannot be verified: ``file``, ``case``, ``field``, ``reason``."""

    def __init__(self, file: PathLike, field: str, reason: str, case: Optional[int] = None) -> None:
        self.file, self.field, self.reason, self.case = str(file), field, reason, case
        where = f"{self.file}" + (f": case {case}" if case is not None else "")
        super().__init__(f"{where}: {field}: {reason}")

    def __reduce__(self) -> Tuple[type, Tuple[str, str, str, Optional[int]]]:
        # picklable (gathered between processes)
        return (DumpError, (self.file, self.field, self.reason, self.case))



# ------------------------------------------------------------------ a case's meta -----------

#: the largest parameter, address, size or continuous mask the readers take
I32 = 2**31 - 1


class _Fields:
    """Checks of one case's fields for a writer: ``where`` (``cases[3]``) and ``api`` name
    it in a BAD_ARGUMENT; ``strict``: also the readers' ranges (see :func:`case_fields`)."""

    def __init__(self, where: str, api: str, strict: bool) -> None:
        self.where, self.api, self.strict = where, api, strict

    def bad(self, fld: str, value: Any, allowed: str) -> ConstraintError:
        return ConstraintError(Code.BAD_ARGUMENT, api=self.api, param=f"{self.where}.{fld}",
                               value=value, allowed=allowed)

    def int_(self, v: Any, fld: str, hi: int = I32, what: str = "an int") -> int:
        """``v`` (an int, numpy integer or concrete 0-d integer array) as the int it holds; a
        float, bool or string is refused (``int()`` recorded 1.7 as 1 and True as 1), and
        when strict a value outside ``[0, hi]`` (``np.array(2**32 + 1)``)."""
        w = held_int(v)
        if not is_int(w):
            raise self.bad(fld, v, what)
        if self.strict and not 0 <= w <= hi:
            raise self.bad(fld, v, f"an int in [0, {hi}] (what a dump's reader takes)")
        return int(w)

    def mask(self, mask: Any, word_order: str) -> Union[int, List[int], Dict[str, int]]:
        """An int, bit-mode words in the API's own order (a ``uint32[4]`` array of lane
        words, lanes 0-31 first, as the reference takes it, becomes those two 64-bit
        words), or ``{"counter": n}``; strict: 1 or 2 words, each in [0, 2**64 - 1]."""
        if isinstance(mask, CounterMask):       # counter mode (SetMaskCount): {"counter": n}
            return {"counter": self.int_(mask.count, "mask.count", U64)}
        if not isinstance(mask, (list, tuple)) and hasattr(mask, "dtype") and \
                np.ndim(mask) == 1:
            a = np.asarray(mask)
            if a.dtype.kind not in "iu":
                raise self.bad("mask", f"{a.dtype} array {a.tolist()}", "integer words")
            if a.shape == (4,):                 # lane words (ascend_ref.mask.parse)
                lw = [int(w) for w in a]
                if not all(0 <= w <= 0xFFFFFFFF for w in lw):
                    raise self.bad("mask", lw, "a [4] array of lane words, each in "
                                               "[0, 2**32 - 1]")
                return api_words([lw[0] | lw[1] << 32, lw[2] | lw[3] << 32], word_order)
            mask = [int(w) for w in a]
        if isinstance(mask, (list, tuple)):
            if self.strict and not 1 <= len(mask) <= 2:
                raise self.bad("mask", list(mask), "1 or 2 bit-mode words (or a uint32[4] "
                                                   "array of lane words)")
            return [self.int_(w, f"mask[{k}]", U64) for k, w in enumerate(mask)]
        return self.int_(mask, "mask", what="an int (continuous mode), a list of int words "
                                            "(bit mode), a uint32[4] array of lane words or "
                                            "a CounterMask")

    def saturate(self, v: Any) -> Optional[bool]:
        """None, or the bool a switch holds (a bool, an int 0 / 1, a 0-d bool or integer
        array holding one: what the reference takes); ``"yes"``, 0.5, 2 were ``true``."""
        if v is None:
            return None
        w = held_int(v)
        if isinstance(w, (bool, np.bool_)) or (is_int(w) and w in (0, 1)):
            return bool(w)
        if getattr(v, "shape", None) == () and np.asarray(v).dtype == np.bool_:
            return bool(v)
        raise self.bad("saturate", v, "True, False or None (or an int 0 / 1)")

    def option(self, ins: Any, opt: Any) -> Any:
        """The canonical option the reference reads (an enum member's name, a bool). Refused:
        an option of an API that has none (a dump holds null there) and any value the
        reference does not take as the option (None included: BAD_ARGUMENT there, while a
        dump's null means the default)."""
        if ins.option is None:
            if opt is not None:
                raise self.bad("option", opt, f"None ({ins.name} has no static option)")
            return None
        try:
            return ins.option.parse(opt, api=ins.name)
        except ConstraintError as e:
            raise self.bad("option", opt, f"{ins.option.key}: {e.allowed}") from None

    def names(self, have: Any, want: Sequence[str], group: str) -> List[str]:
        """The names of ``case.params`` / ``case.tensors`` to record (strict: ``want``)."""
        if not isinstance(have, Mapping):
            raise self.bad(group, type(have).__name__, f"a dict naming {', '.join(want)}")
        odd = [k for k in want if k not in have] + [k for k in have if k not in want]
        if self.strict and odd:
            raise self.bad(f"{group}.{odd[0]}", have.get(odd[0]),
                           f"exactly {', '.join(want)} in {group}")
        if not all(isinstance(k, str) for k in have):
            raise self.bad(group, list(have), "names that are strings")
        return list(have)

    def pair(self, v: Any, fld: str) -> List[int]:
        if not (isinstance(v, (tuple, list)) and len(v) == 2
                or getattr(v, "shape", None) == (2,)):
            raise self.bad(fld, v, "an (addr, size) pair of ints")
        return [self.int_(v[0], f"{fld}[0]"), self.int_(v[1], f"{fld}[1]")]


def case_fields(case: Case, index: Optional[int] = None, *, api: str = "write_dumps",
                strict: bool = False) -> dict:
    """The fields of ``case``'s ``meta`` a reader rebuilds the case from, each exactly as
    the reference takes it (a ``uint32[4]`` lane-word mask as its two words, an option in
    another spelling canonical). A value no dump records as it is -- a float or bool where
    an int goes, a ``"yes"`` saturate, an option the API does not take, a UB that is not
    1-D uint8 -- is a BAD_ARGUMENT :class:`ConstraintError` naming ``cases[index].field``
    (``int()`` / ``bool()`` recorded it as another, valid case). An integer is recorded as
    given, in or out of the readers' ranges (a device's call; the reader reports it as that
    case's bad input); ``strict`` (:func:`~ascend_ref.verify.dumps_from_cases`, which must
    write what ``verify`` accepts) also refuses what a reader refuses: a value outside its
    range, a mask of another number of words, an unknown product or dtype, a parameter or
    tensor missing or extra, an empty UB."""
    f = _Fields("case" if index is None else f"cases[{index}]", api, strict)
    ins = registry.get(case.api) if isinstance(case.api, str) else None
    if ins is None:
        raise f.bad("api", case.api, f"one of {list(registry.names())}")
    chip = case.chip if isinstance(case.chip, str) else getattr(case.chip, "id", None)
    if not isinstance(chip, str) or (strict and isinstance(case.chip, str)
                                     and chip not in all_chips()):
        raise f.bad("chip", case.chip, f"a product id, one of {all_chips()}")
    if not isinstance(case.dtype, str) or (strict and dtype_from_text(case.dtype) is None):
        raise f.bad("dtype", case.dtype, f"one of {list(DTYPES)} (or {ALIASES_TEXT})")
    ub = case.ub
    if not (hasattr(ub, "dtype") and np.dtype(ub.dtype) == np.uint8
            and len(getattr(ub, "shape", ())) == 1 and (ub.shape[0] > 0 or not strict)):
        shown = (f"{ub.dtype} array of shape {tuple(ub.shape)}" if hasattr(ub, "dtype")
                 else type(ub).__name__)
        raise f.bad("ub", shown, "a 1-D uint8 array" + (" of at least 1 byte" if strict
                                                        else ""))
    params = f.names(case.params, ins.params, "params")
    tensors = f.names(case.tensors, ins.operands, "tensors")
    return {
        "api": case.api, "chip": chip, "dtype": case.dtype,
        "option": f.option(ins, case.option),
        "mask": f.mask(case.mask, ins.word_order),
        "params": {k: f.int_(case.params[k], f"params.{k}") for k in params},
        "tensors": {k: f.pair(case.tensors[k], f"tensors.{k}") for k in tensors},
        "saturate": f.saturate(case.saturate),
    }


def _jsonable_mask(mask: Any, word_order: str = "ascendc"
                   ) -> Union[int, List[int], Dict[str, int]]:
    """A mask as a dump records it (:func:`case_fields`)."""
    return _Fields("case", "case_meta", False).mask(mask, word_order)


def case_meta(case: Case, *, layout: str = "ub", regions: Optional[dict] = None,
              error: Optional[Union[str, Code]] = None, source: Optional[str] = None,
              spr: Optional[dict] = None, index: Optional[int] = None) -> dict:
    """The JSON ``meta`` object of one case (see docs/verify.md; ``spr``: the reduce special
    registers, docs/verify.md §1c, :mod:`ascend_ref.verify.registers`). A case field no
    dump can record as it is raises (:func:`case_fields`; ``index``: the case's number in
    the message)."""
    meta = case_fields(case, index)
    meta["layout"] = layout
    if regions is not None:
        meta["regions"] = {k: [int(a), int(n)] for k, (a, n) in regions.items()}
        meta["ub_bytes"] = int(case.ub.size)
    if error is not None:
        meta["error"] = error.name if isinstance(error, Code) else str(error)
    if case.tags:
        meta["tags"] = {str(k): (v if isinstance(v, (int, float, str, bool)) or v is None
                                 else str(v)) for k, v in case.tags.items()}
    if source:
        meta["source"] = source
    if spr is not None:
        meta["spr"] = spr
    return meta


def tensor_regions(case: Case) -> dict:
    """``{name: (addr, nbytes)}``: each tensor's declared extent (the default dump regions)."""
    ins = case.instruction
    return {k: (int(a), int(n) * np.dtype(ins.tensor_dtype(k, case.dtype)).itemsize)
            for k, (a, n) in case.tensors.items()}
