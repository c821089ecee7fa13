"""The oracle's own product table: per-product facts restated from the documentation.

The JAX path reads its product profiles from ``configs/chips/*.toml`` through
:mod:`ascend_ref.chips`; the oracle does **not** (it never imports that module or the JAX
path). A wrong value in a TOML file would otherwise be invisible to the main fuzz job, whose
two sides would read the same wrong value. ``tests/test_oracle_products.py`` compares this
table with the TOML profiles field by field.

Each row names its source: ``seed 000`` .. ``seed 004`` are Huawei's pages in
``shared/seeds/`` (000 WholeReduceMin, 001 ReduceDataBlock, 002 TIK vec_reduce_min,
003 TIK vec_reduce_add, 004 the high-dimension tiling chapter), ``SPEC`` is
``shared/SPEC.md`` and ``SEMANTICS`` is ``docs/SEMANTICS.md`` (our documented reading where
the pages are silent; such facts are also ``assumed`` in the profiles). ``RPE`` is the current
asc-devkit page ``docs/zh/api/SIMD-API/基础API/Memory矢量计算/归约计算/ReducePairElem.md``
(public mirror ``cannmirror/asc-devkit`` at 0da921b91, 2026-07-23) and ``PRS`` its previous
generation ``docs/api/.../归约计算/PairReduceSum.md`` (at 3825d1c98^, removed 2026-06-10).

A caller may pass an object with the same attributes instead of a product id (counterfactual
profiles of ``verify --audit``): the oracle then uses that object as given.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Dict, Mapping, Tuple

import numpy as np

F16, F32 = "float16", "float32"
ALL6 = (F16, F32, "int16", "uint16", "int32", "uint32")
ORDERS4 = ("ORDER_VALUE_INDEX", "ORDER_INDEX_VALUE", "ORDER_ONLY_VALUE", "ORDER_ONLY_INDEX")


def _bits(text: str, dtype: str) -> int:
    """Raw bits of a decimal / inf value in ``dtype`` (written out here, not parsed from TOML)."""
    w = np.dtype(dtype).itemsize
    return int(np.array(float(text), dtype=dtype).view(f"uint{8 * w}"))


@dataclass(frozen=True)
class Product:
    """One product as the oracle sees it. ``sources``: field -> where the fact comes from."""

    id: str
    ub_bytes: int
    apis: Mapping[str, Tuple[str, ...]]
    orders: Tuple[str, ...]
    zero_mask: str
    zero_repeat: str
    dst_rep_stride_zero: bool
    block_fill: str
    fill_values: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    saturate_default: bool = False
    fp32_ftz: bool = False
    default_nan_f16: int = 0xFE00
    default_nan_f32: int = 0xFFC00000
    saturate_only: bool = False
    add_order: str = "tree"
    minmax_nan: str = "payload"
    pair_masked_pair: str = "keep"
    pair_masked_lane: str = "add_zero"
    int_sum_overflow: str = "wrap"
    #: API -> {src dtype: dst dtype} where the page pairs different types
    dst_dtypes: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    reduce_tmp_buffer: str = "used"
    #: the reduce special registers (oracle/_spr.py, SEMANTICS §P); rows: :data:`_SPR_ROWS`
    spr_sum: str = "unsupported"
    spr_maxmin: str = "unsupported"
    spr_maxmin_index: str = "flat"
    spr_unwritten: str = "undefined"
    spr_sum_other_type: str = "undefined"
    spr_vcg_clobber: str = "unchanged"
    counter_mode: str = "unsupported"
    counter_dst_stride_zero: str = "last_wins"
    #: level-2 ReduceSum / Max / Min, high-dimensional form in counter mode (SEMANTICS §R):
    #: "count" (the counter rule) or "undefined"; the max / min index ("offset" from src or
    #: "position" r*L + lane); ReduceSum's accumulation ("tree" 方式二, "merge" 950 方式三)
    reduce_l2_counter: str = "count"
    reduce_l2_counter_index: str = "offset"
    reduce_sum_counter_mode: str = "tree"
    #: ReduceSum.md 不同硬件形态对应的ReduceSum相加方式, the count form: "sequential" (方式一),
    #: "tree" (方式二), "merge" (Ascend 950: 方式三 for 256~1024 bytes, else 方式二)
    reduce_sum_count_mode: str = "tree"
    int64_sum_overflow: str = "wrap"
    #: 方式一's chain: from the first repeat sum, each add rounded to T (not documented)
    reduce_sum_seq_seed: str = "first"
    reduce_sum_tree_tail: str = "step"
    reduce_sum_seq_rounding: str = "each"
    #: TIK vcmax / vcmin index_low=True: "index_value" ([index, value]) or "ignored"
    tik_index_low: str = "index_value"
    #: TIK vcmax / vcmin on int16: "signed" compare, or the bits as uint16 ("unsigned")
    tik_vc_int16_compare: str = "signed"
    sources: Mapping[str, str] = field(default_factory=dict)

    def dtypes(self, api: str) -> Tuple[str, ...]:
        return tuple(self.apis.get(api, ()))

    def fill_bits(self, reduce_type: str, dtype: str) -> int:
        return self.fill_values[reduce_type][dtype]

    def default_nan(self, dtype: str) -> int:
        return self.default_nan_f16 if np.dtype(dtype).itemsize == 2 else self.default_nan_f32


# ------------------------------------------------------------------ shared facts ---------------

#: Facts every product shares, and where they come from.
_COMMON_SOURCES = {
    "saturate_default": "SEMANTICS §D: saturation off unless asked (assumed, not documented)",
    "fp32_ftz": "SEMANTICS §D: float32 subnormals kept (assumed, not documented)",
    "default_nan_f16": "SEMANTICS §D: default NaN of half inf-inf is 0xFE00 (assumed, x86 rule)",
    "default_nan_f32": "SEMANTICS §D: default NaN of float inf-inf is 0xFFC00000 (assumed)",
    "saturate_only": "SEMANTICS §D: both modes exist unless a page says otherwise",
    "add_order": "seed 003: vec_reduce_add combines the repeat results as a tree",
    "minmax_nan": "SEMANTICS §D: a NaN min/max result keeps the first NaN lane's bits",
    "pair_masked_pair": "RPE 约束说明 id20-id27 does not list this product (PairReduceSum is "
                        "not supported here, or the page is silent)",
    "int_sum_overflow": "no integer ReduceRepeat<SUM> on this product (RRP 数据类型: half/float)",
    "int64_sum_overflow": "no int64 / uint64 ReduceSum on this product (ReduceSum.md 数据类型: "
                          "half/float)",
    "dst_dtypes": "RRP 数据类型: dst and src of one type on this product (id19)",
    "reduce_tmp_buffer": "ReduceMax.md / ReduceMin.md 约束说明: 需要使用sharedTmpBuffer on A3, "
                         "A2, 200I/500 A2, inference AI Core, training, Kirin X90, Kirin 9030",
    "counter_mode": "SetMaskCount.md (asc-devkit 0da921b91) 产品支持情况: 支持 on 950, A3, A2, "
                    "200I/500 A2, inference AI Core, Kirin X90 / 9030; 不支持 on inference "
                    "Vector Core and Atlas training (not listed: Atlas 200/300/500, TIK only)",
    "counter_dst_stride_zero": "SEMANTICS §Q: counter mode with dstRepStride 0 writes every "
                               "repeat into one slot, the last wins, as in normal mode (assumed)",
    "reduce_l2_counter": "掩码/概述.md table 3: a 高维切分 API in counter mode runs ceil(n / L) "
                         "repeats, the last partial, repeatTime ignored (SEMANTICS §R; assumed "
                         "where the implementation is normal-mode code: A2, A3, 200I/500 A2, "
                         "AI Core)",
    "reduce_l2_counter_index": "not documented: counter-mode ReduceMax / ReduceMin index = the "
                               "element offset from src, as the high-dimensional formula "
                               "(assumed; dav_c220-family ReduceImpl)",
    "reduce_sum_counter_mode": "ReduceSum.md 不同硬件形态对应的ReduceSum相加方式: 方式二 for the "
                               "high-dimensional form",
    "pair_masked_lane": "SEMANTICS §L: a masked lane of a pair counts as +0 in the pair's add "
                        "(the Ascend 950 Reg page PairReduceElem.md: 不参与计算的元素，被当作0进行"
                        "累加; no page for the other products; assumed)",
}
_RPE = "RPE (ReducePairElem, current)"
_RRP = "RRP (ReduceRepeat.md, current)"
_RRS = "RRS (RepeatReduceSum.md at 3825d1c98^, the last page of the deprecated name)"
#: Ascend 950 ReduceRepeat<SUM> pairs (RRP id18; RRS: "src数据类型uint16_t和int16_t时，dst数据
#: 类型分别为uint32_t和int32_t，其他情况下，dst数据类型均与src数据类型相同")
_PAIRS_950 = {"int16": "int32", "uint16": "uint32"}
_RPE_T = f"{_RPE} 数据类型"
_RPE_KEEP = f"{_RPE} 约束说明 id21: a pair whose two mask bits are 0 is skipped (kept) on"
_RPE_ZERO = f"{_RPE} 约束说明 id25: a pair whose two mask bits are 0 is set to 0 on"
#: newer TIK pages (CANN 7.0-8.5, atlastikapi_07_0088 / 0089 / 0090) than seeds 002 / 003
_TIK_NEW = "CANN 7.0-8.5 TIK pages vec_reduce_max/min/add (atlastikapi_07_0088-0090)"
_TIK_F = {"vec_reduce_min": (F16, F32), "vec_reduce_max": (F16, F32)}
_FILL_950 = {"SUM": {F16: _bits("0", F16), F32: _bits("0", F32)},
             "MAX": {F16: _bits("-inf", F16), F32: _bits("-inf", F32)},
             "MIN": {F16: _bits("inf", F16), F32: _bits("inf", F32)}}
_FILL_200I = {"SUM": {F16: _bits("0", F16), F32: _bits("0", F32)},
              "MAX": {F16: _bits("-65504", F16), F32: _bits("-inf", F32)},
              "MIN": {F16: _bits("65504", F16), F32: _bits("inf", F32)}}
_NONE = ()


def _l2(dtypes: Tuple[str, ...]) -> Dict[str, Tuple[str, ...]]:
    """ReduceMax.md / ReduceMin.md (current) 数据类型, and ReduceSum.md's (half / float only)."""
    sums = tuple(d for d in dtypes if d in (F16, F32))
    return {"reduce_max": dtypes, "reduce_min": dtypes, "reduce_sum": sums,
            "reduce_max_count": dtypes, "reduce_min_count": dtypes, "reduce_sum_count": sums}


def _l2_950() -> Dict[str, Tuple[str, ...]]:
    """Ascend 950: ReduceMax.md / ReduceMin.md id10 and ReduceSum.md id10 add int64_t /
    uint64_t, "仅支持tensor前n个数据计算接口" (the count form only)."""
    b64 = ("int64", "uint64")
    out = _l2(ALL6)
    return {**out, "reduce_max_count": ALL6 + b64, "reduce_min_count": ALL6 + b64,
            "reduce_sum_count": (F16, F32) + b64}


def _ascendc(half_float: Tuple[str, ...]) -> Dict[str, Tuple[str, ...]]:
    return {"whole_reduce_min": half_float, "whole_reduce_max": half_float,
            "whole_reduce_sum": half_float[:2] if len(half_float) > 2 else half_float,
            "reduce_data_block": half_float[:2] if len(half_float) > 2 else half_float}


def _row(pid: str, ub: int, apis: dict, orders: tuple, zero_mask: str, zero_repeat: str,
         drs0: bool, fill: str, fills: dict, sources: dict, **more) -> Product:
    full = {a: tuple(apis.get(a, _NONE)) for a in (
        "whole_reduce_min", "whole_reduce_max", "whole_reduce_sum", "reduce_data_block",
        "pair_reduce_sum", "repeat_reduce_sum", "vec_reduce_min", "vec_reduce_max",
        "vec_reduce_add", "reduce_max", "reduce_min", "reduce_sum", "reduce_max_count",
        "reduce_min_count", "reduce_sum_count")}
    return Product(pid, ub, full, orders, zero_mask, zero_repeat, drs0, fill, fills,
                   sources={**_COMMON_SOURCES, **sources}, **more)


_S000_T = "seed 000 (WholeReduceMin) parameter T: data types per product"
_S000_ORDER = "seed 000 parameter order: ReduceOrder values per product"
_S001_NOP = "seed 001 (ReduceDataBlock) constraints: mask / repeatTime 0 is a NOP on"
_S003_T = "seed 003 (TIK vec_reduce_add) dst/src/work_tensor: Tensor(float16/float32)"
_S002_T = "seed 002 (TIK vec_reduce_min) dst/src/work_tensor: float16 on"

def _kirin(pid: str, name: str) -> Product:
    """Kirin X90 and Kirin 9030: the same documented facts and sources, one row each."""
    return _row(pid, 120832, {**_ascendc((F16, F32)), **_l2((F16, F32))},
         ("ORDER_VALUE_INDEX", "ORDER_INDEX_VALUE"), "undefined", "undefined", True, "fill",
         _FILL_950,
         {"apis": f"seed 001: {name} half/float (ReduceDataBlock); SPEC §2 table: half "
                  f"float for WholeReduce too; {_RPE} 产品支持情况 does not list {name}: no "
                  "PairReduceSum (asc-devkit dav_l300/l311 implement it; the page wins); "
                  f"{_RRS} does not list {name}: no RepeatReduceSum",
          "orders": "SPEC §2 product table: VALUE_INDEX, INDEX_VALUE (not in seed 000's list)",
          "zero_mask": "asc-devkit builds it as dav_l300/l311 on the 950 Reg path: as 950, undefined (assumed)", "zero_repeat": "as zero_mask (assumed)",
          "dst_rep_stride_zero": "only Atlas training forbids 0",
          "block_fill": "dav_l300/l311 ReduceDataBlock = Reg::Reduce*WithDataBlock ZEROING, as 950: 950's fill values (assumed)",
          "minmax_nan": "same Reg implementation as 950 (assumed)",
          "ub_bytes": "asc-devkit impl/basic_api/utils/kernel_utils_constants.h: TOTAL_UB_SIZE = 118 * 1024 for __NPU_ARCH__ 3003 / 3113 (platform_ascendc.cpp: KirinX90 -> 3003, Kirin9030 -> 3113); SPEC §2's 262144 was assumed (still in the profile's assumed list)",
          "reduce_l2_counter_index": "not documented: dav_l300 / dav_l311 counter templates "
                                     "advance the index by L per repeat: r*L + lane (assumed)",
          "reduce_sum_tree_tail": "ReduceSum.md: 方式二, the tail's place not stated; "
                                  "dav_l300 / dav_l311 ReduceSumCounterMode: one tree over "
                                  "every repeat sum, the tail's one more leaf (assumed)"},
         minmax_nan="default", counter_mode="supported", reduce_l2_counter_index="position",
         reduce_sum_tree_tail="leaf")


#: the product table (id -> Product)
PRODUCTS: Dict[str, Product] = {p.id: p for p in [
    _row("ascend950", 253952,
         {**_ascendc(ALL6), "whole_reduce_sum": ALL6, "reduce_data_block": (F16, F32),
          "pair_reduce_sum": (F16, F32), "repeat_reduce_sum": ALL6, **_l2_950()},
         ORDERS4, "undefined", "undefined", True, "fill", _FILL_950,
         {"apis": f"{_S000_T} (Ascend 950PR/950DT: uint16/int16/uint32/int32/half/float); "
                  f"seed 001 (ReduceDataBlock: half/float); {_RPE_T} (950: half, float); {_RRP} "
                  "数据类型 id10 (SUM too: int16/uint16/half/int32/uint32/float sources); "
                  f"{_RRS}: 950 supported, the same sources",
          "orders": f"{_S000_ORDER} (950: all four)",
          "int_sum_overflow": f"{_RRP} id18 allows int32 / uint32 sums; no page says what a "
                              "sum past 32 bits gives: modulo 2^32 (assumed)",
          "int64_sum_overflow": "ReduceSum.md id10 allows int64 / uint64 (count form, id30 "
                                "方式三); no page says what a sum past 64 bits gives: modulo "
                                "2^64 (assumed)",
          "dst_dtypes": f"{_RRP} id18 SUM pairs: int32 <- int16, int32; uint32 <- uint16, "
                        f"uint32; half <- half; float <- float ({_RRS} says the same)",
          "pair_masked_pair": f"{_RPE_ZERO} Ascend 950PR/950DT (PRS said unchanged: the newer "
                              "page wins; dav_3510 ZEROING + a full 128-byte store agrees)",
          "zero_mask": "seed 001: on Ascend 950PR/950DT a 0 mask / repeatTime is not "
                       "guaranteed to be a NOP (SEMANTICS §C: undefined dst)",
          "zero_repeat": "seed 001, as zero_mask",
          "dst_rep_stride_zero": "seed 000 dstRepStride: only Atlas training forbids 0",
          "block_fill": "seed 001: a block without active lanes gets SUM 0, MAX -inf, MIN +inf",
          "ub_bytes": "SPEC §2 product table: 253952 bytes (248 KiB usable)",
          "minmax_nan": "asc-devkit Reg Reduce.md: a NaN input writes the type's NaN and the "
                        "first NaN's index (issue 12)",
          "reduce_tmp_buffer": "ReduceMax.md / ReduceMin.md 约束说明: on Ascend 950 无需使用"
                               "sharedTmpBuffer (any size, src itself)",
          "reduce_l2_counter_index": "not documented: dav_3510's counter templates advance "
                                     "the index by L per repeat: r*L + lane (assumed)",
          "reduce_sum_counter_mode": "ReduceSum.md: Counter模式且数据量在256~1024字节之间采用"
                                     "方式三；否则采用方式二",
          "counter_dst_stride_zero": "掩码/概述.md: 950's counter mode is a software emulation "
                                     "that differs somewhat from A2/A3 (no detail); dav_3510 "
                                     "ReduceTemplate moves src by the ignored repeatTime when "
                                     "dstRepStride = 0: dst undefined (assumed)"},
         minmax_nan="default",
         pair_masked_pair="zero", reduce_tmp_buffer="unused", counter_mode="supported",
         counter_dst_stride_zero="undefined", reduce_sum_count_mode="merge",
         reduce_l2_counter_index="position", reduce_sum_counter_mode="merge",
         dst_dtypes={"whole_reduce_sum": _PAIRS_950, "repeat_reduce_sum": _PAIRS_950}),
    _row("atlas_a2", 196608, {**_ascendc((F16, F32)), **_TIK_F, "vec_reduce_add": (F16, F32),
                              "pair_reduce_sum": (F16, F32), "repeat_reduce_sum": (F16, F32),
                              **_l2((F16, F32))},
         ORDERS4, "nop", "nop", True, "keep", {},
         {"apis": f"{_S000_T} (Atlas A2: half/float); seed 001 (half/float); {_TIK_NEW}: "
                  f"min/max/add float16/float32 on Atlas A2; {_RPE_T} (A2: half, float); {_RRS}: "
                  "A2 half/float",
          "pair_masked_pair": f"{_RPE_KEEP} Atlas A2",
          "add_order": f"{_TIK_NEW}: Atlas A2 sums repeat results in order, 255 at a time, "
                       "then the group sums pairwise",
          "orders": f"{_S000_ORDER} (A2: all four)",
          "zero_mask": f"{_S001_NOP} Atlas A2/A3", "zero_repeat": f"{_S001_NOP} Atlas A2/A3",
          "dst_rep_stride_zero": "seed 000 dstRepStride: only Atlas training forbids 0",
          "block_fill": "seed 001: a block with no active lane is not written (A2/A3)",
          "ub_bytes": "SPEC §2 product table: 196608 bytes"}, add_order="group255",
         counter_mode="supported", reduce_sum_count_mode="sequential"),
    _row("atlas_a3", 196608, {**_ascendc((F16, F32)), **_TIK_F, "pair_reduce_sum": (F16, F32),
                              "repeat_reduce_sum": (F16, F32), **_l2((F16, F32))},
         ORDERS4, "nop", "nop", True,
         "keep", {},
         {"apis": f"{_S000_T} (Atlas A3: half/float); seed 001 (half/float); {_TIK_NEW}: "
                  "min/max float16/float32 on A3 (vec_reduce_add not listed for A3); "
                  f"{_RPE_T} (A3: half, float); {_RRS}: A3 half/float (added by 7c950ce98; "
                  "the 950/A2-only context page said A3 x: the SIMD-API page wins)",
          "pair_masked_pair": f"{_RPE_KEEP} Atlas A3",
          "orders": f"{_S000_ORDER} (A3: all four)",
          "zero_mask": f"{_S001_NOP} Atlas A2/A3", "zero_repeat": f"{_S001_NOP} Atlas A2/A3",
          "dst_rep_stride_zero": "seed 000 dstRepStride: only Atlas training forbids 0",
          "block_fill": "seed 001: a block with no active lane is not written (A2/A3)",
          "ub_bytes": "SPEC §2 product table: 196608 bytes"},
         counter_mode="supported", reduce_sum_count_mode="sequential"),
    _row("atlas_200i_500_a2", 253952,
         {**_ascendc((F16, F32)), **_TIK_F, "vec_reduce_add": (F16, F32),
          "pair_reduce_sum": (F16, F32), **_l2((F16, F32))},
         ("ORDER_VALUE_INDEX", "ORDER_ONLY_VALUE"), "error", "nop", True, "fill", _FILL_200I,
         {"apis": f"{_S000_T} (Atlas 200I/500 A2: half/float); seed 001 (half/float); "
                  f"{_TIK_NEW}: min/max/add float16/float32 on 200I/500 A2; {_RPE_T} "
                  f"(200I/500 A2: half, float); {_RRS}: 200I/500 A2 x (not supported)",
          "pair_masked_pair": f"{_RPE_ZERO} Atlas 200I/500 A2 (PRS says the same)",
          "add_order": f"{_TIK_NEW}: 200I/500 A2 accumulates odd / even repeats element-wise, "
                       "then adds the lanes pairwise",
          "orders": f"{_S000_ORDER} (200I/500 A2: ORDER_VALUE_INDEX, ORDER_ONLY_VALUE)",
          "zero_mask": "seed 000 mask range starts at 1; not in seed 001's NOP list",
          "zero_repeat": "SEMANTICS §C: repeat 0 is a NOP (assumed)",
          "dst_rep_stride_zero": "seed 000 dstRepStride: only Atlas training forbids 0",
          "block_fill": "seed 001: an empty block gets SUM 0, MAX -65504 (half) / -inf "
                        "(float), MIN 65504 (half) / +inf (float)",
          "ub_bytes": "SPEC §2 product table: 253952 bytes (248 KiB usable)"},
         add_order="odd_even", pair_masked_pair="zero", counter_mode="supported"),
    _row("atlas_inference_aicore", 262144,
         {**_ascendc((F16, F32)), **_TIK_F, "vec_reduce_add": (F16, F32),
          "pair_reduce_sum": (F16, F32), "repeat_reduce_sum": (F16, F32), **_l2((F16, F32))},
         ("ORDER_VALUE_INDEX", "ORDER_INDEX_VALUE"), "error", "nop", True, "undefined", {},
         {"apis": f"{_S000_T} (AI Core: half/float); seed 001; {_S003_T} (AI Core); "
                  f"{_TIK_NEW}: min/max float16/float32 on the AI Core; {_RPE_T} (AI Core: "
                  f"half, float); {_RRS}: AI Core half/float",
          "pair_masked_pair": f"{_RPE_KEEP} Atlas inference AI Core",
          "orders": f"{_S000_ORDER} (AI Core: ORDER_VALUE_INDEX, ORDER_INDEX_VALUE)",
          "zero_mask": "seed 000 mask range starts at 1", "zero_repeat": "SEMANTICS §C (assumed)",
          "dst_rep_stride_zero": "seed 000 dstRepStride: only Atlas training forbids 0",
          "block_fill": "seed 001 does not document empty blocks here: undefined",
          "ub_bytes": "SPEC §2 product table: 262144 bytes"}, counter_mode="supported"),
    _row("atlas_inference_vector_core", 262144,
         {"vec_reduce_min": (F16, F32, "int16"), "vec_reduce_max": (F16, F32, "int16"),
          "vec_reduce_add": (F16, F32)}, (),
         "error", "nop", True, "undefined", {},
         {"apis": f"seeds 000 / 001 and {_RPE}: Vector Core not supported; "
                  f"{_S003_T} (Vector Core); {_TIK_NEW}: min/max float16/float32/int16 "
                  "on the Vector Core",
          "orders": "no WholeReduce on this product",
          "zero_mask": "seed 003 mask range starts at 1", "zero_repeat": "SEMANTICS §C",
          "dst_rep_stride_zero": "no Ascend C API here (default true)",
          "block_fill": "no ReduceDataBlock here",
          "ub_bytes": "SPEC §2 product table: 262144 bytes"}),
    _row("atlas_training", 262144,
         {**_ascendc((F16,)), "vec_reduce_min": (F16,), "vec_reduce_max": (F16,),
          "vec_reduce_add": (F16, F32), "pair_reduce_sum": (F16,), "repeat_reduce_sum": (F16,),
          **_l2((F16,))},
         ("ORDER_VALUE_INDEX",), "error", "nop", False, "undefined", {},
         {"apis": f"{_S000_T} (Atlas training: half); seed 001 (half); "
                  f"{_S002_T} Atlas Training; {_S003_T} (training); {_RPE_T} (training: half); "
                  f"{_RRS}: training half/float, but {_RRP} (newer; RepeatReduceSum runs "
                  "ReduceRepeat<SUM>) lists training half only: half",
          "pair_masked_pair": f"{_RPE} id20 does not list Atlas training; PRS: every product "
                              "but 200I/500 A2 leaves the dst element unchanged (and training "
                              "runs the same vcpadd intrinsic as A2/A3): kept (assumed)",
          "orders": f"{_S000_ORDER} (training: ORDER_VALUE_INDEX)",
          "zero_mask": "seed 000 mask range starts at 1", "zero_repeat": "SEMANTICS §C",
          "dst_rep_stride_zero": "seeds 000 / 001 dstRepStride: Atlas training does not "
                                 f"support 0 ({_RPE} id28 says the same for PairReduceSum)",
          "block_fill": "seed 001 does not document empty blocks here: undefined",
          "ub_bytes": "SPEC §2 product table: 262144 bytes",
          "saturate_default": "TF adapter set_device_sat_mode (CANN 7.0-9.0): Atlas training "
                              "defaults to, and only supports, saturation mode",
          "saturate_only": "same page: only saturation mode is supported"},
         saturate_default=True, saturate_only=True),
    _row("atlas_200_300_500_inference", 262144,
         {"vec_reduce_min": (F16,), "vec_reduce_max": (F16,), "vec_reduce_add": (F16, F32)},
         (), "error", "nop", True, "undefined", {},
         {"apis": f"{_S002_T} Atlas 200/300/500 Inference; {_S003_T} (200/300/500)",
          "orders": "TIK only: no WholeReduce", "zero_mask": "seeds 002 / 003 mask from 1",
          "zero_repeat": "SEMANTICS §C", "dst_rep_stride_zero": "no Ascend C API (default)",
          "block_fill": "no ReduceDataBlock here",
          "ub_bytes": "SPEC §2 product table: 262144 bytes (assumed there; ub_bytes is in the profile's assumed list)"}),
    _kirin("kirin_9030", "Kirin 9030"),
    _kirin("kirin_x90", "Kirin X90"),
]}


_SPR_SUM_PAGE = "GetReduceRepeatSumSpr(ISASI).md (current) 产品支持情况"
_SPR_MM_PAGE = "GetReduceRepeatMaxMinSpr(ISASI).md (current) 产品支持情况 / 函数原型"
_SPR_COMMON = {
    "spr_sum": f"{_SPR_SUM_PAGE}: 不支持 (or the product is not listed)",
    "spr_maxmin": f"{_SPR_MM_PAGE}: 不支持 (or the product is not listed)",
    "spr_maxmin_index": "not documented: the element offset r * L + lane of the winner (assumed)",
    "spr_unwritten": "not documented: a register nothing wrote is undefined (assumed)",
    "spr_sum_other_type": "not documented: one register for both types, so a write of one "
                          "type leaves the other's reading undefined (assumed)",
    "spr_vcg_clobber": "not documented: ReduceDataBlock (vcgmax / vcgmin) leaves the max/min "
                       "register alone (assumed)"}
#: per product, where it differs from the defaults above
_SPR_ROWS = {
    "ascend950": ({"spr_sum": "software", "spr_sum_other_type": "kept"},
                  {"spr_sum": f"{_SPR_SUM_PAGE}: 支持; impl dav_3510 GetAccValImpl returns one "
                              f"global per type (accValHalf / accValFloat)",
                   "spr_maxmin": f"{_SPR_MM_PAGE}: 不支持 (the previous page said 支持: "
                                 f"SEMANTICS §P C3)",
                   "spr_sum_other_type": "not documented: dav_3510 keeps one global per type, "
                                         "so the other type's value stays (assumed)"}),
    "atlas_a2": ({"spr_sum": "acc_val", "spr_maxmin": "value_index"},
                 {"spr_sum": f"{_SPR_SUM_PAGE}: 支持 (impl dav_c220: the ACC_VAL register)",
                  "spr_maxmin": f"{_SPR_MM_PAGE}: 支持, the (value, index) prototype"}),
    "atlas_a3": ({"spr_sum": "acc_val", "spr_maxmin": "value_index"},
                 {"spr_sum": f"{_SPR_SUM_PAGE}: 支持 (impl dav_c220: the ACC_VAL register)",
                  "spr_maxmin": f"{_SPR_MM_PAGE}: 支持, the (value, index) prototype"}),
    "atlas_inference_aicore": ({"spr_maxmin": "value"},
                               {"spr_maxmin": f"{_SPR_MM_PAGE}: 支持, the value-only prototype "
                                              f"(\"该函数原型仅支持Atlas 推理系列产品AI Core\")"}),
}
for _pid in list(PRODUCTS):
    _kw, _src = _SPR_ROWS.get(_pid, ({}, {}))
    PRODUCTS[_pid] = replace(PRODUCTS[_pid], **_kw,
                             sources={**_SPR_COMMON, **PRODUCTS[_pid].sources, **_src})


#: TIK vcadd / vcmax / vcmin / vcgadd / vcgmax / vcgmin / vcpadd: no TIK API page for them was
#: found (docs/research/reduction_family.md §8); the products are the ones with a TIK
#: vec_reduce_* page, the dtypes the CCE intrinsic prototypes' half / float (all assumed)
_TIK_VC_APIS = ("vcadd", "vcmax", "vcmin", "vcgadd", "vcgmax", "vcgmin", "vcpadd")
_TIK_VC_SOURCES = {
    "tik_vc": "no TIK page for vcadd .. vcpadd: the products with a TIK vec_reduce_* page, "
              "half / float from the CCE prototypes (cceapi_0032 / 0034 / 0035) (assumed)",
    "tik_vc_int16_compare": "the Vector Core's TIK vec_reduce_max/min pages list int16 (a "
                            "signed max / min, built on vcmax / vcmin); the TIK source passes "
                            "int16 as uint16 (assumed: signed)",
    "tik_index_low": "TIK source docstring: index_low selects the index-first order; the "
                     "2020 source sends it only on HI3796CV300ES / 610 / 620 (assumed)"}
for _pid in ("atlas_200_300_500_inference", "atlas_training", "atlas_inference_aicore",
             "atlas_inference_vector_core", "atlas_a2", "atlas_a3", "atlas_200i_500_a2"):
    _p = PRODUCTS[_pid]
    vc = {a: (F16, F32) for a in _TIK_VC_APIS}
    if "int16" in _p.dtypes("vec_reduce_max"):       # the Vector Core's TIK pages: int16
        vc.update(vcmax=(F16, F32, "int16"), vcmin=(F16, F32, "int16"))
    PRODUCTS[_pid] = replace(_p, apis={**_p.apis, **vc},
                             sources={**_p.sources, **_TIK_VC_SOURCES})
for _pid in PRODUCTS:
    _p = PRODUCTS[_pid]
    PRODUCTS[_pid] = replace(_p, apis={a: () for a in _TIK_VC_APIS} | dict(_p.apis))


def product(chip_or_profile) -> object:
    """The oracle's row for a product id; an object with profile attributes passes through.
    Raises ``KeyError`` for an unknown id."""
    if isinstance(chip_or_profile, str):
        return PRODUCTS[chip_or_profile]
    if hasattr(chip_or_profile, "id") and hasattr(chip_or_profile, "dtypes"):
        return chip_or_profile
    raise KeyError(chip_or_profile)


__all__ = ["PRODUCTS", "Product", "product"]
