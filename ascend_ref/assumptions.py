"""The assumptions ``ascend-ref verify --audit`` checks under names of its own, and what
exercises each (its report and docs/verify.md print the text).

A product profile's ``assumed`` list names profile fields, instruction facts and these; the
registry's profile check (:func:`ascend_ref.registry.check_profile`) refuses any other name,
so a misspelt one cannot silently drop the audit's checks of it. Data only: it imports
nothing, so both the registry and the audit read it.

>>> "minmax_rules" in AUDITED and AUDITED["fp32_ftz"].startswith("a float sum")
True
"""

from typing import Dict

#: name (a variant in brackets: ``"minmax_rules (nan)"``) -> what exercises it
AUDITED: Dict[str, str] = {
    "minmax_rules": "min/max whose active lanes hold a NaN, both zeros at the extreme, or a tie "
                    "that decides an index",
    "minmax_rules (nan)": "a NaN among the active lanes: the first NaN lane wins",
    "minmax_rules (signed zero)": "the extreme is a zero and both -0 and +0 take part: -0 < +0",
    "minmax_rules (ties)": "the extreme value in several lanes and the result has an index: "
                           "smallest lane wins",
    "default_nan_f16": "a half sum whose result is the default NaN (inf - inf)",
    "default_nan_f32": "a float sum whose result is the default NaN (inf - inf)",
    "saturate_default": "a half sum called with saturate=None whose result would differ with "
                        "the other mode",
    "fp32_ftz": "a float sum whose result changes if subnormals are flushed",
    "zero_repeat": "repeat 0 (nothing may be written)",
    "ub_bytes": "tensors in the top part of the assumed UB (above the next smaller documented "
                "UB size), or a call the device ran beyond it",
    "block_fill (undefined)": "ReduceDataBlock with a DataBlock with no active lane: what the "
                              "device writes there is tallied",
    # issue 12: the open choices of docs/SEMANTICS.md §J
    "dst_rep_stride_zero_last_wins": "dstRepStride = 0 with several repeats: the slot holds the "
                                     "last repeat's result",
    "overlap_reads_first": "src overlapping a written operand (where allowed): every read sees "
                           "the UB as it was before the call",
    "partial_overlap_in_repeat": "dst inside the first repeat's source bytes (in place)",
    "tik_index_formula": "TIK cal_index with src_rep_stride != 8: index = r*stride*(32/size)+lane",
    "add_chunking": "tree-order vec_reduce_add with R > L: chunks of L, then the chunk sums",
    "add_order_group_combine": "Atlas A2 vec_reduce_add with R > 255: group sums combined "
                               "pairwise",
    "add_order_odd_even": "Atlas 200I/500 A2 vec_reduce_add with R >= 2: odd/even accumulation",
    "tik_add_work_contents (undefined)": "vec_reduce_add: what the device leaves in work[0] is "
                                         "tallied",
    "nan_add_operand": "a sum with two NaN operands of different bits: which one propagates",
    "minmax_nan": "min/max with a NaN among the active lanes: the result is the default NaN",
    "index_overflow_limit": "TIK cal_index: INDEX_OVERFLOW above 65535 (a device error), an "
                            "index in (65504, 65535] written",
    "tik_align": "TIK work_tensor not 32-byte aligned: the device rejects it (ALIGN)",
    "tik_vc_dtypes": "TIK vc* with a dtype the profile does not list (no TIK page for them): "
                     "the device rejects it (DTYPE_UNSUPPORTED)",
    "block_fill": "ReduceDataBlock with a DataBlock with no active lane: the fill value",
    "zero_mask (undefined)": "mask 0 on a product where it is undefined: what the device did "
                             "to dst is tallied",
    "zero_repeat (undefined)": "repeat 0 on a product where it is undefined: what the device "
                               "did to dst is tallied",
    "zero_mask": "mask 0 (a NOP, or MASK_ZERO where the product rejects it)",
    "block_fill_values": "ReduceDataBlock with a DataBlock with no active lane: the fill "
                         "value's bits",
    "counter_max_repeat": "counter mode with a count above 255 repeats' worth (255 * L): "
                          "MASK_RANGE, the API's repeat range kept",
    "reduce_l2_index": "level-2 ReduceMax / ReduceMin with calIndex and srcRepStride != 8, or "
                       "a 16-bit index past 65535 (INDEX_OVERFLOW)",
    "reduce_l2_dst_align": "level-2 ReduceMax / ReduceMin dst aligned to its slot (2 * size "
                           "with calIndex, size without)",
    "reduce_l2_max_repeat": "level-2 ReduceSum / Max / Min with repeatTime above L * L / 4: "
                            "REPEAT_RANGE",
    "reduce_sum_tree_chunking": "level-2 ReduceSum with more repeats than L: chunks of L "
                                "repeat sums, then their sums' tree",
    "saturate_only": "a half sum on a product with only saturation mode: saturated whatever "
                     "saturate says",
}


__all__ = ["AUDITED"]
