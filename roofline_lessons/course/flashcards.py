"""The interview deck: cards as data (``data/flashcards.toml``), numeric answers computed by the
package at run time (so no answer goes stale when a catalog changes), and answer checking."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from typing import Any, Callable

import numpy as np

from ..core._catalog import load_catalog
from ..core.errors import RooflineInputError
from ..core.hardware import get_part
from ..core.models import get_model
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
    times: float = 1.0  #: a factor on the function's value (a red flag's "half of", "twice")
    #: the card says the setup this figure prices does not fit its memory (``fits = false`` in the deck)
    does_not_fit: bool = False
    #: the card says this figure lies past the model's context (``past_context = true`` in the deck)
    past_context: bool = False

    def value(self) -> float:
        return self.times * float(NUMERIC_FUNCTIONS[self.fn](**dict(self.args)))

    def setups(self) -> list["Setup"]:
        """The setups (model, part, batch, tokens) this figure prices, with whether each fits its memory
        and the model's context; [] for a figure that prices no step (a ridge, a parameter count)."""
        if self.fn in NO_SETUP:
            return []
        return SETUP_FUNCTIONS[self.fn](**dict(self.args))


@dataclass(frozen=True)
class Mistake:
    """What one red flag of a numeric card gives as the answer, computed by the package (``numeric``), or
    why it has no number for this card's question (``none``)."""

    flag: int  #: index into the card's red_flags
    numeric: Numeric | None = None
    none: str = ""


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
    #: a numeric card's red flags, each with the number it leads to (or why it has none)
    mistakes: tuple[Mistake, ...] = ()
    #: a picture to remember the answer by, where one helps ("" where none does)
    memory_aid: str = ""
    #: references the card's prose rests on (papers, docs), besides the catalog entries its numbers use
    references: tuple[str, ...] = ()

    def sources(self) -> tuple[str, ...]:
        """Where the card comes from: its lesson, its references, then the catalog source (with its
        date) of every part and model its computed figures use, and of every catalog measurement they
        quote — the same catalogs the numbers are computed from, so the list cannot drift from them."""
        out = [f"Lesson {self.lesson}", *self.references]
        numerics = [self.numeric, *(n for _, n in self.values), *(m.numeric for m in self.mistakes)]
        for n in (n for n in numerics if n is not None):
            args = dict(n.args)
            if n.fn in ("gpt_fast_percent", "gpt_fast_bound"):  # gpt-fast's run: its part and model, implied
                from ..topics.published import GPT_FAST_7B, GPT_FAST_PART

                args = {"part": GPT_FAST_PART, "model": GPT_FAST_7B, **args}
            for key in ("part", "ref_part"):
                if key in args:
                    part = get_part(args[key])
                    out.append(f"{part.name}: {part.source} (catalog as of {part.as_of})")
            if "model" in args:
                model = get_model(args["model"])
                out.append(f"{model.name}: {model.source}")
            measured = _measurement_quoted(n)
            if measured is not None:
                dated = f" ({measured.date})" if measured.date else ""
                out.append(f"Measured, {measured.what}: {measured.source}{dated}")
        return tuple(dict.fromkeys(out))

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

    def memory_aid_text(self) -> str:
        """The memory aid, its figures computed now by the package ("" for a card without one)."""
        return self.fill(self.memory_aid) if self.memory_aid else ""


def _measurement_quoted(n: Numeric):
    """The catalog measurement a figure quotes (the same one its function reads), or None for a figure
    computed from datasheet and config numbers alone."""
    from ..topics.datasheets import best_measurement

    args = dict(n.args)
    if n.fn == "measured_percent":
        matmul = args["quantity"] == "matmul_flops_per_s"
        return best_measurement(args["part"], args["quantity"], args["dtype"] if matmul else None)
    if n.fn == "measured_ridge":
        return best_measurement(args["part"], "matmul_flops_per_s", args["dtype"])
    if n.fn == "measured_value":
        return best_measurement(args["part"], args["quantity"])
    if n.fn in ("gpt_fast_percent", "gpt_fast_bound"):  # (the empirical bandwidth: the same README, a card reference)
        from ..topics.published import gpt_fast_7b_measurement

        return gpt_fast_7b_measurement()
    if n.fn == "gpt_fast_70b_estimate":
        from ..topics.many_chips import gpt_fast_70b

        return gpt_fast_70b().measurement
    return None


# ---- numeric answers: each a package computation, named in the deck ------------------------

def _ridge(part, dtype, sparse=False):
    """Peak ÷ bandwidth (FLOP/byte); ``sparse=True`` divides the with-sparsity headline instead (a red flag's
    number)."""
    p = get_part(part)
    if sparse:
        return p.sparse_flops_per_s[dtype] / p.memory_bandwidth_bytes_per_s
    return p.ridge_point_flop_per_byte(dtype)


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
    """One step's time in ms: ``figure="bound"`` the lower bound, ``"estimate"`` the estimate (the step's
    totals: max(all FLOPs ÷ peak, all unfused bytes ÷ bandwidth)), ``"per operator"`` the estimate with
    every operator a kernel of its own, one after another (``place``'s second estimate)."""
    from ..core.placement import place

    fields = {"prompt_tokens": tokens} if phase == "prefill" else {"context_tokens": tokens}
    attr = "time_estimate_per_op_sum_s" if figure == "per operator" else _figure(figure)[0]
    return float(getattr(place(model, part, phase=phase, batch=batch, **fields), attr)) * 1e3


def _tokens_per_s(model, part, context, batch=1, figure="bound"):
    """Decode tokens/s: ``figure="bound"`` the upper bound, ``"estimate"`` the estimate."""
    from ..core.placement import place

    return float(getattr(place(model, part, phase="decode", context_tokens=context, batch=batch), _figure(figure)[1]))


def _step_gb(model, context, traffic="compulsory"):
    """GB one batch-1 decode step moves: ``"compulsory"`` (what the lower bound counts), ``"unfused"``
    (every operator's activations through HBM too: what the estimate counts), ``"weights"`` (the
    weight bytes the step reads: the embedding only one row) or ``"kv"`` (the KV cache read and written)."""
    from ..core.costs import model_cost

    if traffic not in ("compulsory", "unfused", "weights", "kv"):
        raise ValueError(f"traffic must be 'compulsory', 'unfused', 'weights' or 'kv', got {traffic!r}")
    c = model_cost(model, phase="decode", context_tokens=context)
    value = {"compulsory": c.compulsory_bytes, "unfused": c.bytes, "weights": c.weight_bytes,
             "kv": c.kv_bytes}[traffic]
    return float(value) / 1e9


def _batch_gain(model, part, context, batch, quantity="tokens/s", ref_batch=1):
    """Decode at ``batch`` against ``ref_batch``, by the lower bound: ``"tokens/s"`` (how many times the
    upper bound on tokens/s rises), ``"step"`` (how many times the step's lower bound grows) or
    ``"step %"`` (by how many percent it grows)."""
    from ..core.placement import place

    def at(b):
        return place(model, part, phase="decode", context_tokens=context, batch=b)

    hi, lo = at(batch), at(ref_batch)
    if quantity == "tokens/s":
        return float(hi.tokens_per_s_upper_bound / lo.tokens_per_s_upper_bound)
    if quantity == "step":
        return float(hi.time_lower_bound_s / lo.time_lower_bound_s)
    if quantity == "step %":
        return 100 * float(hi.time_lower_bound_s / lo.time_lower_bound_s - 1)
    raise ValueError(f"quantity must be 'tokens/s', 'step' or 'step %', got {quantity!r}")


def _measured_percent(part, quantity, dtype):
    from ..topics.datasheets import best_measurement

    p = get_part(part)
    peak = p.peak_flops_per_s(dtype) if quantity == "matmul_flops_per_s" else p.memory_bandwidth_bytes_per_s
    return 100 * best_measurement(p, quantity, dtype if quantity == "matmul_flops_per_s" else None).value / peak


def _measured_ridge(part, dtype):
    from ..topics.datasheets import best_measurement

    p = get_part(part)
    return best_measurement(p, "matmul_flops_per_s", dtype).value / p.memory_bandwidth_bytes_per_s


def _gpt_fast_percent(bandwidth="datasheet"):
    """gpt-fast's single-chip Llama-2-7B tokens/s as a percentage of its bound (the catalog also holds its
    8-chip 70B figure, lesson 11), at lesson 3's assumed context (``GPT_FAST_CONTEXT_TOKENS``, the middle
    of the run's contexts): the bound at the A100's datasheet bandwidth (``"datasheet"``), or at the
    empirical peak bandwidth gpt-fast's README notes for the A100 (``"empirical"``, about 1,700 GB/s:
    what the run reaches of what its memory system was measured to deliver)."""
    from dataclasses import replace

    from ..core.placement import place
    from ..topics.many_chips import gpt_fast_empirical_bandwidth_bytes_per_s
    from ..topics.published import (GPT_FAST_7B, GPT_FAST_CONTEXT_TOKENS, GPT_FAST_PART, gpt_fast_7b_bound,
                                    gpt_fast_7b_measurement)

    measured = gpt_fast_7b_measurement().tokens_per_s
    if bandwidth == "datasheet":
        return 100 * measured / float(gpt_fast_7b_bound().tokens_per_s_upper_bound)
    if bandwidth != "empirical":
        raise ValueError(f"bandwidth must be 'datasheet' or 'empirical', got {bandwidth!r}")
    part = replace(get_part(GPT_FAST_PART), memory_bandwidth_bytes_per_s=gpt_fast_empirical_bandwidth_bytes_per_s())
    bound = place(GPT_FAST_7B, part, phase="decode", context_tokens=GPT_FAST_CONTEXT_TOKENS)
    return 100 * measured / float(bound.tokens_per_s_upper_bound)


def _gpt_fast_bound(quantity="tokens_per_s"):
    """gpt-fast's Llama-2-7B batch-1 decode on an A100, at the same assumed context as
    :func:`_gpt_fast_percent`: its upper bound on tokens/s (``"tokens_per_s"``), the GB a token must move
    (``"step_gb"``) or that context in tokens (``"context"``)."""
    from ..topics.published import GPT_FAST_CONTEXT_TOKENS, gpt_fast_7b_bound

    p = gpt_fast_7b_bound()
    figures = {"tokens_per_s": lambda: float(p.tokens_per_s_upper_bound),
               "step_gb": lambda: float(p.cost.compulsory_bytes) / 1e9, "context": lambda: float(GPT_FAST_CONTEXT_TOKENS)}
    if quantity not in figures:
        raise ValueError(f"quantity must be one of {', '.join(figures)}, got {quantity!r}")
    return figures[quantity]()


def _with_cuda_graphs(part, quantity="percent"):
    """What the catalog's batch-1 decode study (its fraction of the analytic memory floor, and its CUDA
    Graphs A/B on the same stack) gives if the graphs' speed-up is applied to that fraction: the fraction
    with graphs (``"percent"``), the step as a multiple of the floor without and with graphs
    (``"times floor"``, ``"times floor with graphs"``) or the share of the gap to the floor the graphs
    leave (``"gap left %"``). An arithmetic combination of two measurements of the same stack, not a
    measurement with graphs of the fraction itself."""
    from ..topics.datasheets import best_measurement

    fraction = best_measurement(part, "decode_fraction_of_memory_floor").value
    graphs = best_measurement(part, "cuda_graphs_decode_speedup").value
    figures = {"percent": 100 * fraction * graphs, "times floor": 1 / fraction,
               "times floor with graphs": 1 / (fraction * graphs),
               "gap left %": 100 * (1 / (fraction * graphs) - 1) / (1 / fraction - 1)}
    if quantity not in figures:
        raise ValueError(f"quantity must be one of {', '.join(figures)}, got {quantity!r}")
    return figures[quantity]


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


def _max_batch(model, part, context, memory_utilization=1.0, capacity="binary", kv_layers="caching"):
    """Sequences of ``context`` tokens that fit once the BF16 weights are loaded. Two red flags' numbers:
    ``capacity="si"`` reads the vendor's "141 GB" as 10⁹ bytes; ``kv_layers="all"`` gives every layer a KV
    cache (a hybrid model's linear-attention layers included)."""
    from dataclasses import replace

    from ..core.memory import max_batch_that_fits, state_bytes_per_sequence, usable_capacity_bytes, weight_bytes
    p = get_part(part)
    if capacity == "si":
        p = replace(p, memory_capacity_bytes=p.memory_capacity_bytes / 2**30 * 1e9)
    elif capacity != "binary":
        raise ValueError(f"capacity must be 'binary' or 'si', got {capacity!r}")
    if kv_layers == "caching":
        return max_batch_that_fits(model, p, context, memory_utilization=memory_utilization)
    if kv_layers != "all":
        raise ValueError(f"kv_layers must be 'caching' or 'all', got {kv_layers!r}")
    m = get_model(model)
    per_sequence = m.kv_bytes_per_token_per_layer("bf16") * m.num_hidden_layers * context + \
        state_bytes_per_sequence(m)
    free = usable_capacity_bytes(p, memory_utilization) - weight_bytes(m, "bf16")
    return float(max(0, math.floor(free / per_sequence)))


def _kv_kib(model, dtype, heads="kv", layers="caching"):
    """KV-cache KiB one token adds. Two red flags' numbers: ``heads="query"`` counts a K and a V per query
    head instead of per KV head; ``layers="all"`` gives every layer a cache (a hybrid's linear-attention
    layers included)."""
    m = get_model(model)
    value = m.kv_bytes_per_token(dtype)
    if heads == "query":
        value *= m.num_attention_heads / m.num_key_value_heads
    elif heads != "kv":
        raise ValueError(f"heads must be 'kv' or 'query', got {heads!r}")
    if layers == "all":
        value = m.kv_bytes_per_token_per_layer(dtype) * m.num_hidden_layers * (
            m.num_attention_heads / m.num_key_value_heads if heads == "query" else 1)
    elif layers != "caching":
        raise ValueError(f"layers must be 'caching' or 'all', got {layers!r}")
    return value / 1024


def _state_mib(model):
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


def _params_b(model, head_dim="config"):
    """Parameters (billions); ``head_dim="hidden/heads"`` derives head_dim from hidden ÷ heads (a red
    flag's number, for a model whose config sets it apart)."""
    from dataclasses import replace

    m = get_model(model)
    if head_dim == "hidden/heads":
        m = replace(m, head_dim=m.hidden_size // m.num_attention_heads)
    elif head_dim != "config":
        raise ValueError(f"head_dim must be 'config' or 'hidden/heads', got {head_dim!r}")
    return m.parameter_count() / 1e9


def _peak_tflops(part, dtype, sparse=False):
    p = get_part(part)
    return (p.sparse_flops_per_s[dtype] if sparse else p.peak_flops_per_s(dtype)) / 1e12


def _bandwidth_tbs(part):
    return get_part(part).memory_bandwidth_bytes_per_s / 1e12


def _reported_gib(mib, memory_utilization=1.0, model="", dtype="bf16"):
    """A driver-reported memory total (``mib``, MiB, as nvidia-smi prints it) in GiB, times
    ``memory_utilization`` (vLLM's share applies to this total); with ``model``, less its weights in
    ``dtype`` (what is left for the KV cache)."""
    out = float(mib) / 1024 * float(memory_utilization)
    return out - _weights_gib(model, dtype) if model else out


def _capacity_gib(part, memory_utilization=1.0):
    from ..core.memory import usable_capacity_bytes

    return usable_capacity_bytes(part, memory_utilization) / 2**30


def _bandwidth_over(part, bytes_per_s):
    """``part``'s memory bandwidth ÷ a stated one (``bytes_per_s``: a machine not in the catalog) (×)."""
    return get_part(part).memory_bandwidth_bytes_per_s / float(bytes_per_s)


def _tokens_per_s_at(model, context, bytes_per_s):
    """Batch-1 decode tokens/s no implementation beats on a machine moving ``bytes_per_s`` (a stated
    bandwidth): ``bytes_per_s`` ÷ the compulsory bytes of one step at ``context`` tokens cached."""
    return float(bytes_per_s) / (_step_gb(model, context) * 1e9)


def _halved_bytes_speedup(model, part, phase="decode", tokens=8192, batch=1):
    """The speed-up a learner promises who halves EVERY byte of the step (weights, KV cache, recurrent
    state, activations) at unchanged FLOPs: the lower bound ÷ max(compute, half the compulsory bytes ÷
    bandwidth) (×; 2 for a memory-bound step). A red flag's number."""
    from ..core.placement import place

    fields = {"prompt_tokens": tokens} if phase == "prefill" else {"context_tokens": tokens}
    p = place(model, part, phase=phase, batch=batch, **fields)
    halved = max(float(p.compute_lower_bound_s), float(p.memory_lower_bound_s) / 2)
    return float(p.time_lower_bound_s) / halved


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
    return 100 * _kv_gib(model, context) * 2**30 / get_part(part).memory_capacity_bytes


def _max_context(model):
    return get_model(model).max_context_tokens


def _state_over_kv_tokens(model):
    m = get_model(model)
    return m.deltanet_state_bytes() / m.kv_bytes_per_token("bf16")


def _embedding_params_b(model):
    m = get_model(model)
    tables = 1 if m.tie_word_embeddings else 2
    return tables * m.vocab_size * m.hidden_size / 1e9


def _serving(model, part, quantity, prompt, output, batch=1, k=0, alpha=0.0, draft="", scale=1.0, prefix=0):
    """One figure of a request's timeline (:func:`~roofline_lessons.topics.serving.request_timeline`):
    ``quantity`` names a :class:`RequestTimeline` attribute (``ttft_s``, ``tpot_s``, ``e2e_s``,
    ``output_tokens_per_s``, …), times ``scale`` (1000 gives milliseconds). ``draft=""`` with ``k`` > 0
    is an MTP-style draft; ``prefix``: the prompt's tokens already in the prefix cache (not prefilled)."""
    from ..topics.serving import request_timeline

    t = request_timeline(model, part, prompt_tokens=prompt, output_tokens=output, batch=batch,
                         speculative_tokens=k, acceptance=alpha, draft_model=draft or None,
                         prefix_cached_tokens=int(prefix))
    return float(scale) * float(getattr(t, quantity))


def _serving_change(model, part, quantity, prompt, ref_prompt, output, change="ratio"):
    """How a request-timeline figure (``quantity``) moves from a ``ref_prompt``-token prompt to a
    ``prompt``-token one, batch 1: ``change="ratio"`` (×) or ``"percent"`` (%)."""
    ratio = _serving(model, part, quantity, prompt, output) / _serving(model, part, quantity, ref_prompt, output)
    if change == "ratio":
        return ratio
    if change != "percent":
        raise ValueError(f"change must be 'ratio' or 'percent', got {change!r}")
    return 100 * (ratio - 1)


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


def _gpt_fast_70b_estimate():
    """The estimate's tokens/s for gpt-fast's 8-A100 Llama-3.1-70B run, priced as its tp.py lays the
    model out (embedding and lm_head whole on every GPU) at lesson 3's assumed context."""
    from ..topics.many_chips import gpt_fast_70b

    return float(gpt_fast_70b().estimate_tokens_per_s)


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
    link = get_part(part).link(kind)
    rate = link.per_direction_bytes_per_s if direction == "per direction" else link.bidirectional_bytes_per_s
    return rate / 1e9


def _interconnect_ridge(part, dtype="bf16", kind="scale-up", headline=False):
    """Peak ÷ the link's per-direction bandwidth (FLOP per byte sent); ``headline=True`` gives the
    mistake of dividing by the bidirectional total instead."""
    from dataclasses import replace

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
                   batch=1, latency=None):
    """The estimate's step time of ``ref_part`` (``ref_tensor`` chips, ``ref_weights``) ÷ the estimate's
    step time of ``part`` split ``tensor`` × ``pipeline`` ways (×; above 1: the split is faster);
    ``latency`` replaces the split's assumed seconds per collective call (0: the all-reduces' bytes alone)."""
    ref = _parallel(model, ref_part, "time_estimate_s", tokens=context, batch=batch, tensor=ref_tensor,
                    weights=ref_weights)
    return ref / _parallel(model, part, "time_estimate_s", tokens=context, batch=batch, tensor=tensor,
                           pipeline=pipeline, latency=latency)


# ---- lesson 12: shrinking the bytes (weight and KV formats, MLA, sliding windows) ----------------

def _format_fields(weights="bf16", compute="bf16", kv="bf16", group=None, recipe="", absorbed=None, state=""):
    """Workload fields of a number format (TOML has no None: ``recipe=""`` = the format's default,
    ``state=""`` the model's own recurrent-state format)."""
    fields = {"weights_dtype": weights, "compute_dtype": compute, "kv_dtype": kv}
    if state:
        fields["state_dtype"] = state
    if group is not None:
        fields["weight_group_size"] = int(group)
    if recipe:
        fields["quantized_weights"] = recipe
    if absorbed is not None:
        fields["mla_absorbed"] = bool(absorbed)
    return fields


def _format_placement(model, part, phase="decode", tokens=4096, batch=1, tensor=1, **fmt):
    from ..core.placement import place

    fields = {"prompt_tokens": tokens} if phase == "prefill" else {"context_tokens": tokens}
    if int(tensor) != 1:
        from ..core.parallel import Parallelism

        fields["parallelism"] = Parallelism(tensor=int(tensor))
    return place(model, part, phase=phase, batch=batch, **fields, **_format_fields(**fmt))


def _formatted(model, part, quantity, scale=1.0, phase="decode", tokens=4096, batch=1, tensor=1, reciprocal=False,
               **fmt):
    """One figure of a step placed under a number format (over ``tensor`` chips, tensor parallel):
    ``quantity`` names a :class:`Placement` attribute, dotted paths allowed (``time_lower_bound_s``,
    ``dequant_time_s``, ``memory_time_s``, ``cost.flops``, ``cost.weight_bytes``,
    ``vector_peak_flops_per_s``, …); times ``scale`` (``reciprocal=True``: ``scale`` ÷ the figure, e.g.
    tokens per second from a time)."""
    value = _format_placement(model, part, phase, tokens, batch, tensor, **fmt)
    for name in quantity.split("."):
        value = getattr(value, name)
    return float(scale) / float(value) if reciprocal else float(scale) * float(value)


def _format_speedup(model, part, tokens=4096, batch=1, phase="decode", tensor=1, change="ratio", **fmt):
    """The estimate's step time in BF16 (weights, compute and KV) ÷ the estimate's step time under ``fmt``
    (×; above 1: faster; the estimate adds weight-only dequantisation in series with the matmuls), on
    ``tensor`` chips (tensor parallel); ``change="percent"``: by how many percent the step is faster
    ((ratio − 1) × 100)."""
    ref = _formatted(model, part, "time_estimate_s", phase=phase, tokens=tokens, batch=batch, tensor=tensor)
    ratio = ref / _formatted(model, part, "time_estimate_s", phase=phase, tokens=tokens, batch=batch, tensor=tensor,
                             **fmt)
    if change == "ratio":
        return ratio
    if change != "percent":
        raise ValueError(f"change must be 'ratio' or 'percent', got {change!r}")
    return 100 * (ratio - 1)


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
    def per_token(m):
        m = get_model(m)
        return m.kv_bytes_per_token_per_layer(dtype) if per_layer else m.kv_bytes_per_token(dtype)

    return per_token(ref) / per_token(model) if ref else float(scale) * per_token(model)


def _model_field(model, field, per=""):
    """A catalog model's config field or property (``num_hidden_layers``, ``kv_lora_rank``,
    ``num_sliding_attention_layers``, ``mla_cache_elements_per_token``, ``sliding_window``, …); with
    ``per``, divided by another (``hidden_size`` per ``num_attention_heads``)."""
    m = get_model(model)
    return float(getattr(m, field)) / (float(getattr(m, per)) if per else 1.0)


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
    full-attention and MLA layers' share), "sliding" (the sliding-window layers' share) or "all local"
    (every layer held to the window: a red flag's number)."""
    import numpy as np

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
    elif kind == "all local":  # a red flag's number: every caching layer held to the window
        value = m.kv_bytes_per_token(dtype) * float(np.minimum(t, m.sliding_window or t))
    else:
        raise ValueError(f"kind must be one of all, uncapped, global, sliding, all local; got {kind!r}")
    return float(value) / 2**30


def _paged_batch(model, part, context, pages="per layer kind", memory_utilization=0.9, weights="bf16", recipe="",
                 lost_percent=False):
    """Sequences of ``context`` tokens that fit once the weights are loaded: ``pages="per layer kind"``
    (sliding-window layers hold only their window) or ``"full context"`` (a paged allocator that gives
    every layer pages for the whole context, as if every layer were global). ``lost_percent=True``:
    the share of the per-layer-kind batch the full-context allocator loses (%)."""
    from dataclasses import replace

    from ..core.memory import max_batch_that_fits
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


def _weight_lens_batch(model, part, context=4096, figure="estimate", **fmt):
    """Smallest decode batch whose weight-matmul FLOPs per weight byte (the weight lens) reach the ridge
    under a number format: ``figure="estimate"`` the estimate's ridge, a weight-only dequantisation in
    series with the matmuls (lesson 4's :func:`~roofline_lessons.topics.batching.critical_batch`);
    ``figure="bound"`` the lower bound's, the dequantisation overlapped, so the matmuls' own ridge
    (lesson 12's :attr:`~roofline_lessons.topics.shrinking.BatchSweep.weight_lens_critical_batch_lower_bound`)."""
    if figure == "estimate":
        from ..topics.batching import critical_batch

        return critical_batch(model, part, context, lens="weights only", **_format_fields(**fmt))
    if figure != "bound":
        raise ValueError(f"figure must be 'estimate' or 'bound', got {figure!r}")
    from ..topics.shrinking import batch_sweep

    return batch_sweep(model, part, context, **_format_fields(**fmt)).weight_lens_critical_batch_lower_bound


def _lens_batch(model, part, context=4096, lens="all traffic", figure="estimate", **fmt):
    """The critical batch through either lens of lesson 4 (``lens``: "all traffic" or "weights only")
    under a number format (sequences): ``figure="estimate"`` the estimate's (unfused bytes, a weight-only
    dequantisation in series), ``figure="bound"`` the lower bound's (compulsory bytes, the dequantisation
    overlapped: lesson 12's :class:`~roofline_lessons.topics.shrinking.BatchSweep`)."""
    if figure == "estimate":
        from ..topics.batching import critical_batch

        return critical_batch(model, part, context, lens=lens, **_format_fields(**fmt))
    if figure != "bound":
        raise ValueError(f"figure must be 'estimate' or 'bound', got {figure!r}")
    if lens == "weights only":
        return _weight_lens_batch(model, part, context, figure="bound", **fmt)
    if lens != "all traffic":
        raise ValueError(f"lens must be 'all traffic' or 'weights only', got {lens!r}")
    from ..topics.shrinking import batch_sweep

    return batch_sweep(model, part, context, **_format_fields(**fmt)).critical_batch_lower_bound


def _weight_read_ratio(model, weights="int4", group=None, recipe=""):
    """The weight bytes a BF16 decode step reads ÷ those it reads in ``weights`` (×): every weight once,
    the embedding one row, the format's scales and its BF16 layers (by default the embedding, the
    lm_head and the norms) included. The same at any context and batch."""
    from ..core.costs import model_cost

    def read(**fmt):
        return float(model_cost(model, phase="decode", context_tokens=0, **fmt).weight_bytes)

    return read() / read(**_format_fields(weights=weights, group=group, recipe=recipe))


def _matmul_time_ms(model, part, tokens=4096, batch=1, **fmt):
    """A decode step's compute time without the dequantisation (its matmuls and the rest alone), ms."""
    return 1e3 * (_formatted(model, part, "compute_time_s", tokens=tokens, batch=batch, **fmt)
                  - _formatted(model, part, "dequant_time_s", tokens=tokens, batch=batch, **fmt))


def _zero_point_bytes_per_weight(group=128):
    """Bytes per int4 weight with a bf16 scale and a 4-bit zero point per ``group`` weights."""
    from ..topics.shrinking import int4_bytes_per_weight

    return int4_bytes_per_weight(int(group), zero_point=True)


def _mla_fp8_vllm_bytes(model="deepseek-v3", per_layer=False, layout="fp8_ds_mla"):
    """Bytes per token of an MLA model's cache in one of vLLM's FP8 layouts. ``layout="fp8"``: dense MLA
    with ``--kv-cache-dtype fp8``, the latent and the RoPE key both one byte an element (576 bytes per
    layer for DeepSeek-V3, one scale per tensor). ``layout="fp8_ds_mla"``: the packed layout of the sparse
    FlashMLA kernels (DeepSeek-V3.2's sparse attention; vLLM's FlashMLASparse backend), the latent in FP8
    with four FP32 scales (one per 128 elements) and the RoPE key kept in BF16 (656 bytes per layer)."""
    m = get_model(model)
    if layout == "fp8":
        layer = m.kv_lora_rank + m.qk_rope_head_dim
    elif layout == "fp8_ds_mla":
        layer = m.kv_lora_rank * 1 + (m.kv_lora_rank // 128) * 4 + m.qk_rope_head_dim * 2
    else:
        raise ValueError(f"layout must be 'fp8' or 'fp8_ds_mla', got {layout!r}")
    return float(layer if per_layer else layer * m.num_mla_layers)


# ---- the special-function rate FlashAttention-3 states (catalog: h100-sxm) ---------------------

def _special_function_tflops():
    """The H100 SXM's special-function (exponential) rate, TFLOP/s, from the hardware catalog (its
    source: FlashAttention-3, Shah et al., 2024, §3.1: "989 TFLOPS of FP16 matmul but only 3.9 TFLOPS
    of special functions")."""
    return get_part("h100-sxm").special_function_peak_ops_per_s() / 1e12


def _exp_time_share(head_dim=128):
    """Time of one softmax exponential per query–key score on the H100 SXM's special-function units ÷
    time of the score's 4·d matmul FLOPs (QKᵀ and PV) on its BF16 tensor cores (FlashAttention-3 §3.1's
    argument). H100 SXM only: the catalog's exponential rate is FA3's figure for that part."""
    part = get_part("h100-sxm")
    matmul = 4 * int(head_dim) / part.peak_flops_per_s("bf16")
    return (1 / part.special_function_peak_ops_per_s()) / matmul


def _bandwidth_ratio(part, ref_part):
    """``part``'s memory bandwidth ÷ ``ref_part``'s (a plain ratio)."""
    return get_part(part).memory_bandwidth_bytes_per_s / get_part(ref_part).memory_bandwidth_bytes_per_s


# ---- red flags' numbers: what a classic mistake gives as the answer ---------------------------

def _stated(value):
    """A figure a red flag states outright (0 bytes, "4× faster", n − 1): the number a learner making that
    mistake types, for the checker to reject."""
    return float(value)


def _params_time_ms(model, part, bytes_per_parameter=2):
    """Every parameter × ``bytes_per_parameter`` ÷ bandwidth, ms: 2·P ÷ β, the decode time that forgets
    the KV cache (and reads the whole embedding table)."""
    return 1e3 * get_model(model).parameter_count() * float(bytes_per_parameter) / \
        get_part(part).memory_bandwidth_bytes_per_s


def _dequant_ms(model, part, rate="vector", tokens=4096, batch=1, weights="int4"):
    """A step's dequantisation time, ms: at the vector rate the placement prices it at (``rate="vector"``),
    or at the BF16 tensor-core rate (``rate="tensor"``: a red flag's number)."""
    deq = _formatted(model, part, "dequant_time_s", tokens=tokens, batch=batch, weights=weights, scale=1e3)
    if rate == "vector":
        return deq
    if rate != "tensor":
        raise ValueError(f"rate must be 'vector' or 'tensor', got {rate!r}")
    vector = _formatted(model, part, "vector_peak_flops_per_s", weights=weights)
    return deq * vector / get_part(part).peak_flops_per_s("bf16")


def _dequant_tokens_equivalent(model, part):
    """How many tokens' BF16 multiply-adds (2 FLOPs each, on the tensor cores) take as long as
    dequantising the weight once (``DEQUANT_FLOPS_PER_WEIGHT`` on the vector units, at the rate the
    placement prices them)."""
    from ..core.costs import DEQUANT_FLOPS_PER_WEIGHT
    vector = _formatted(model, part, "vector_peak_flops_per_s", weights="int4")
    return (DEQUANT_FLOPS_PER_WEIGHT / vector) / (2.0 / get_part(part).peak_flops_per_s("bf16"))


# ---- lesson 13: how close real engines get ---------------------------------------------------


def _engine_run(run, quantity="fraction", scale=1.0, measured_of=None):
    """A published run as lesson 13 prices it (:func:`~roofline_lessons.topics.real_engines.price_run`):
    its ``"fraction"`` of the bound, or its ``"bound"``, ``"estimate"`` or ``"measured"`` figure in its
    metric's unit, or ``"bound_over_estimate"`` (how far the estimate's conventions fall below the
    bound), × ``scale``."""
    from ..topics.real_engines import price_run
    p = price_run(run)
    if measured_of is not None:  # another run's published figure over this run's bound (a red flag's number)
        return price_run(measured_of).measured / p.bound * scale
    value = {"fraction": p.fraction_of_bound, "bound": p.bound, "estimate": p.estimate, "measured": p.measured,
             "bound_over_estimate": p.as_rate(p.bound) / p.as_rate(p.estimate)}[quantity]
    return value * scale


def _engine_regime(regime="all", quantity="median", scale=1.0):
    """The lowest, median or highest fraction of the bound among the catalogued runs of one regime
    (``"all"``: every run), × ``scale``; ``quantity="runs"``: how many."""
    import numpy as np

    from ..topics.real_engines import priced_runs
    f = [p.fraction_of_bound for p in priced_runs() if regime in ("all", p.run.regime)]
    return {"lowest": min(f), "median": float(np.median(f)), "highest": max(f), "runs": len(f)}[quantity] * scale


def _engine_forecast_error(quantity="median", in_sample=False):
    """Lesson 13's leave-one-out forecasts: the median or worst absolute error, as a percentage;
    ``in_sample``: each run forecast from its whole regime, itself included (the circular way)."""
    import numpy as np

    from ..topics.real_engines import Forecast, leave_one_out, priced_runs
    priced = priced_runs()
    if in_sample:
        forecasts = [Forecast(p, float(np.median([q.fraction_of_bound for q in priced if q.run.regime == p.run.regime])),
                              sum(q.run.regime == p.run.regime for q in priced)) for p in priced]
    else:
        forecasts = leave_one_out(priced)
    errors = np.abs([f.error for f in forecasts])
    return 100.0 * float(np.median(errors) if quantity == "median" else errors.max())


def _engine_sizing(model, part, target, tpot_ms, prompt, output, tensor=1, regime="max throughput", which="median",
                   weights="bf16", quantity="chips"):
    """Lesson 13's sizing: chips (or ``"batch"`` per copy, ``"copies"``, ``"tpot_ms"``) for ``target``
    output tokens/s at TPOT ≤ ``tpot_ms``, at the ``which`` (lowest, median, highest) fraction of the
    bound of the ``regime``'s runs; ``which="bound"``: an efficiency of 1."""
    from ..topics.real_engines import calibrate, priced_runs, size_deployment
    eff = 1.0 if which == "bound" else dict(zip(("lowest", "median", "highest"),
                                                calibrate(priced_runs(), regime)))[which]
    fmt = {"weights_dtype": weights, "kv_dtype": weights, "compute_dtype": weights if weights != "int4" else "bf16"}
    s = size_deployment(model, part, target_output_tokens_per_s=target, tpot_slo_s=tpot_ms / 1e3,
                        prompt_tokens=prompt, output_tokens=output, efficiency=eff, tensor=tensor, **fmt)
    return {"chips": s.chips, "copies": s.copies, "batch": s.batch, "tpot_ms": s.tpot_s * 1e3,
            "efficiency": s.efficiency}[quantity]


# ---- lessons 10, 12 and 14: queues, money at an objective, engine mechanics ------------------

def _littles_law(rate_per_s=None, latency_s=None, concurrency=None, wait_s=0.0):
    """Little's law, L = λ·W (:func:`~roofline_lessons.topics.serving.littles_law`): give two of
    ``rate_per_s`` (λ, requests/s), ``latency_s`` (W, seconds in the system) and ``concurrency`` (L),
    get the third. ``wait_s`` (seconds queued before service) is added to ``latency_s``."""
    from ..topics.serving import littles_law

    latency = None if latency_s is None else float(latency_s) + float(wait_s)
    return float(littles_law(concurrency=concurrency, throughput_per_s=rate_per_s, latency_s=latency))


def _swept_batches(max_batch):
    """Batches 1, 2, 4, … up to ``max_batch`` (the goodput sweeps' grid)."""
    top = int(max_batch)
    if top < 1:
        raise ValueError(f"max_batch must be a whole number >= 1, got {max_batch!r}")
    return [2 ** i for i in range(top.bit_length()) if 2 ** i <= top]


def _goodput(model, part, prompt, output, ttft_ms, tpot_ms, quantity="requests_per_s", max_batch=256,
             figures="estimate"):
    """Lesson 10's static-batch goodput sweep (:func:`~roofline_lessons.topics.serving.goodput_requests_per_s`)
    over batches 1, 2, 4, … ``max_batch``, TTFT ≤ ``ttft_ms`` and TPOT ≤ ``tpot_ms`` (milliseconds):
    ``quantity`` ``"requests_per_s"`` (the best goodput), ``"batch"`` (the batch giving it),
    ``"tokens_per_s"`` (its output tokens/s), ``"wait_s"`` (the mean wait, seconds, of a request arriving
    at a random moment while such batches run back to back: what the sweep assumes away), ``"tpot_ms"``
    and ``"ttft_ms"`` (that batch's), ``"ttft_with_wait_ms"`` (its TTFT plus that mean wait),
    ``"largest_fit"`` (the largest swept batch that fits, SLOs or not) or ``"fit_requests_per_s"``
    (requests/s at that batch: what a sweep blind to the SLOs picks)."""
    from ..topics.serving import goodput_requests_per_s

    g = goodput_requests_per_s(model, part, prompt_tokens=prompt, output_tokens=output,
                               batches=_swept_batches(max_batch), ttft_slo_s=float(ttft_ms) / 1e3,
                               tpot_slo_s=float(tpot_ms) / 1e3, figures=figures)
    if quantity in ("largest_fit", "fit_requests_per_s"):
        fit = [i for i, ok in enumerate(g.fits_in_memory) if ok]
        if not fit:
            raise ValueError("no swept batch fits in memory")
        i = fit[-1]
        return float(g.batch[i]) if quantity == "largest_fit" else float(g.requests_per_s[i])
    if g.best_batch is None:
        raise ValueError(f"no swept batch meets TTFT <= {ttft_ms} ms and TPOT <= {tpot_ms} ms")
    i = int(list(g.batch).index(g.best_batch))
    figures_at = {"requests_per_s": g.best_goodput_requests_per_s, "batch": g.best_batch,
                  "tokens_per_s": g.best_goodput_requests_per_s * int(output), "wait_s": g.mean_arrival_wait_s[i],
                  "tpot_ms": 1e3 * g.tpot_s[i], "ttft_ms": 1e3 * g.ttft_s[i],
                  "ttft_with_wait_ms": 1e3 * (g.ttft_s[i] + g.mean_arrival_wait_s[i])}
    if quantity not in figures_at:
        raise ValueError(f"quantity must be one of {', '.join([*figures_at, 'largest_fit', 'fit_requests_per_s'])}, "
                         f"got {quantity!r}")
    return float(figures_at[quantity])


def _cost_at_slo(model, part, prompt, output, ttft_ms, tpot_ms, price_per_hour, batch="best", max_batch=256):
    """US dollars per million output tokens (:func:`~roofline_lessons.topics.serving.cost_per_million_output_tokens`)
    for one chip at ``price_per_hour`` (the learner's price; the catalog holds none) serving static batches
    of ``prompt`` in and ``output`` out, tokens/s by the estimate: ``batch="best"`` at the batch of best
    goodput under TTFT ≤ ``ttft_ms`` and TPOT ≤ ``tpot_ms`` (:func:`_goodput`), ``"largest fit"`` at the
    largest swept batch that fits whatever its latency (a red flag's number), or at a given batch."""
    from ..topics.serving import cost_per_million_output_tokens, request_timeline

    if batch == "best":
        tokens_per_s = _goodput(model, part, prompt, output, ttft_ms, tpot_ms, "tokens_per_s", max_batch)
    else:
        b = _goodput(model, part, prompt, output, ttft_ms, tpot_ms, "largest_fit", max_batch) \
            if batch == "largest fit" else int(batch)
        t = request_timeline(model, part, prompt_tokens=prompt, output_tokens=output, batch=int(b))
        tokens_per_s = int(b) * int(output) / float(t.e2e_s)
    return float(cost_per_million_output_tokens(float(price_per_hour), tokens_per_s))


def _mixed_step(model, part, decode_batch, context, chunk, cached=0, quantity="time_s", scale=1000.0):
    """One continuous-batching step (:func:`~roofline_lessons.topics.serving.mixed_step`): a ``chunk``-token
    prefill chunk (``cached`` of its prompt's tokens already in the cache) riding with ``decode_batch``
    decodes at ``context`` tokens cached; ``quantity`` names a :class:`MixedStep` field (``time_s``,
    ``decode_only_time_s``, ``lower_bound_s``, ``decode_only_lower_bound_s``, …), times ``scale``."""
    from ..topics.serving import mixed_step

    m = mixed_step(model, part, decode_batch=int(decode_batch), decode_context_tokens=int(context),
                   prefill_chunk_tokens=int(chunk), prefill_cached_tokens=int(cached))
    return float(scale) * float(getattr(m, quantity))


def _kv_transfer_ms(model, part, context, kind="scale-out", dtype="bf16", batch=1):
    """Milliseconds to move ``batch`` sequences' KV cache at ``context`` tokens (``dtype``) over one of
    ``part``'s links (``kind``: "scale-out", "pcie" or "scale-up") at its per-direction bandwidth: the
    bytes alone, no per-message latency (what a disaggregated prefill ships to its decode chip, or what a
    swap to host memory moves each way)."""
    from ..core.memory import kv_cache_bytes_per_sequence

    nbytes = float(kv_cache_bytes_per_sequence(model, int(context), dtype)) * int(batch)
    return 1e3 * nbytes / get_part(part).link(kind).per_direction_bytes_per_s


def _scale_block(fmt):
    """Elements that share one scale in a 4-bit block format: ``"mxfp4"`` (OCP MX, the course's ``fp4``)
    or ``"nvfp4"``."""
    from ..core.dtypes import DEFAULT_WEIGHT_GROUP
    from ..topics.shrinking import NVFP4_BLOCK

    blocks = {"mxfp4": DEFAULT_WEIGHT_GROUP["fp4"], "nvfp4": NVFP4_BLOCK}
    if fmt not in blocks:
        raise ValueError(f"fmt must be one of {', '.join(blocks)}, got {fmt!r}")
    return float(blocks[fmt])


def _nvfp4_bytes_per_weight():
    """Bytes per NVFP4 weight, its block scale included (the per-tensor scale's share left out)."""
    from ..topics.shrinking import nvfp4_bytes_per_weight

    return float(nvfp4_bytes_per_weight())


# ---- lesson 14: kernel shapes (:mod:`roofline_lessons.topics.kernels`) ------------------------

def _kv_caching_layers(m) -> int:
    """Layers of ``m`` that hold a KV cache (the cache per token ÷ one layer's)."""
    return int(round(m.kv_bytes_per_token("bf16") / m.kv_bytes_per_token_per_layer("bf16")))


def _decode_grid(model, part, context, batch=1, quantity="fill_percent", splits="none", heads="kv"):
    """A decode attention kernel's grid for ``model`` on ``part``, one CTA per (sequence, KV head, KV
    split) (:func:`~roofline_lessons.topics.kernels.decode_attention_ctas`): ``splits="none"`` (one
    split), ``"flash"`` (flash-decoding's simplest rule, :func:`~roofline_lessons.topics.kernels.flash_decoding_splits`,
    at ``context`` tokens cached) or ``"waves"`` (:func:`~roofline_lessons.topics.kernels.wave_efficient_splits`). ``quantity``: ``"fill_percent"`` (the share of SMs holding a CTA, %,
    :func:`~roofline_lessons.topics.kernels.sm_fill`), ``"splits"``, ``"ctas"``, ``"units"`` (the part's
    SMs), ``"time_ms"`` (the
    estimate :func:`~roofline_lessons.topics.kernels.decode_attention_time_with_sm_limit_s` of the step's
    KV reads, every caching layer: each SM pulls its share of the bandwidth, the CTAs in waves; a convention), ``"bound_ms"`` (the same bytes
    at the full bandwidth) or ``"combine_mb"`` (the splits' partials written and read back, every
    caching layer, MB). ``heads="query"``: one CTA per query head instead (a red flag's count)."""
    from ..core.memory import kv_cache_bytes_per_sequence
    from ..topics import kernels

    m, p = get_model(model), get_part(part)
    if heads not in ("kv", "query"):
        raise ValueError(f"heads must be 'kv' or 'query', got {heads!r}")
    per_seq = m.num_key_value_heads if heads == "kv" else m.num_attention_heads
    if splits == "none":
        n_splits = 1
    elif splits == "flash":
        n_splits = kernels.flash_decoding_splits(p, batch=int(batch), kv_heads=per_seq, context_tokens=int(context))
    elif splits == "waves":
        n_splits = kernels.wave_efficient_splits(p, batch=int(batch), kv_heads=per_seq, context_tokens=int(context))
    else:
        raise ValueError(f"splits must be 'none', 'flash' or 'waves', got {splits!r}")
    ctas = kernels.decode_attention_ctas(int(batch), per_seq, n_splits)
    kv_bytes = float(kv_cache_bytes_per_sequence(m, int(context))) * int(batch)
    layers = _kv_caching_layers(m)
    figures = {
        "fill_percent": lambda: 100 * kernels.sm_fill(p, ctas), "splits": lambda: n_splits, "ctas": lambda: ctas,
        "units": lambda: kernels.wave_quantization(1, p).compute_units,
        "time_ms": lambda: 1e3 * kernels.decode_attention_time_with_sm_limit_s(p, kv_bytes=kv_bytes, ctas=ctas),
        "bound_ms": lambda: 1e3 * kv_bytes / p.memory_bandwidth_bytes_per_s,
        "combine_mb": lambda: layers * kernels.split_kv_combine_bytes(int(batch), m.num_attention_heads, m.head_dim,
                                                                     n_splits) / 1e6,
    }
    if quantity not in figures:
        raise ValueError(f"quantity must be one of {', '.join(figures)}, got {quantity!r}")
    return float(figures[quantity]())


def _gqa_fill_percent(model, query_tokens=1, mma_m=64, packed=True):
    """Share (%) of an MMA tile's ``mma_m`` rows that one KV head's decode queries fill
    (:func:`~roofline_lessons.topics.kernels.gqa_mma_m_fill`), the group being ``model``'s query heads
    per KV head: packed (the group's heads × ``query_tokens`` rows) or head by head (``packed=False``)."""
    from ..topics.kernels import gqa_mma_m_fill

    m = get_model(model)
    group = m.num_attention_heads // m.num_key_value_heads
    return 100 * float(gqa_mma_m_fill(group, int(query_tokens), int(mma_m), packed=bool(packed)))


#: a decode GEMM of a dense model: its N (outputs) and K (inputs), from the model's config
_GEMM_SHAPES = {
    "down": lambda m: (m.hidden_size, m.intermediate_size),
    "gate_up": lambda m: (2 * m.intermediate_size, m.hidden_size),
    "qkv": lambda m: ((m.num_attention_heads + 2 * m.num_key_value_heads) * m.head_dim, m.hidden_size),
    "o": lambda m: (m.hidden_size, m.num_attention_heads * m.head_dim),
}


def _gemm_waves(model, part, batch, matrix="down", quantity="busy_percent", splits=1, tile_m=128, tile_n=128):
    """One of ``model``'s decode GEMMs (``matrix``: "down", "gate_up", "qkv" or "o"; M = ``batch``) cut
    into ``tile_m`` × ``tile_n`` output tiles, each split ``splits`` ways along K, on ``part``'s SMs
    (:func:`~roofline_lessons.topics.kernels.wave_quantization`): ``quantity`` ``"busy_percent"`` (the
    wave efficiency, %), ``"tiles"`` (CTAs), ``"waves"``, ``"units"`` (the part's SMs or CUs), ``"n"``
    (the GEMM's N) or ``"tile_percent"`` (the useful share of the tiles' rows and columns, %,
    :func:`~roofline_lessons.topics.kernels.tile_quantization_efficiency`)."""
    from ..topics import kernels

    m = get_model(model)
    if matrix not in _GEMM_SHAPES:
        raise ValueError(f"matrix must be one of {', '.join(_GEMM_SHAPES)}, got {matrix!r}")
    n, k = _GEMM_SHAPES[matrix](m)
    tiles = kernels.split_k_tiles(int(batch), n, k, int(splits), int(tile_m), int(tile_n))
    w = kernels.wave_quantization(tiles, get_part(part))
    figures = {"busy_percent": lambda: 100 * w.efficiency, "tiles": lambda: w.tiles, "waves": lambda: w.waves,
               "units": lambda: w.compute_units, "n": lambda: n,
               "tile_percent": lambda: 100 * kernels.tile_quantization_efficiency(int(batch), n, int(tile_m),
                                                                                  int(tile_n))}
    if quantity not in figures:
        raise ValueError(f"quantity must be one of {', '.join(figures)}, got {quantity!r}")
    return float(figures[quantity]())


def _allreduce_us(model, part, chips, tokens=1, algorithm="one_shot", figure="estimate"):
    """One tensor-parallel all-reduce of ``model``'s activations (``tokens`` × hidden × 2 bytes) over
    ``chips`` chips of ``part``'s in-server link: ``figure="estimate"`` by ``algorithm``
    (:func:`~roofline_lessons.topics.kernels.allreduce_time_s`: steps × the link's assumed latency +
    bytes ÷ per-direction bandwidth), µs; ``"bound"`` the lower bound (least bytes, no latency,
    :func:`~roofline_lessons.topics.kernels.allreduce_lower_bound_s`), µs; ``"message_kib"`` the
    message, KiB."""
    from ..topics import kernels
    from ..topics.many_chips import activation_message_bytes

    message = float(activation_message_bytes(model, int(tokens)))
    if figure == "message_kib":
        return message / 1024
    if figure == "bound":
        return 1e6 * float(kernels.allreduce_lower_bound_s(message, int(chips), part))
    if figure != "estimate":
        raise ValueError(f"figure must be 'estimate', 'bound' or 'message_kib', got {figure!r}")
    return 1e6 * float(kernels.allreduce_time_s(message, int(chips), part, algorithm))


def _logits_share(model, part, batch, context, figure="share_percent", passes=None):
    """The lm_head and the sampler in one decode step
    (:func:`~roofline_lessons.topics.kernels.logits_share_of_decode_step`, an estimate: every operator a
    kernel of its own): ``figure`` ``"share_percent"`` (their share of the
    step, %), ``"lm_head_gb"`` (the lm_head's weights read, GB, :func:`~roofline_lessons.topics.kernels.logits_cost`),
    ``"logits_mb"`` (the logits in FP32, batch × vocabulary × 4 bytes, MB), or ``"one layer"`` (100 ÷
    (layers + 1): a red flag's share, the lm_head counted as one more layer). ``passes``: the sampler's
    passes over the logits (None: the module's default)."""
    from ..topics import kernels

    m = get_model(model)
    if figure == "one layer":
        return 100.0 / (m.num_hidden_layers + 1)
    if figure in ("lm_head_gb", "logits_mb"):
        c = kernels.logits_cost(m, int(batch))
        return c.lm_head_weight_bytes / 1e9 if figure == "lm_head_gb" else float(c.logits_write_bytes) / 1e6
    if figure != "share_percent":
        raise ValueError(f"figure must be 'share_percent', 'lm_head_gb', 'logits_mb' or 'one layer', got {figure!r}")
    kw = {} if passes is None else {"sampling_passes": int(passes)}
    return 100 * float(kernels.logits_share_of_decode_step(m, part, int(batch), int(context), **kw).share_estimate)


NUMERIC_FUNCTIONS: dict[str, Callable[..., float]] = {
    "peak_tflops": _peak_tflops, "bandwidth_tbs": _bandwidth_tbs, "bandwidth_ratio": _bandwidth_ratio, "capacity_gib": _capacity_gib,
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
    "measured_value": _measured_value, "gpt_fast_70b_estimate": _gpt_fast_70b_estimate,
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
    "mla_fp8_vllm_bytes": _mla_fp8_vllm_bytes, "special_function_tflops": _special_function_tflops,
    "exp_time_share": _exp_time_share, "stated": _stated, "params_time_ms": _params_time_ms,
    "weight_read_ratio": _weight_read_ratio,
    "dequant_ms": _dequant_ms, "batch_gain": _batch_gain, "gpt_fast_bound": _gpt_fast_bound,
    "with_cuda_graphs": _with_cuda_graphs, "reported_gib": _reported_gib, "bandwidth_over": _bandwidth_over,
    "tokens_per_s_at": _tokens_per_s_at, "halved_bytes_speedup": _halved_bytes_speedup,
    "serving_change": _serving_change,
    "engine_run": _engine_run, "engine_regime": _engine_regime, "engine_forecast_error": _engine_forecast_error,
    "engine_sizing": _engine_sizing,
    "littles_law": _littles_law, "goodput": _goodput, "cost_at_slo": _cost_at_slo, "mixed_step": _mixed_step,
    "kv_transfer_ms": _kv_transfer_ms, "scale_block": _scale_block, "nvfp4_bytes_per_weight": _nvfp4_bytes_per_weight,
    "decode_grid": _decode_grid, "gqa_fill_percent": _gqa_fill_percent, "gemm_waves": _gemm_waves,
    "allreduce_us": _allreduce_us, "logits_share": _logits_share,
}


# ---- the setups a figure prices: does it fit, is it within the model's context? ----------------

@dataclass(frozen=True)
class Setup:
    """One setup a card's figure prices: what it needs in memory (per chip) against what the part holds,
    and the longest sequence in it against the model's context."""

    what: str
    required_bytes: float
    capacity_bytes: float
    tokens: float  #: the longest sequence the step holds (tokens cached + new)
    max_context: float

    @property
    def fits(self) -> bool:
        return self.required_bytes <= self.capacity_bytes

    @property
    def within_context(self) -> bool:
        return self.tokens <= self.max_context


def _placed(p, what="") -> Setup:
    w = p.workload
    tokens = float(np.max(w.prompt_tokens)) if w.phase == "prefill" else float(np.max(w.context_tokens)) + 1
    chips = f" on {p.chips} chips" if p.chips > 1 else ""
    label = what or (f"{p.model.id} on {p.part.id}{chips}, {w.phase}, batch {num(np.max(w.batch), 6)}, "
                     f"{num(tokens, 6)} tokens, weights {w.weights_dtype}")
    return Setup(label, float(np.max(p.memory_required_bytes)), float(p.part.memory_capacity_bytes), tokens,
                 float(p.model.max_context_tokens))


def _context_only(model, tokens) -> Setup:
    """A figure of a model at a context, on no part: only the context can be exceeded."""
    m = get_model(model)
    return Setup(f"{m.id} at {num(float(tokens), 6)} tokens", 0.0, math.inf, float(tokens), float(m.max_context_tokens))


def _step(model, part, phase="decode", tokens=4096, batch=1, **_):
    from ..core.placement import place

    fields = {"prompt_tokens": tokens} if phase == "prefill" else {"context_tokens": tokens}
    return [_placed(place(model, part, phase=phase, batch=batch, **fields))]


def _timeline(model, part, prompt, output, batch=1, k=0, alpha=0.0, draft="", **_):
    from ..topics.serving import request_timeline

    out = []
    for kk, dd in {(0, ""), (k, draft)}:
        t = request_timeline(model, part, prompt_tokens=prompt, output_tokens=output, batch=batch,
                             speculative_tokens=kk, acceptance=alpha if kk else 0.0, draft_model=dd or None)
        what = f"{model}{' + draft ' + dd if dd else ''} on {part}, batch {batch}, {prompt:,} in + {output:,} out"
        out.append(Setup(what, float(t.memory_required_bytes), float(t.memory_capacity_bytes), float(prompt + output),
                         float(get_model(model).max_context_tokens)))
    return out


def _split_setups(model, part, ref_part=None, ref_tensor=1, ref_weights="bf16", context=None, tokens=4096,
                  batch=1, tensor=1, expert=1, pipeline=1, phase="decode", weights="bf16", chips=None, **_):
    tokens = tokens if context is None else context
    tensor = tensor if chips is None else chips
    out = [_placed(_split(model, part, phase=phase, tokens=tokens, batch=batch, tensor=tensor, expert=expert,
                          pipeline=pipeline, weights=weights))]
    if ref_part is not None:
        out.append(_placed(_split(model, ref_part, phase=phase, tokens=tokens, batch=batch, tensor=ref_tensor,
                                  weights=ref_weights)))
    return out


def _format_setups(model, part, phase="decode", tokens=4096, batch=1, tensor=1, both=False, **fmt):
    fmt = {k: v for k, v in fmt.items() if k in ("weights", "compute", "kv", "group", "recipe", "absorbed", "state")}
    out = [_placed(_format_placement(model, part, phase, tokens, batch, tensor, **fmt))]
    if both:  # a speed-up: the BF16 reference is a setup too
        out.append(_placed(_format_placement(model, part, phase, tokens, batch, tensor)))
    return out


def _at_batch(fn):
    """A critical batch: the setup is decode at that batch (capacity is ignored in finding it)."""
    def setups(model, part, context=4096, **kw):
        from ..core.placement import place

        b = NUMERIC_FUNCTIONS[fn](model, part, context, **kw)
        if b is None:
            return []
        fields = {k: v for k, v in kw.items() if k not in ("lens", "figure")}
        return [_placed(place(model, part, phase="decode", batch=b, context_tokens=context,
                              **_format_fields(**fields)))]
    return setups


def _tokens_of(model, context=None, tokens=None, phase="decode", **_):
    t = context if context is not None else tokens
    return [_context_only(model, t + 1 if phase == "decode" else t)]


#: how to find the setups each figure prices (see :meth:`Numeric.setups`)
SETUP_FUNCTIONS: dict[str, Callable[..., list[Setup]]] = {
    "time_ms": _step,
    "tokens_per_s": lambda model, part, context, batch=1, **_: _step(model, part, "decode", context, batch),
    "intensity": lambda model, part, phase, tokens, batch=1, **_: _step(model, part, phase, tokens, batch),
    "weight_lens_over_ridge": lambda model, part, tokens: _step(model, part, "prefill", tokens),
    "lever": lambda model, part, phase, lever: _step(model, part, phase, 8192),  # lever_speedups' default
    "critical_batch": _at_batch("critical_batch"),
    "batch_gain": lambda model, part, context, batch, quantity="tokens/s", ref_batch=1: _step(
        model, part, "decode", context, max(batch, ref_batch)),
    "weight_lens_batch": _at_batch("weight_lens_batch"),
    "lens_batch": _at_batch("lens_batch"),
    "serving": _timeline,
    "spec_speedup": _timeline,
    "parallel": lambda model, part, quantity, scale=1.0, **split: _split_setups(model, part, **split),
    "comm": lambda model, part, what, collective="", scale=1.0, **split: _split_setups(model, part, **split),
    "all_reduce_multiple": lambda model, part, chips: _split_setups(model, part, chips=chips),
    "kv_share_per_chip": lambda model, part, tensor, context=4096, batch=1, copies=False: _split_setups(
        model, part, context=context, batch=batch, tensor=tensor),
    "free_after_weights_gib": lambda model, part, tensor=1, weights="bf16", ref_part=None, ref_tensor=1,
    ref_weights="bf16": _split_setups(model, part, ref_part, ref_tensor, ref_weights, tensor=tensor, weights=weights),
    "split_speedup": lambda model, part, ref_part, tensor=1, pipeline=1, ref_tensor=1, ref_weights="bf16",
    context=4096, batch=1, latency=None: _split_setups(model, part, ref_part, ref_tensor, ref_weights,
                                                       context=context, batch=batch, tensor=tensor, pipeline=pipeline),
    "formatted": lambda model, part, quantity, **kw: _format_setups(model, part, **kw),
    "format_speedup": lambda model, part, **kw: _format_setups(model, part, both=True, **kw),
    "matmul_time_ms": lambda model, part, **kw: _format_setups(model, part, **kw),
    "dequant_ms": lambda model, part, rate="vector", tokens=4096, batch=1, weights="int4": _format_setups(
        model, part, tokens=tokens, batch=batch, weights=weights),
    "dequant_tokens_equivalent": lambda model, part: _format_setups(model, part, weights="int4"),
    "byte_share": lambda model, what="kv", batch=1, context=4096, **fmt: _tokens_of(model, context),
    "step_gb": lambda model, context, traffic="compulsory": _tokens_of(model, context),
    "step_tflop": lambda model, phase, tokens: _tokens_of(model, tokens=tokens, phase=phase),
    "kv_gib": lambda model, context, dtype="bf16": _tokens_of(model, context, phase="cache"),
    "window_kv_gib": lambda model, context, dtype="bf16", kind="all": _tokens_of(model, context, phase="cache"),
    "kv_share_of_capacity": lambda model, part, context: _tokens_of(model, context, phase="cache"),
    "op_intensity": lambda model, op, context=32768, absorbed=None: _tokens_of(model, context),
    "mla_step": lambda model, context=32768, phase="decode", **_: _tokens_of(model, context, phase=phase),
    "kv_crossing": lambda model, batch: _tokens_of(model, NUMERIC_FUNCTIONS["kv_crossing"](model, batch),
                                                   phase="cache"),
    "tokens_per_s_at": lambda model, context, bytes_per_s: _tokens_of(model, context),
    "serving_change": lambda model, part, quantity, prompt, ref_prompt, output, change="ratio": [
        s for pr in (prompt, ref_prompt) for s in _timeline(model, part, pr, output)],
    "halved_bytes_speedup": lambda model, part, phase="decode", tokens=8192, batch=1: _step(
        model, part, phase, tokens, batch),
    # lesson 14: a prefill chunk riding with a decode batch (the decode step and the chunk's prompt so far)
    "mixed_step": lambda model, part, decode_batch, context, chunk, cached=0, **_: (
        _step(model, part, "decode", context, decode_batch) + _step(model, part, "prefill", cached + chunk)),
    "kv_transfer_ms": lambda model, part, context, batch=1, **_: _tokens_of(model, context, phase="cache"),
    "decode_grid": lambda model, part, context, batch=1, **_: _step(model, part, "decode", context, batch),
    "logits_share": lambda model, part, batch, context, **_: _step(model, part, "decode", context, batch),
}

#: figures that price no step of a model on a part (rates, ridges, sizes per token or per weight, counts,
#: catalog measurements), or whose setup fits by construction (the largest batch that fits)
NO_SETUP = frozenset({
    "peak_tflops", "bandwidth_tbs", "bandwidth_ratio", "capacity_gib", "weights_gib", "free_gib", "state_gib", "percent_of_peak",
    "max_context", "state_over_kv_tokens", "embedding_params_b", "ridge", "weights_gb", "experts", "max_batch",
    "kv_kib", "state_mib", "decode_attention", "params_b", "measured_percent", "gpt_fast_percent",
    "measured_ridge", "moe_bytes_ratio", "measured_value", "gpt_fast_70b_estimate", "tokens_per_verify", "link_gbs", "interconnect_ridge",
    "bubble_percent", "steady_idle_percent", "bytes_per_weight", "stored_weights_gib", "kv_token_bytes",
    "mla_expanded_kv_kib", "paged_batch", "model_field", "kv_element_bytes", "zero_point_bytes_per_weight",
    "mla_fp8_vllm_bytes", "special_function_tflops", "exp_time_share", "stated", "params_time_ms",
    "weight_read_ratio", "gpt_fast_bound", "with_cuda_graphs", "reported_gib", "bandwidth_over",
    # lesson 13: published runs, priced as the lesson prices them (a throughput bound takes the largest
    # batch that fits; the sizing only batches that fit 90 % of memory)
    "engine_run", "engine_regime", "engine_forecast_error", "engine_sizing",
    # lessons 10, 12 and 14: a queue's arithmetic, format constants; the goodput sweeps count only batches
    # that fit (the largest that fits, by construction) at prompt + output tokens within the card's context
    "littles_law", "goodput", "cost_at_slo", "scale_block", "nvfp4_bytes_per_weight",
    # lesson 14: kernel shapes (a GEMM's tiles, an MMA's rows, one collective) price no step's memory
    "gqa_fill_percent", "gemm_waves", "allreduce_us",
})


def _numeric(card_id: str, spec: dict) -> Numeric:
    n = dict(spec)
    fn = n.pop("fn")
    if fn not in NUMERIC_FUNCTIONS:
        raise ValueError(f"flashcards.toml: card {card_id!r} names unknown numeric fn {fn!r}")
    unit, tol = n.pop("unit", ""), float(n.pop("tolerance", 0.0))
    times = float(n.pop("times", 1.0))
    does_not_fit, past_context = not n.pop("fits", True), bool(n.pop("past_context", False))
    return Numeric(fn, tuple(sorted(n.items())), unit, tol, times, does_not_fit, past_context)


def _mistake(card_id: str, n_flags: int, entry: dict) -> Mistake:
    m = dict(entry)
    flag = int(m.pop("flag"))
    if not 0 <= flag < n_flags:
        raise ValueError(f"flashcards.toml: card {card_id!r} has a mistake for red flag {flag}, but "
                         f"{n_flags} red flags")
    if "none" in m:
        if len(m) != 1 or not str(m["none"]).strip():
            raise ValueError(f"flashcards.toml: card {card_id!r}, red flag {flag}: give either a reason "
                             "(none = ...) or a numeric fn, not both")
        return Mistake(flag, none=str(m["none"]))
    return Mistake(flag, numeric=_numeric(card_id, m))


def _card(entry: dict) -> Card:
    numeric = _numeric(entry["id"], entry["numeric"]) if "numeric" in entry else None
    values = tuple((name, _numeric(entry["id"], spec)) for name, spec in sorted(entry.get("values", {}).items()))
    red_flags = tuple(entry.get("red_flags", ()))
    return Card(
        id=entry["id"], lesson=int(entry["lesson"]), tags=tuple(entry.get("tags", ())), question=entry["question"],
        short=entry["short"], detailed=entry["detailed"], red_flags=red_flags,
        follow_ups=tuple(FollowUp(f["question"], f["answer"]) for f in entry.get("follow_ups", ())),
        numeric=numeric,
        values=values,
        mistakes=tuple(_mistake(entry["id"], len(red_flags), m) for m in entry.get("mistakes", ())),
        memory_aid=str(entry.get("memory_aid", "")), references=tuple(entry.get("references", ())),
    )


@cache
def deck() -> tuple[Card, ...]:
    """Every card, in lesson order (within a lesson, the file's order)."""
    cards = tuple(sorted((_card(e) for e in load_catalog("flashcards.toml")["cards"]), key=lambda c: c.lesson))
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


def check_numeric(card: Card, answer: Any, *, show_value: bool = True) -> NumericVerdict:
    """Is ``answer`` within the card's tolerance of the package's value? Never raises.
    ``show_value=False``: a wrong answer is told too high or too low (and the classic mistake it
    matches, if any) without the package's value, so the learner can try again first."""
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
                                    f"(within ±{100 * tol:g} %).")
    side = "high" if value > expected else "low"
    flags = list(dict.fromkeys(flag for flag, wrong in mistake_values(card)
                               if math.isclose(value, wrong, rel_tol=max(tol, 0.01))))
    named = f" That is the number of a classic mistake: {' Or: '.join(flags)}" if flags else ""
    if not show_value:
        return NumericVerdict(False, f"✗ {num(value, 4)} {card.numeric.unit} is too {side} (±{100 * tol:g} % is "
                                     f"accepted).{named} Try once more, or reveal the answer.")
    return NumericVerdict(False, f"✗ {num(value, 4)} {card.numeric.unit} is too {side}; the package says "
                                 f"{num(expected, 4)} (±{100 * tol:g} % accepted).{named}")


def mistake_values(card: Card) -> list[tuple[str, float]]:
    """(red flag, the answer it leads to) for each red flag of ``card`` that has a number; never raises."""
    out = []
    for m in card.mistakes:
        if m.numeric is None:
            continue
        try:
            out.append((card.red_flags[m.flag], m.numeric.value()))
        except (RooflineInputError, ValueError, KeyError, ZeroDivisionError):
            continue
    return out


__all__ = ["Card", "FollowUp", "Mistake", "Numeric", "NumericVerdict", "Setup", "all_tags", "check_numeric", "deck",
           "filter_cards", "get_card", "mistake_values"]
