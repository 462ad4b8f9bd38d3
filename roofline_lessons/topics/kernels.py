"""Kernels under the roofline: how a step's work is cut into thread blocks, and what the cut costs.

The roofline prices a step by its FLOPs and bytes. A real kernel also has a *shape*: it launches a
grid of thread blocks (CTAs), each running on one compute unit (an SM on NVIDIA GPUs, a CU on AMD
ones; ``Part.compute_units``), and the shape decides how much of the chip it can use. This module
computes the pieces a lesson needs, from the catalog and plain arithmetic:

- **Decode attention grids.** A decode attention kernel launches one CTA per (sequence, KV head,
  KV split) (:func:`decode_attention_ctas`); at small batch that is fewer CTAs than SMs
  (:func:`sm_fill`), and flash-decoding splits the KV sequence to fill them
  (:func:`flash_decoding_splits`, :func:`split_kv_combine_bytes`).
  :func:`decode_attention_time_with_sm_limit_s` is an estimate of what the empty SMs cost.
- **GQA packing.** The query heads that share a KV head can share one MMA's rows
  (:func:`gqa_mma_m_fill`).
- **Waves and tiles.** A GEMM's output tiles run in waves of one tile per SM
  (:func:`wave_quantization`, :func:`gemm_output_tiles`, :func:`tile_quantization_efficiency`);
  split-K and Stream-K cut the K dimension to fill the last wave (:func:`split_k_tiles`).
- **All-reduce algorithms.** Ring, one-shot, two-shot and in-switch all-reduces
  (:func:`allreduce_time_s`, an estimate; :func:`allreduce_lower_bound_s`, a bound), priced with
  the course's collective model in :mod:`roofline_lessons.core.parallel`.
- **Logits.** The lm_head and the sampling passes over its logits (:func:`logits_cost`,
  :func:`logits_share_of_decode_step`).

Every function takes scalars or numpy arrays (broadcast together) and returns the same kind: a
Python number for scalar input, an array for array input. Bad input raises
:class:`~roofline_lessons.core.errors.RooflineInputError` naming the value and what is allowed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.dtypes import bytes_per_element
from ..core.errors import RooflineInputError, whole_number
from ..core.hardware import Link, Part, get_part, list_parts
from ..core.models import Model, get_model
from ..core.parallel import Parallelism, _all_reduce, _collective, choose_link
from ..core.placement import place

#: compute units a CTA (thread block) runs on: NVIDIA SMs and AMD CUs. A TPU TensorCore runs no CTAs.
CTA_UNITS = ("SM", "CU")

#: the all-reduce algorithms :func:`allreduce_time_s` prices
ALLREDUCE_ALGORITHMS = ("ring", "one_shot", "two_shot", "in_switch")

#: sampling passes over the logits :func:`logits_cost` assumes by default: (1) the maximum, (2) the
#: softmax's sum of exponentials, (3) the top-k / top-p selection and the draw, each reading the whole
#: logits row once (a fused sampler; an unfused framework sampler reads, and writes, more)
DEFAULT_SAMPLING_PASSES = 3


# ---- input checks and output shape ---------------------------------------------------------------

def _whole(name: str, value, minimum: int):
    """A whole number >= ``minimum`` (int), or an int64 array of them; a RooflineInputError naming the
    value otherwise."""
    if np.ndim(value) == 0:
        return whole_number(name, value.item() if isinstance(value, np.generic) else value, minimum)
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise RooflineInputError(f"{name} must be whole numbers >= {minimum}, got {value!r}") from None
    bad = ~np.isfinite(arr) | (arr != np.floor(arr)) | (arr < minimum)
    if arr.size == 0 or bad.any():
        first = f"{float(arr[bad].flat[0]):g}" if bad.any() else "an empty array"
        raise RooflineInputError(f"{name} must be whole numbers >= {minimum}, got {first} in {value!r}")
    return arr.astype(np.int64)


def _positive(name: str, value, *, allow_zero: bool = False):
    """A finite number > 0 (>= 0 with ``allow_zero``), or a float array of them."""
    what = ">= 0" if allow_zero else "> 0"
    if isinstance(value, (bool, str, bytes)) or value is None:
        raise RooflineInputError(f"{name} must be a number {what}, got {value!r}")
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise RooflineInputError(f"{name} must be a number {what}, got {value!r}") from None
    bad = ~np.isfinite(arr) | ((arr < 0) if allow_zero else (arr <= 0))
    if arr.size == 0 or bad.any():
        if arr.ndim == 0:
            raise RooflineInputError(f"{name} must be a number {what}, got {value!r}")
        first = f"{float(arr[bad].flat[0]):g}" if bad.any() else "an empty array"
        raise RooflineInputError(f"{name} must be numbers {what}, got {first} in {value!r}")
    return float(arr) if arr.ndim == 0 else arr


def _out(x, integer: bool = False):
    """A Python number for a 0-d result, else the array."""
    a = np.asarray(x)
    if a.ndim == 0:
        return int(a) if integer else float(a)
    return a.astype(np.int64) if integer else a.astype(float)


def _cta_units(part) -> tuple[Part, int]:
    """The part and its CTA-hosting compute units (SMs or CUs); a clear error where the catalog has no
    count, or where the part's units run no thread blocks (TPU TensorCores)."""
    p = get_part(part)
    if p.compute_units is None:
        have = [pid for pid in list_parts() if get_part(pid).compute_unit_name in CTA_UNITS]
        why = f" ({p.compute_units_note})" if p.compute_units_note else ""
        raise RooflineInputError(f"{p.id} has no compute-unit count in the catalog{why}; parts that have one: "
                                 f"{', '.join(have)}")
    if p.compute_unit_name not in CTA_UNITS:
        raise RooflineInputError(f"{p.id}'s compute units are {p.compute_unit_name}s, which run no thread blocks "
                                 f"(CTAs): SM and CU fill applies to GPUs ({', '.join(CTA_UNITS)})")
    return p, int(p.compute_units)


# ---- decode attention grids ----------------------------------------------------------------------

def decode_attention_ctas(batch, kv_heads, splits=1):
    """Thread blocks (CTAs) a decode attention kernel launches: batch × kv_heads × splits.

    The convention of FlashInfer's and FlashAttention's decode kernels: one CTA per (sequence, KV
    head, KV split), the query heads that share the KV head (a GQA group) packed into the same CTA
    (:func:`gqa_mma_m_fill`), so the grid counts KV heads, not query heads. ``splits`` > 1 is
    flash-decoding's split of the KV sequence (:func:`flash_decoding_splits`). Under tensor
    parallelism pass the KV heads on one chip.

    All arguments are whole numbers >= 1 (arrays broadcast); returns CTAs (a count).
    """
    b, h, s = _whole("batch", batch, 1), _whole("kv_heads", kv_heads, 1), _whole("splits", splits, 1)
    return _out(np.multiply(np.multiply(b, h, dtype=np.int64), s, dtype=np.int64), integer=True)


def sm_fill(part, ctas):
    """Fraction of ``part``'s compute units (SMs, CUs) busy in a kernel's first wave:
    min(1, ctas / compute_units).

    It counts units holding at least one CTA; a unit can hold several CTAs at once (occupancy), which
    this does not credit: with fewer CTAs than units the rest of the chip has no work whatever the
    occupancy. Refused where the catalog has no count for the part (``Part.compute_units_note`` says
    why) and for TPUs, whose TensorCores run no CTAs.

    ``part``: a catalog id or Part. ``ctas``: whole numbers >= 1. Returns a fraction in (0, 1].
    """
    _, units = _cta_units(part)
    c = _whole("ctas", ctas, 1)
    return _out(np.minimum(1.0, np.divide(c, units)))


def flash_decoding_splits(part, *, batch, kv_heads, context_tokens, min_tokens_per_split=256):
    """KV splits for a decode attention kernel: the smallest number that gives at least one CTA per
    compute unit, ceil(units / (batch × kv_heads)), capped so that every split holds at least
    ``min_tokens_per_split`` tokens: at most max(1, floor(context_tokens / min_tokens_per_split)).

    Flash-decoding (Dao, Haziza, Massa and Sizov, "Flash-Decoding for long-context inference", blog
    post of October 2023) splits the keys and values of each sequence into chunks, computes the
    attention of the query with each chunk in parallel (one CTA per split) with FlashAttention, and
    writes, besides each split's partial output, one extra scalar per query row and split (the
    log-sum-exp of its scores); a small reduction then rescales and sums the partial outputs
    (:func:`split_kv_combine_bytes` is its extra traffic). It pays when batch × KV heads leaves SMs
    idle, at long context with a small batch.

    This is the simplest rule, the one a lesson can do by hand. FlashAttention's own
    ``num_splits_heuristic`` (hopper/heuristics.h) differs: it does not split once the CTAs fill 80 %
    of the SMs (unless one KV head outgrows the 50 MB of L2 it assumes), nor with 4 KV blocks or
    fewer; it caps the splits at the SMs and the KV blocks, and takes the smallest count whose wave
    efficiency (n_waves / ceil(n_waves)) reaches 85 % of the best.

    ``part``: a catalog id or Part (a GPU with a compute-unit count). ``batch``, ``kv_heads``,
    ``context_tokens`` and ``min_tokens_per_split``: whole numbers >= 1 (arrays broadcast).
    Returns splits (a whole number >= 1).
    """
    _, units = _cta_units(part)
    b, h = _whole("batch", batch, 1), _whole("kv_heads", kv_heads, 1)
    n, m = _whole("context_tokens", context_tokens, 1), _whole("min_tokens_per_split", min_tokens_per_split, 1)
    base = np.multiply(b, h, dtype=np.int64)
    want = -(-units // base)  # ceil
    cap = np.maximum(1, n // m)
    return _out(np.maximum(1, np.minimum(want, cap)), integer=True)


def wave_efficient_splits(part, *, batch, kv_heads, context_tokens, min_tokens_per_split=256,
                          efficiency_share=0.85, no_split_fill=0.8) -> int:
    """KV splits chosen for wave efficiency, after FlashAttention's ``num_splits_heuristic``: no split
    when batch × KV heads already fills ``no_split_fill`` of the compute units; otherwise, among 1 to
    min(units, the :func:`flash_decoding_splits` cap) splits, the smallest count whose wave efficiency
    (n / ceil(n), n = CTAs ÷ units: the share of the last wave's SMs that work) reaches
    ``efficiency_share`` of the best count's. FlashAttention's version also skips counts that leave the
    KV blocks per split unchanged and makes an exception for KV heads larger than its assumed L2; this
    one does not. Scalars only. Returns splits (a whole number >= 1).

    Where :func:`flash_decoding_splits` gives the fewest splits putting a CTA on every SM (17 on an H100
    for 8 KV heads: 136 CTAs, a second wave of 4), this rule stays within one wave (15 there: 120 CTAs).
    """
    _, units = _cta_units(part)
    b, h = whole_number("batch", batch, 1), whole_number("kv_heads", kv_heads, 1)
    n = whole_number("context_tokens", context_tokens, 1)
    m = whole_number("min_tokens_per_split", min_tokens_per_split, 1)
    base = b * h
    if base >= no_split_fill * units:
        return 1
    top = max(1, min(units, n // m))
    counts = np.arange(1, top + 1)
    waves = base * counts / units
    eff = waves / np.ceil(waves)
    return int(counts[np.argmax(eff >= efficiency_share * eff.max())])


def split_kv_combine_bytes(batch, query_heads, head_dim, splits, dtype_bytes=4, *, stats_per_row=1):
    """Extra bytes a split-KV (flash-decoding) decode step moves to combine its splits: every split
    writes a partial output (head_dim values) and ``stats_per_row`` softmax statistics for each query
    row, and the combine kernel reads them back:

        2 × splits × batch × query_heads × (head_dim + stats_per_row) × dtype_bytes, 0 when splits = 1.

    ``stats_per_row``: 1 for the log-sum-exp the Flash-Decoding post describes; vLLM's PagedAttention
    v2 kernel keeps 2 (``max_logits`` and ``exp_sums``). ``dtype_bytes``: bytes per partial value, 4
    for FP32 partials (one size for all: vLLM's v2 keeps its partial outputs in the model's 16-bit
    format and its statistics in FP32). The final output's write is not counted: an unsplit kernel
    writes it too. Each query head has its own output row (query heads, not KV heads).

    Whole numbers >= 1 (``stats_per_row`` >= 0; arrays broadcast). Returns bytes.
    """
    b, q = _whole("batch", batch, 1), _whole("query_heads", query_heads, 1)
    d, s = _whole("head_dim", head_dim, 1), _whole("splits", splits, 1)
    e, k = _whole("dtype_bytes", dtype_bytes, 1), _whole("stats_per_row", stats_per_row, 0)
    rows = np.multiply(b, q, dtype=np.int64)
    moved = 2.0 * s * rows * (d + k) * e
    return _out(np.where(np.asarray(s) > 1, moved, 0.0))


def decode_attention_time_with_sm_limit_s(part, *, kv_bytes, ctas):
    """An ESTIMATE, not a bound, of a decode attention kernel's time when it launches ``ctas`` equal
    CTAs on N compute units: each SM pulls 1/N of the bandwidth, each CTA reads kv_bytes / ctas, and
    the CTAs run in ceil(ctas / N) waves:

        ceil(ctas / N) × (kv_bytes / ctas) ÷ (bandwidth / N)
        = kv_bytes / bandwidth ÷ min(1, ctas / N)            for ctas ≤ N (÷ :func:`sm_fill`),
        = kv_bytes / bandwidth ÷ wave efficiency              past N (:func:`wave_quantization`):

    136 CTAs on 132 SMs take two waves, the second with 4 CTAs, nearly twice one full wave.

    The convention: a kernel needs a CTA on every SM to pull the full memory bandwidth, and k of N SMs
    pull k/N of it. It rests on each SM's load bandwidth being finite: by Little's law the bytes in
    flight must equal bandwidth × latency, and one SM can keep only so many loads outstanding, so a
    few SMs cannot saturate HBM (the catalog's stream-read measurement on an H100 PCIe reaches 97 %
    of its bandwidth at full occupancy, thread blocks on every SM). It is not a bound either way: one
    SM can pull more than 1/N of the bandwidth, so the true time can be shorter (down to the
    bandwidth bound kv_bytes / bandwidth, where every SM is busy), and a CTA with too few loads in
    flight can be slower still.

    ``part``: a catalog id or Part (a GPU with a compute-unit count). ``kv_bytes``: bytes of KV cache
    read, > 0. ``ctas``: whole numbers >= 1 (:func:`decode_attention_ctas`). Arrays broadcast.
    Returns seconds.
    """
    p, units = _cta_units(part)
    nbytes = _positive("kv_bytes", kv_bytes)
    c = np.asarray(_whole("ctas", ctas, 1), dtype=float)
    waves = np.ceil(c / units)
    return _out(np.divide(nbytes, p.memory_bandwidth_bytes_per_s) * waves * units / c)


# ---- GQA packing -----------------------------------------------------------------------------

def gqa_mma_m_fill(query_heads_per_kv_head, query_tokens=1, mma_m=64, *, packed=True):
    """Fraction of the matrix-multiply (MMA) tiles' M dimension (rows) a decode step's queries fill,
    for one KV head: rows / (ceil(rows / mma_m) × mma_m).

    Packed (GQA head packing): the rows are the group's query heads × the query tokens, since every
    query head of the group multiplies the same K and V; one head at a time (``packed=False``) the
    rows are the query tokens alone, tokens / mma_m for a single tile. At decode (one token) an
    unpacked MMA of 64 rows uses 1/64 of the tensor core; packing 8 query heads uses 8/64.

    Sources: FlashAttention-3 packs GQA (``pack_gqa``; hopper/heuristics.h ``should_pack_gqa`` packs
    when the unpacked tile efficiency seqlen_q / round_up(seqlen_q, kBlockM) is below 0.9 × the packed
    one, and always for variable-length batches); FlashInfer's ``BatchDecodeWithPagedKVCacheWrapper``
    takes ``use_tensor_cores``, which its documentation says "will be faster for large group size in
    grouped query attention". ``mma_m``: rows of one MMA tile, 64 for a Hopper warpgroup MMA (wgmma),
    16 for Ampere's mma.sync m16n8k16.

    Whole numbers >= 1 (arrays broadcast). Returns a fraction in (0, 1].
    """
    g = _whole("query_heads_per_kv_head", query_heads_per_kv_head, 1)
    t, m = _whole("query_tokens", query_tokens, 1), _whole("mma_m", mma_m, 1)
    if not isinstance(packed, (bool, np.bool_)):
        raise RooflineInputError(f"packed must be True or False, got {packed!r}")
    rows = np.multiply(g, t, dtype=np.int64) if packed else np.broadcast_to(t, np.broadcast(g, t).shape)
    padded = -(-rows // m) * m
    return _out(np.divide(rows, padded))


# ---- waves and tiles -------------------------------------------------------------------------

@dataclass(frozen=True)
class WaveQuantization:
    """How ``tiles`` units of work run on ``compute_units`` units, one tile per unit at a time:
    waves = ceil(tiles / units); efficiency = tiles / (waves × units), the busy share of the
    unit-waves the kernel occupies (1 when the tiles fill every wave)."""

    tiles: object  #: work units (CTAs), whole numbers
    compute_units: int
    waves: object  #: ceil(tiles / compute_units)
    efficiency: object  #: tiles / (waves × compute_units), in (0, 1]

    @property
    def idle_fraction(self):
        """1 − efficiency: the share of the occupied unit-waves that sit idle (the last wave's gap)."""
        return _out(1.0 - np.asarray(self.efficiency, dtype=float))

    @property
    def last_wave_tiles(self):
        """Tiles in the last wave (compute_units when it is full)."""
        t = np.asarray(self.tiles)
        return _out(t - (np.asarray(self.waves) - 1) * self.compute_units, integer=True)


def wave_quantization(tiles, compute_units) -> WaveQuantization:
    """Wave quantization of ``tiles`` work units (a GEMM's output tiles, attention CTAs) on
    ``compute_units`` units, one tile per unit at a time: waves = ceil(tiles / units),
    efficiency = tiles / (waves × units).

    132 tiles on an H100 SXM's 132 SMs are one full wave; 133 need two waves and leave 131 SMs idle in
    the second (efficiency 133 / 264). Real kernels may hold more than one tile per SM; this counts
    one.

    ``tiles``: whole numbers >= 1 (an array is fine). ``compute_units``: a whole number >= 1, or a
    catalog id or Part (its SM or CU count). Returns a :class:`WaveQuantization`.
    """
    if isinstance(compute_units, (str, Part)):
        _, units = _cta_units(compute_units)
    else:
        units = whole_number("compute_units", compute_units, 1)
    t = _whole("tiles", tiles, 1)
    waves = -(-np.asarray(t) // units)
    eff = np.divide(t, waves * units)
    return WaveQuantization(tiles=_out(t, integer=True), compute_units=units, waves=_out(waves, integer=True),
                            efficiency=_out(eff))


def gemm_output_tiles(m, n, tile_m=128, tile_n=128):
    """Output tiles of an M × N GEMM cut into ``tile_m`` × ``tile_n`` tiles:
    ceil(m / tile_m) × ceil(n / tile_n), one CTA each in a data-parallel GEMM.

    Whole numbers >= 1 (arrays broadcast). Returns tiles (a count).
    """
    mm, nn = _whole("m", m, 1), _whole("n", n, 1)
    tm, tn = _whole("tile_m", tile_m, 1), _whole("tile_n", tile_n, 1)
    return _out(np.multiply(-(-np.asarray(mm) // tm), -(-np.asarray(nn) // tn), dtype=np.int64), integer=True)


def tile_quantization_efficiency(m, n, tile_m, tile_n):
    """Useful share of the tiles' work when an M × N output is padded up to whole tiles:
    m × n / (ceil(m / tile_m) × tile_m × ceil(n / tile_n) × tile_n).

    A decode GEMM with m = 8 tokens in 128-row tiles does 8/128 of the work its tiles are sized for
    (the rest is padding: the tensor cores run, the rows are discarded). Whole numbers >= 1 (arrays
    broadcast). Returns a fraction in (0, 1].
    """
    mm, nn = _whole("m", m, 1), _whole("n", n, 1)
    tm, tn = _whole("tile_m", tile_m, 1), _whole("tile_n", tile_n, 1)
    padded = (-(-np.asarray(mm) // tm) * tm) * (-(-np.asarray(nn) // tn) * tn).astype(float)
    return _out(np.divide(np.multiply(mm, nn, dtype=float), padded))


def split_k_tiles(m, n, k, splits, tile_m=128, tile_n=128):
    """Work units (CTAs) of a split-K GEMM: gemm_output_tiles(m, n, tile_m, tile_n) × splits.

    Split-K cuts the K (reduction) dimension into ``splits`` slices of ceil(k / splits): each output
    tile becomes ``splits`` CTAs, each accumulating one slice into a partial tile (FP32), and a
    reduction (or atomics) sums the partials, an extra write and read of splits × m × n partial values.
    It fills an under-occupied wave (few output tiles, long K, as in a small-batch GEMM) at the cost
    of that reduction. Stream-K (Osama, Merrill, Cecka, Garland and Kolhe, "Stream-K: Work-centric
    Parallel Decomposition for Dense Matrix-Matrix Multiplication on the GPU", PPoPP 2023) goes
    further: one persistent CTA per SM, and the total multiply-accumulate iterations
    (tiles × ceil(k / tile_k)) divided evenly among them, a CTA's share crossing tile boundaries, the
    tiles shared between CTAs fixed up by a partial-sum exchange: no wave quantization left, a fix-up
    per shared tile instead.

    Whole numbers >= 1, ``splits`` <= ``k`` (every slice holds at least one element of K); arrays
    broadcast. Returns CTAs (a count).
    """
    kk, s = _whole("k", k, 1), _whole("splits", splits, 1)
    if np.any(np.asarray(s) > np.asarray(kk)):
        raise RooflineInputError(f"splits must be at most k (each K slice needs at least one element), got "
                                 f"splits={splits!r} for k={k!r}")
    return _out(np.multiply(gemm_output_tiles(m, n, tile_m, tile_n), s, dtype=np.int64), integer=True)


# ---- all-reduce algorithms -------------------------------------------------------------------

def _allreduce_link(link, chips: int) -> Link:
    """The link an all-reduce over ``chips`` chips uses: ``link`` itself, or for a part (id or Part)
    the in-server link the course's split would take (:func:`~roofline_lessons.core.parallel.choose_link`)."""
    if isinstance(link, Link):
        lk = link
    elif isinstance(link, (str, Part)):
        lk, _ = choose_link(get_part(link), Parallelism(tensor=chips))
    else:
        raise RooflineInputError(f"link must be a catalog Link, or a part id or Part (its in-server link), "
                                 f"got {link!r}")
    if lk.max_chips is not None and chips > lk.max_chips:
        raise RooflineInputError(f"chips={chips} exceeds the {lk.name}'s domain of {lk.max_chips} chips; these "
                                 f"all-reduces run inside one domain (allowed: 2 to {lk.max_chips})")
    return lk


def _ring_and_least(message, chips: int, lk: Link):
    """The course's all-reduce pricing (:func:`roofline_lessons.core.parallel._all_reduce`, one call,
    no latency): the ring's bytes per chip and the least bytes the link allows."""
    part = _all_reduce("all-reduce", 1.0, 1.0, message, chips, chips, lk, None, 0.0, 0.0)[0]
    return part.bytes, part.least_bytes


def allreduce_time_s(message_bytes, chips, link, algorithm="ring", *, step_latency_s=None):
    """An ESTIMATE of one all-reduce of ``message_bytes`` over ``chips`` chips, by ``algorithm``:
    steps × latency + bytes each chip moves ÷ the link's per-direction bandwidth.

    ============  =====================  ============================================
    algorithm     latency steps          bytes per chip
    ============  =====================  ============================================
    ring          2(n − 1)               2(n − 1)/n × S (reduce-scatter + all-gather)
    two_shot      2                      2(n − 1)/n × S
    one_shot      1                      (n − 1) × S, read by each chip
    in_switch     1                      S (NVLink SHARP: the switch reduces)
    ============  =====================  ============================================

    - **Ring**: n − 1 steps of reduce-scatter, then n − 1 of all-gather, each passing 1/n of the
      message to the next chip: the least bytes without in-switch reduction, but 2(n − 1) hops of
      latency.
    - **One-shot** (TensorRT-LLM's custom all-reduce, ``oneShotAllReduceKernel``): every chip reads
      the whole message from each of the n − 1 others over NVLink and sums all n copies itself: one
      step, (n − 1) × S bytes in per chip. Fastest for small messages, where latency dominates.
    - **Two-shot** (``twoShotAllReduceKernel``): a reduce-scatter (each chip sums its 1/n slice, read
      from every peer), a barrier, then an all-gather of the reduced slices: the ring's bytes in two
      steps. TensorRT-LLM picks one-shot below a message size and two-shot above it: its early custom
      all-reduce switched at 393,216 bytes (``DEFAULT_ALGO_AR_SIZE_THRESHOLD``, one-shot at or below);
      today it looks the choice up in a table by GPU generation, TP size, hidden size, tokens and fused
      operation (``selectStrategyLookUpTable`` in cpp/tensorrt_llm/common/customAllReduceUtils.h), and
      falls back to NCCL for the largest messages.
    - **In-switch** (NVLink SHARP, NCCL's NVLS): the chips send their message to the NVSwitch, which
      reduces and multicasts the result: each byte sent once. Refused on a link whose switch does not
      reduce (``Link.in_switch_reduction``).

    Fusing with RMSNorm: TensorRT-LLM's all-reduce can finish the residual add and the RMSNorm that
    follow it (``AllReduceFusionOp::RESIDUAL_RMS_NORM``; its lookup table has a column per fused
    operation): the reduced activations are normalised before they are written, saving the separate
    norm kernel's read and write of tokens × hidden and its launch. This function prices the
    all-reduce alone.

    Conventions (why it is an estimate): ``step_latency_s`` per step (None: the link's catalogued
    ``latency_s``, an *assumed* figure for one whole NCCL call in a server, so charging it per ring
    step overstates the ring's latency; NCCL's LL and LL128 protocols make each hop cheaper); every
    step runs at the per-direction bandwidth; no compute time for the sums. The course's own
    estimate (:mod:`roofline_lessons.core.parallel`) charges one latency per call whatever the
    algorithm; this function shows how the algorithms differ.

    ``message_bytes``: > 0 (an array is fine). ``chips``: a whole number, 2 up to the link's domain.
    ``link``: a catalog :class:`~roofline_lessons.core.hardware.Link`, or a part id or Part (its
    in-server link). Returns seconds.
    """
    if algorithm not in ALLREDUCE_ALGORITHMS:
        raise RooflineInputError(f"unknown all-reduce algorithm {algorithm!r}; algorithms are: "
                                 f"{', '.join(ALLREDUCE_ALGORITHMS)}")
    n = whole_number("chips", chips, 2)
    lk = _allreduce_link(link, n)
    S = _positive("message_bytes", message_bytes)
    lat = lk.latency_s if step_latency_s is None else _positive("step_latency_s", step_latency_s, allow_zero=True)
    if np.ndim(lat):
        raise RooflineInputError(f"step_latency_s must be one number of seconds >= 0, got {step_latency_s!r}")
    ring_bytes, _ = _ring_and_least(S, n, lk)
    if algorithm == "ring":
        steps, nbytes = 2.0 * (n - 1), ring_bytes
    elif algorithm == "two_shot":
        steps, nbytes = 2.0, ring_bytes
    elif algorithm == "one_shot":
        steps, nbytes = 1.0, (n - 1) * np.asarray(S, dtype=float)
    else:
        if not lk.in_switch_reduction:
            have = [pid for pid in list_parts()
                    if get_part(pid).scale_up_link is not None and get_part(pid).scale_up_link.in_switch_reduction]
            raise RooflineInputError(f"the {lk.name} does not reduce in the switch (in_switch_reduction is false), so "
                                     f"algorithm 'in_switch' is not available on it (allowed there: ring, one_shot, "
                                     f"two_shot); parts whose in-server link reduces in the switch: {', '.join(have)}")
        steps, nbytes = 1.0, np.asarray(S, dtype=float)
    return _out(_collective(lk, f"all-reduce ({algorithm})", steps, nbytes, float(lat)).time_s)


def allreduce_lower_bound_s(message_bytes, chips, link):
    """A LOWER BOUND on one all-reduce of ``message_bytes`` over ``chips`` chips: the least bytes any
    algorithm the link supports must move per chip, at its per-direction bandwidth, no latency.

    The least bytes are the course's (:mod:`roofline_lessons.core.parallel`): S where the switch
    reduces in the switch (``Link.in_switch_reduction``), else the ring's 2(n − 1)/n × S (a chip must
    send all but its own share of the message out and receive the reduced rest). Same arguments as
    :func:`allreduce_time_s`. Returns seconds.
    """
    n = whole_number("chips", chips, 2)
    lk = _allreduce_link(link, n)
    S = _positive("message_bytes", message_bytes)
    _, least = _ring_and_least(S, n, lk)
    return _out(np.divide(least, lk.per_direction_bytes_per_s))


# ---- logits ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class LogitsCost:
    """The lm_head and the logits of one decode step of ``batch`` sequences (one new token each)."""

    model_id: str
    batch: object
    hidden_size: int
    vocab_size: int
    lm_head_flops: object  #: 2 × hidden × vocab × batch, FLOPs
    lm_head_weight_bytes: float  #: hidden × vocab × dtype_bytes, read once per step (tied embeddings too)
    logits_write_bytes: object  #: batch × vocab × logits_dtype_bytes written by the lm_head
    sampling_passes: int  #: passes of the sampler over the logits, each reading them whole
    logits_read_bytes: object  #: sampling_passes × batch × vocab × logits_dtype_bytes

    @property
    def total_bytes(self):
        """Weights read + logits written + logits read back by sampling, bytes."""
        return _out(self.lm_head_weight_bytes + np.asarray(self.logits_write_bytes, dtype=float)
                    + np.asarray(self.logits_read_bytes, dtype=float))

    @property
    def intensity_flop_per_byte(self):
        """lm_head FLOPs per byte of :attr:`total_bytes`."""
        return _out(np.divide(np.asarray(self.lm_head_flops, dtype=float), np.asarray(self.total_bytes, dtype=float)))


def logits_cost(model, batch, *, dtype_bytes=2, logits_dtype_bytes=4,
                sampling_passes=DEFAULT_SAMPLING_PASSES) -> LogitsCost:
    """What the lm_head and the logits cost in one decode step of ``batch`` sequences.

    lm_head FLOPs 2 × hidden × vocab × batch; its weights (hidden × vocab × ``dtype_bytes``, the
    embedding table itself where the model ties them) read once; the logits (batch × vocab ×
    ``logits_dtype_bytes``; FP32 by default, as samplers take them) written, and read back
    ``sampling_passes`` times by the sampler. The default, :data:`DEFAULT_SAMPLING_PASSES` = 3, is
    an assumption: one pass for the maximum, one for the softmax's sum of exponentials, one for the
    top-k / top-p selection and the draw (greedy decoding: 1, an argmax; an unfused sampler more).

    ``model``: a catalog id or Model (``hidden_size``, ``vocab_size``). ``batch``: whole numbers >= 1
    (an array is fine). Byte sizes: whole numbers >= 1; ``sampling_passes`` >= 0.
    """
    m = get_model(model)
    b = _whole("batch", batch, 1)
    wb, lb = whole_number("dtype_bytes", dtype_bytes, 1), whole_number("logits_dtype_bytes", logits_dtype_bytes, 1)
    passes = whole_number("sampling_passes", sampling_passes, 0)
    h, v = int(m.hidden_size), int(m.vocab_size)
    bf = np.asarray(b, dtype=float)
    logits = bf * v * lb
    return LogitsCost(model_id=m.id, batch=_out(b, integer=True), hidden_size=h, vocab_size=v,
                      lm_head_flops=_out(2.0 * h * v * bf), lm_head_weight_bytes=float(h * v * wb),
                      logits_write_bytes=_out(logits), sampling_passes=passes,
                      logits_read_bytes=_out(passes * logits))


@dataclass(frozen=True)
class LogitsShare:
    """The lm_head's and the sampler's share of one decode step, by the per-operator estimate."""

    model_id: str
    part_id: str
    lm_head_time_estimate_s: object  #: the lm_head as a kernel of its own (place()'s "lm_head" row)
    sampling_time_estimate_s: object  #: the sampler's logits reads at the memory bandwidth
    step_time_estimate_s: object  #: every operator as a kernel of its own, plus the sampling
    share_estimate: object  #: (lm_head + sampling) / step, a fraction
    lm_head_share_of_compulsory_bytes: object  #: the lm_head's compulsory bytes / the step's (a ratio of counts)


def logits_share_of_decode_step(model, part, batch, context_tokens, *, sampling_passes=DEFAULT_SAMPLING_PASSES,
                                logits_dtype_bytes=None) -> LogitsShare:
    """How much of one decode step (``batch`` sequences holding ``context_tokens`` tokens, one chip,
    BF16) the lm_head and the sampling passes take: an ESTIMATE.

    Built on :func:`~roofline_lessons.core.placement.place`: the lm_head's time is its row of
    ``Placement.op_rows()`` ("lm_head": max(compute, bytes ÷ bandwidth), a kernel of its own, logits
    written at the workload's activation format), the step's is
    ``Placement.time_estimate_per_op_sum_s`` (every operator a kernel of its own, one after another),
    and the sampler adds ``sampling_passes`` reads of the logits at the memory bandwidth
    (``logits_dtype_bytes`` each; None: the activation format's bytes, what the lm_head wrote).
    Conventions: unfused kernels, each at the larger of its compute and memory times; no launch gaps.
    ``lm_head_share_of_compulsory_bytes`` is no estimate: the lm_head's compulsory bytes (its weights,
    the logits out) over the step's.

    ``model``, ``part``: catalog ids or objects. ``batch``, ``context_tokens``: whole numbers (>= 1,
    >= 0; arrays broadcast).
    """
    b = _whole("batch", batch, 1)
    n = _whole("context_tokens", context_tokens, 0)
    passes = whole_number("sampling_passes", sampling_passes, 0)
    pl = place(model, part, phase="decode", batch=b, context_tokens=n)
    rows = [r for r in pl.op_rows() if r["name"] == "lm_head"]
    if not rows:
        raise RooflineInputError(f"{pl.model.id}'s step has no 'lm_head' operator to price")
    head_s = np.asarray(rows[0]["time_estimate_s"], dtype=float)
    if logits_dtype_bytes is None:
        lb = float(bytes_per_element(pl.workload.activations_dtype))
    else:
        lb = float(whole_number("logits_dtype_bytes", logits_dtype_bytes, 1))
    sample_s = passes * np.asarray(b, dtype=float) * pl.model.vocab_size * lb / pl.bandwidth_bytes_per_s
    step_s = np.asarray(pl.time_estimate_per_op_sum_s, dtype=float) + sample_s
    head = [op for op in pl.cost.ops if op.name == "lm_head"][0].scaled_to_all_layers()
    return LogitsShare(model_id=pl.model.id, part_id=pl.part.id, lm_head_time_estimate_s=_out(head_s),
                       sampling_time_estimate_s=_out(sample_s), step_time_estimate_s=_out(step_s),
                       share_estimate=_out((head_s + sample_s) / step_s),
                       lm_head_share_of_compulsory_bytes=_out(np.divide(head.compulsory_bytes,
                                                                         pl.cost.compulsory_bytes)))


__all__ = [
    "ALLREDUCE_ALGORITHMS", "CTA_UNITS", "DEFAULT_SAMPLING_PASSES", "LogitsCost", "LogitsShare", "WaveQuantization",
    "allreduce_lower_bound_s", "allreduce_time_s", "decode_attention_ctas", "decode_attention_time_with_sm_limit_s",
    "flash_decoding_splits", "gemm_output_tiles", "gqa_mma_m_fill", "logits_cost", "logits_share_of_decode_step",
    "sm_fill", "split_k_tiles", "split_kv_combine_bytes", "tile_quantization_efficiency", "wave_quantization",
]
