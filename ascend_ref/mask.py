"""Vector masks: continuous and bit mode, Ascend C and TIK word orders (SPEC §1.2).

A mask reaches the kernels as a *mode* (``"count"`` or ``"bits"``; a kernel reads it as the
traced bool ``p.mask_count`` of :class:`~ascend_ref.params.Params`, so one compiled kernel
serves both) and a ``uint32[4]``
value: for ``count`` the lane count in word 0; for ``bits`` the lane bits, lanes 0–31 in word
0 (JAX without x64 truncates uint64, so 64-bit words are split on the way in).

>>> from ascend_ref.mask import parse
>>> parse([8, 0], "float16", api="x", chip="c").value.tolist()      # Ascend C: lane 3 only
[8, 0, 0, 0]
>>> parse([0, 8], "float16", api="x", chip="c", word_order="tik").value.tolist()
[8, 0, 0, 0]

A third mode, **counter** (``SetMaskCount``; :class:`CounterMask`), is not a lane selection
at all: the value is the element count of the whole call (words 0-1: its low 64 bits), the
number of repeats is derived from it and repeat ``k`` takes the first ``min(L, n - k*L)``
lanes (:func:`counter_repeats`, :func:`counter_active`). Note the names: ``"count"`` is the
*continuous* normal mode (an int mask), ``"counter"`` the counter mode.

>>> parse(CounterMask(130), "float16", api="x", chip="c").mode
'counter'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, List, Optional, Sequence, TypeGuard, Union

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike, DTypeLike

from .batch_args import held_int
from .constraints import Code, ConstraintError, Rule, in_range
from .ub import itemsize

#: a mask mode: ``"count"`` / ``"bits"``, or a bool (maybe traced; True: count mode)
Mode = Union[str, ArrayLike]

U64 = (1 << 64) - 1
#: the product-profile key saying whether a product has the counter mode (``SetMaskCount``
#: 产品支持情况): ``"supported"`` / ``"unsupported"`` (declared by the Ascend C reductions)
COUNTER_FACT = "counter_mode"


@dataclass(frozen=True)
class CounterMask:
    """A mask in **counter mode** (``SetMaskCount``): ``count`` elements for the whole call.

    Pass it as the ``mask`` argument of a per-repeat Ascend C reduction (WholeReduceMin / Max
    / Sum, ReduceDataBlock, PairReduceSum / ReducePairElem, RepeatReduceSum). The call then
    runs ``ceil(count / L)`` repeats (L = 128 for 16-bit, 64 for 32-bit types); repeat ``k``
    takes the first ``min(L, count - k*L)`` lanes (a continuous mask; the last repeat may be
    partial) and writes its result slot exactly as in normal mode (``dst + k*dstRepStride*
    unit``, the same source strides); ``repeat_time`` is ignored ("repeatTime传入固定值即可，
    建议统一设置为1，该值不生效", 掩码/概述.md table 3). Ascend C spellings it stands for:
    ``SetMaskCount(); Op<T, true>(..., mask = count, ...)``, the array overload with
    ``mask[2] = {count, 0}`` (only the low 64 bits count), and ``SetMaskCount();
    SetVectorMask<T, MaskMode::COUNTER>(count); Op<T, false>(..., MASK_PLACEHOLDER, ...)``.

    Why a value type and not a keyword: the documented mode travels *in the mask* (the mask
    register holds the count), so the frozen signatures of SPEC §8 stay as they are and every
    tool that carries a call's mask (cases, dumps, fuzz, explain) carries the mode with it.

    ``count``: an int in [0, 2**64) or an integer scalar array (may be traced under ``jit`` /
    ``vmap``: the call is compiled for the API's whole repeat range, and a count beyond it is
    a MASK_RANGE error, never clamped). The level-2 high-dimensional ReduceSum / ReduceMax /
    ReduceMin take it too (docs/SEMANTICS.md §R). Products without ``SetMaskCount`` (Atlas
    training, inference Vector Core) and APIs whose pages do not document it (TIK) raise
    MASK_MODE.

    Example: 130 halves summed per repeat -- two repeats, 128 lanes then 2.

    >>> import numpy as np, ascend_ref as ar
    >>> ub = ar.store(ar.new_ub("atlas_a2"), 0, np.ones(256, np.float16))
    >>> ub = ar.ascendc.whole_reduce_sum(ub, ar.Tensor(1024, "half", 4), ar.Tensor(0, "half", 256),
    ...                                  ar.CounterMask(130), 1, 1, 1, 8, chip="atlas_a2")
    >>> ar.load(ub, 1024, "float16", 2).tolist()
    [128.0, 2.0]
    >>> ar.CounterMask(130)
    CounterMask(130)
    """

    count: Any
    #: the mask mode this value stands for (tools and the oracle read it)
    mode = "counter"

    def __repr__(self) -> str:
        c = self.count
        return f"CounterMask({int(c) if _is_int(c) or (isinstance(c, np.ndarray) and c.ndim == 0) else c!r})"

    def _key(self) -> Any:
        """What equality and hashing read: the int a concrete integer count holds (5,
        ``np.int64(5)`` and ``np.array(5)`` are one count); any other concrete value as its
        type, shape and bytes; a traced count as itself (compared by identity)."""
        c = self.count
        if isinstance(c, jax.core.Tracer):
            return ("traced", id(c))
        if _is_int(c) or (isinstance(c, (np.ndarray, jax.Array)) and np.ndim(c) == 0
                          and np.issubdtype(c.dtype, np.integer)):
            return int(c)
        try:
            a = np.asarray(c)
            return ("value", type(c).__name__, a.dtype.str, a.shape, a.tobytes())
        except Exception:                                    # noqa: BLE001 - no array form
            return ("object", repr(c))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CounterMask):
            return NotImplemented
        return bool(self._key() == other._key())

    def __hash__(self) -> int:
        return hash(self._key())


jax.tree_util.register_pytree_node(CounterMask, lambda m: ((m.count,), None),
                                   lambda _, ch: CounterMask(ch[0]))


def counter_repeats(count: Any, lanes: int) -> Any:
    """Repeats a counter-mode call runs: ``ceil(count / lanes)`` (``count`` an int or int32,
    maybe traced, already known to fit)."""
    return (count + (lanes - 1)) // lanes


def counter_count(value: ArrayLike, limit: int) -> jax.Array:
    """The count of counter-mode mask words (uint32[4], words 0-1 the low 64 bits) as int32,
    ``limit + 1`` where it is above ``limit`` (so no int32 overflow; the range rule reports
    the real value)."""
    value = jnp.asarray(value, jnp.uint32)
    big = (value[1] != 0) | (value[0] > jnp.uint32(limit))
    return jnp.where(big, jnp.int32(limit + 1), value[0].astype(jnp.int32))


def counter_active(count: ArrayLike, r_max: int, lanes: int) -> jax.Array:
    """Boolean ``(r_max, lanes)``: lane ``i`` of repeat ``r`` takes part in a counter-mode
    call of ``count`` elements (``r*lanes + i < count``: full repeats, then a partial one)."""
    flat = (jnp.arange(r_max, dtype=jnp.int32)[:, None] * lanes
            + jnp.arange(lanes, dtype=jnp.int32)[None, :])
    return flat < jnp.asarray(count, jnp.int32)


def lanes_per_repeat(dtype: DTypeLike) -> int:
    """L = 256 / sizeof(T): 128 for 16-bit types, 64 for 32-bit types."""
    return 256 // itemsize(dtype)


@dataclass(frozen=True)
class Mask:
    """A parsed mask: ``mode`` is static, ``value`` is ``uint32[4]`` (numpy or traced).

    ``fault``: None, or (a traced ``[4]`` array of lane words of a signed or 64-bit type,
    whose words cannot be judged before it runs) a traced bool, True where a word is outside
    ``[0, 2**32 - 1]``: the call's MASK_BITS status (a concrete one raises here)."""

    mode: str
    value: Union["np.ndarray[Any, Any]", jax.Array]
    fault: Any = None


def _is_int(x: object) -> TypeGuard[Union[int, np.integer]]:
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


#: the two word orders of bit-mode masks: Ascend C ``[lanes 0-63, lanes 64-127]``, TIK
#: ``[mask_h, mask_l]``
WORD_ORDERS = ("ascendc", "tik")


def _order(word_order: object) -> str:
    """``word_order`` checked: one of :data:`WORD_ORDERS` (a misspelt ``"TIK"`` must not be
    read as Ascend C)."""
    if not isinstance(word_order, str) or word_order not in WORD_ORDERS:
        raise ValueError(f"word_order = {word_order!r}: expected one of {WORD_ORDERS}")
    return word_order


def _mode(mode: Mode) -> Mode:
    """A mask mode checked: ``"count"`` / ``"bits"`` or a bool (maybe traced)."""
    if isinstance(mode, str) and mode not in ("count", "bits"):
        raise ValueError(f"mask mode {mode!r}: expected 'count' or 'bits' (or a bool, True: "
                         f"count)")
    return mode


def parse(mask: object, dtype: DTypeLike, *, api: str, chip: str,
          word_order: str = "ascendc") -> Mask:
    """Check a user mask's structure and turn it into a :class:`Mask`.

    ``word_order`` is ``"ascendc"`` (``mask[0]`` = lanes 0–63) or ``"tik"``
    (``[mask_h, mask_l]``). Range rules that may depend on traced values (count in [1, L],
    zero masks, lanes past L) are in :func:`rules`; structural faults raise here. ``mask``
    is whatever the caller passed: anything but an int, a 0-d integer array, a list / tuple
    / 1-d integer array of words or a ``uint32[4]`` array is rejected here.
    """
    word_order = _order(word_order)
    lanes = lanes_per_repeat(dtype)
    if isinstance(mask, CounterMask):
        return _parse_counter(mask, api=api, chip=chip)
    if isinstance(mask, (jax.Array, np.ndarray)) and np.ndim(mask) == 0:
        if not np.issubdtype(mask.dtype, np.integer):       # 64.7 is not a lane count
            raise ConstraintError(Code.BAD_ARGUMENT, api=api, param="mask",
                                  value=f"{mask.dtype} array {mask!r}",
                                  allowed="an int (continuous mode); a 0-d array must have an "
                                          "integer dtype")
        if not isinstance(mask, jax.core.Tracer):             # concrete: judge the int itself
            mask = int(mask)
    if _is_int(mask) or (isinstance(mask, (jax.Array, np.ndarray)) and np.ndim(mask) == 0):
        if _is_int(mask) and not (0 <= int(mask) < 2**31):
            raise ConstraintError(Code.MASK_RANGE, api=api, param="mask", value=mask,
                                  allowed=f"[1, {lanes}] (continuous mode)", chip=chip)
        value = jnp.zeros(4, jnp.uint32).at[0].set(_count_word(jnp.asarray(mask))) \
            if not _is_int(mask) else np.array([int(mask), 0, 0, 0], np.uint32)
        return Mask("count", value)
    if isinstance(mask, (jax.Array, np.ndarray)) and np.shape(mask) == (4,) and \
            np.issubdtype(mask.dtype, np.integer):
        if isinstance(mask, jax.core.Tracer):     # judged when it runs: a status, no wrap
            return Mask("bits", mask.astype(jnp.uint32), _word_fault(mask))
        if mask.dtype != np.uint32:
            words4 = [int(w) for w in np.asarray(mask)]       # judged, never wrapped
            if not all(0 <= w <= 0xFFFFFFFF for w in words4):
                raise ConstraintError(Code.MASK_BITS, api=api, param="mask", value=words4,
                                      allowed="a [4] array of lane words, each in "
                                              "[0, 2**32 - 1]", chip=chip)
        return Mask("bits", jnp.asarray(mask).astype(jnp.uint32))  # already lane words
    if isinstance(mask, (np.ndarray, jax.Array)) and not isinstance(mask, jax.core.Tracer) \
            and mask.ndim == 1 and np.issubdtype(mask.dtype, np.integer):
        mask = [int(w) for w in np.asarray(mask)]   # an array of 64-bit words, like a list
    if isinstance(mask, (list, tuple)):         # concrete 0-d integer arrays: the words they hold
        mask = [held_int(w) for w in mask]
    if not isinstance(mask, (list, tuple)) or not all(_is_int(w) for w in mask):
        raise ConstraintError(Code.BAD_ARGUMENT, api=api, param="mask", value=mask,
                              allowed="an int (continuous mode), a list of ints (bit mode) or "
                                      "a uint32[4] array of lane words")
    words = [int(w) for w in mask]
    if word_order == "tik":
        if len(words) != 2:
            raise ConstraintError(Code.MASK_BITS, api=api, param="mask", value=mask,
                                  allowed="[mask_h, mask_l] (two words, high word first)",
                                  chip=chip)
        words = low_first(words, word_order)
    else:
        want = "2 words [lanes 0-63, lanes 64-127]" if lanes == 128 else \
            "1 word (or 2 with mask[1] = 0)"
        if len(words) not in ((2,) if lanes == 128 else (1, 2)):
            raise ConstraintError(Code.MASK_BITS, api=api, param="mask", value=mask,
                                  allowed=want, chip=chip)
    for w in words:
        if not 0 <= w <= U64:
            raise ConstraintError(Code.MASK_BITS, api=api, param="mask", value=mask,
                                  allowed="each word in [0, 2**64 - 1]", chip=chip)
    words = (words + [0])[:2]
    value = np.array([words[0] & 0xFFFFFFFF, words[0] >> 32,
                      words[1] & 0xFFFFFFFF, words[1] >> 32], np.uint32)
    return Mask("bits", value)


def _count_word(count: jax.Array) -> jax.Array:
    """A traced continuous mask as word 0 (uint32): a negative count (or, of a 64-bit type,
    one past 2**32 - 1) becomes 2**32 - 1, outside every lane range, so MASK_RANGE reports
    it (never wrapped into range: an int64 2**32 + 64 is not 64)."""
    dt = np.dtype(count.dtype)
    if dt.itemsize <= 4:                      # a negative int32 wraps to >= 2**31: no lanes
        return count.astype(jnp.uint32)
    bad = count > np.array(0xFFFFFFFF, dt)
    if np.issubdtype(dt, np.signedinteger):
        bad = bad | (count < 0)
    return jnp.where(bad, np.uint32(0xFFFFFFFF), count.astype(jnp.uint32))


def _word_fault(words: jax.Array) -> Any:
    """None where every value of ``words``' integer type is a lane word (uint32, or a
    narrower unsigned type); else the traced bool "some word is outside [0, 2**32 - 1]"."""
    dt = np.dtype(words.dtype)
    signed = np.issubdtype(dt, np.signedinteger)
    if not signed and dt.itemsize <= 4:
        return None
    bad = words < 0 if signed else jnp.zeros(words.shape, bool)
    if dt.itemsize > 4:
        bad = bad | (words > np.array(0xFFFFFFFF, dt))
    return jnp.any(bad)


def _parse_counter(mask: CounterMask, *, api: str, chip: str) -> Mask:
    """A :class:`CounterMask` as mask words: the count's low 64 bits in words 0-1."""
    c = mask.count
    if isinstance(c, (jax.Array, np.ndarray)) and np.ndim(c) == 0 and \
            np.issubdtype(c.dtype, np.integer):
        if isinstance(c, jax.core.Tracer):
            v = jnp.asarray(c)
            lo = v.astype(jnp.uint32)
            # a negative traced count is outside the range: make it look huge; a 64-bit
            # one keeps its high word (never wrapped: 2**32 + 200 is not 200)
            wide = np.dtype(v.dtype).itemsize > 4
            hi = (v >> 32).astype(jnp.uint32) if wide else jnp.uint32(0)
            hi = jnp.where(v < 0, jnp.uint32(1), hi)
            return Mask("counter", jnp.stack([lo, hi, jnp.uint32(0), jnp.uint32(0)]))
        c = int(c)
    if not _is_int(c):
        raise ConstraintError(Code.BAD_ARGUMENT, api=api, param="mask", value=mask,
                              allowed="CounterMask(count) with an int count (or an integer "
                                      "scalar array under jit / vmap)")
    if not 0 <= int(c) <= U64:
        raise ConstraintError(Code.MASK_RANGE, api=api, param="mask", value=mask,
                              allowed="a count in [0, 2**64 - 1] (counter mode: the low 64 "
                                      "bits of the mask register)", chip=chip)
    c = int(c)
    return Mask("counter", np.array([c & 0xFFFFFFFF, c >> 32, 0, 0], np.uint32))


def low_first(words: Sequence[int], word_order: str) -> List[int]:
    """Bit-mask words with lanes 0-63 first: TIK writes ``[mask_h, mask_l]`` (two words,
    swapped here; any other length is left as given), Ascend C already ``[lanes 0-63,
    lanes 64-127]``. The one home of the TIK word swap (:func:`low_first_rows`: the same for
    a batch of masks)."""
    word_order = _order(word_order)
    words = list(words)
    if word_order == "tik" and len(words) == 2:
        return [words[1], words[0]]
    return words


def low_first_rows(words: "np.ndarray[Any, Any]", word_order: str) -> "np.ndarray[Any, Any]":
    """:func:`low_first` of every row of ``words`` ``[m, n]`` at once (run_cases' batched
    preparation): TIK rows of two words swapped, anything else as given.

    >>> low_first_rows(np.array([[1, 2], [3, 4]], np.uint64), "tik").tolist()
    [[2, 1], [4, 3]]
    """
    word_order = _order(word_order)
    if word_order == "tik" and words.shape[-1] == 2:
        return words[..., ::-1]
    return words


def api_words(words: Sequence[int], word_order: str) -> List[int]:
    """Bit-mask words (lanes 0-63 first) as the API takes them: TIK ``[mask_h, mask_l]``
    (always two words), Ascend C unchanged."""
    word_order = _order(word_order)
    if word_order == "tik":
        return low_first((list(words) + [0, 0])[:2], "tik")     # the swap is its own inverse
    return list(words)


def lane_bits(mode: Mode, value: ArrayLike, lanes: int) -> jax.Array:
    """Boolean ``[lanes]``: which lanes of a repeat take part (inside jit).

    ``mode``: ``"count"`` / ``"bits"``, or a bool that may be traced (True: count mode), so
    that one compiled kernel serves both modes."""
    i = jnp.arange(lanes, dtype=jnp.uint32)
    value = jnp.asarray(value, jnp.uint32)
    counted = i < value[0]
    bits = ((value[i // 32] >> (i % 32)) & 1).astype(bool)
    mode = _mode(mode)
    if isinstance(mode, str):
        return counted if mode == "count" else bits
    return jnp.where(mode, counted, bits)


def is_zero(mode: Mode, value: ArrayLike) -> jax.Array:
    """True when no lane takes part (continuous 0 or all-zero bit words); ``mode`` as in
    :func:`lane_bits`."""
    value = jnp.asarray(value, jnp.uint32)
    mode = _mode(mode)
    if isinstance(mode, str):
        return value[0] == 0 if mode == "count" else ~jnp.any(value != 0)
    return jnp.where(mode, value[0] == 0, ~jnp.any(value != 0))


def to_words(mode: str, value: ArrayLike, lanes: int) -> jax.Array:
    """The mask as lane words (uint32[4]) — what a dump or a report stores."""
    bits = lane_bits(mode, value, 128) & (jnp.arange(128) < lanes)
    return jnp.sum(bits.reshape(4, 32).astype(jnp.uint32) << jnp.arange(32, dtype=jnp.uint32),
                   axis=1, dtype=jnp.uint32)


def rules(mode: Optional[str], dtype: DTypeLike,
          zero_rule: Union[str, Callable[[Any], Any]],
          word_order: str = "ascendc") -> List[Rule]:
    """Mask rules over parameters ``p`` (:class:`~ascend_ref.params.Params`, or anything with
    its ``mask`` field: ``p.mask`` is the uint32[4] value).

    ``mode``: ``"count"`` / ``"bits"`` (the rules of that mode), or None: the mode is data,
    ``p.mask_count`` (maybe traced; True: continuous), and each mode's rules hold in the
    other. ``zero_rule``: ``"error"`` / ``"ok"``, or a function of ``p`` saying whether a
    zero mask is an error (the product's rule, as data). ``word_order``: how an error
    prints the bit words, as the caller wrote them (TIK: ``[mask_h, mask_l]``)."""
    if mode is not None:
        _mode(mode)
    word_order = _order(word_order)
    lanes = lanes_per_repeat(dtype)

    def count(p: Any) -> Any:
        return p.mask_count if mode is None else np.bool_(mode == "count")

    def zero_error(p: Any) -> Any:
        return zero_rule(p) if callable(zero_rule) else np.bool_(zero_rule == "error")

    out: List[Rule] = []
    if mode in (None, "count"):
        out.append(Rule(Code.MASK_RANGE, "mask",
                        lambda p: ~count(p) | in_range(p.mask[0], 0, lanes),
                        lambda p: int(p.mask[0]), lambda p: f"[1, {lanes}] (continuous mode)",
                        doc=f"continuous mode: mask in [1, {lanes}]"))
    if mode in (None, "bits") and lanes == 64:
        out.append(Rule(Code.MASK_BITS, "mask",
                        lambda p: count(p) | ((p.mask[2] | p.mask[3]) == 0),
                        lambda p: _hex_words(p.mask, word_order),
                        lambda p: "lanes 0-63 only for a 32-bit type (high word 0)",
                        doc="bit mode, 32-bit type: lanes 0-63 only (mask[1] = 0)"))
    if zero_rule != "ok":
        out.append(Rule(Code.MASK_ZERO, "mask",
                        lambda p: ~(zero_error(p) & is_zero(count(p), p.mask)),
                        lambda p: 0 if count(p) else _hex_words(p.mask, word_order),
                        lambda p: f"a non-zero mask ([1, {lanes}] or a non-zero "
                                  f"bit pattern)",
                        doc="mask not 0 (continuous 0 / all-zero bits) where the product's "
                            "zero_mask rule is 'error'"))
    return out


def _hex_words(words: ArrayLike, word_order: str = "ascendc") -> str:
    """Lane words ``uint32[4]`` as the caller wrote the 64-bit words (TIK: high word first).

    >>> _hex_words([5, 0, 1, 0]), _hex_words([5, 0, 1, 0], "tik")
    ('[0x5, 0x1] (lanes 0-63, 64-127)', '[0x1, 0x5] (mask_h: lanes 64-127, mask_l: lanes 0-63)')
    """
    v = [int(x) for x in np.asarray(words)]
    low, high = hex(v[0] | v[1] << 32), hex(v[2] | v[3] << 32)
    if word_order == "tik":
        return f"[{high}, {low}] (mask_h: lanes 64-127, mask_l: lanes 0-63)"
    return f"[{low}, {high}] (lanes 0-63, 64-127)"
