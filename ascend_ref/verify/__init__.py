"""Mass verification of device / simulator dumps against the reference.

A *dump* (``.npz``, format version 1, see ``docs/verify.md`` and
:mod:`ascend_ref.verify.format`) records calls as the device ran them: API, product, static
option, parameters, tensors, and the UB before and after (whole, or as regions with their
addresses). :func:`verify` streams any number of dump files, compares every byte the
reference defines (undefined bytes are skipped and counted), groups mismatches by bit
signature (as the fuzzer does) with a repro command each, and reports every bad file or case
without stopping. ``audit=True`` adds the assumption audit (:mod:`ascend_ref.verify.audit`).

>>> import numpy as np, tempfile, os
>>> from ascend_ref.case import Case
>>> from ascend_ref.verify import dumps_from_cases, verify
>>> ub = np.zeros(512, np.uint8); ub[:256] = np.ones(64, np.float32).view(np.uint8)
>>> c = Case("whole_reduce_sum", "atlas_a2", "float32", None, 64,
...          {"repeat": 1, "dst_rep_stride": 1, "src_blk_stride": 1, "src_rep_stride": 8},
...          {"src": (0, 64), "dst": (256, 8)}, ub)
>>> d = tempfile.mkdtemp()
>>> paths = dumps_from_cases([c], d)          # a "device" that behaves like the reference
>>> r = verify(d, progress=False)
>>> r.ok, r.cases, r.agreed
(True, 1, 1)
"""

from __future__ import annotations

import os
from typing import List, Optional, Sequence

from .format import (FORMAT, VERSION, DumpCase, DumpError, DumpFile, case_meta,
                     iter_dump_cases, iter_paths, open_dump, tensor_regions, write_dump,
                     write_dumps)
from .meta import PathLike, Regions, case_fields
from .run import Group, Report, explain, repro_command, verify


def dumps_from_cases(cases: Sequence, out_dir: PathLike, *, per_file: int = 1,
                     regions: Regions = None, prefix: str = "dump",
                     outcomes: Optional[Sequence] = None,
                     stacked: bool = False, compress: bool = True,
                     spr: bool = False) -> List[str]:
    """Run ``cases`` on the reference and write what it left as dumps — a perfect "device".

    Tests and users start from these and corrupt them (or replace ``ub_after`` with real
    device bytes). ``per_file`` cases go in each file ``{out_dir}/{prefix}_{k:06d}.npz``;
    ``regions``, ``compress`` and ``stacked`` (format version 2, the stacked layout) as in
    :func:`write_dumps`. A case the reference rejects is written with
    ``error=`` its constraint code. ``outcomes`` — reference outcomes already computed.
    ``spr`` — also record the reduce special registers every getter of the product reads
    after the call, run from the fresh state (docs/verify.md §1c; only for cases whose
    product has a getter). Returns the paths written. A case whose dump ``verify`` would
    not read as that case (a float repeat, a ``"yes"`` saturate, a repeat past int32, a mask
    of 3 words, ...: :func:`~ascend_ref.verify.meta.case_fields`, ``strict``) is a
    BAD_ARGUMENT naming ``cases[i].field`` before anything runs or is written.
    """
    from ..batch import run_cases
    from ..batch_args import is_int
    from ..cli_args import is_path
    from ..case import as_cases

    if not is_int(per_file) or per_file < 1:
        raise ValueError(f"per_file = {per_file!r}: expected an int >= 1 (cases a file)")
    if not is_path(out_dir):
        raise ValueError(f"out_dir = {out_dir!r}: expected the folder to write into (a "
                         f"non-empty str or os.PathLike)")
    if not isinstance(prefix, str) or not prefix or "/" in prefix or os.sep in prefix:
        raise ValueError(f"prefix = {prefix!r}: expected a file name start without a folder "
                         f"(the files go in out_dir)")
    cases = as_cases(cases, "dumps_from_cases")
    for k, c in enumerate(cases):       # every case recordable, before anything runs or is
        case_fields(c, k, api="dumps_from_cases", strict=True)   # written (no file of a
                                                                 # refused batch)
    outs = list(outcomes) if outcomes is not None else run_cases(cases)
    if len(outs) != len(cases):
        raise ValueError(f"{len(outs)} outcomes for {len(cases)} cases: one outcome a case")
    os.makedirs(out_dir, exist_ok=True)
    paths = []
    for k in range(0, len(cases), per_file):
        cs, os_ = cases[k:k + per_file], outs[k:k + per_file]
        p = os.path.join(os.fspath(out_dir), f"{prefix}_{k // per_file:06d}.npz")
        regs = None
        if spr:
            from .registers import reference_dump

            regs = [reference_dump(c) if o.code is None else None for c, o in zip(cs, os_)]
        write_dumps(p, cs, [None if o.code is not None else o.ub for o in os_],
                    regions=regions, errors=[o.code for o in os_], stacked=stacked,
                    compress=compress, sprs=regs)
        paths.append(p)
    return paths


__all__ = ["FORMAT", "VERSION", "DumpError", "DumpCase", "DumpFile", "open_dump", "write_dump",
           "write_dumps", "iter_dump_cases", "iter_paths", "case_meta", "tensor_regions",
           "verify", "Report", "Group", "explain", "repro_command", "dumps_from_cases"]
