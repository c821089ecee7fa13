"""``ascend-ref explain`` — the command line over :mod:`ascend_ref.explain` and
:mod:`ascend_ref.viz`.

It sits above both: :mod:`ascend_ref.viz` draws what :mod:`ascend_ref.explain` computes, and
this module prints the one and saves the other, so neither imports the command line.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Dict, List, Optional, Tuple, Union

import numpy as np

from . import registry
from .cli_args import at_least
from .constraints import ConstraintError
from .explain import access_map, constraints, make_case, rounding_tree
from .mask import CounterMask
from .ub import dtype_name


def _parse_mask(text: str) -> Union[int, List[int], CounterMask]:
    try:
        if text.strip().lower().startswith("counter:"):        # counter mode: counter:N
            return CounterMask(int(text.split(":", 1)[1], 0))
        t = text.strip().strip("[]")
        if "," not in t:
            return int(t, 0)
        return [int(w, 0) for w in t.split(",") if w.strip()]
    except ConstraintError:
        raise
    except ValueError:
        raise ValueError(f"--mask {text!r}: expected an int, comma-separated int words or "
                         f"counter:N (decimal or 0x hex)") from None


def _option_flags() -> Dict[str, Tuple[registry.Option, List[str]]]:
    """One flag per option key the registered instructions declare (``Instruction.option``:
    order, reduce_type, cal_index, index_low, ...): the option and the APIs that take it."""
    out: Dict[str, Tuple[registry.Option, List[str]]] = {}
    for ins in registry.all():
        if ins.option is not None:
            out.setdefault(ins.option.key, (ins.option, []))[1].append(ins.name)
    return out


def _flag(key: str) -> str:
    return "--" + key.replace("_", "-")


def _foreign_flags(ins: registry.Instruction, args: argparse.Namespace) -> List[str]:
    """The flags given that ``ins`` does not take (an option of another API, --saturate
    on one without a saturation mode, a tree flag without --tree / --tree-png)."""
    mine = ins.option.key if ins.option is not None else None
    bad = [f"{_flag(key)}: {ins.name} takes " + (f"{_flag(mine)}, not {_flag(key)}" if mine
                                                 else f"no {_flag(key)}")
           for key in _option_flags()
           if key != mine and getattr(args, key) not in (None, False)]
    if args.saturate is not None and not ins.saturating:
        bad.append(f"--saturate: {ins.name} has no saturation mode")
    if args.tree is None and not args.tree_png:
        bad += [f"{flag}: only with --tree or --tree-png"
                for flag, v in (("--block", args.block), ("--stage", args.stage),
                                ("--tree-depth", args.tree_depth),
                                ("--full-tree", args.full_tree or None)) if v is not None]
    return bad


def _parse_values(text: str) -> List[Union[int, float]]:
    """Numbers separated by commas; integer literals stay Python ints (exact for 64-bit
    types: a float holds only 53 bits)."""
    out: List[Union[int, float]] = []
    for k, v in enumerate(text.replace(" ", "").split(",")):
        if not v:           # "1,,2" would put 2 in lane 1: say which field is empty
            raise ValueError(f"value {k} is empty")
        try:
            out.append(int(v, 0))
        except ValueError:
            out.append(float(v))
    return out


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``ascend-ref explain`` to the CLI's sub-parsers."""
    p = sub.add_parser(
        "explain", help="show which UB bytes a call reads and writes (and how a sum rounds)",
        description="Print the access map of one call: per repeat and DataBlock the bytes read "
                    "and the active lanes, the words written, and the UB one character per "
                    "element. --tree adds the rounding tree of one sum.")
    p.add_argument("api", choices=registry.names())
    p.add_argument("--chip", default=None, help="product id (default: one that has the API)")
    p.add_argument("--dtype", default="half",
                   help="half / float / float16 / float32 / ... (default half)")
    p.add_argument("--mask", default=None,
                   help="an int (continuous) or comma-separated words (bit mode, the API's "
                        "word order: Ascend C lanes 0-63 first, TIK [mask_h, mask_l]), or "
                        "counter:N (counter mode, SetMaskCount: N elements in all); "
                        "default: every lane")
    p.add_argument("--repeat", type=int, default=1, help="repeatTime / repeat_times (default 1)")
    p.add_argument("--src-blk-stride", type=int, default=1,
                   help="srcBlkStride, DataBlocks between a repeat's blocks (default 1)")
    p.add_argument("--src-rep-stride", type=int, default=8,
                   help="srcRepStride, DataBlocks between repeats (default 8)")
    p.add_argument("--dst-rep-stride", type=int, default=1,
                   help="dstRepStride, in the API's unit (default 1)")
    for key, (opt, apis) in _option_flags().items():
        takers = ", ".join(apis)
        if isinstance(opt, registry.FlagOption):
            p.add_argument(_flag(key), action="store_true", help=f"{key}=True ({takers})")
        else:
            p.add_argument(_flag(key), default=None,
                           help=f"{' / '.join(map(str, opt.values()))} ({takers}; default "
                                f"{opt.example()})")
    p.add_argument("--saturate", choices=["on", "off"], default=None,
                   help="half sums: saturation mode (default: the product's)")
    p.add_argument("--data", default=None,
                   help="source data: random (default), ones, iota, or a fuzz kind "
                        "(ties, specials, subnormal, saturating, mixed, random_bits)")
    p.add_argument("--values", default=None,
                   help="comma-separated source values (the rest are 0), e.g. 60000,60000,-30000,100")
    p.add_argument("--seed", type=at_least(0), default=0,
                   help="seed of the random source data (default 0)")
    p.add_argument("--src", default=None,
                   help="ADDR,SIZE of the source tensor (elements; default: at 0, covering "
                        "every read)")
    p.add_argument("--dst", default=None,
                   help="ADDR,SIZE of the destination tensor (default: after the source)")
    p.add_argument("--tree", type=int, default=None, metavar="REPEAT",
                   help="also print the rounding tree of this repeat's sum")
    p.add_argument("--block", type=at_least(0), default=None,
                   help="--tree of one group of a per-group sum (ReduceDataBlock: a block)")
    p.add_argument("--stage", type=int, choices=(1, 2, 3), default=None,
                   help="vec_reduce_add tree stage (default 1)")
    p.add_argument("--tree-depth", type=at_least(0), default=None,
                   help="levels printed below the root (default 4)")
    p.add_argument("--full-tree", action="store_true", help="print every add")
    p.add_argument("--max-repeats", type=at_least(1), default=4,
                   help="repeats listed lane by lane (default 4)")
    p.add_argument("--png", default=None, help="also save the access-map picture here")
    p.add_argument("--tree-png", default=None, help="also save the rounding-tree picture here")
    p.add_argument("--rules", action="store_true",
                   help="print the call's constraint list (in checking order) and stop")
    p.set_defaults(func=_main)


def _main(args: argparse.Namespace) -> int:
    ins = registry.lookup(args.api, api="explain")
    foreign = _foreign_flags(ins, args)
    if foreign:
        print(f"ascend-ref explain: {foreign[0]}", file=sys.stderr)
        return 2
    option = getattr(args, ins.option.key) if ins.option is not None else None
    if isinstance(ins.option, registry.FlagOption):
        option = bool(option)
    if args.rules:
        print(constraints(ins.name, option, dtype_name(args.dtype)))
        return 0
    data: Any = args.data
    if args.values is not None and args.data is not None:
        print(f"ascend-ref explain: --values and --data {args.data}: give one of them (the "
              f"source data)", file=sys.stderr)
        return 2
    if args.values is not None:
        try:
            data = _parse_values(args.values)
        except ValueError as e:
            print(f"ascend-ref explain: --values {args.values!r}: {e} (expected numbers "
                  f"separated by commas)", file=sys.stderr)
            return 2
    elif data in (None, "random"):
        data = None
    elif data == "ones":
        data = np.ones
    elif data == "iota":
        data = lambda n: np.arange(n) % 2048  # noqa: E731  (exact in half)
    def tensor(t: Optional[str]) -> Optional[Tuple[int, int]]:
        if not t:
            return None
        try:
            a, n = (int(v, 0) for v in t.split(","))
        except ValueError:
            raise ValueError(f"{t!r}: expected ADDR,SIZE (two integers)") from None
        return a, n

    sat = None if args.saturate is None else args.saturate == "on"
    try:
        case = make_case(args.api, chip=args.chip, dtype=args.dtype,
                         mask=None if args.mask is None else _parse_mask(args.mask),
                         repeat=args.repeat, src_blk_stride=args.src_blk_stride,
                         src_rep_stride=args.src_rep_stride, dst_rep_stride=args.dst_rep_stride,
                         option=option, saturate=sat, data=data, seed=args.seed,
                         src=tensor(args.src), dst=tensor(args.dst))
        amap = access_map(case)
    except (ConstraintError, ValueError) as e:
        print(f"ascend-ref explain: {e}", file=sys.stderr)
        return 2
    print(amap.text(max_repeats=args.max_repeats))
    tree = None
    if args.tree is not None or args.tree_png:
        try:
            tree = rounding_tree(case, repeat=args.tree or 0, block=args.block,
                                 stage=args.stage or 1)
        except ValueError as e:
            if amap.error is None:      # a valid call: the tree asked for does not exist
                print(f"ascend-ref explain: --tree: {e}", file=sys.stderr)
                return 2
            print(f"\n(no rounding tree: {e})")
        else:
            print()
            print(tree.text(depth=4 if args.tree_depth is None else args.tree_depth,
                            full=args.full_tree))
    if args.png or (args.tree_png and tree is not None):
        from . import viz

        try:
            if args.png:
                saved = viz.save(viz.access_map(amap), args.png)
                print(f"\naccess map picture: {saved}")
            if args.tree_png and tree is not None:
                saved = viz.save(viz.rounding_tree(tree), args.tree_png)
                print(f"rounding tree picture: {saved}")
        except (OSError, ValueError) as e:
            print(f"ascend-ref explain: cannot save the picture: {e}", file=sys.stderr)
            return 2
    return 0 if amap.error is None else 1
