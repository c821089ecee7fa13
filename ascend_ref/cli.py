"""``ascend-ref`` — the command line: ``fuzz`` (the main job), ``verify``, ``golden``, ``explain``.

Each sub-command lives in its own module, which exposes ``register(subparsers)``; this file
only dispatches. ``ascend-ref`` with no sub-command runs the default fuzz campaign.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import Optional, Sequence

#: sub-command → module exposing ``register(subparsers)``
COMMANDS = {
    "fuzz": "ascend_ref.fuzz.cli",
    "verify": "ascend_ref.verify.cli",
    "golden": "ascend_ref.golden",
    "explain": "ascend_ref.explain_cli",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ascend-ref",
        description="Bit-exact reference of Ascend vector reductions: fuzz, verify, golden, explain.")
    parser.add_argument("--version", action="store_true",
                        help="print the versions of this package, JAX, jaxlib, numpy, "
                             "ml_dtypes and Python, and exit")
    sub = parser.add_subparsers(dest="command")
    for name, module in COMMANDS.items():
        try:
            importlib.import_module(module).register(sub)
        except ModuleNotFoundError as e:
            if not module.startswith(e.name or "?"):
                raise
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    try:
        return _main(argv)
    except BrokenPipeError:
        # the reader went away (``ascend-ref fuzz --report | head``): stop quietly as other
        # tools do; stdout goes to /dev/null so the exit's own flush raises nothing either
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):      # a stdout without a file descriptor
            pass
        return 141                         # 128 + SIGPIPE, what a shell reports for it


def _main(argv: Optional[Sequence[str]]) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:
        argv = ["fuzz"]
    try:        # building the parser loads every product profile (the explain choices)
        parser = build_parser()
    except ValueError as e:       # a malformed profile (chips.ProfileError): one line
        print(f"ascend-ref: {e}", file=sys.stderr)
        return 2
    args = parser.parse_args(argv)
    if args.version:
        from .provenance import describe, software

        print(describe(software()))
        return 0
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    return int(args.func(args) or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
