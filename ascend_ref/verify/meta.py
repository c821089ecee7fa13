"""What the dump writers and readers of both layouts share: the file-level error and a case's
JSON ``meta`` (format.py writes and reads version 1 and dispatches; stacked.py is version 2 and
builds on this module, not on format.py, so the two do not import each other)."""

from __future__ import annotations

import os
from typing import Optional, Union

import numpy as np

from ..case import Case
from ..constraints import Code
from ..mask import CounterMask

PathLike = Union[str, "os.PathLike[str]"]


class DumpError(ValueError):
    """A dump file (or one case in it) cannot be verified: ``file``, ``case``, ``field``, ``reason``."""

    def __init__(self, file: PathLike, field: str, reason: str, case: Optional[int] = None):
        self.file, self.field, self.reason, self.case = str(file), field, reason, case
        where = f"{self.file}" + (f": case {case}" if case is not None else "")
        super().__init__(f"{where}: {field}: {reason}")

    def __reduce__(self):                # picklable (gathered between processes)
        return (DumpError, (self.file, self.field, self.reason, self.case))



# ------------------------------------------------------------------ a case's meta -----------

def _jsonable_mask(mask):
    if isinstance(mask, CounterMask):           # counter mode (SetMaskCount): {"counter": n}
        return {"counter": int(mask.count)}
    if isinstance(mask, (list, tuple, np.ndarray)):
        return [int(w) for w in mask]
    return int(mask)


def case_meta(case: Case, *, layout: str = "ub", regions: Optional[dict] = None,
              error: Optional[Union[str, Code]] = None, source: Optional[str] = None,
              spr: Optional[dict] = None) -> dict:
    """The JSON ``meta`` object of one case (see docs/verify.md; ``spr``: the reduce special
    registers, docs/verify.md §1c, :mod:`ascend_ref.verify.registers`)."""
    opt = case.option
    opt = getattr(opt, "value", opt)
    if isinstance(opt, np.bool_):
        opt = bool(opt)
    meta = {
        "api": case.api, "chip": case.chip if isinstance(case.chip, str) else case.chip.id,
        "dtype": case.dtype, "option": opt, "mask": _jsonable_mask(case.mask),
        "params": {k: int(v) for k, v in case.params.items()},
        "tensors": {k: [int(a), int(s)] for k, (a, s) in case.tensors.items()},
        "saturate": None if case.saturate is None else bool(case.saturate),
        "layout": layout,
    }
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
