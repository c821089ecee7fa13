"""Pictures of :mod:`ascend_ref.explain`: access maps and rounding trees (matplotlib).

* :func:`access_map` — top: the *lane view*, one row per repeat, one column per lane (masked
  lanes grey, each DataBlock labelled with the byte address it reads, the min/max winner
  starred); bottom: the *UB view*, 256 bytes per row, every element coloured by the repeat
  that reads it, masked lanes grey, written words lettered by field, undefined bytes hatched,
  overlaps outlined in red.
* :func:`rounding_tree` — an icicle: leaves at the bottom, one band per tree level, each add a
  box over the leaves it covers, coloured by its rounding error (ulp of its result), ties
  edged in gold, overflow / saturation in red, with the values written in when they fit.

Both return a :class:`matplotlib.figure.Figure` made with pyplot (so Jupyter shows it);
:func:`save` writes it and closes it.

>>> import ascend_ref.explain as explain, ascend_ref.viz as viz
>>> fig = viz.rounding_tree(explain.rounding_tree([1.0, 2.0, 3.0, 2049.0]))
>>> len(fig.axes) >= 1
True
>>> viz.close(fig)
"""

from __future__ import annotations

import os
import textwrap
from typing import Any, List, Optional, Tuple, Union

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.colors import Colormap
from matplotlib.figure import Figure
from matplotlib.colors import Normalize, to_rgb
from matplotlib.patches import Patch, Rectangle

from . import explain
from .case import Case
from .constraints import Code, ConstraintError
from .explain import AccessMap, RoundingTree, _count_arg

TENSOR_TINT = {"src": "#d6e6f5", "dst": "#fbe1c4", "work_tensor": "#d5efd2"}
MASKED = "#b9b9b9"
EMPTY = "#ffffff"
OVERLAP = "#d62728"
INPLACE = "#7b2cbf"
TIE = "#e0a800"


def repeat_color(r: int) -> Tuple[float, float, float, float]:
    """The colour of repeat ``r`` (tab10, cycling)."""
    return plt.get_cmap("tab10")(r % 10)


def _field_letter(name: str) -> str:
    if name.startswith("b") and name[1:].isdigit():
        return name[1:]
    return {"value": "v", "index": "i", "zero": "0", "sum": "s", "lane": "l"}.get(name, "?")


def _rows_to_show(busy: np.ndarray, max_rows: int) -> list:
    """Indices of UB lines worth drawing: busy lines and short gaps between them."""
    keep = []
    n = busy.size
    for k in range(n):
        if busy[k]:
            keep.append(k)
        elif 0 < k < n - 1 and busy[max(k - 1, 0)] and busy[min(k + 1, n - 1)]:
            keep.append(k)
    return keep[:max_rows]


def access_map(amap: Union[AccessMap, Case, str], *, max_repeats: int = 8, max_rows: int = 40,
               width: float = 15.0, title: Optional[str] = None) -> Figure:
    """Draw an :class:`~ascend_ref.explain.AccessMap` (see the module docstring); a
    :class:`~ascend_ref.case.Case` or an API name is mapped first
    (:func:`ascend_ref.explain.access_map`). ``max_repeats`` / ``max_rows``: ints >= 0;
    ``width``: inches, a positive number; ``title``: None or a str."""
    max_repeats = _count_arg("viz.access_map", "max_repeats", max_repeats)
    max_rows = _count_arg("viz.access_map", "max_rows", max_rows)
    width = _width("viz.access_map", width)
    _title("viz.access_map", title)
    if isinstance(amap, str):                  # a name: make_case's default call of it
        try:
            amap = explain.access_map(explain.make_case(amap))
        except ConstraintError as e:           # named as the caller called it
            if e.param != "api":
                raise
            raise e.renamed({"api": "amap"}, api="viz.access_map") from None
    elif isinstance(amap, Case):
        amap = explain.access_map(amap)
    elif not isinstance(amap, AccessMap):
        raise ConstraintError(Code.BAD_ARGUMENT, api="viz.access_map", param="amap",
                              value=type(amap).__name__, allowed="an AccessMap "
                              "(explain.access_map(...)), a Case (explain.make_case(api, ...)) "
                              "or an API name")
    L, epb, s = amap.lanes, amap.epb, amap.size
    nrep = max(amap.repeat, 0)
    reps = list(range(min(nrep, max_repeats)))
    cells = amap.cells()
    lo, hi = amap.window()
    per_line = 256 // s
    nlines = (hi - lo) // 256
    grid = lambda a: np.asarray(a).reshape(nlines, per_line)  # noqa: E731
    busy = (grid(cells["reads"]) > 0) | grid(cells["masked"]) | grid(cells["written"]) \
        | grid(cells["undefined"]) | grid(cells["writer"] != -1)
    busy_any = busy.any(1)
    for a, nbytes in amap.tensors.values():       # every tensor shows at least its first row
        if nbytes > 0 and lo <= a < hi:
            busy_any[(a - lo) // 256] = True
    rows = _rows_to_show(busy_any, max_rows)
    if not rows:
        rows = [0]
    h_lane = 0.42 * max(len(reps), 1) + 1.0
    h_ub = 0.36 * len(rows) + 1.2
    total = h_lane + h_ub + 2.6
    fig = plt.figure(figsize=(width, total))
    gs = fig.add_gridspec(2, 1, height_ratios=[h_lane, h_ub], hspace=0.5,
                          left=0.075, right=0.87, top=1 - 1.05 / total, bottom=1.45 / total)
    ax1 = fig.add_subplot(gs[0])
    ax2 = fig.add_subplot(gs[1])

    # ---- lane view ----
    img = np.ones((max(len(reps), 1), L, 3))
    for k, r in enumerate(reps):
        col = np.array(to_rgb(repeat_color(r)))
        img[k] = np.where(amap.active[r][:, None], col, np.array(to_rgb(MASKED)))
    ax1.imshow(img, aspect="auto", interpolation="nearest", extent=(0, L, len(img), 0))
    for b in range(1, L // epb):
        ax1.axvline(b * epb, color="white", lw=2)
    for k in range(1, len(img)):
        ax1.axhline(k, color="white", lw=2)
    label_blocks = len(reps) * 8 <= 96
    for k, r in enumerate(reps):
        for b in range(L // epb):
            a = int(amap.reads[r, b * epb])
            if label_blocks:
                ax1.text(b * epb + epb / 2, k + 0.5, f"@{a}", ha="center", va="center",
                         fontsize=8, color="black",
                         bbox=dict(boxstyle="round,pad=0.15", fc="white", ec="none", alpha=0.75))
        if amap.winners is not None and amap.active[r].any():
            w = int(amap.winners[r])
            ax1.plot(w + 0.5, k + 0.5, marker="*", ms=13, mec="black", mfc="yellow", mew=1)
        ax1.text(L + 1, k + 0.5, _repeat_note(amap, r), va="center", ha="left", fontsize=8,
                 clip_on=False)
    ax1.set_yticks(np.arange(len(img)) + 0.5)
    ax1.set_yticklabels([f"repeat {r}" for r in reps] or ["(no repeat)"])
    ax1.set_xticks([b * epb + epb / 2 for b in range(L // epb)])
    ax1.set_xticklabels([f"block {b}\nlanes {b * epb}-{(b + 1) * epb - 1}"
                         for b in range(L // epb)], fontsize=8)
    ax1.tick_params(length=0)
    more = f"  (first {len(reps)} of {nrep} repeats)" if nrep > len(reps) else ""
    ax1.set_title("Lane view: what each repeat reads — colour = active lane, grey = masked, "
                  "label = byte address of the DataBlock" + more, fontsize=10, loc="left")

    # ---- UB view ----
    ub = np.ones((len(rows), per_line, 3))
    tensor = grid(cells["tensor"])
    reader = grid(cells["reader"])
    reads = grid(cells["reads"])
    masked = grid(cells["masked"])
    writer = grid(cells["writer"])
    names = cells["tensor_names"]
    for i, k in enumerate(rows):
        for j in range(per_line):
            t = tensor[k, j]
            c = to_rgb(TENSOR_TINT.get(names[t], "#eeeeee")) if t >= 0 else to_rgb(EMPTY)
            if masked[k, j]:
                c = to_rgb(MASKED)
            if reads[k, j] > 0:
                c = to_rgb(repeat_color(int(reader[k, j])))
            if writer[k, j] != -1 and reads[k, j] == 0:
                w = int(writer[k, j])
                c = tuple(0.65 * np.array(to_rgb(repeat_color(w)))) if w >= 0 else (0.2, 0.2, 0.2)
            ub[i, j] = c
    ax2.imshow(ub, aspect="auto", interpolation="nearest", extent=(0, per_line, len(rows), 0))
    for b in range(1, 8):
        ax2.axvline(b * epb, color="white", lw=1.6)
    for i in range(1, len(rows)):
        ax2.axhline(i, color="white", lw=1.2)
    field = grid(cells["field"])
    fnames = getattr(amap, "field_names", [])
    undefined = grid(cells["undefined"])
    written = grid(cells["written"])
    outside = grid(cells["outside"])
    fs = 7 if s == 2 else 9
    for i, k in enumerate(rows):
        for j in range(per_line):
            if written[k, j] or writer[k, j] != -1:
                f = int(field[k, j])
                letter = _field_letter(fnames[f]) if 0 <= f < len(fnames) else "w"
                ax2.text(j + 0.5, i + 0.5, letter, ha="center", va="center", fontsize=fs,
                         color="white", fontweight="bold")
            if reads[k, j] > 0 and written[k, j]:
                ax2.add_patch(Rectangle((j + 0.06, i + 0.08), 0.88, 0.84, fill=False,
                                        ec=INPLACE, lw=1.8))
            if outside[k, j]:
                ax2.plot(j + 0.5, i + 0.5, marker="x", color="black", ms=6, mew=1.5)
        run = None                      # overlaps: one red outline per run, labelled ×N
        for j in range(per_line + 1):
            o = j < per_line and reads[k, j] > 1
            if o and run is None:
                run = j
            if not o and run is not None:
                ax2.add_patch(Rectangle((run + 0.08, i + 0.1), j - run - 0.16, 0.8, fill=False,
                                        ec=OVERLAP, lw=2.2))
                n_max = int(reads[k, run:j].max())
                ax2.text(j - 0.3, i + 0.72, f"read ×{n_max}", ha="right", va="center",
                         fontsize=7, color=OVERLAP, fontweight="bold",
                         bbox=dict(boxstyle="round,pad=0.1", fc="white", ec="none", alpha=0.8))
                run = None
        run = None
        for j in range(per_line + 1):
            u = j < per_line and undefined[k, j]
            if u and run is None:
                run = j
            if not u and run is not None:
                ax2.add_patch(Rectangle((run, i + 0.04), j - run, 0.92, fill=False,
                                        hatch="////", ec="#555555", lw=0.0))
                run = None
    # where each (repeat, block) lands
    if nrep * 8 <= 160:
        labels: dict = {}
        for r in range(nrep):
            for b in range(L // epb):
                a = int(amap.reads[r, b * epb])
                line, off = (a - lo) // 256, (a - lo) % 256 // s
                labels.setdefault((line, off), []).append(f"r{r}b{b}")
        for (line, off), labs in labels.items():
            if line in rows:
                txt = "/".join(labs) if len(labs) <= 2 else f"{labs[0]}/…(+{len(labs) - 1})"
                ax2.text(off + 0.3, rows.index(line) + 0.5, txt, ha="left", va="center",
                         fontsize=7, color="black",
                         bbox=dict(boxstyle="round,pad=0.1", fc="white", ec="none", alpha=0.7))
    # gaps between shown lines
    for i in range(1, len(rows)):
        if rows[i] > rows[i - 1] + 1:
            ax2.axhline(i, color="black", lw=1.2, ls="--")
            ax2.text(per_line + 0.5, i, f"… {(rows[i] - rows[i - 1] - 1) * 256} B not shown",
                     va="center", fontsize=7, clip_on=False)
    ax2.set_yticks(np.arange(len(rows)) + 0.5)
    ax2.set_yticklabels([f"{lo + k * 256}" for k in rows], fontsize=8)
    ax2.set_ylabel("byte address of the row")
    ax2.set_xticks([b * epb for b in range(8)])
    ax2.set_xticklabels([f"+{b * 32}" for b in range(8)], fontsize=8)
    ax2.set_xlabel(f"byte offset in the 256-B row (one cell = one {s}-byte element; "
                   f"a white column line every DataBlock)")
    ax2.tick_params(length=0)
    ax2.set_title("UB view: 256 bytes per row — rN bM = block M of repeat N starts here",
                  fontsize=10, loc="left")
    if len(rows) < int(busy_any.sum()):
        ax2.text(0, len(rows) + 0.9, f"(first {len(rows)} rows shown)", fontsize=8)

    # legend
    handles: List[Artist] = [Patch(fc=repeat_color(r), label=f"read by repeat {r}")
                             for r in range(min(nrep, 4))]
    if nrep > 4:
        handles.append(Patch(fc="white", ec="none", label=f"… {nrep} repeats (tab10 colours)"))
    handles += [Patch(fc=MASKED, label="masked lane (not read)")]
    handles += [Patch(fc=TENSOR_TINT.get(n, "#eeeeee"), label=f"{n} (declared, untouched)")
                for n in names]
    handles += [Patch(fc=(0.35, 0.35, 0.35), label="written (letter = field: v value, i index, "
                                                  "s sum, l lane, 0-7 block)"),
                Patch(fc="white", ec="#555555", hatch="////", label="undefined after the call"),
                Patch(fc="white", ec=OVERLAP, lw=2.2, label="read by ≥ 2 lanes (overlap)"),
                Patch(fc="white", ec=INPLACE, lw=1.8, label="read, then written (in place)")]
    if amap.winners is not None:
        handles.append(plt.Line2D([], [], marker="*", ls="", mfc="yellow", mec="black", ms=12,
                                  label="min / max winner"))
    fig.legend(handles=handles, loc="lower left", bbox_to_anchor=(0.07, 0.0), fontsize=8,
               ncol=4, frameon=False)
    head = title or amap.describe().replace("\n  ", "\n")
    status = "ok" if amap.error is None else "REJECTED: " + amap.error
    status = "\n".join(textwrap.wrap(status, 150, subsequent_indent="    "))
    fig.suptitle(f"{head}\n{_tensor_line(amap)} — {status}", x=0.075, ha="left", fontsize=10.5,
                 y=0.995)
    return fig


def _width(api: str, width: Any) -> float:
    """``width`` (inches): a positive finite number; BAD_ARGUMENT otherwise ("x" was a
    TypeError from numpy)."""
    if isinstance(width, (bool, np.bool_)) or not isinstance(width, (int, float, np.integer,
                                                                     np.floating)) \
            or not 0 < float(width) < float("inf"):
        raise ConstraintError(Code.BAD_ARGUMENT, api=api, param="width", value=width,
                              allowed="a positive number of inches")
    return float(width)


def _title(api: str, title: Any) -> None:
    if title is not None and not isinstance(title, str):
        raise ConstraintError(Code.BAD_ARGUMENT, api=api, param="title", value=title,
                              allowed="None or a str")


def _root(tree: RoundingTree, root: Any) -> tuple:
    """``root`` as ``(level, index)`` of a node of ``tree`` (None: the root); BAD_ARGUMENT
    naming the levels and indices there are (was an IndexError / TypeError)."""
    top = len(tree.levels) - 1
    if root is None:
        return top, 0
    if isinstance(root, (tuple, list)) and len(root) == 2 and all(
            isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))
            for v in root):
        lvl, k = int(root[0]), int(root[1])
        if 0 <= lvl <= top and 0 <= k < len(tree.levels[lvl]):
            return lvl, k
        allowed = f"level in [0, {top}]" + (
            f", index in [0, {len(tree.levels[lvl])}) at level {lvl}" if 0 <= lvl <= top else "")
    else:
        allowed = "None or (level, index), two ints"
    raise ConstraintError(Code.BAD_ARGUMENT, api="viz.rounding_tree", param="root",
                          value=root, allowed=allowed)


def _tensor_line(amap: AccessMap) -> str:
    return "  ".join(f"{k} [{a}, {a + n})" for k, (a, n) in amap.tensors.items())


def _repeat_note(amap: AccessMap, r: int) -> str:
    out = []
    if amap.winners is not None and amap.active[r].any():
        w = int(amap.winners[r])
        ins = amap.case.instruction
        kind = ins.kind(ins.canonical_option(amap.case.option))
        out.append(f"{kind} {amap.value(amap.bits[r, w]):.6g} @ lane {w}")
    for wt in amap.writes:
        if wt.per_repeat and r < wt.addr.shape[0] and wt.issued[r].any():
            if amap.winners is None:          # sums and block results: the values
                vals = [amap.value(int(b)) for b, i in zip(wt.bits[r], wt.issued[r]) if i]
                out.append("= " + ", ".join(f"{v:.5g}" for v in vals[:4]) +
                           (" …" if len(vals) > 4 else ""))
            where = f"{wt.tensor} @{int(wt.addr[r][wt.issued[r]].min())}"
            out.append(f"→ {where}" if amap.error is None else f"(rejected: {where} not written)")
            break
    return "\n".join(out)


# ------------------------------------------------------------------ rounding tree -----------

def rounding_tree(tree: Union[RoundingTree, AccessMap, Case], *, root: Optional[tuple] = None,
                  width: float = 15.0, title: Optional[str] = None) -> Figure:
    """Draw a :class:`~ascend_ref.explain.RoundingTree` as an icicle (see module docstring);
    a Case or an AccessMap of a summing call draws its first tree
    (:func:`ascend_ref.explain.rounding_tree` with its defaults).

    ``root=(level, index)`` draws only that subtree (for 128-leaf trees: zoom in): level in
    ``[0, depth]``, index in ``[0, len(tree.levels[level]))``; anything else is BAD_ARGUMENT.
    """
    width = _width("viz.rounding_tree", width)
    _title("viz.rounding_tree", title)
    if isinstance(tree, (AccessMap, Case)):    # was an AttributeError (no .levels)
        tree = explain.rounding_tree(tree)
    elif not isinstance(tree, RoundingTree):
        raise ConstraintError(Code.BAD_ARGUMENT, api="viz.rounding_tree", param="tree",
                              value=type(tree).__name__, allowed="a RoundingTree "
                              "(explain.rounding_tree(...)), a Case or an AccessMap")
    lvl0, k0 = _root(tree, root)
    leaf_lo, leaf_hi = k0 << lvl0, (k0 + 1) << lvl0
    n = leaf_hi - leaf_lo
    leaf_w = width * 0.86 / n
    leaf_h = 1.2 if n > 16 else 0.7
    row_h = 0.62
    fig_h = leaf_h + row_h * lvl0 + 1.7
    fig = plt.figure(figsize=(width, fig_h))
    ax = fig.add_axes((0.05, 0.9 / fig_h, 0.83, (fig_h - 1.65) / fig_h))
    cax = fig.add_axes((0.9, 0.9 / fig_h, 0.012, (fig_h - 1.65) / fig_h))
    cmap = plt.get_cmap("RdBu_r")
    norm = Normalize(-0.5, 0.5)
    ys = {0: (0.0, leaf_h)}
    for lvl in range(1, lvl0 + 1):
        y = leaf_h + (lvl - 1) * row_h
        ys[lvl] = (y, row_h)
    for lvl in range(0, lvl0 + 1):
        y, hgt = ys[lvl]
        span = 1 << lvl
        for k in range(leaf_lo >> lvl, leaf_hi >> lvl):
            node = tree.levels[lvl][k]
            x = k * span - leaf_lo
            fc, ec, lw, hatch, tc = _node_style(tree, node, cmap, norm)
            ax.add_patch(Rectangle((x + 0.04, y + 0.04 * hgt), span - 0.08, hgt * 0.92,
                                   fc=fc, ec=ec, lw=lw, hatch=hatch))
            _node_label(ax, tree, node, x, y, span, hgt, leaf_w * span, tc)
    ax.set_xlim(0, n)
    ax.set_ylim(0, leaf_h + row_h * lvl0)
    ax.set_yticks([ys[lv][0] + ys[lv][1] / 2 for lv in range(lvl0 + 1)])
    ax.set_yticklabels(["leaves"] + [f"level {lv}" for lv in range(1, lvl0 + 1)], fontsize=8)
    step = max(1, n // 16)
    ax.set_xticks(np.arange(0, n, step) + 0.5)
    ax.set_xticklabels([tree.leaves[leaf_lo + i].label.split(" @")[0] for i in range(0, n, step)],
                       fontsize=7, rotation=0 if n <= 16 else 45, ha="center" if n <= 16 else "right")
    ax.tick_params(length=0)
    for sp in ax.spines.values():
        sp.set_visible(False)
    sm = plt.cm.ScalarMappable(norm=norm, cmap=cmap)
    cb = fig.colorbar(sm, cax=cax)
    cb.set_label("rounding error of the add\n(ulp of its result)", fontsize=8)
    exact = tree.exact_sum
    sub = tree.levels[lvl0][k0]
    res = f"result {_v(tree.result[()])}"
    if exact is not None and tree.error is not None:
        res += (f" · exact sum of the leaves {float(exact):.8g} · error {tree.error:+.6g} "
                f"({tree.error / tree.ulp(float(tree.result)):+.3g} ulp)")
    if tree.integer:
        wrap = f"modulo 2^{8 * tree.result.itemsize}"
        res += f" · adds {'clamped' if tree.saturate else wrap}"
    else:
        res += f" · saturate {'on' if tree.saturate else 'off'}"
    if root is not None:
        res += f" · showing the subtree of level {lvl0} node {k0} = {_v(sub.value)}"
    handles = [Patch(fc="white", ec=TIE, lw=2.5, label="tie: round-half-to-even decided"),
               Patch(fc="#ffd6d6", ec="#c00000", lw=2.2, hatch="xx",
                     label="overflow → saturated (±65504 / NaN → 0)"),
               Patch(fc="black", label="overflow → ±inf"),
               Patch(fc="#6a3d9a", label="NaN"),
               Patch(fc=MASKED, label="masked lane (+0)")]
    fig.legend(handles=handles, loc="lower left", ncol=5, fontsize=8, frameon=False,
               bbox_to_anchor=(0.05, 0.0))
    fig.suptitle(f"{title or tree.title or 'rounding tree'}\n{res}", x=0.05, ha="left",
                 fontsize=10.5, y=0.995)
    return fig


def _node_style(tree: RoundingTree, node: explain.Node, cmap: Colormap, norm: Normalize
                ) -> Tuple[Union[str, Tuple[float, float, float, float]], str, float,
                           Optional[str], str]:
    ec, lw, hatch, tc = "#666666", 0.6, None, "black"
    fc: Union[str, Tuple[float, float, float, float]]      # a colour name or an RGBA
    if node.level == 0:
        fc = "#f4f4f4" if node.active else MASKED
    elif node.nan and not node.saturated:
        fc, tc = "#6a3d9a", "white"
    elif node.overflow and not node.saturated:
        fc, tc = "black", "white"
    elif node.saturated:
        fc, ec, lw, hatch = "#ffd6d6", "#c00000", 2.2, "xx"
    else:
        err = node.error or 0.0
        u = tree.ulp(node.value)
        rel = err / u if u and np.isfinite(u) and u > 0 else 0.0
        fc = "#ffffff" if err == 0 else cmap(norm(rel))
        if abs(rel) > 0.35:
            tc = "white"
    if node.tie:
        ec, lw = TIE, 2.8
    return fc, ec, lw, hatch, tc


def _v(x: Any) -> str:
    if x is None:
        return "?"
    if isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_)):
        return str(int(x)) if abs(int(x)) < 10**7 else f"{float(x):.5g}"
    x = float(x)
    if np.isnan(x):
        return "nan"
    if np.isinf(x):
        return "inf" if x > 0 else "-inf"
    if x == int(x) and abs(x) < 1e7:
        return "-0" if (x == 0 and np.signbit(x)) else str(int(x))
    return f"{x:.5g}"


def _exact(x: Any) -> str:
    """A value in full when short (half and float values are exact decimals), else 8 digits."""
    if x is None or not np.isfinite(float(x)):
        return _v(x)
    r = _v(x) if float(x) == int(float(x)) else repr(float(x))
    return r if len(r) <= 12 else f"{float(x):.8g}"


def _node_label(ax: Axes, tree: RoundingTree, node: explain.Node, x: float, y: float,
                span: float, hgt: float, inches: float, tc: str) -> None:
    cx, cy = x + span / 2, y + hgt / 2
    if node.level == 0:
        txt = (_exact(node.value) if inches >= 0.6 else _v(node.value)) if node.active else "+0"
        if inches >= 0.6:
            ax.text(cx, cy, txt, ha="center", va="center", fontsize=8, color=tc)
        elif inches >= 0.085:
            ax.text(cx, cy, txt, ha="center", va="center", fontsize=6, rotation=90, color=tc)
        return
    notes = []
    if node.tie:
        notes.append("tie")
    if node.overflow:
        notes.append("SAT" if node.saturated else "inf")
    elif node.saturated:
        notes.append("NaN→0")
    box = dict(boxstyle="round,pad=0.2", fc="white", ec="none", alpha=0.85) \
        if node.saturated else None
    if inches >= 2.2:
        ex = "?" if node.exact is None else _exact(float(node.exact))
        txt = f"{_exact(node.a)} + {_exact(node.b)} = {ex}\n→ {_exact(node.value)}"
        if notes:
            txt += "  (" + ", ".join(notes) + ")"
        ax.text(cx, cy, txt, ha="center", va="center", fontsize=8, color=tc, bbox=box)
    elif inches >= 0.5:
        txt = _v(node.value) + (("\n" + ",".join(notes)) if notes else "")
        ax.text(cx, cy, txt, ha="center", va="center", fontsize=7, color=tc, bbox=box)
    elif inches >= 0.14:
        ax.text(cx, cy, _v(node.value), ha="center", va="center", fontsize=6, rotation=90,
                color=tc)


# ------------------------------------------------------------------ helpers ------------------

def save(fig: Any, path: Any, dpi: int = 130) -> Any:
    """Write ``fig`` (PNG / SVG / PDF by extension) and close it; returns where it went: a
    file name without an extension gets ``.png`` (``save(fig, "map")`` writes ``map.png``).
    ``path`` a str or ``os.PathLike`` (a file object is matplotlib's too); a ``fig`` that is
    no figure, a ``path`` that is none, an existing folder, in a folder that does not exist
    or of an extension matplotlib cannot write is a ValueError naming it (the figure is closed
    then too)."""
    if not callable(getattr(fig, "savefig", None)):
        raise ValueError(f"save: fig = {type(fig).__name__}: expected a matplotlib figure "
                         f"(viz.access_map(...), viz.rounding_tree(...))")
    try:
        return _save(fig, path, dpi)
    finally:
        close(fig)                       # closed whatever happened, as said above


def _save(fig: Any, path: Any, dpi: int) -> Any:
    if isinstance(path, (str, os.PathLike)):
        name = os.fspath(path)
        if not isinstance(name, str) or not name:
            raise ValueError(f"save: path = {path!r}: expected a file name (str)")
        if os.path.isdir(name):
            raise ValueError(f"save: path = {name!r} is a folder; give a file name in it "
                             f"(e.g. {os.path.join(name, 'map.png')!r})")
        folder = os.path.dirname(name)
        if folder and not os.path.isdir(folder):
            raise ValueError(f"save: path = {name!r}: the folder {folder!r} does not exist "
                             "(make it first)")
        if not os.path.splitext(name)[1]:      # matplotlib would add it: say so
            path = name + ".png"
    elif not callable(getattr(path, "write", None)):
        raise ValueError(f"save: path = {path!r}: expected a file name (str or os.PathLike)")
    try:
        fig.savefig(path, dpi=dpi, bbox_inches="tight")
    except ValueError as e:              # matplotlib: an extension it has no writer for
        raise ValueError(f"save: path = {path!r}: {e} (use .png, .svg or .pdf)") from None
    return path


def close(fig: Figure) -> None:
    plt.close(fig)


__all__ = ["access_map", "rounding_tree", "save", "close", "repeat_color"]
