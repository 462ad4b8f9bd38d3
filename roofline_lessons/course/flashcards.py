"""The interview deck: cards as data (``data/flashcards.toml``), numeric answers computed by the
package at run time (so no answer goes stale when a catalog changes), and answer checking."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from typing import Any, Callable

from ..core._catalog import load_catalog
from ..core.errors import RooflineInputError
from ..core.units import num
from .checkers import as_number, is_unanswered


@dataclass(frozen=True)
class FollowUp:
    question: str
    answer: str


@dataclass(frozen=True)
class Numeric:
    fn: str
    args: tuple[tuple[str, Any], ...]
    unit: str
    tolerance: float  #: relative

    def value(self) -> float:
        return float(NUMERIC_FUNCTIONS[self.fn](**dict(self.args)))


@dataclass(frozen=True)
class Card:
    id: str
    lesson: int
    tags: tuple[str, ...]
    question: str
    short: str
    detailed: str
    red_flags: tuple[str, ...] = ()
    follow_ups: tuple[FollowUp, ...] = ()
    numeric: Numeric | None = None
    values: tuple[tuple[str, Numeric], ...] = ()  #: other computed figures the text quotes as {name}

    def answer_value(self) -> float | None:
        """The numeric answer, computed now from the package (None for a non-numeric card)."""
        return None if self.numeric is None else self.numeric.value()

    def fill(self, text: str) -> str:
        """``text`` with ``{value}`` and every ``{name}`` of ``values`` computed now by the package."""
        if self.numeric is None and not self.values:
            return text
        figures = {name: n.value() for name, n in self.values}
        if self.numeric is not None:
            figures["value"] = self.answer_value()
        return text.format(**figures)

    def short_answer(self) -> str:
        """The 30-second answer, its figures computed now by the package."""
        return self.fill(self.short)

    def detailed_answer(self) -> str:
        return self.fill(self.detailed)

    def follow_up_answer(self, index: int) -> str:
        return self.fill(self.follow_ups[index].answer)


# ---- numeric answers: each a package computation, named in the deck ------------------------

def _ridge(part, dtype):
    from ..core.hardware import get_part

    return get_part(part).ridge_point_flop_per_byte(dtype)


def _weights_gb(model, dtype):
    from ..core.memory import weight_bytes

    return weight_bytes(model, dtype) / 1e9


#: which time a card quotes: the lower bound (compulsory traffic) or the estimate (named conventions)
FIGURES = {"bound": ("time_lower_bound_s", "tokens_per_s_upper_bound"),
           "estimate": ("time_estimate_s", "tokens_per_s_estimate")}


def _figure(figure: str) -> tuple[str, str]:
    if figure not in FIGURES:
        raise ValueError(f"figure must be one of {', '.join(FIGURES)}, got {figure!r}")
    return FIGURES[figure]


def _time_ms(model, part, phase, tokens, batch=1, figure="bound"):
    """One step's time in ms: ``figure="bound"`` the lower bound, ``"estimate"`` the estimate."""
    from ..core.placement import place

    fields = {"prompt_tokens": tokens} if phase == "prefill" else {"context_tokens": tokens}
    return float(getattr(place(model, part, phase=phase, batch=batch, **fields), _figure(figure)[0])) * 1e3


def _tokens_per_s(model, part, context, batch=1, figure="bound"):
    """Decode tokens/s: ``figure="bound"`` the upper bound, ``"estimate"`` the estimate."""
    from ..core.placement import place

    return float(getattr(place(model, part, phase="decode", context_tokens=context, batch=batch), _figure(figure)[1]))


def _step_gb(model, context, traffic="compulsory"):
    """GB one batch-1 decode step moves: ``"compulsory"`` (what the lower bound counts) or ``"unfused"``
    (every operator's activations through HBM too: what the estimate counts)."""
    from ..core.costs import model_cost

    if traffic not in ("compulsory", "unfused"):
        raise ValueError(f"traffic must be 'compulsory' or 'unfused', got {traffic!r}")
    c = model_cost(model, phase="decode", context_tokens=context)
    return float(c.compulsory_bytes if traffic == "compulsory" else c.bytes) / 1e9


def _measured_percent(part, quantity, dtype):
    from ..core.hardware import get_part
    from ..topics.datasheets import best_measurement

    p = get_part(part)
    peak = p.peak_flops_per_s(dtype) if quantity == "matmul_flops_per_s" else p.memory_bandwidth_bytes_per_s
    return 100 * best_measurement(p, quantity, dtype if quantity == "matmul_flops_per_s" else None).value / peak


def _measured_ridge(part, dtype):
    from ..core.hardware import get_part
    from ..topics.datasheets import best_measurement

    p = get_part(part)
    return best_measurement(p, "matmul_flops_per_s", dtype).value / p.memory_bandwidth_bytes_per_s


def _gpt_fast_percent():
    from ..topics.published import gpt_fast_7b_bound, gpt_fast_7b_measurement

    # gpt-fast's single-chip Llama-2-7B figure (the catalog also holds its 8-chip 70B one, lesson 11),
    # against its bound at lesson 3's assumed context (the middle of the run's contexts)
    return 100 * gpt_fast_7b_measurement().tokens_per_s / float(gpt_fast_7b_bound().tokens_per_s_upper_bound)


def _measured_value(part, quantity, scale=1.0):
    """A catalog measurement's value (the highest of ``quantity`` for ``part``), times ``scale``."""
    from ..topics.datasheets import best_measurement

    return float(scale) * best_measurement(part, quantity).value


def _moe_bytes_ratio(model, small, large):
    from ..topics.batching import moe_weight_bytes_per_token

    per_token = moe_weight_bytes_per_token(model, [small, large])
    return float(per_token[0] / per_token[1])


def _critical_batch(model, part, context, lens):
    from ..topics.batching import critical_batch

    return critical_batch(model, part, context, lens=lens)


def _experts(model, batch):
    from ..topics.batching import experts_touched

    return float(experts_touched(model, batch))


def _max_batch(model, part, context, memory_utilization=1.0):
    from ..core.memory import max_batch_that_fits

    return max_batch_that_fits(model, part, context, memory_utilization=memory_utilization)


def _kv_kib(model, dtype):
    from ..core.models import get_model

    return get_model(model).kv_bytes_per_token(dtype) / 1024


def _state_mib(model):
    from ..core.models import get_model

    return get_model(model).deltanet_state_bytes() / 2**20


def _kv_crossing(model, batch):
    from ..topics.hybrid import kv_overtakes_weights_context

    return kv_overtakes_weights_context(model, batch)


def _decode_attention(group, context):
    from ..topics.flash import decode_attention_intensity

    return float(decode_attention_intensity(group, context))


def _lever(model, part, phase, lever):
    from ..topics.levers import lever_speedups

    return next(r.speedup_lower_bound for r in lever_speedups(model, part, phase) if r.lever == lever)


def _params_b(model):
    from ..core.models import get_model

    return get_model(model).parameter_count() / 1e9


def _peak_tflops(part, dtype, sparse=False):
    from ..core.hardware import get_part

    p = get_part(part)
    return (p.sparse_flops_per_s[dtype] if sparse else p.peak_flops_per_s(dtype)) / 1e12


def _bandwidth_tbs(part):
    from ..core.hardware import get_part

    return get_part(part).memory_bandwidth_bytes_per_s / 1e12


def _capacity_gib(part, memory_utilization=1.0):
    from ..core.memory import usable_capacity_bytes

    return usable_capacity_bytes(part, memory_utilization) / 2**30


def _weights_gib(model, dtype):
    from ..core.memory import weight_bytes

    return weight_bytes(model, dtype) / 2**30


def _free_gib(model, part, dtype, memory_utilization=1.0):
    from ..core.memory import free_bytes_after_weights

    return free_bytes_after_weights(model, part, dtype, memory_utilization) / 2**30


def _kv_gib(model, context, dtype="bf16"):
    from ..core.memory import kv_cache_bytes_per_sequence

    return float(kv_cache_bytes_per_sequence(model, context, dtype)) / 2**30


def _state_gib(model):
    from ..core.memory import state_bytes_per_sequence

    return state_bytes_per_sequence(model) / 2**30


def _percent_of_peak(part, dtype, intensity):
    from ..core.hardware import get_part

    p = get_part(part)
    return 100 * min(p.peak_flops_per_s(dtype), intensity * p.memory_bandwidth_bytes_per_s) / p.peak_flops_per_s(dtype)


def _intensity(model, part, phase, tokens, batch=1, lens="all traffic"):
    from ..core.placement import place

    fields = {"prompt_tokens": tokens} if phase == "prefill" else {"context_tokens": tokens}
    p = place(model, part, phase=phase, batch=batch, **fields)
    return float(p.intensity if lens == "all traffic" else p.intensity_per_weight_byte)


def _step_tflop(model, phase, tokens):
    from ..core.costs import model_cost

    fields = {"prompt_tokens": tokens} if phase == "prefill" else {"context_tokens": tokens}
    return float(model_cost(model, phase=phase, **fields).flops) / 1e12


def _weight_lens_over_ridge(model, part, tokens):
    return _intensity(model, part, "prefill", tokens, lens="weights only") / _ridge(part, "bf16")


def _kv_share_of_capacity(model, part, context):
    from ..core.hardware import get_part

    return 100 * _kv_gib(model, context) * 2**30 / get_part(part).memory_capacity_bytes


def _max_context(model):
    from ..core.models import get_model

    return get_model(model).max_context_tokens


def _state_over_kv_tokens(model):
    from ..core.models import get_model

    m = get_model(model)
    return m.deltanet_state_bytes() / m.kv_bytes_per_token("bf16")


def _embedding_params_b(model):
    from ..core.models import get_model

    m = get_model(model)
    tables = 1 if m.tie_word_embeddings else 2
    return tables * m.vocab_size * m.hidden_size / 1e9


def _serving(model, part, quantity, prompt, output, batch=1, k=0, alpha=0.0, draft="", scale=1.0):
    """One figure of a request's timeline (:func:`~roofline_lessons.topics.serving.request_timeline`):
    ``quantity`` names a :class:`RequestTimeline` attribute (``ttft_s``, ``tpot_s``, ``e2e_s``,
    ``output_tokens_per_s``, …), times ``scale`` (1000 gives milliseconds). ``draft=""`` with ``k`` > 0
    is an MTP-style draft."""
    from ..topics.serving import request_timeline

    t = request_timeline(model, part, prompt_tokens=prompt, output_tokens=output, batch=batch,
                         speculative_tokens=k, acceptance=alpha, draft_model=draft or None)
    return float(scale) * float(getattr(t, quantity))


def _spec_speedup(model, part, prompt, output, k, alpha, batch=1, draft=""):
    """TPOT without speculation ÷ TPOT with ``k`` drafted tokens at acceptance ``alpha`` (×)."""
    plain = _serving(model, part, "tpot_s", prompt, output, batch)
    return plain / _serving(model, part, "tpot_s", prompt, output, batch, k, alpha, draft)


def _tokens_per_verify(k, alpha):
    from ..topics.serving import expected_tokens_per_verify

    return float(expected_tokens_per_verify(k, alpha))


# ---- lesson 11: many chips (see roofline_lessons.core.parallel for every modelling rule) ---------

def _split(model, part, *, phase="decode", tokens=4096, batch=1, tensor=1, expert=1, pipeline=1, overlap=False,
           link="auto", weights="bf16", latency=None):
    """A placement of one step split over ``tensor`` × ``expert`` × ``pipeline`` chips (figures per chip);
    ``latency`` (seconds per collective call) replaces the catalog's assumed figure, as a what-if."""
    from ..core.parallel import Parallelism
    from ..core.placement import place

    if latency is not None:
        from ..topics.many_chips import with_link_latency

        part = with_link_latency(part, float(latency))

    fields = {"prompt_tokens": tokens} if phase == "prefill" else {"context_tokens": tokens}
    par = Parallelism(tensor=int(tensor), expert=int(expert), pipeline=int(pipeline), overlap_comm=bool(overlap),
                      link=link)
    return place(model, part, phase=phase, batch=batch, weights_dtype=weights, parallelism=par, **fields)


def _parallel(model, part, quantity, scale=1.0, **split):
    """One figure of a split step: ``quantity`` names a :class:`Placement` attribute, dotted paths allowed
    (``time_lower_bound_s``, ``comm_time_s``, ``memory_required_bytes``, ``cost.weight_bytes``, …), or
    ``tokens_per_s_per_chip``; times ``scale`` (1000 gives ms, 1e-9 GB, 2**-30 GiB)."""
    p = _split(model, part, **split)
    if quantity == "tokens_per_s_per_chip":
        return float(scale) * float(p.tokens_per_s_estimate) / p.chips  # the estimate's, per chip
    value = p
    for name in quantity.split("."):
        value = getattr(value, name)
    return float(scale) * float(value)


def _comm(model, part, what, collective="", scale=1.0, **split):
    """One chip's communication in a split step, over the collectives whose name starts with ``collective``
    ("" = all of them): ``calls``, ``bytes`` (sent), ``bytes_per_call``, ``time_s``, ``latency_s`` (calls ×
    the link's per-call latency, an assumed figure in the catalog), ``bytes_s`` (bytes ÷ the per-direction
    bandwidth) or ``bytes_s_per_call``; times ``scale``."""
    p = _split(model, part, **split)
    parts = [c for c in p.comm.parts if c.name.startswith(collective)]
    if not parts:
        raise ValueError(f"no collective named {collective!r}* in this split: {[c.name for c in p.comm.parts]}")
    calls = sum(c.calls for c in parts)
    nbytes = float(sum(float(c.bytes) for c in parts))
    figures = {"calls": calls, "bytes": nbytes, "bytes_per_call": nbytes / calls,
               "time_s": float(sum(float(c.time_s) for c in parts)), "latency_s": calls * p.link.latency_s,
               "bytes_s": nbytes / p.link.per_direction_bytes_per_s,
               "bytes_s_per_call": nbytes / calls / p.link.per_direction_bytes_per_s}
    return float(scale) * figures[what]


def _all_reduce_multiple(model, part, chips):
    """Bytes one chip sends per tensor-parallel all-reduce ÷ the message (the step's activations,
    tokens × hidden × bytes): the ring's 2(n − 1)/n, read back from the package's communication."""
    from ..core.dtypes import bytes_per_element

    p = _split(model, part, tensor=chips)
    message = p.workload.batch * p.workload.new_tokens_per_sequence * p.model.hidden_size * bytes_per_element(
        p.workload.activations_dtype)
    return _comm(model, part, "bytes_per_call", collective="tensor all-reduce", tensor=chips) / float(message)


def _link_gbs(part, kind="scale-up", direction="per direction"):
    """A link's bandwidth in GB/s (SI): ``per direction`` (what a collective uses) or ``bidirectional``
    (the vendor's headline)."""
    from ..core.hardware import get_part

    link = get_part(part).link(kind)
    rate = link.per_direction_bytes_per_s if direction == "per direction" else link.bidirectional_bytes_per_s
    return rate / 1e9


def _interconnect_ridge(part, dtype="bf16", kind="scale-up", headline=False):
    """Peak ÷ the link's per-direction bandwidth (FLOP per byte sent); ``headline=True`` gives the
    mistake of dividing by the bidirectional total instead."""
    from dataclasses import replace

    from ..core.hardware import get_part
    from ..core.parallel import interconnect_ridge_flop_per_byte

    p = get_part(part)
    link = p.link(kind)
    if headline:
        link = replace(link, per_direction_bytes_per_s=link.bidirectional_bytes_per_s)
    return interconnect_ridge_flop_per_byte(p.peak_flops_per_s(dtype), link)


def _kv_share_per_chip(model, part, tensor, context=4096, batch=1, copies=False):
    """The KV cache one tensor-parallel chip holds ÷ the whole cache (``copies=True``: × the chips, the
    number of chips that store each KV head)."""
    one = _parallel(model, part, "footprint.kv_cache_bytes", tokens=context, batch=batch)
    share = _parallel(model, part, "footprint.kv_cache_bytes", tokens=context, batch=batch, tensor=tensor) / one
    return share * tensor if copies else share


def _bubble_percent(pipeline, micro_batches=1):
    from ..core.parallel import bubble_fraction

    return 100 * bubble_fraction(pipeline, micro_batches)


def _steady_idle_percent(pipeline, micro_batches=1):
    """Idle share (%) of a pipeline keeping ``micro_batches`` independent batches circulating in steady decode."""
    from ..core.parallel import steady_state_idle_fraction

    return 100 * steady_state_idle_fraction(pipeline, micro_batches)


def _free_after_weights_gib(model, part, tensor=1, weights="bf16", ref_part=None, ref_tensor=1, ref_weights="bf16"):
    """GiB left for KV cache on all ``tensor`` chips together after each holds its share of the weights
    (every byte usable); with ``ref_part``, that ÷ the same for the reference setup (×)."""
    def free(p, t, w):
        pl = _split(model, p, tensor=t, weights=w)
        return t * (float(pl.part.memory_capacity_bytes) - float(pl.footprint.weight_bytes)) / 2**30

    mine = free(part, tensor, weights)
    return mine if ref_part is None else mine / free(ref_part, ref_tensor, ref_weights)


def _split_speedup(model, part, ref_part, tensor=1, pipeline=1, ref_tensor=1, ref_weights="bf16", context=4096,
                   batch=1):
    """The estimate's step time of ``ref_part`` (``ref_tensor`` chips, ``ref_weights``) ÷ the estimate's
    step time of ``part`` split ``tensor`` × ``pipeline`` ways (×; above 1: the split is faster)."""
    ref = _parallel(model, ref_part, "time_estimate_s", tokens=context, batch=batch, tensor=ref_tensor,
                    weights=ref_weights)
    return ref / _parallel(model, part, "time_estimate_s", tokens=context, batch=batch, tensor=tensor,
                           pipeline=pipeline)


# ---- lesson 12: shrinking the bytes (weight and KV formats, MLA, sliding windows) ----------------

def _format_fields(weights="bf16", compute="bf16", kv="bf16", group=None, recipe="", absorbed=None):
    """Workload fields of a number format (TOML has no None: ``recipe=""`` = the format's default)."""
    fields = {"weights_dtype": weights, "compute_dtype": compute, "kv_dtype": kv}
    if group is not None:
        fields["weight_group_size"] = int(group)
    if recipe:
        fields["quantized_weights"] = recipe
    if absorbed is not None:
        fields["mla_absorbed"] = bool(absorbed)
    return fields


def _formatted(model, part, quantity, scale=1.0, phase="decode", tokens=4096, batch=1, **fmt):
    """One figure of a step placed under a number format: ``quantity`` names a :class:`Placement`
    attribute, dotted paths allowed (``time_lower_bound_s``, ``dequant_time_s``, ``memory_time_s``,
    ``cost.flops``, ``cost.weight_bytes``, ``vector_peak_flops_per_s``, …); times ``scale``."""
    from ..core.placement import place

    fields = {"prompt_tokens": tokens} if phase == "prefill" else {"context_tokens": tokens}
    value = place(model, part, phase=phase, batch=batch, **fields, **_format_fields(**fmt))
    for name in quantity.split("."):
        value = getattr(value, name)
    return float(scale) * float(value)


def _format_speedup(model, part, tokens=4096, batch=1, phase="decode", **fmt):
    """The estimate's step time in BF16 (weights, compute and KV) ÷ the estimate's step time under ``fmt``
    (×; above 1: faster; the estimate adds weight-only dequantisation in series with the matmuls)."""
    ref = _formatted(model, part, "time_estimate_s", phase=phase, tokens=tokens, batch=batch)
    return ref / _formatted(model, part, "time_estimate_s", phase=phase, tokens=tokens, batch=batch, **fmt)


def _bytes_per_weight(dtype, group=None):
    """Bytes one stored weight costs in ``dtype``, its share of the group's scale included."""
    from ..core.dtypes import weight_bytes_per_element

    return weight_bytes_per_element(dtype, None if group is None else int(group))


def _stored_weights_gib(model, dtype="bf16", group=None, recipe="", ratio=False):
    """Every weight of ``model`` as stored in ``dtype`` (scales and the format's BF16 layers included),
    GiB; ``ratio=True`` gives BF16's bytes ÷ these (how many times smaller the format is)."""
    from ..core.memory import weight_bytes

    stored = weight_bytes(model, dtype, weight_group_size=None if group is None else int(group),
                          quantized_weights=recipe or None)
    return weight_bytes(model, "bf16") / stored if ratio else stored / 2**30


def _kv_token_bytes(model, dtype="bf16", per_layer=False, ref="", scale=1.0):
    """KV-cache bytes one token adds (every caching layer, before window caps; ``per_layer``: one
    layer's); with ``ref``, the reference model's bytes per token ÷ ``model``'s (×)."""
    from ..core.models import get_model

    def per_token(m):
        m = get_model(m)
        return m.kv_bytes_per_token_per_layer(dtype) if per_layer else m.kv_bytes_per_token(dtype)

    return per_token(ref) / per_token(model) if ref else float(scale) * per_token(model)


def _model_field(model, field):
    """A catalog model's config field or property (``num_hidden_layers``, ``kv_lora_rank``,
    ``num_sliding_attention_layers``, ``mla_cache_elements_per_token``, ``sliding_window``, …)."""
    from ..core.models import get_model

    return float(getattr(get_model(model), field))


def _op_intensity(model, op, context=32768, absorbed=None):
    """FLOPs per byte of KV cache read by a decode step's operators whose name starts with ``op``
    (e.g. "attention"), batch 1, ``context`` tokens cached; ``absorbed`` picks an MLA form."""
    from ..core.costs import model_cost

    fields = {} if absorbed is None else {"mla_absorbed": bool(absorbed)}
    ops = [o for o in model_cost(model, phase="decode", context_tokens=context, **fields).ops if o.name.startswith(op)]
    if not ops:
        raise ValueError(f"no operator named {op!r}* in this step")
    return float(sum(float(o.flops) for o in ops) / sum(float(o.kv_read_bytes) for o in ops))


def _kv_element_bytes(dtype, group=128):
    """Bytes one cached K/V element costs in ``dtype``, its share of the per-token, per-head scale
    included (``group`` = head_dim)."""
    from ..core.dtypes import kv_bytes_per_element

    return kv_bytes_per_element(dtype, int(group))


def _mla_expanded_kv_kib(model, dtype="bf16", ratio=False):
    """KiB per token an MLA model would cache if it kept per-head K (qk_nope + qk_rope wide) and V
    (v_head_dim wide) for every head of every layer, as multi-head attention does; ``ratio=True``:
    that ÷ the latent it caches (×)."""
    from ..core.dtypes import bytes_per_element
    from ..core.models import get_model

    m = get_model(model)
    per_layer = m.num_attention_heads * (m.qk_nope_head_dim + m.qk_rope_head_dim + m.v_head_dim)
    expanded = m.num_mla_layers * per_layer * bytes_per_element(dtype)
    return expanded / m.kv_bytes_per_token(dtype) if ratio else expanded / 1024


def _mla_step(model, quantity="flops", absorbed=True, context=32768, batch=1, scale=1e-12, ratio=False, op="",
              phase="decode"):
    """One figure of an MLA model's step (``quantity``: a :class:`ModelCost` attribute, or with ``op`` an
    :class:`OpCost` one summed over the layers of the operators whose name starts with ``op``) in the
    absorbed or expanded form; ``ratio=True``: expanded ÷ absorbed (×). ``context`` is the prompt in a
    prefill."""
    from ..core.costs import model_cost

    def figure(form):
        fields = {"prompt_tokens": context} if phase == "prefill" else {"context_tokens": context}
        c = model_cost(model, phase=phase, batch=batch, mla_absorbed=form, **fields)
        if not op:
            return float(getattr(c, quantity))
        ops = [o for o in c.ops if o.name.startswith(op)]
        if not ops:
            raise ValueError(f"no operator named {op!r}* in this step")
        return float(sum(float(getattr(o, quantity)) * o.layers for o in ops))

    return figure(False) / figure(True) if ratio else float(scale) * figure(bool(absorbed))


def _window_kv_gib(model, context, dtype="bf16", kind="all"):
    """One sequence's KV cache at ``context`` tokens, GiB: ``kind`` "all" (windows applied per layer
    kind), "uncapped" (every layer holding every token: as if each were global), "global" (the
    full-attention and MLA layers' share) or "sliding" (the sliding-window layers' share)."""
    import numpy as np

    from ..core.models import get_model

    m = get_model(model)
    per_layer = m.kv_bytes_per_token_per_layer(dtype)
    t = float(context)
    if kind == "all":
        value = m.kv_cache_bytes_per_sequence(t, dtype)
    elif kind == "uncapped":
        value = m.kv_bytes_per_token(dtype) * t
    elif kind == "global":
        window = m.full_attention_window
        value = (m.num_full_attention_layers + m.num_mla_layers) * per_layer * (t if window is None else min(t, window))
    elif kind == "sliding":
        value = m.num_sliding_attention_layers * per_layer * float(np.minimum(t, m.sliding_window or 0))
    else:
        raise ValueError(f"kind must be one of all, uncapped, global, sliding; got {kind!r}")
    return float(value) / 2**30


def _paged_batch(model, part, context, pages="per layer kind", memory_utilization=0.9, weights="bf16", recipe="",
                 lost_percent=False):
    """Sequences of ``context`` tokens that fit once the weights are loaded: ``pages="per layer kind"``
    (sliding-window layers hold only their window) or ``"full context"`` (a paged allocator that gives
    every layer pages for the whole context, as if every layer were global). ``lost_percent=True``:
    the share of the per-layer-kind batch the full-context allocator loses (%)."""
    from dataclasses import replace

    from ..core.memory import max_batch_that_fits
    from ..core.models import get_model

    m = get_model(model)
    fmt = dict(weights_dtype=weights, quantized_weights=recipe or None, memory_utilization=memory_utilization)
    right = max_batch_that_fits(m, part, context, **fmt)
    if pages == "per layer kind" and not lost_percent:
        return float(right)
    if m.sliding_window is None:
        raise ValueError(f"{m.id} has no sliding-window layers")
    everything = replace(m, id=f"{m.id}-full-context-pages", sliding_window=max(int(context), m.sliding_window))
    wrong = max_batch_that_fits(everything, part, context, **fmt)
    if lost_percent:
        return 100.0 * (1 - wrong / right)
    if pages != "full context":
        raise ValueError(f"pages must be 'per layer kind' or 'full context', got {pages!r}")
    return float(wrong)


def _byte_share(model, what="kv", batch=1, context=4096, **fmt):
    """Percent of a decode step's bytes that are ``what``: "weight", "kv" (read and written),
    "state" or "activation"."""
    from ..core.costs import model_cost

    c = model_cost(model, phase="decode", batch=batch, context_tokens=context, **_format_fields(**fmt))
    return 100 * float(getattr(c, f"{what}_bytes")) / float(c.bytes)


def _weight_lens_batch(model, part, context=4096, **fmt):
    """Smallest decode batch whose weight-matmul FLOPs per weight byte reach the part's ridge at the
    weight matmuls' rate (the critical batch, weights lens) under a number format."""
    from ..topics.batching import critical_batch

    return critical_batch(model, part, context, lens="weights only", **_format_fields(**fmt))


def _lens_batch(model, part, context=4096, lens="all traffic", **fmt):
    """The critical batch through either lens of lesson 4 (``lens``: "all traffic" or "weights only")
    under a number format (sequences)."""
    from ..topics.batching import critical_batch

    return critical_batch(model, part, context, lens=lens, **_format_fields(**fmt))


def _matmul_time_ms(model, part, tokens=4096, batch=1, **fmt):
    """A decode step's compute time without the dequantisation (its matmuls and the rest alone), ms."""
    return 1e3 * (_formatted(model, part, "compute_time_s", tokens=tokens, batch=batch, **fmt)
                  - _formatted(model, part, "dequant_time_s", tokens=tokens, batch=batch, **fmt))


def _zero_point_bytes_per_weight(group=128):
    """Bytes per int4 weight with a bf16 scale and a 4-bit zero point per ``group`` weights."""
    from ..topics.shrinking import int4_bytes_per_weight

    return int4_bytes_per_weight(int(group), zero_point=True)


def _mla_fp8_vllm_bytes(model="deepseek-v3", per_layer=False):
    """Bytes per token of an MLA model's cache in vLLM's FP8 layout (656 bytes per layer for DeepSeek-V3):
    the latent in FP8, four FP32 scales (one per 128 elements of the latent), the rope key in BF16."""
    from ..core.models import get_model

    m = get_model(model)
    layer = m.kv_lora_rank * 1 + (m.kv_lora_rank // 128) * 4 + m.qk_rope_head_dim * 2
    return float(layer if per_layer else layer * m.num_mla_layers)


def _dequant_tokens_equivalent(model, part):
    """How many tokens' BF16 multiply-adds (2 FLOPs each, on the tensor cores) take as long as
    dequantising the weight once (``DEQUANT_FLOPS_PER_WEIGHT`` on the vector units, at the rate the
    placement prices them)."""
    from ..core.costs import DEQUANT_FLOPS_PER_WEIGHT
    from ..core.hardware import get_part

    vector = _formatted(model, part, "vector_peak_flops_per_s", weights="int4")
    return (DEQUANT_FLOPS_PER_WEIGHT / vector) / (2.0 / get_part(part).peak_flops_per_s("bf16"))


NUMERIC_FUNCTIONS: dict[str, Callable[..., float]] = {
    "peak_tflops": _peak_tflops, "bandwidth_tbs": _bandwidth_tbs, "capacity_gib": _capacity_gib,
    "weights_gib": _weights_gib, "free_gib": _free_gib, "kv_gib": _kv_gib, "state_gib": _state_gib,
    "percent_of_peak": _percent_of_peak, "intensity": _intensity, "step_tflop": _step_tflop,
    "max_context": _max_context, "weight_lens_over_ridge": _weight_lens_over_ridge,
    "kv_share_of_capacity": _kv_share_of_capacity, "state_over_kv_tokens": _state_over_kv_tokens,
    "embedding_params_b": _embedding_params_b,
    "ridge": _ridge, "weights_gb": _weights_gb, "time_ms": _time_ms, "tokens_per_s": _tokens_per_s,
    "critical_batch": _critical_batch, "experts": _experts, "max_batch": _max_batch, "kv_kib": _kv_kib,
    "state_mib": _state_mib, "kv_crossing": _kv_crossing, "decode_attention": _decode_attention, "lever": _lever,
    "params_b": _params_b, "step_gb": _step_gb, "measured_percent": _measured_percent,
    "gpt_fast_percent": _gpt_fast_percent, "measured_ridge": _measured_ridge, "moe_bytes_ratio": _moe_bytes_ratio,
    "measured_value": _measured_value,
    "serving": _serving, "spec_speedup": _spec_speedup, "tokens_per_verify": _tokens_per_verify,
    "parallel": _parallel, "comm": _comm, "all_reduce_multiple": _all_reduce_multiple, "link_gbs": _link_gbs,
    "interconnect_ridge": _interconnect_ridge, "kv_share_per_chip": _kv_share_per_chip,
    "bubble_percent": _bubble_percent, "split_speedup": _split_speedup,
    "steady_idle_percent": _steady_idle_percent, "free_after_weights_gib": _free_after_weights_gib,
    "formatted": _formatted, "format_speedup": _format_speedup, "bytes_per_weight": _bytes_per_weight,
    "stored_weights_gib": _stored_weights_gib, "kv_token_bytes": _kv_token_bytes,
    "mla_expanded_kv_kib": _mla_expanded_kv_kib, "mla_step": _mla_step, "window_kv_gib": _window_kv_gib,
    "paged_batch": _paged_batch, "byte_share": _byte_share, "weight_lens_batch": _weight_lens_batch,
    "dequant_tokens_equivalent": _dequant_tokens_equivalent, "model_field": _model_field,
    "kv_element_bytes": _kv_element_bytes, "op_intensity": _op_intensity, "lens_batch": _lens_batch,
    "matmul_time_ms": _matmul_time_ms, "zero_point_bytes_per_weight": _zero_point_bytes_per_weight,
    "mla_fp8_vllm_bytes": _mla_fp8_vllm_bytes,
}


def _numeric(card_id: str, spec: dict) -> Numeric:
    n = dict(spec)
    fn = n.pop("fn")
    if fn not in NUMERIC_FUNCTIONS:
        raise ValueError(f"flashcards.toml: card {card_id!r} names unknown numeric fn {fn!r}")
    unit, tol = n.pop("unit", ""), float(n.pop("tolerance", 0.0))
    return Numeric(fn, tuple(sorted(n.items())), unit, tol)


def _card(entry: dict) -> Card:
    numeric = _numeric(entry["id"], entry["numeric"]) if "numeric" in entry else None
    values = tuple((name, _numeric(entry["id"], spec)) for name, spec in sorted(entry.get("values", {}).items()))
    return Card(
        id=entry["id"], lesson=int(entry["lesson"]), tags=tuple(entry.get("tags", ())), question=entry["question"],
        short=entry["short"], detailed=entry["detailed"], red_flags=tuple(entry.get("red_flags", ())),
        follow_ups=tuple(FollowUp(f["question"], f["answer"]) for f in entry.get("follow_ups", ())),
        numeric=numeric,
        values=values,
    )


@cache
def deck() -> tuple[Card, ...]:
    """Every card, in deck order."""
    cards = tuple(_card(e) for e in load_catalog("flashcards.toml")["cards"])
    ids = [c.id for c in cards]
    if len(set(ids)) != len(ids):
        raise ValueError("flashcards.toml: duplicate card ids")
    return cards


def get_card(card_id: str) -> Card:
    from ..core.errors import unknown_name_error

    for c in deck():
        if c.id == card_id:
            return c
    raise unknown_name_error("card id", card_id, [c.id for c in deck()])


def filter_cards(lesson: int | None = None, tag: str | None = None) -> list[Card]:
    """Cards of one lesson and/or with one tag (None = any)."""
    return [c for c in deck() if (lesson is None or c.lesson == lesson) and (tag is None or tag in c.tags)]


def all_tags() -> list[str]:
    return sorted({t for c in deck() for t in c.tags})


@dataclass(frozen=True)
class NumericVerdict:
    correct: bool
    message: str


def check_numeric(card: Card, answer: Any) -> NumericVerdict:
    """Is ``answer`` within the card's tolerance of the package's value? Never raises."""
    if card.numeric is None:
        return NumericVerdict(False, "this card has no numeric answer: reveal it and rate yourself.")
    if is_unanswered(answer) or (isinstance(answer, str) and not answer.strip()):
        return NumericVerdict(False, "type a number first.")
    if isinstance(answer, str):
        try:
            answer = float(answer.replace(",", "").replace("_", "").strip())
        except ValueError:
            return NumericVerdict(False, f"{answer!r} is not a number (digits, optionally with a decimal point "
                                         "or an exponent like 2.9e2).")
    value, problem = as_number(answer)
    if problem:
        return NumericVerdict(False, problem)
    try:
        expected = card.answer_value()
    except RooflineInputError as exc:  # a catalog entry the card relies on was removed
        return NumericVerdict(False, f"the answer cannot be computed any more: {exc}")
    tol = card.numeric.tolerance
    if math.isclose(value, expected, rel_tol=tol):
        return NumericVerdict(True, f"✓ {num(value, 4)} {card.numeric.unit} — the package says {num(expected, 4)} "
                                    f"(within ±{tol:.0%}).")
    side = "high" if value > expected else "low"
    return NumericVerdict(False, f"✗ {num(value, 4)} {card.numeric.unit} is too {side}; the package says "
                                 f"{num(expected, 4)} (±{tol:.0%} accepted).")


__all__ = ["Card", "FollowUp", "Numeric", "NumericVerdict", "all_tags", "check_numeric", "deck", "filter_cards",
           "get_card"]
