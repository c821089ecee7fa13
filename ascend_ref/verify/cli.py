"""``ascend-ref verify PATH...`` — verify device dumps against the reference.

Exit code: 0 when every case agrees; 1 on any mismatch or bad input (or no case found);
2 on a usage error (a bad option value, an unwritable ``--json`` file).
"""

from __future__ import annotations

import argparse
import json
import sys

from ..cli_args import at_least

#: argparse type: an integer >= 1
positive_int = at_least(1)
#: argparse type: an integer >= 0
case_number = at_least(0)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "verify", help="verify device/simulator dumps (.npz) against the reference",
        description="Stream dump files (directories are searched for *.npz), compare every byte "
                    "the reference defines (undefined bytes are skipped and counted), group "
                    "mismatches by bit signature with a repro command, report every "
                    "bad file. Exit 1 on any mismatch or bad input. Dump format: docs/verify.md.")
    p.add_argument("paths", nargs="+", metavar="PATH", help="dump files or directories")
    p.add_argument("--case", type=case_number, metavar="N",
                   help="verify only case N of the (single) file given")
    p.add_argument("--explain", action="store_true",
                   help="with --case: show every differing element, reference vs device")
    p.add_argument("--audit", action="store_true",
                   help="audit the profile assumptions: per assumption, how many cases "
                        "exercised it and whether the device agreed")
    p.add_argument("--batch", type=positive_int, default=None, metavar="N",
                   help="cases per reference batch (memory ~ N x 5 x UB size; default 256)")
    p.add_argument("--json", metavar="FILE", help="also write the report as JSON")
    p.add_argument("--examples", type=positive_int, default=1, metavar="K",
                   help="example cases shown per mismatch group")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    from .. import scale

    scale.add_arguments(p)
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from .format import DumpError
    from .run import DEFAULT_BATCH, explain, verify

    if args.case is not None:
        if len(args.paths) != 1:
            print("ascend-ref verify: --case needs exactly one dump file", file=sys.stderr)
            return 2
        if args.audit:      # one case's report has no per-assumption tally: say so
            print("ascend-ref verify: --audit reports on whole files: drop --case N",
                  file=sys.stderr)
            return 2
        try:
            text, sig = explain(args.paths[0], args.case)
        except DumpError as e:
            print(f"bad input: {e}")
            return 1
        if args.explain:
            print(text)
        else:
            print(f"{args.paths[0]} case {args.case}: "
                  f"{'agree' if sig is None else ('bad' if sig == 'bad' else 'MISMATCH: ' + sig)}")
        return 0 if sig is None else 1
    if args.explain:
        print("ascend-ref verify: --explain needs --case N", file=sys.stderr)
        return 2
    from .. import scale

    try:
        scale.init_from_args(args)
    except ValueError as e:
        print(f"ascend-ref verify: {e}", file=sys.stderr)
        return 2
    if args.json and scale.process_index() == 0:       # fail before the run, not after it
        try:
            with open(args.json, "a"):
                pass
        except OSError as e:
            print(f"ascend-ref verify: --json {args.json}: cannot write: {e.strerror or e}",
                  file=sys.stderr)
            return 2
    report = verify(args.paths, batch_size=args.batch or DEFAULT_BATCH, audit=args.audit,
                    progress=False if args.no_progress else None,
                    max_examples=max(args.examples, 1))
    if scale.process_index() != 0:           # one report: process 0 prints and writes it
        return report.exit_code
    print(report.format(examples=args.examples))
    if args.json:
        try:
            with open(args.json, "w") as fh:
                json.dump(report.to_json(), fh, indent=1)
        except OSError as e:
            print(f"ascend-ref verify: --json {args.json}: cannot write: {e.strerror or e}",
                  file=sys.stderr)
            return 2
    return report.exit_code
