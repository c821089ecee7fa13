"""``ascend-ref fuzz`` — the project's main job (see ``docs/fuzz.md``).

    ascend-ref fuzz                         # the default campaign: every API and product
    ascend-ref fuzz a2_vs_950               # a campaign by name (configs/campaigns/) or path
    ascend-ref fuzz --replay default:123    # re-run one case and explain it
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path
from typing import Optional

from ..cli_args import at_least


def _seconds(text: str) -> float:
    """argparse type: seconds >= 0 (``inf``: no time limit)."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not v >= 0:
        raise argparse.ArgumentTypeError(f"{text} must be >= 0 (or inf)")
    return v


#: the modes of each flag that changes what ``ascend-ref fuzz`` does (``--list``,
#: ``--replay``, ``--report``, else a run): in another mode it would be ignored and the
#: command would do something else than asked (``--original`` ran the whole campaign).
#: Counts and tuning flags (``--cases``, ``--quiet``, ``--workers``, ``--no-shrink``,
#: ``--shrink-budget``) are harmless anywhere.
_MODE_FLAGS = {"original": ("--original", ("replay",)), "save": ("--save", ("replay",)),
               "detail": ("--detail", ("report",)), "fresh": ("--fresh", ("run",)),
               "seed": ("--seed", ("run", "report")), "path": ("--path", ("run", "report"))}


def _mode_error(args: argparse.Namespace) -> Optional[str]:
    """Why the flags given cannot go together (a flag of another mode, two modes), or None."""
    modes = [m for m in ("list", "replay", "report") if getattr(args, m, None)]
    if len(modes) > 1:
        return f"--{modes[0]} and --{modes[1]} cannot go together: give one"
    mode = modes[0] if modes else "run"
    for key, (flag, where) in _MODE_FLAGS.items():
        if getattr(args, key, None) not in (None, False) and mode not in where:
            said = " or ".join("a run" if w == "run" else f"--{w}" for w in where)
            now = "a run" if mode == "run" else f"--{mode}"
            return f"{flag} is for {said}, not {now}"
    return None


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "fuzz", help="run a fuzz campaign (default: the main job) or replay one case",
        description="Fuzz campaigns over the parameter space, JAX reference vs a comparator "
                    "(scalar oracle, another product, or a device command). Results go to "
                    "SQLite; an interrupted campaign resumes where it stopped.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n  ascend-ref fuzz\n  ascend-ref fuzz a2_vs_950\n"
               "  ascend-ref fuzz configs/campaigns/tie_rule.toml --cases 500\n"
               "  ascend-ref fuzz tie_rule --path general\n"
               "  ascend-ref fuzz --replay default:17\n  ascend-ref fuzz --list")
    p.add_argument("campaign", nargs="?", default=None,
                   help="campaign TOML file, or a name in configs/campaigns/ (default: default)")
    p.add_argument("--cases", type=at_least(0), help="override the case count (more extends a campaign)")
    p.add_argument("--seed", type=at_least(0), help="override the seed (a new campaign identity)")
    p.add_argument("--db", help="results file (default: the campaign's [results] db, "
                                "else ascend-ref-fuzz.sqlite in the current directory)")
    p.add_argument("--path", choices=("fast", "general"),
                   help="the JAX algorithms to check (default: the campaign's [compare] path, "
                        "else fast; general: the reference algorithms behind the fast paths "
                        "and explain; a separate campaign in the results file)")
    p.add_argument("--fresh", action="store_true",
                   help="forget this campaign's stored results and run it again")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress output")
    p.add_argument("--workers", type=at_least(0), metavar="N",
                   help="oracle worker processes (default: the campaign's, 'auto' = 1 on 2+ CPUs)")
    p.add_argument("--no-shrink", action="store_true", help="record mismatches, do not shrink")
    p.add_argument("--shrink-budget", type=_seconds, metavar="S",
                   help="seconds for shrinking in this run (default: the campaign's budget; "
                        "inf: no time limit, [shrink] max_evaluations bounds each mismatch)")
    p.add_argument("--replay", metavar="[NAME:]ID",
                   help="re-run case ID (a mismatch: its minimal case) and explain it")
    p.add_argument("--original", action="store_true",
                   help="with --replay: the original case, not the shrunk one")
    p.add_argument("--save", metavar="FILE.npz", help="with --replay: save the case (npz)")
    p.add_argument("--report", action="store_true",
                   help="print the stored report of the campaign without running it")
    p.add_argument("--detail", action="store_true", help="untruncated coverage table")
    p.add_argument("--list", action="store_true",
                   help="list campaign files and the campaigns stored in the results file")
    from .. import scale

    scale.add_arguments(p)
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from .campaign import Campaign
    from .exchange import DeviceCommandError
    from .runner import DEFAULT_DB

    bad = _mode_error(args)
    if bad is not None:
        print(f"ascend-ref fuzz: {bad}", file=sys.stderr)
        return 2
    try:
        if args.list:
            return _list(args)
        if args.replay:
            from .replay import replay

            db = args.db or (Campaign.load(args.campaign).db if args.campaign else DEFAULT_DB)
            return replay(args.replay, db, args.campaign, original=args.original,
                          save=args.save)
        camp = Campaign.load(args.campaign)
        if args.cases is not None:
            camp.cases = args.cases
        if args.seed is not None:
            camp.seed = args.seed
            vars(camp).pop("_pool", None)      # the cached pool was drawn with the old seed
        if args.workers is not None:
            camp.workers = max(0, args.workers)
        if args.path is not None:
            camp.compare.path = args.path
        if args.shrink_budget is not None:
            camp.shrink.budget_s = args.shrink_budget
        db = args.db or camp.db or DEFAULT_DB
        if args.report:
            from .runner import report
            from .store import Store

            if not Path(db).exists():
                print(f"no results file {db}", file=sys.stderr)
                return 2
            print(report(camp, Store(db), detail=args.detail))
            return 0
        from .. import scale
        from .runner import run_campaign

        compile_cache()
        scale.init_from_args(args)
        s = run_campaign(camp, db, fresh=args.fresh, quiet=args.quiet,
                         do_shrink=False if args.no_shrink else None)
        return 1 if s["mismatch"] and camp.compare.kind != "product" else 0
    except (FileNotFoundError, ValueError) as e:
        print(f"ascend-ref fuzz: {e}", file=sys.stderr)
        return 2
    except DeviceCommandError as e:
        print(f"ascend-ref fuzz: {e}\ncommitted chunks are kept: fix the command and run the "
              f"same command again to resume", file=sys.stderr)
        return 2
    except Exception as e:               # a results file that cannot be used: no traceback
        msg = _results_error(e, args)
        if msg is None:
            raise
        print(f"ascend-ref fuzz: {msg}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\ninterrupted: committed chunks are kept; run the same command to resume",
              file=sys.stderr)
        return 130


def _results_error(e: BaseException, args: argparse.Namespace) -> "str | None":
    """The one-line message for an unusable results file (None: not such an error)."""
    import sqlite3

    from .store import StoreError

    if isinstance(e, StoreError):
        return str(e)
    if isinstance(e, sqlite3.Error):
        return (f"results file {args.db or '(the campaign default)'}: {e}; it may be corrupt "
                f"or read-only: move it aside or give another --db FILE")
    return None


def compile_cache() -> Optional[str]:
    """Keep compiled kernels on disk between campaign runs: compiling the default campaign's
    36 kernels dominates a cold run. ``$ASCEND_REF_COMPILE_CACHE``: the folder (default
    ``~/.cache/ascend_ref/jax``) or ``off``; a ``JAX_COMPILATION_CACHE_DIR`` already set
    wins. Returns the folder used."""
    import os

    import jax

    where = os.environ.get("ASCEND_REF_COMPILE_CACHE",
                           str(Path.home() / ".cache" / "ascend_ref" / "jax"))
    configured = getattr(jax.config, "jax_compilation_cache_dir")   # (a dynamic option)
    if configured:
        return str(configured)
    if where.strip().lower() in ("", "off", "0", "no", "false"):
        return None
    jax.config.update("jax_compilation_cache_dir", where)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
    return where


def _list(args: argparse.Namespace) -> int:
    from .campaign import Campaign, campaigns_dir
    from .runner import DEFAULT_DB
    from .store import Store

    print(f"campaign files in {campaigns_dir()}:")
    for p in sorted(campaigns_dir().glob("*.toml")):
        try:
            c = Campaign.load(p)
            print(f"  {p.stem:<14} {c.cases:>6} cases  {c.compare.kind:<8} "
                  f"{textwrap.shorten(c.description, 70, placeholder=' ...')}")
        except Exception as e:  # noqa: BLE001
            print(f"  {p.stem:<14} (invalid: {e})")
    db = args.db or DEFAULT_DB
    if Path(db).exists():
        st = Store(db)
        print(f"campaigns in {db}:")
        for row in st.find_campaigns():
            n = st.counts(row["id"])
            print(f"  {row['id']:<28} {n['total']:>6}/{row['cases']} cases, "
                  f"{n['mismatch']} mismatch(es)")
    return 0
