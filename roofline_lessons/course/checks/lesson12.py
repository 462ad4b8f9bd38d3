"""Checkers for the lesson-12 exercises (shrinking the bytes: MLA, 4-bit weights, sliding windows,
paged KV). Every expected value is computed from :mod:`roofline_lessons.core` and
:mod:`roofline_lessons.topics.shrinking` when the checker runs, so a catalog update never leaves an
answer stale."""

from __future__ import annotations

import math
from functools import partial
import re
from dataclasses import replace

from ...core.dtypes import bytes_per_element, weight_bytes_per_element
from ...core.memory import weight_bytes
from ...core.models import get_model
from ...core.units import GiB
from ...topics.shrinking import (
    critical_batches,
    format_speedup,
    paged_capacity,
    stored_weights,
)
from ..checkers import CheckResult, Mistake, check_number, distinct_mistakes

_REL_TOL = 0.02  #: 12.4's tolerance (relative)
_TIGHT_REL_TOL = 0.005  #: 12.2: the scales and the BF16 layers are a few per cent
_SPEEDUP_REL_TOL = 0.01  #: 12.3: accepts 3.6 for 3.62, still rejects the named ratios (3.72, 3.88, 4)
_FRACTION_REL_TOL = 0.002  #: 12.5: a ratio of two whole-number counts, so only rounding is forgiven
_EXACT_ABS_TOL = 0.5  #: 12.1 (an exact count of bytes) and 12.6 (an exact batch): whole numbers, no slack

MLA_MODEL = "deepseek-v3"  #: 12.1
INT4_MODEL = "llama-3.1-70b"  #: 12.2
MODEL, PART, CONTEXT = "llama-3.1-70b", "b200", 4096  #: 12.3
WINDOW_MODEL, WINDOW_TOKENS = "gemma-3-27b", 32768  #: 12.4
PAGED_MODEL, PAGED_PART, PAGED_TOKENS, PAGE_TOKENS, PAGED_UTILIZATION = "gemma-3-27b", "h200", 32768, 16, 0.9  #: 12.5
SHORT_CONTEXT = 128  #: 12.6: a short context, where decode can turn compute-bound


#: the named mistakes that differ from the right answer (a mistake giving it is never named)
_distinct = partial(distinct_mistakes, rel_tol=_REL_TOL, abs_tol=1e-12)


def _check(exercise: str, answer, expected: float, *, rel_tol: float = 0.0, abs_tol: float = 0.0, **kw) -> CheckResult:
    """:func:`check_number`, with the tolerance in a 'too high/too low' message written the way this
    lesson needs it: a relative one to one decimal ("±0.5 %"), an exact whole number as "exact"."""
    result = check_number(exercise, answer, expected, rel_tol=rel_tol, abs_tol=abs_tol, **kw)
    if abs_tol:
        allowed = "exact" if kw.get("whole") or abs_tol <= 0.5 else f"±{abs_tol:g}"
    else:
        allowed = f"±{100 * rel_tol:.1f} %"
    message = re.sub(r"\(allowed ±[^)]*\)", f"(allowed {allowed})", result.message)
    return result if message == result.message else replace(result, message=message)


# ---- 12.1 MLA: KV bytes per token ---------------------------------------------------------------


def _mla_bytes() -> float:
    return get_model(MLA_MODEL).kv_bytes_per_token("bf16")


def _mla_mistakes() -> tuple[Mistake, ...]:
    m = get_model(MLA_MODEL)
    layers, b = m.num_mla_layers, bytes_per_element("bf16")
    return _distinct(_mla_bytes(), (
        Mistake(f"cache per-head K and V as ordinary attention does (2 × {m.num_attention_heads} heads × "
                f"{m.head_dim} head_dim per layer): MLA caches ONE latent of kv_lora_rank + qk_rope_head_dim "
                "elements per token and layer, shared by every head",
                layers * 2 * m.num_attention_heads * m.head_dim * b),
        Mistake(f"count the DeepSeek-V2 paper's multi-head-attention baseline (2 × {m.num_attention_heads} heads × "
                f"d_h per layer, d_h = {m.v_head_dim}): that is what ordinary attention of that size would cache, "
                "the comparison MLA is measured against, not MLA's cache",
                layers * 2 * m.num_attention_heads * m.v_head_dim * b),
        Mistake("cache the expanded per-head keys and values (heads × (qk_nope + qk_rope + v_head_dim)): that is "
                "what kv_b_proj makes from the latent, not what is cached",
                layers * m.num_attention_heads * (m.qk_nope_head_dim + m.qk_rope_head_dim + m.v_head_dim) * b),
        Mistake("leave out the shared rope key (qk_rope_head_dim): the cache holds the latent AND the rope part",
                layers * m.kv_lora_rank * b),
        Mistake("count one layer only (every one of the layers caches its own latent)",
                m.kv_bytes_per_token_per_layer("bf16")),
        Mistake("count elements, not bytes (BF16 is 2 bytes each)", layers * m.mla_cache_elements_per_token),
        Mistake("multiply by 2 for K and V: the latent is one tensor, both K and V are made from it",
                2 * _mla_bytes()),
        Mistake(f"count the multi-token-prediction layer too ({m.mtp_layers} more): it ships beside the model and "
                "caches only when used for speculative decoding",
                (layers + m.mtp_layers) * m.kv_bytes_per_token_per_layer("bf16")),
        Mistake(f"count only the {m.num_moe_layers} MoE layers: the first dense layers have MLA attention too",
                m.num_moe_layers * m.kv_bytes_per_token_per_layer("bf16")),
    ), rel_tol=0.0, abs_tol=_EXACT_ABS_TOL / 2)


def mla_kv_bytes_per_token(answer) -> CheckResult:
    """12.1 — bytes one token adds to DeepSeek-V3's KV cache over all its layers, BF16."""
    return _check("12.1", answer, _mla_bytes(), abs_tol=_EXACT_ABS_TOL, unit="bytes", mistakes=_mla_mistakes(),
                        hint="num_hidden_layers × (kv_lora_rank + qk_rope_head_dim) × 2 bytes.")


# ---- 12.2 int4 stored weights -------------------------------------------------------------------


def _int4_gib() -> float:
    return stored_weights(INT4_MODEL, "int4").bytes / GiB


def _int4_mistakes() -> tuple[Mistake, ...]:
    m = get_model(INT4_MODEL)
    right = stored_weights(INT4_MODEL, "int4").bytes
    total = m.parameter_count()
    bf16_kept = 2 * m.vocab_size * m.hidden_size + (2 * m.num_hidden_layers + 1) * m.hidden_size
    linear = total - bf16_kept
    return _distinct(_int4_gib(), (
        Mistake("forget the scales: exactly 0.5 byte per int4 weight (one bf16 scale per 128 weights adds 2/128 "
                "byte per weight)", (linear * 0.5 + bf16_kept * 2) / GiB),
        Mistake("quantise the embedding, the lm_head and the norms too (the recipe keeps them BF16)",
                total * weight_bytes_per_element("int4", 128) / GiB),
        Mistake("forget the scales and quantise the embedding and lm_head too (parameters × 0.5 byte)",
                total * 0.5 / GiB),
        Mistake("give GB (10^9 bytes) where GiB (2^30 bytes) were asked", right / 1e9),
        Mistake("count one scale per weight group as 1 byte (an 8-bit scale, as MXFP4 has) instead of a bf16 scale",
                (linear * (0.5 + 1 / 128) + bf16_kept * 2) / GiB),
    ), rel_tol=_TIGHT_REL_TOL)


def int4_weights_gib(answer) -> CheckResult:
    """12.2 — GiB of Llama-3.1-70B's weights stored in int4 (group 128, one bf16 scale per group;
    embedding, lm_head and norms BF16)."""
    return _check("12.2", answer, _int4_gib(), rel_tol=_TIGHT_REL_TOL, unit="GiB", mistakes=_int4_mistakes(),
                        hint="(parameters − 2 × vocab × hidden − norms) × (0.5 + 2/128) + (2 × vocab × hidden + "
                             "norms) × 2 bytes, ÷ 2^30; norms = (2 × layers + 1) × hidden.")


# ---- 12.3 the batch-1 speed-up of 4-bit weights (estimate ÷ estimate) ------------------------------


def _speedup():
    return format_speedup(MODEL, PART, CONTEXT)


def _speedup_value() -> float:
    return _speedup().speedup_estimate


def _speedup_mistakes() -> tuple[Mistake, ...]:
    s = _speedup()
    return _distinct(s.speedup_estimate, (
        Mistake("assume a 4× speed-up from 4-bit weights (16 bits ÷ 4), ignoring the scales, the layers kept in "
                "BF16, the KV cache and the activations", 4.0),
        Mistake("divide the bytes per weight only (2 ÷ (0.5 + 2/128)), ignoring the BF16 embedding and lm_head, "
                "the KV cache and the activations", s.element_ratio),
        Mistake("divide the weight bytes only, ignoring the KV cache and the activations, which int4 weights do "
                "not shrink", s.weight_bytes_ratio),
        Mistake("give the time saved as a fraction (1 − int4 ÷ BF16) instead of the speed-up (BF16 ÷ int4)",
                1 - 1 / s.speedup_estimate),
        Mistake("divide the other way (int4 ÷ BF16)", 1 / s.speedup_estimate),
    ), rel_tol=_SPEEDUP_REL_TOL)


def int4_batch1_speedup(answer) -> CheckResult:
    """12.3 — BF16 decode estimate ÷ int4 decode estimate (weight-only, group 128; ``time_estimate_s``),
    Llama-3.1-70B, batch 1, 4,096 tokens cached, B200: both from place()."""
    return _check("12.3", answer, _speedup_value(), rel_tol=_SPEEDUP_REL_TOL, unit="×",
                        mistakes=_speedup_mistakes(),
                        hint="place(..., weights_dtype='int4').time_estimate_s against the BF16 step's.")


# ---- 12.4 sliding windows: Gemma-3-27B's KV cache -------------------------------------------------


def _window_gib() -> float:
    return float(get_model(WINDOW_MODEL).kv_cache_bytes_per_sequence(WINDOW_TOKENS, "bf16")) / GiB


def _window_mistakes() -> tuple[Mistake, ...]:
    m = get_model(WINDOW_MODEL)
    per_layer = m.kv_bytes_per_token_per_layer("bf16")
    layers = m.num_full_attention_layers + m.num_sliding_attention_layers
    w = min(WINDOW_TOKENS, m.sliding_window)
    return _distinct(_window_gib(), (
        Mistake(f"window the global layers too (every {m.sliding_window_pattern}th layer is global: it keeps "
                "every token)", layers * per_layer * w / GiB),
        Mistake("not cap the local layers at their window (only the global layers keep every token)",
                layers * per_layer * WINDOW_TOKENS / GiB),
        Mistake("give GB (10^9 bytes) where GiB (2^30 bytes) were asked",
                float(m.kv_cache_bytes_per_sequence(WINDOW_TOKENS, "bf16")) / 1e9),
        Mistake("leave out the local layers altogether (they still hold their window)",
                m.num_full_attention_layers * per_layer * WINDOW_TOKENS / GiB),
        Mistake("swap the counts: 1 local layer in 6, not 1 global one",
                (m.num_sliding_attention_layers * WINDOW_TOKENS + m.num_full_attention_layers * w) * per_layer / GiB),
    ))


def gemma_kv_gib(answer) -> CheckResult:
    """12.4 — GiB of KV cache one Gemma-3-27B sequence of 32,768 tokens holds, BF16, windows applied."""
    return _check("12.4", answer, _window_gib(), rel_tol=_REL_TOL, unit="GiB", mistakes=_window_mistakes(),
                        hint="global layers × 32,768 + local layers × min(32,768, window), each × "
                             "kv_bytes_per_token_per_layer('bf16'), ÷ 2^30.")


# ---- 12.5 paged KV: the uniform allocator's loss ---------------------------------------------------


def _paged():
    return paged_capacity(PAGED_MODEL, PAGED_PART, PAGED_TOKENS, PAGE_TOKENS, memory_utilization=PAGED_UTILIZATION)


def _paged_loss() -> float:
    return _paged().uniform_loss


def _paged_mistakes() -> tuple[Mistake, ...]:
    p = _paged()
    m = p.model
    page_bytes = PAGE_TOKENS * m.kv_bytes_per_token_per_layer("bf16")
    all_windowed = (m.num_full_attention_layers + m.num_sliding_attention_layers) * p.window_pages * page_bytes
    all_windowed_n = math.floor(p.pool_bytes / all_windowed)
    si_pool = PAGED_UTILIZATION * p.part.memory_capacity_bytes / GiB * 1e9 - weight_bytes(m, "bf16")
    si_uniform = math.floor(si_pool / p.uniform_bytes_per_sequence)
    si_kind = math.floor(si_pool / p.per_kind_bytes_per_sequence)
    full_pool = p.part.memory_capacity_bytes - weight_bytes(m, "bf16")
    full_uniform = math.floor(full_pool / p.uniform_bytes_per_sequence)
    full_kind = math.floor(full_pool / p.per_kind_bytes_per_sequence)
    return _distinct(p.uniform_loss, (
        Mistake(f"use all the memory: the pool is {PAGED_UTILIZATION:g} × capacity − weights (vLLM's long-standing default "
                "gpu_memory_utilization)", 1 - full_uniform / full_kind if full_kind else 0.0),
        Mistake("compute the uniform allocator's capacity per layer kind (a uniform allocator gives EVERY layer "
                "full-context pages: nothing is lost only if you priced it as the per-kind one)", 0.0),
        Mistake("compare bytes per sequence instead of whole sequences (a fraction of a sequence does not run)",
                1 - p.per_kind_bytes_per_sequence / p.uniform_bytes_per_sequence),
        Mistake("give a percentage where a fraction was asked", 100 * p.uniform_loss),
        Mistake("window the global layers too in the per-kind allocator (they keep every token)",
                1 - p.uniform_sequences / all_windowed_n if all_windowed_n else 0.0),
        Mistake("read the H200's 141 GB as 10^9 bytes (memory capacity is binary: GiB)",
                1 - si_uniform / si_kind if si_kind else 0.0),
    ), rel_tol=_FRACTION_REL_TOL)


def paged_uniform_loss(answer) -> CheckResult:
    """12.5 — the fraction (0 to 1) of the per-kind allocator's sequences that a uniform page allocator
    loses: Gemma-3-27B, BF16, on an H200 at 90 % memory utilisation, 32,768 tokens per sequence, 16-token
    pages."""
    return _check("12.5", answer, _paged_loss(), rel_tol=_FRACTION_REL_TOL, mistakes=_paged_mistakes(),
                        hint="pool = 0.9 × capacity − weights; uniform: every layer ceil(32,768/16) pages; per kind: "
                             "local layers ceil(window/16) pages; sequences = floor(pool ÷ bytes per sequence); "
                             "loss = 1 − uniform ÷ per kind.")


# ---- 12.6 the critical batch of weight-only int4 ---------------------------------------------------


def _sweeps():
    return {s.label: s for s in critical_batches(MODEL, PART, SHORT_CONTEXT)}


def _crit_int4() -> float:
    return float(_sweeps()["int4 weight-only (W4A16)"].critical_batch_estimate)


def _crit_mistakes() -> tuple[Mistake, ...]:
    s = _sweeps()
    q = s["int4 weight-only (W4A16)"]
    no_dequant = [int(b) for b, c, d, mem in zip(q.batch, q.compute_time_s, q.dequant_time_s, q.memory_time_s)
                  if c - d >= mem]
    out = [
        Mistake("think weight-only int4 raises the compute roof: its matmuls still run at the BF16 rate "
                "(dequantised on the fly); only W4A4 (fp4 matmuls) raises it",
                float(s["fp4 W4A4 (MXFP4 weights and matmuls)"].critical_batch_estimate)),
        Mistake("keep BF16's critical batch: the weights' bytes fell about 4×, the compute roof did not move",
                float(s["BF16"].critical_batch_estimate)),
    ]
    if q.critical_batch_lower_bound is not None:
        out.append(Mistake("read the lower bound's roof (lower_bound_roof: compulsory bytes, the dequantisation "
                           "overlapped) where the estimate's (.bound: dequantisation in series) was asked",
                           float(q.critical_batch_lower_bound)))
    if q.weight_lens_critical_batch_lower_bound is not None:
        out.append(Mistake("use the weight lens by the lower bound (weight bytes only, the dequantisation "
                           "overlapped): that is BF16's weight-lens batch ÷ the weight-byte ratio, not the "
                           "estimate's first compute-bound batch over all the traffic",
                           float(q.weight_lens_critical_batch_lower_bound)))
    if q.weight_lens_critical_batch_estimate is not None:
        out.append(Mistake("use the weight lens (weight bytes only): the step's bound is decided by all its "
                           "traffic, the KV cache and activations included",
                           float(q.weight_lens_critical_batch_estimate)))
    crit = int(_crit_int4())
    out.append(Mistake("give the last memory-bound batch (the critical batch is the FIRST compute-bound one)",
                       float(crit - 1)))
    if no_dequant:
        out.append(Mistake("leave out the dequantisation (2 FLOPs per weight on the vector units, added to the "
                           "compute time)", float(no_dequant[0])))
    # exact answer: a mistake one batch away is still a different answer (keep it: half the slack, doubled, < 1)
    return _distinct(_crit_int4(), out, rel_tol=0.0, abs_tol=_EXACT_ABS_TOL / 2)


def int4_critical_batch(answer) -> CheckResult:
    """12.6 — the smallest batch at which a weight-only int4 decode step's estimate of Llama-3.1-70B
    (128 tokens cached, B200) is compute-bound (place() swept over batch; ``.bound``, the estimate's
    roof: the dequantisation in series)."""
    return _check("12.6", answer, _crit_int4(), abs_tol=_EXACT_ABS_TOL, whole=True, unit="sequences",
                        mistakes=_crit_mistakes(),
                        hint="place(..., batch=np.arange(1, 4097), context_tokens=128, weights_dtype='int4').bound: "
                             "the first 'compute'.")


EXERCISES = {
    "12.1": mla_kv_bytes_per_token,
    "12.2": int4_weights_gib,
    "12.3": int4_batch1_speedup,
    "12.4": gemma_kv_gib,
    "12.5": paged_uniform_loss,
    "12.6": int4_critical_batch,
}

#: classic wrong answers per numeric exercise (the tests prove each is rejected by name)
MISTAKES = {
    "12.1": _mla_mistakes,
    "12.2": _int4_mistakes,
    "12.3": _speedup_mistakes,
    "12.4": _window_mistakes,
    "12.5": _paged_mistakes,
    "12.6": _crit_mistakes,
}

#: exercises without a numeric classic mistake, and why
NO_NUMERIC_MISTAKES: dict[str, str] = {}
