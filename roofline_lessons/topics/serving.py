"""Serving a request: time to first token, time per output token, speculation, prefix caching,
continuous batching, the throughput–latency frontier, goodput, Little's law, cost and energy.

Two figures for every time and rate (:mod:`roofline_lessons.core.placement` defines both):

- the **estimate** (``ttft_s``, ``step_s``, ``tpot_s``, ``e2e_s``, ``output_tokens_per_s``): each
  step by the placement's estimate conventions (max(FLOPs / peak, unfused bytes / bandwidth),
  dequantisation in series, ring collectives at the assumed per-call latency; no scheduler or
  kernel-launch overhead), the batch served as **one static batch** (the whole batch prefills,
  then decodes; nothing else runs meanwhile);
- the **lower bound** of an idle server (``ttft_lower_bound_s``, ``step_lower_bound_s``,
  ``tpot_lower_bound_s``, ``e2e_lower_bound_s``): the same steps by the placement's lower-bound
  rules (compulsory bytes, units and least communication overlapped, no per-call latency); and
  the throughput **upper bound** ``output_tokens_per_s_upper_bound``: continuous batching's steady
  state, where the next requests' prefills ride in the running batch's decode steps
  (:func:`continuous_batching_cycle_lower_bound_s`). Both hold for the workload as priced: no
  engine serving that batch on that split, with that much of each prompt prefilled (all of it
  unless ``prefix_cached_tokens`` says otherwise), in those number formats (BF16 by default) and
  **without speculative decoding** (one token per sequence per weight pass), beats either. An
  engine that caches more of the prompt, or stores fewer bytes, serves a different workload and
  can beat them; one that speculates yields several tokens per pass and can beat both (the lower
  bounds are then bounds given the assumed draft, and the throughput upper bound is not computed).

The request model (what a lesson can quote):

- The prefill step yields the first output token: TTFT = the prefill step's time (seconds).
  With ``prefix_cached_tokens`` = p the first p prompt tokens' KV is already cached: their prefill
  is skipped, but the new tokens' attention still reads the cached prefix's KV (priced as a prefill
  of the whole prompt minus the per-token work of a prefill of the prefix: exact for the FLOPs of
  causal attention, the weight matmuls and the KV writes; the weights are read once).
- Each decode step then yields one more token per sequence, with the context one token longer
  each step: step i reads a cache of prompt + i tokens. ``decode_steps`` = output − 1.
- E2E = TTFT + Σ decode steps.
  TPOT (time per output token, the inter-token latency) = (E2E − TTFT) / (output − 1): the mean
  gap between tokens after the first. The other common definition, the mean decode-step time, is
  ``mean_step_s``; the two agree without speculation and differ with it (a verify step yields
  more than one token).
- Throughput counts generated tokens of all sequences: output_tokens_per_s = batch × output / E2E
  (the first token included, time from the request's arrival to its last token); per sequence it is
  output / E2E. All figures are for one chip, unless ``parallelism`` splits the steps over several
  (:func:`request_timeline`: times then include the communication, memory is per chip).
- Speculative decoding (Leviathan et al. 2023; Chen et al. 2023): k drafted tokens, i.i.d.
  acceptance α, give (1 − α^(k+1)) / (1 − α) tokens per verify step on average. One verify step of
  the target is priced as a decode step of batch × (k+1) query tokens at the current context, with
  the KV cache and recurrent state read once per sequence (not once per query position): the
  weights are read once for all k+1 positions. The k draft steps are decode steps of the draft
  model (a catalog id) at the growing context, or, with no draft model, an MTP-style draft (one
  extra layer on the target, as DeepSeek-V3's multi-token-prediction module): each draft step
  costs one layer's share of the target's decode step (1 / num_hidden_layers of it, with that
  share of the model's dequantisation) PLUS the target's whole lm_head operator at that step (max
  of its FLOPs over peak, with the lm_head's own dequantisation only, and its bytes over
  bandwidth): the MTP module produces logits through the shared lm_head, which for a small model
  outweighs a layer (Llama-3.1-8B: ~1.05 GB against ~0.44 GB per layer). The layer share already
  holds 1 / num_hidden_layers of the lm_head, so the estimate counts that sliver twice (a slight
  overestimate of the draft) and the lower bound takes it off. Either way the draft's cost is this
  model's assumption: a speculative lower bound is a bound given the assumed draft. The context grows by the expected tokens per verify step, rounded
  down to whole tokens, and there are ceil((output − 1) / tokens per verify) verify steps.
- A catalog draft model must prefill the prompt too, before its first draft step: its prefill
  (same prefix caching and chunking as the target) is ADDED to TTFT, one step after the
  target's. (It could run after the first token instead, moving it into the first decode step;
  E2E is the same either way.) Its weights, and its KV cache and state at the final context, are
  added to ``memory_required_bytes``. The MTP-style draft's extra layer is not added to memory.
- ``chunk_tokens`` splits the (uncached) prompt into chunks of that many tokens, each a separate
  step over the chunks before it: chunk i is priced as an extension over the tokens cached by the
  prefix and chunks 0..i−1 (it attends to and reads their KV, and reads the weights again):
  TTFT is their sum.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..core.errors import RooflineInputError, whole_number
from ..core.hardware import Part, get_part
from ..core.models import Model, get_model
from ..core.parallel import Parallelism
from ..core.costs import OpCost
from ..core.placement import Placement, place, stage_placements

#: the workload fields a caller may pass through (number formats and kernels); the rest are set here
DTYPE_FIELDS = ("weights_dtype", "activations_dtype", "kv_dtype", "state_dtype", "compute_dtype",
                "flash_attention", "attention_compute_dtype", "deltanet_chunk_tokens", "weight_group_size",
                "quantized_weights", "mla_absorbed")


# ---- validation ------------------------------------------------------------------------------




def _number(name: str, value, allowed: str, ok) -> float:
    bad = RooflineInputError(f"{name} must be {allowed}, got {value!r}")
    if isinstance(value, (bool, str, bytes)) or value is None:
        raise bad
    try:
        v = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise bad from None
    if v.size == 0 or not np.all(np.isfinite(v)) or not np.all(ok(v)):
        raise bad
    return float(v) if v.ndim == 0 else v


def _dtypes(fields: dict) -> dict:
    unknown = sorted(set(fields) - set(DTYPE_FIELDS))
    if unknown:
        raise RooflineInputError(f"unknown workload field(s) {', '.join(unknown)}; allowed here: "
                                 f"{', '.join(DTYPE_FIELDS)} (phase, batch and lengths are set by the request)")
    return dict(fields)


def check_acceptance(alpha):
    """The acceptance rate α: a number (or array) in [0, 1)."""
    return _number("acceptance", alpha, "a number in [0, 1) (the chance a drafted token is accepted)",
                   lambda v: (v >= 0) & (v < 1))


# ---- speculation -----------------------------------------------------------------------------


def expected_tokens_per_verify(k, alpha):
    """Expected tokens one verify step yields with ``k`` drafted tokens and acceptance ``alpha``.

    (1 − α^(k+1)) / (1 − α), i.e. 1 + α + … + α^k (tokens): 1 at α = 0 or k = 0, tending to k + 1
    as α → 1. ``k`` a whole number >= 0, ``alpha`` in [0, 1); arrays broadcast.
    """
    if isinstance(k, (bool, str, bytes)) or k is None:
        raise RooflineInputError(f"speculative tokens k must be a whole number >= 0, got {k!r}")
    try:
        kk = np.asarray(k, dtype=float)
    except (TypeError, ValueError):
        raise RooflineInputError(f"speculative tokens k must be a whole number >= 0, got {k!r}") from None
    if kk.size == 0 or not np.all(np.isfinite(kk)) or not np.all(kk == np.floor(kk)) or not np.all(kk >= 0):
        raise RooflineInputError(f"speculative tokens k must be a whole number >= 0, got {k!r}")
    a = np.asarray(check_acceptance(alpha), dtype=float)
    out = (1.0 - a ** (kk + 1.0)) / (1.0 - a)
    return float(out) if np.ndim(out) == 0 else out


# ---- step prices ---------------------------------------------------------------------------


def _estimate_s(p: Placement, weight_matmul_flops, other_flops, nbytes, unquantized_matmul_flops=0.0):
    """Seconds of these FLOPs and bytes under one chip's roofs by the estimate's rules (formats from
    ``p``, its dequantisation in series), no communication."""
    compute = p.tensor_seconds(weight_matmul_flops, other_flops, unquantized_matmul_flops) + p.dequant_time_s
    return np.maximum(compute, np.divide(nbytes, p.bandwidth_bytes_per_s))


def _step_s(p: Placement, weight_matmul_flops, other_flops, nbytes, comm_s=None, unquantized_matmul_flops=0.0,
            dequant_s=None):
    """The estimate of a whole step with these per-chip FLOPs and bytes: on several chips, the
    communication and the pipeline stages added by ``p``'s rules (:meth:`Placement.step_time_for_s`).
    ``dequant_s``: the step's dequantisation seconds (default ``p``'s)."""
    dequant = p.dequant_time_s if dequant_s is None else dequant_s
    compute = p.tensor_seconds(weight_matmul_flops, other_flops, unquantized_matmul_flops) + dequant
    return p.step_time_for_s(compute, np.divide(nbytes, p.bandwidth_bytes_per_s), comm_s)


def _lower_bound_s(p: Placement, weight_matmul_flops, other_flops, compulsory_bytes, comm_lower_bound_s=None,
                   unquantized_matmul_flops=0.0, dequant_s=None):
    """The lower bound of one chip's share of a step with these FLOPs and compulsory bytes (units and
    the least communication overlapped, no per-call latency; :meth:`Placement.lower_bound_for_s`).
    ``dequant_s``: the step's dequantisation seconds (default ``p``'s)."""
    comm = p.comm_lower_bound_s if comm_lower_bound_s is None else comm_lower_bound_s
    dequant = p.dequant_time_s if dequant_s is None else dequant_s
    return p.lower_bound_for_s(p.tensor_seconds(weight_matmul_flops, other_flops, unquantized_matmul_flops),
                               dequant, compulsory_bytes, comm)


def _op(p: Placement, name: str):
    """Operator ``name`` of ``p``; a zero operator when ``p``'s pipeline stage does not hold it (the
    lm_head lives on the last stage only)."""
    return next((op for op in p.cost.ops if op.name == name), OpCost(name=name, block="head", layers=1))


def _stages(model, part, **kw) -> tuple[Placement, ...]:
    """Each distinct pipeline stage's placement (one entry without pipeline parallelism)."""
    par = kw.get("parallelism")
    if par is None or par.pipeline == 1:
        return (place(model, part, **kw),)
    return stage_placements(model, part, **kw)


def _plain(x):
    a = np.asarray(x, dtype=float)
    return float(a) if a.ndim == 0 else a


@dataclass(frozen=True)
class _Step:
    """FLOPs and bytes of one step (arrays allowed), its estimate and its lower bound, seconds."""

    weight_matmul_flops: object
    flops: object
    bytes: object
    time_s: object  #: the estimate
    lower_bound_s: object  #: the lower bound


def _whole(p: Placement) -> _Step:
    """A placement's own step: its FLOPs, unfused bytes, estimate and lower bound (this stage's)."""
    c = p.cost
    return _Step(c.weight_matmul_flops, c.flops, c.bytes, p.time_estimate_s, p.stage_lower_bound_s)


def _slowest(steps: list[_Step], stages: list[Placement] | None = None) -> _Step:
    """Element by element, the pipeline stage whose step takes longest by the estimate (each stage is
    timed as if it were the busiest, p × its time + the sends, so the slowest one's time is the
    step's); the lower bound is the larger of the busiest stage's bound (stages overlap in it) and
    one token's crossing of every stage in series (``stages``' ``pipeline_crossing_lower_bound_s``:
    a step cannot end before its last token has crossed them all)."""
    if len(steps) == 1:
        return steps[0]
    crossing = 0.0 if not stages else stages[0].pipeline_crossing_lower_bound_s
    pick = np.argmax(np.stack(np.broadcast_arrays(*[np.asarray(s.time_s, dtype=float) for s in steps])), axis=0)

    def choose(name):
        return _plain(np.choose(pick, [np.asarray(getattr(s, name), dtype=float) for s in steps]))

    lb = _plain(np.maximum(np.max(np.stack(np.broadcast_arrays(*[np.asarray(s.lower_bound_s, dtype=float)
                                                                  for s in steps])), axis=0),
                           np.asarray(crossing, dtype=float)))
    return _Step(choose("weight_matmul_flops"), choose("flops"), choose("bytes"), choose("time_s"), lb)


def _compulsory_kv_state_read(p: Placement):
    """Compulsory bytes ``p``'s step reads from the KV cache and the recurrent state (its history)."""
    c = p.cost
    return c.kv_read_bytes - c.kv_scratch_bytes + c.state_read_bytes


def _extension(full: Placement, pre: Placement, h: Placement, nw: Placement, has) -> dict:
    """The counts of a prefill of new tokens over cached ones (:func:`_extend`'s rule) from four
    placements of one stage: ``full`` a prefill of cached + new tokens, ``pre`` a prefill of the
    cached ones, ``h`` a decode step at the cached context, ``nw`` a prefill of the new tokens
    alone; ``has`` where anything is cached. FLOPs, bytes (``weight_bytes``: the weights the new
    tokens touch, included in ``bytes`` and ``compulsory_bytes``), dequantisation seconds."""
    lm = _op(pre, "lm_head")
    sub_flops = np.where(has, pre.cost.flops - lm.flops, 0.0)
    sub_wmf = np.where(has, pre.cost.weight_matmul_flops - lm.weight_matmul_flops, 0.0)
    sub_unq = np.where(has, pre.cost.unquantized_matmul_flops - lm.unquantized_matmul_flops, 0.0)
    sub_bytes = np.where(has, pre.cost.activation_bytes - lm.activation_bytes + pre.cost.kv_write_bytes, 0.0)
    # the weights the new tokens touch (for an MoE, the experts their routing reaches; the embedding rows
    # they gather), not those a prefill of cached + new tokens would touch
    weights = np.where(has, nw.cost.weight_bytes - full.cost.weight_bytes, 0.0)
    ids = pre.cost.io_bytes - lm.io_bytes * lm.layers  # the cached tokens' ids (the logits stay: one set)
    return {
        "weight_matmul_flops": full.cost.weight_matmul_flops - sub_wmf,
        "unquantized_matmul_flops": full.cost.unquantized_matmul_flops - sub_unq,
        "flops": full.cost.flops - sub_flops,
        "bytes": full.cost.bytes - sub_bytes + weights,
        "compulsory_bytes": full.cost.compulsory_bytes + weights + np.where(
            has, _compulsory_kv_state_read(h) - pre.cost.kv_write_bytes - ids, 0.0),
        "weight_bytes": full.cost.weight_bytes + weights,
        "dequant_s": np.where(has, nw.dequant_time_s, full.dequant_time_s),  # dequantising those weights only
    }


def _extend(model, part, batch, new_tokens, cached_tokens, fields) -> _Step:
    """A prefill of ``new_tokens`` per sequence over ``cached_tokens`` already cached (arrays ok).

    = prefill(cached + new) − the per-token work of prefill(cached): its FLOPs, activations and
    KV writes; the lm_head stays once, the KV read covers cached + new tokens, and the weights are
    those the new tokens touch (a prefill of the new tokens alone: for an MoE, its experts).
    The lower bound's compulsory bytes: the full prefill's, less the cached tokens' KV writes and
    token ids, plus the cached history's KV and state read (a decode step at that context reads it).
    With pipeline stages, each stage is priced so and the slowest one is the step (:func:`_slowest`).
    """
    new = np.asarray(new_tokens, dtype=float)
    cached = np.asarray(cached_tokens, dtype=float)
    fulls = _stages(model, part, phase="prefill", batch=batch, prompt_tokens=new + cached, **fields)
    has = cached > 0
    if not np.any(has):
        return _slowest([_whole(f) for f in fulls], fulls)
    pres = _stages(model, part, phase="prefill", batch=batch, prompt_tokens=np.maximum(cached, 1.0), **fields)
    hist = _stages(model, part, phase="decode", batch=batch, context_tokens=cached, **fields)
    news = _stages(model, part, phase="prefill", batch=batch, prompt_tokens=new, **fields)
    steps = []
    for full, pre, h, nw in zip(fulls, pres, hist, news):
        x = _extension(full, pre, h, nw, has)
        wmf, flops, nbytes, unq, dequant = (x["weight_matmul_flops"], x["flops"], x["bytes"],
                                            x["unquantized_matmul_flops"], x["dequant_s"])
        comm_s = nw.comm_time_s if nw.comm is not None else None  # the collectives carry the new tokens only
        comm_lb = nw.comm_lower_bound_s if nw.comm is not None else None
        steps.append(_Step(wmf, flops, nbytes, _step_s(full, wmf, flops - wmf, nbytes, comm_s, unq, dequant),
                           _lower_bound_s(full, wmf, flops - wmf, x["compulsory_bytes"], comm_lb, unq, dequant)))
    return _slowest(steps, news)


def _verify(model, part, batch, positions, context, fields) -> _Step:
    """One target step of ``positions`` query tokens per sequence at ``context`` (an array).

    A decode step of batch × positions tokens, with the KV cache and the recurrent state read once
    per sequence rather than once per query position.
    """
    manys = _stages(model, part, phase="decode", batch=batch * positions, context_tokens=context, **fields)
    if positions == 1:
        return _slowest([_whole(s) for s in manys], manys)
    ones = _stages(model, part, phase="decode", batch=batch, context_tokens=context, **fields)
    steps = []
    for many, one in zip(manys, ones):
        m, o = many.cost, one.cost
        nbytes = m.bytes - m.kv_read_bytes - m.state_bytes + o.kv_read_bytes + o.state_bytes
        compulsory = m.compulsory_bytes - _compulsory_kv_state_read(many) + _compulsory_kv_state_read(one)
        other = m.flops - m.weight_matmul_flops
        steps.append(_Step(m.weight_matmul_flops, m.flops, nbytes,
                           _step_s(many, m.weight_matmul_flops, other, nbytes, None, m.unquantized_matmul_flops),
                           _lower_bound_s(many, m.weight_matmul_flops, other, compulsory, None,
                                          m.unquantized_matmul_flops)))
    return _slowest(steps, ones)


def _prefill(model, part, batch, uncached, prefix, chunk, fields) -> tuple[float, float]:
    """(estimate, lower bound) in seconds to prefill ``uncached`` tokens after ``prefix`` cached ones,
    in chunks of ``chunk`` (None = one step); chunk i extends over the prefix and chunks 0..i−1 (see
    :func:`_extend`), each chunk a step of its own that reads the weights again."""
    if chunk is None or chunk >= uncached:
        s = _extend(model, part, batch, uncached, prefix, fields)
        return float(s.time_s), float(s.lower_bound_s)
    starts = np.arange(0, uncached, chunk, dtype=float)
    sizes = np.minimum(chunk, uncached - starts)
    s = _extend(model, part, batch, sizes, prefix + starts, fields)
    return float(np.sum(s.time_s)), float(np.sum(s.lower_bound_s))


def _mtp_draft_step(decode: Placement, num_hidden_layers: int, head: Placement | None = None):
    """One MTP-style draft step, (estimate, lower bound) in seconds: the target decode step
    ``decode`` ÷ num_hidden_layers (one layer's share, with that share of the model's
    dequantisation) + its lm_head operator (the logits go through the shared lm_head) with the
    lm_head's own dequantisation only, taken from ``head`` (default ``decode``): with pipeline
    stages, the last stage's placement."""
    head = decode if head is None else head
    lm = _op(head, "lm_head")
    n = lm.layers
    other = (lm.flops - lm.weight_matmul_flops) * n
    tensor = head.tensor_seconds(lm.weight_matmul_flops * n, other, lm.unquantized_matmul_flops * n)
    # only the lm_head's own dequantisation (zero for a BF16 lm_head, the default of 8- and 4-bit recipes):
    # ``head.dequant_time_s`` is the whole model's, which a draft step does not pay
    lm_dequant = np.divide(lm.dequant_flops * n, head.vector_peak_flops_per_s)
    lm_s = np.maximum(tensor + lm_dequant, np.divide(lm.bytes * n, head.bandwidth_bytes_per_s))
    lm_lb = head.lower_bound_for_s(tensor, lm_dequant, lm.compulsory_bytes * n)
    # the layer share already holds 1/L of the lm_head: the estimate keeps it (a slight overestimate),
    # the bound takes it off (a lower bound may only undercount)
    return (np.asarray(decode.time_estimate_s) / num_hidden_layers + lm_s,
            np.asarray(decode.time_lower_bound_s) / num_hidden_layers + lm_lb * (1 - 1 / num_hidden_layers))


# ---- one request ---------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class RequestTimeline:
    """One batch of identical requests from arrival to last token, on one chip or split over
    ``chips`` (memory then per chip). Seconds, tokens, bytes. Each time twice: the estimate
    (``ttft_s``, ``step_s``, ``e2e_s``: the placement's named conventions, one static batch) and the
    idle server's lower bound (``*_lower_bound_s``); each rate as the static batch's estimate and as
    the continuous-batching upper bound (see the module docstring)."""

    model_id: str
    part_id: str
    prompt_tokens: int
    output_tokens: int
    batch: int
    prefix_cached_tokens: int
    speculative_tokens: int
    acceptance: float
    draft_model_id: str | None  #: None with speculation: an MTP-style draft (see module docstring)
    chunk_tokens: int | None
    ttft_s: float  #: time to first token, the estimate: the prefill step(s) of the uncached prompt
    #: (target, then a catalog draft model's), seconds
    decode_steps: int  #: decode (or verify) steps after the prefill
    step_s: np.ndarray  #: each decode/verify step's estimate (draft steps included), seconds
    step_context_tokens: np.ndarray  #: tokens cached per sequence before each step
    e2e_s: float  #: TTFT + Σ step_s, seconds (the estimate)
    tokens_per_verify_step: float  #: tokens a step yields per sequence (1 without speculation)
    memory_required_bytes: float  #: weights + KV + state at the final context (prompt + output), bytes;
    #: with a catalog draft model, the draft's weights + KV + state added
    memory_capacity_bytes: float
    warnings: tuple[str, ...] = ()
    chips: int = 1  #: chips serving the batch; memory figures are then per chip
    parallelism_label: str = "1 chip"
    ttft_lower_bound_s: float = float("nan")  #: an idle server's TTFT lower bound, seconds
    step_lower_bound_s: np.ndarray | None = None  #: each decode/verify step's lower bound, seconds
    e2e_lower_bound_s: float = float("nan")  #: TTFT lower bound + Σ step lower bounds, seconds
    #: output tokens/s of the whole deployment no engine can beat with ``batch`` sequences in flight
    #: without speculative decoding (one token per sequence per step): continuous batching's steady
    #: state (:func:`continuous_batching_cycle_lower_bound_s`); nan with speculation
    output_tokens_per_s_upper_bound: float = float("nan")
    #: the unit whose work over the cycle sets that bound (:data:`CYCLE_UNITS`: "compute",
    #: "dequantisation", "memory" or "communication"); None where the bound is not computed or the
    #: request has one output token (its bound is then the prefill's)
    upper_bound_unit: str | None = None

    @property
    def tpot_lower_bound_s(self) -> float:
        """An idle server's TPOT lower bound: (E2E − TTFT lower bounds) / (output − 1), seconds."""
        return self._per_token_after_first(self.e2e_lower_bound_s, self.ttft_lower_bound_s)

    def _per_token_after_first(self, e2e_s: float, ttft_s: float) -> float:
        """(E2E − TTFT) / (output − 1), seconds; nan when output is 1."""
        n = self.output_tokens - 1
        return (e2e_s - ttft_s) / n if n > 0 else float("nan")

    @property
    def output_tokens_per_s_static_batch(self) -> float:
        """The static batch's estimate: batch × output / E2E estimate (tokens/s); = ``output_tokens_per_s``."""
        return self.output_tokens_per_s

    @property
    def output_tokens_per_s_upper_bound_per_chip(self) -> float:
        """:attr:`output_tokens_per_s_upper_bound` ÷ chips (tokens/s per chip)."""
        return self.output_tokens_per_s_upper_bound / self.chips

    @property
    def tpot_s(self) -> float:
        """(E2E − TTFT) / (output − 1), seconds per token after the first; nan when output is 1."""
        return self._per_token_after_first(self.e2e_s, self.ttft_s)

    @property
    def mean_step_s(self) -> float:
        """The other TPOT: mean decode (verify) step time, seconds; nan with no decode step."""
        return float(np.mean(self.step_s)) if self.decode_steps else float("nan")

    @property
    def output_tokens_per_s(self) -> float:
        """All sequences, the static batch's estimate: batch × output tokens / E2E (tokens/s, first
        token included)."""
        return self.batch * self.output_tokens / self.e2e_s

    @property
    def output_tokens_per_s_per_chip(self) -> float:
        """Output tokens/s of the batch ÷ chips: what one chip's hour buys."""
        return self.output_tokens_per_s / self.chips

    @property
    def output_tokens_per_s_per_sequence(self) -> float:
        """One sequence: output tokens / E2E (tokens/s), what one user sees on average."""
        return self.output_tokens / self.e2e_s

    @property
    def fits_in_memory(self) -> bool:
        return bool(self.memory_required_bytes <= self.memory_capacity_bytes)

    def to_dict(self) -> dict:
        """JSON-ready numbers; counts as ints, nan as None, ``step_s`` left out (use the array)."""

        def f(x):
            x = float(x)
            return x if math.isfinite(x) else None

        return {
            "hardware": self.part_id, "model": self.model_id, "prompt_tokens": self.prompt_tokens,
            "output_tokens": self.output_tokens, "batch": self.batch,
            "prefix_cached_tokens": self.prefix_cached_tokens, "speculative_tokens": self.speculative_tokens,
            "acceptance": self.acceptance, "draft_model": self.draft_model_id, "chunk_tokens": self.chunk_tokens,
            "ttft_s": f(self.ttft_s), "tpot_s": f(self.tpot_s), "mean_step_s": f(self.mean_step_s),
            "e2e_s": f(self.e2e_s), "decode_steps": int(self.decode_steps),
            "output_tokens_per_s_static_batch": f(self.output_tokens_per_s),
            "output_tokens_per_s_upper_bound": f(self.output_tokens_per_s_upper_bound),
            "output_tokens_per_s_upper_bound_per_chip": f(self.output_tokens_per_s_upper_bound_per_chip),
            "ttft_lower_bound_s": f(self.ttft_lower_bound_s), "tpot_lower_bound_s": f(self.tpot_lower_bound_s),
            "e2e_lower_bound_s": f(self.e2e_lower_bound_s),
            "output_tokens_per_s_per_sequence": f(self.output_tokens_per_s_per_sequence),
            "tokens_per_verify_step": f(self.tokens_per_verify_step),
            "fits_in_memory": self.fits_in_memory, "memory_required_bytes": int(round(self.memory_required_bytes)),
            "memory_capacity_bytes": int(round(self.memory_capacity_bytes)), "warnings": list(self.warnings),
            "chips": int(self.chips), "per_chip": self.chips > 1, "parallelism": self.parallelism_label,
            "output_tokens_per_s_per_chip": f(self.output_tokens_per_s_per_chip),
        }


def request_timeline(model: Model | str, part: Part | str, *, prompt_tokens: int, output_tokens: int,
                     batch: int = 1, prefix_cached_tokens: int = 0, speculative_tokens: int = 0,
                     acceptance: float = 0.0, draft_model: Model | str | None = None,
                     chunk_tokens: int | None = None, parallelism: Parallelism | None = None,
                     **workload_dtypes) -> RequestTimeline:
    """The timeline of ``batch`` identical requests of ``prompt_tokens`` in and ``output_tokens`` out.

    Every decode step is priced at once (numpy arrays of contexts, no Python loop per token).
    ``prefix_cached_tokens`` (0 ≤ p < prompt) skips that prefix's prefill; ``speculative_tokens`` k
    with ``acceptance`` α in [0, 1) and an optional ``draft_model`` (a catalog id no larger than
    the target; None = MTP-style draft) turns decode into verify steps; ``chunk_tokens`` chunks the
    prefill. A draft model's prefill is added to TTFT and its weights + KV + state to
    ``memory_required_bytes``; an MTP-style draft step is one target layer's share of a decode step
    plus the target's lm_head (module docstring). ``workload_dtypes``: any of :data:`DTYPE_FIELDS`.
    ``parallelism`` splits every step over chips (:mod:`roofline_lessons.core.parallel`): times
    include the communication, and the memory figures are per chip.
    """
    m, p = get_model(model), get_part(part)
    fields = _dtypes(workload_dtypes)
    if parallelism is not None:
        fields["parallelism"] = parallelism
    prompt = whole_number("prompt_tokens", prompt_tokens, 1)
    output = whole_number("output_tokens", output_tokens, 1)
    b = whole_number("batch", batch, 1)
    prefix = whole_number("prefix_cached_tokens", prefix_cached_tokens, 0)
    if prefix >= prompt:
        raise RooflineInputError(f"prefix_cached_tokens must be below prompt_tokens ({prompt:,}): at least one "
                                 f"prompt token must be prefilled to produce the first output, got {prefix_cached_tokens!r}")
    k = whole_number("speculative_tokens", speculative_tokens, 0)
    alpha = float(check_acceptance(acceptance))
    chunk = None if chunk_tokens is None else whole_number("chunk_tokens", chunk_tokens, 1)
    draft = None
    if draft_model is not None:
        if k == 0:
            raise RooflineInputError(f"draft_model {draft_model!r} needs speculative_tokens >= 1 (got 0)")
        draft = get_model(draft_model)
        if draft.parameter_count() > m.parameter_count():
            raise RooflineInputError(
                f"draft_model {draft.id!r} ({draft.parameter_count():,} parameters) is larger than the target "
                f"{m.id!r} ({m.parameter_count():,}); a draft must be smaller than the model it drafts for")

    # prefill → TTFT (a catalog draft model prefills the prompt too, after the target)
    uncached = prompt - prefix
    ttft, ttft_lb = _prefill(m, p, b, uncached, prefix, chunk, fields)
    if draft is not None:
        d_est, d_lb = _prefill(draft, p, b, uncached, prefix, chunk, fields)
        ttft, ttft_lb = ttft + d_est, ttft_lb + d_lb

    # decode / verify steps
    per_step = expected_tokens_per_verify(k, alpha) if k else 1.0
    steps = int(math.ceil((output - 1) / per_step - 1e-12)) if output > 1 else 0
    contexts = prompt + np.floor(np.arange(steps) * per_step)
    if steps:
        v = _verify(m, p, b, k + 1, contexts, fields)
        step, step_lb = np.asarray(v.time_s, dtype=float), np.asarray(v.lower_bound_s, dtype=float)
        if k:
            if draft is None:
                base = place(m, p, phase="decode", batch=b, context_tokens=contexts, **fields)
                head = (base if parallelism is None or parallelism.pipeline == 1 else  # the lm_head's stage
                        _stages(m, p, phase="decode", batch=b, context_tokens=contexts, **fields)[-1])
                est, lb = _mtp_draft_step(base, m.num_hidden_layers, head)
                step, step_lb = step + k * np.asarray(est), step_lb + k * np.asarray(lb)
            else:
                ctx = contexts[:, None] + np.arange(k, dtype=float)[None, :]
                dp = place(draft, p, phase="decode", batch=b, context_tokens=ctx, **fields)
                step = step + np.asarray(dp.time_estimate_s).sum(axis=1)
                step_lb = step_lb + np.asarray(dp.time_lower_bound_s).sum(axis=1)
    else:
        step, step_lb = np.zeros(0), np.zeros(0)
    step = np.broadcast_to(step, (steps,)).copy()
    step_lb = np.broadcast_to(step_lb, (steps,)).copy()
    for a in (step, step_lb, contexts):
        a.setflags(write=False)
    terms = ({} if steps == 0 else  # one output token: the prefill is the whole life
             continuous_batching_cycle_terms_s(m, p, batch=b, uncached_prompt_tokens=uncached,
                                               decode_contexts=contexts if k == 0 else None, fields=fields))
    cycle_lb = max(terms.values()) if terms else (ttft_lb if steps == 0 else float("nan"))
    unit = max(terms, key=terms.get) if terms else None

    final = place(m, p, phase="decode", batch=b, context_tokens=prompt + output - 1, **fields)
    memory = float(final.memory_required_bytes)
    warnings = final.warnings
    if draft is not None:  # the draft's weights + its KV cache and state at the same final context
        dfinal = place(draft, p, phase="decode", batch=b, context_tokens=prompt + output - 1, **fields)
        memory += float(dfinal.memory_required_bytes)
        warnings = warnings + tuple(w for w in dfinal.warnings if w not in warnings)
    return RequestTimeline(
        model_id=m.id, part_id=p.id, prompt_tokens=prompt, output_tokens=output, batch=b,
        prefix_cached_tokens=prefix, speculative_tokens=k, acceptance=alpha,
        draft_model_id=draft.id if draft is not None else None, chunk_tokens=chunk,
        ttft_s=ttft, decode_steps=steps, step_s=step, step_context_tokens=contexts,
        e2e_s=ttft + float(np.sum(step)), tokens_per_verify_step=float(per_step),
        memory_required_bytes=memory,
        memory_capacity_bytes=float(p.memory_capacity_bytes), warnings=warnings, chips=final.chips_per_replica,
        parallelism_label=final.parallelism.label, ttft_lower_bound_s=ttft_lb, step_lower_bound_s=step_lb,
        e2e_lower_bound_s=ttft_lb + float(np.sum(step_lb)),
        output_tokens_per_s_upper_bound=b * output / cycle_lb, upper_bound_unit=unit)


@dataclass(frozen=True, eq=False)
class SpeculationSpeedup:
    """One request served plainly and with speculative decoding (:func:`speculation_speedup`)."""

    plain: RequestTimeline
    speculative: RequestTimeline

    @property
    def tpot(self) -> float:
        """TPOT speed-up, plain ÷ speculative (estimates; a ratio of estimates is an estimate)."""
        return self.plain.tpot_s / self.speculative.tpot_s

    @property
    def e2e(self) -> float:
        """E2E speed-up, plain ÷ speculative (estimates): smaller, since the prefill is not sped up."""
        return self.plain.e2e_s / self.speculative.e2e_s

    @property
    def fits_in_memory(self) -> bool:
        """Whether the speculative setup (a draft model's weights and KV included) fits the chip."""
        return self.speculative.fits_in_memory


def speculation_speedup(model: Model | str, part: Part | str, *, prompt_tokens: int, output_tokens: int,
                        speculative_tokens: int, acceptance: float, batch: int = 1,
                        draft_model: Model | str | None = None, **workload_dtypes) -> SpeculationSpeedup:
    """The same request (:func:`request_timeline`'s arguments) without and with speculative decoding."""
    common = dict(prompt_tokens=prompt_tokens, output_tokens=output_tokens, batch=batch, **workload_dtypes)
    return SpeculationSpeedup(
        plain=request_timeline(model, part, **common),
        speculative=request_timeline(model, part, speculative_tokens=speculative_tokens, acceptance=acceptance,
                                     draft_model=draft_model, **common))


#: the units whose summed work over a continuous-batching cycle bounds it, in the order
#: :func:`continuous_batching_cycle_terms_s` reports them
CYCLE_UNITS = ("compute", "dequantisation", "memory", "communication")


def continuous_batching_cycle_lower_bound_s(model: Model, part: Part, *, batch: int, uncached_prompt_tokens: int,
                                            decode_contexts, fields: dict) -> float:
    """Seconds no engine without speculative decoding (one token per sequence per step) can beat
    to carry ``batch`` requests through their whole lives when they are served by continuous
    batching in steady state: while ``batch`` sequences decode, the next
    requests' prefills ride in the same steps (the weights read once for both), so a request's
    prefill costs only its own work, not a weight pass of its own.

    The bound is the largest of each unit's work summed over the cycle (the units overlap across
    it, and the sequences' contexts may be staggered, so no per-step maximum is taken): tensor
    seconds of the decode steps and the prefills, dequantisation seconds, compulsory bytes ÷
    bandwidth (the prefills' without their weights: a decode step reads them anyway), least
    communication. For an MoE the decode steps' experts are those B tokens touch under uniform
    routing (the prefill tokens' extra experts are not counted: looser, still a bound under that
    routing). ``decode_contexts``: the tokens cached before each decode step (at least one step;
    with one output token the cycle is the prefill's lower bound, :func:`request_timeline`).

    Not computed (nan) with speculation (``decode_contexts`` None) or with pipeline stages: the
    per-unit sums of verify and draft steps, or of one chip's stage, are not modelled here.
    Output tokens/s upper bound = batch × output ÷ this. The largest of
    :func:`continuous_batching_cycle_terms_s`.
    """
    terms = continuous_batching_cycle_terms_s(model, part, batch=batch, uncached_prompt_tokens=uncached_prompt_tokens,
                                              decode_contexts=decode_contexts, fields=fields)
    return max(terms.values()) if terms else float("nan")


def continuous_batching_cycle_terms_s(model: Model, part: Part, *, batch: int, uncached_prompt_tokens: int,
                                      decode_contexts, fields: dict) -> dict[str, float]:
    """Each unit's work over one continuous-batching cycle, seconds, keyed by :data:`CYCLE_UNITS`
    (:func:`continuous_batching_cycle_lower_bound_s` is the largest): the tensor units' FLOPs,
    the dequantisation, the compulsory bytes ÷ bandwidth, the least communication. Where the
    compute term is the largest, the prefills' FLOPs no longer hide under the decode steps' reads.
    Empty where the bound is not computed (speculation, pipeline stages)."""
    par = fields.get("parallelism")
    if decode_contexts is None or (par is not None and par.pipeline > 1):
        return {}
    d = place(model, part, phase="decode", batch=batch, context_tokens=decode_contexts, **fields)
    pf = place(model, part, phase="prefill", batch=batch, prompt_tokens=uncached_prompt_tokens, **fields)
    n = np.size(decode_contexts)
    tensor = float(np.sum(np.broadcast_to(d.tensor_time_s, (n,)))) + float(pf.tensor_time_s)
    dequant = float(np.sum(np.broadcast_to(d.dequant_time_s, (n,))))
    nbytes = (float(np.sum(np.broadcast_to(d.cost.compulsory_bytes, (n,))))
              + float(pf.cost.compulsory_bytes - pf.cost.weight_bytes))
    comm = float(np.sum(np.broadcast_to(d.comm_lower_bound_s, (n,)))) + float(pf.comm_lower_bound_s)
    return dict(zip(CYCLE_UNITS, (tensor, dequant, nbytes / d.bandwidth_bytes_per_s, comm)))


# ---- continuous batching -------------------------------------------------------------------


@dataclass(frozen=True)
class MixedStep:
    """One continuous-batching step (a prefill chunk + the running batch's decode tokens) and the
    decode-only step beside it. FLOPs, unfused bytes, FLOP/byte, seconds: the times are estimates
    (operators unfused, dequantisation in series)."""

    flops: float
    bytes: float
    intensity: float
    time_s: float
    tokens: int  #: tokens through the layers: decode batch + chunk
    decode_only_flops: float
    decode_only_bytes: float
    decode_only_intensity: float
    decode_only_time_s: float
    lower_bound_s: float = float("nan")  #: the mixed step's lower bound (compulsory bytes, units overlapped)
    decode_only_lower_bound_s: float = float("nan")  #: the decode-only step's lower bound


def mixed_step(model: Model | str, part: Part | str, *, decode_batch: int, decode_context_tokens: int,
               prefill_chunk_tokens: int, prefill_cached_tokens: int = 0, **workload_dtypes) -> MixedStep:
    """A step carrying ``prefill_chunk_tokens`` of a prompt plus ``decode_batch`` decode tokens at
    ``decode_context_tokens`` cached each: the weights are read once for both (for an MoE, the
    experts touched by all of the step's tokens). ``prefill_cached_tokens``: the prompt's tokens
    already in the cache before this chunk (its earlier chunks, or a cached prefix): the chunk
    attends over them and reads their KV (:func:`_extend`'s rule). Its estimate counts the chunk's
    activations through HBM (operators unfused); its lower bound only compulsory bytes (the chunk's
    KV written and its history's read, its ids in, its logits out)."""
    fields = _dtypes(workload_dtypes)
    bd = whole_number("decode_batch", decode_batch, 1)
    cd = whole_number("decode_context_tokens", decode_context_tokens, 0)
    ch = whole_number("prefill_chunk_tokens", prefill_chunk_tokens, 1)
    cc = whole_number("prefill_cached_tokens", prefill_cached_tokens, 0)
    d = place(model, part, phase="decode", batch=bd, context_tokens=cd, **fields)
    pf = place(model, part, phase="prefill", batch=1, prompt_tokens=ch, **fields)
    if cc:  # the chunk over its cached history
        x = _extension(place(model, part, phase="prefill", batch=1, prompt_tokens=cc + ch, **fields),
                       place(model, part, phase="prefill", batch=1, prompt_tokens=cc, **fields),
                       place(model, part, phase="decode", batch=1, context_tokens=cc, **fields), pf, True)
        chunk = {k: float(v) for k, v in x.items()}
    else:
        c = pf.cost
        chunk = {"weight_matmul_flops": float(c.weight_matmul_flops), "flops": float(c.flops),
                 "unquantized_matmul_flops": float(c.unquantized_matmul_flops), "bytes": float(c.bytes),
                 "compulsory_bytes": float(c.compulsory_bytes), "weight_bytes": float(c.weight_bytes)}
    shared = place(model, part, phase="decode", batch=bd + ch, context_tokens=0, **fields).cost.weight_bytes
    wmf = d.cost.weight_matmul_flops + chunk["weight_matmul_flops"]
    unq = d.cost.unquantized_matmul_flops + chunk["unquantized_matmul_flops"]
    flops = d.cost.flops + chunk["flops"]
    nbytes = d.cost.bytes - d.cost.weight_bytes + chunk["bytes"] - chunk["weight_bytes"] + shared
    compulsory = (d.cost.compulsory_bytes - d.cost.weight_bytes + chunk["compulsory_bytes"] - chunk["weight_bytes"]
                  + shared)
    lb = d.lower_bound_for_s(d.tensor_seconds(wmf, flops - wmf, unq), d.dequant_time_s, compulsory)
    return MixedStep(lower_bound_s=float(lb), decode_only_lower_bound_s=float(d.time_lower_bound_s),
        flops=float(flops), bytes=float(nbytes), intensity=float(flops / nbytes),
        time_s=float(_estimate_s(d, wmf, flops - wmf, nbytes, unq)), tokens=bd + ch,
        decode_only_flops=float(d.cost.flops), decode_only_bytes=float(d.cost.bytes),
        decode_only_intensity=float(d.intensity), decode_only_time_s=float(d.time_estimate_s))


# ---- sweeps over batch -----------------------------------------------------------------------


def _batches(batches) -> np.ndarray:
    b = np.atleast_1d(np.asarray(_number("batches", batches, "whole numbers >= 1",
                                         lambda v: (v >= 1) & (v == np.floor(v))), dtype=float))
    return b.astype(np.int64)


@dataclass(frozen=True, eq=False)
class Pareto:
    """The throughput–latency frontier over batch (arrays like ``batch``)."""

    batch: np.ndarray
    ttft_s: np.ndarray
    tpot_s: np.ndarray
    e2e_s: np.ndarray
    output_tokens_per_s_per_sequence: np.ndarray  #: the latency side: what one user sees, tokens/s
    output_tokens_per_s: np.ndarray  #: all sequences, tokens/s
    fits_in_memory: np.ndarray  #: weights + KV + state at prompt + output tokens ≤ capacity
    critical_batch: int | None  #: decode batch reaching the ridge at the mid-decode context
    ttft_lower_bound_s: np.ndarray | None = None  #: an idle server's lower bounds, seconds
    tpot_lower_bound_s: np.ndarray | None = None
    e2e_lower_bound_s: np.ndarray | None = None


def pareto(model: Model | str, part: Part | str, *, prompt_tokens: int, output_tokens: int, batches,
           **workload_dtypes) -> Pareto:
    """Per batch: per-sequence and total output tokens/s, fit, and the critical batch.

    The critical batch is :func:`roofline_lessons.topics.batching.critical_batch` at the context
    halfway through decode (prompt + output // 2), all traffic counted.
    """
    from .batching import critical_batch

    b = _batches(batches)
    tl = [request_timeline(model, part, prompt_tokens=prompt_tokens, output_tokens=output_tokens, batch=int(x),
                           **workload_dtypes) for x in b]
    arr = lambda name: np.array([getattr(t, name) for t in tl], dtype=float)  # noqa: E731
    crit = critical_batch(model, part, context_tokens=int(prompt_tokens) + int(output_tokens) // 2,
                          **_dtypes(workload_dtypes))
    return Pareto(batch=b, ttft_s=arr("ttft_s"), tpot_s=arr("tpot_s"), e2e_s=arr("e2e_s"),
                  output_tokens_per_s_per_sequence=arr("output_tokens_per_s_per_sequence"),
                  output_tokens_per_s=arr("output_tokens_per_s"),
                  fits_in_memory=np.array([t.fits_in_memory for t in tl]), critical_batch=crit,
                  ttft_lower_bound_s=arr("ttft_lower_bound_s"), tpot_lower_bound_s=arr("tpot_lower_bound_s"),
                  e2e_lower_bound_s=arr("e2e_lower_bound_s"))


def littles_law(*, concurrency=None, throughput_per_s=None, latency_s=None):
    """Little's law, L = λ·W: give any two of concurrency L (requests in the system), throughput λ
    (requests/s) and latency W (seconds in the system); get the third."""
    given = {"concurrency": concurrency, "throughput_per_s": throughput_per_s, "latency_s": latency_s}
    missing = [k for k, v in given.items() if v is None]
    if len(missing) != 1:
        raise RooflineInputError(f"littles_law needs exactly two of concurrency, throughput_per_s, latency_s; "
                                 f"got {', '.join(k for k, v in given.items() if v is not None) or 'none'}")
    vals = {k: _number(k, v, "a number >= 0", lambda a: a >= 0) for k, v in given.items() if v is not None}
    with np.errstate(divide="ignore", invalid="ignore"):
        if missing[0] == "concurrency":
            return vals["throughput_per_s"] * vals["latency_s"]
        if missing[0] == "throughput_per_s":
            return np.divide(vals["concurrency"], vals["latency_s"])
        return np.divide(vals["concurrency"], vals["throughput_per_s"])


#: the figures a goodput sweep may time its batches by (:func:`goodput_requests_per_s`)
GOODPUT_FIGURES = ("estimate", "lower_bound")


@dataclass(frozen=True, eq=False)
class Goodput:
    """Requests/s that meet both SLOs, per batch (arrays like ``batch``). Times are the figures
    ``figures`` names: the estimate, or each step at its lower bound."""

    batch: np.ndarray
    ttft_s: np.ndarray
    tpot_s: np.ndarray
    requests_per_s: np.ndarray  #: batch / E2E (Little's law with concurrency = batch)
    meets_slo: np.ndarray  #: TTFT ≤ its SLO, TPOT ≤ its SLO, and the batch fits in memory
    goodput_requests_per_s: np.ndarray  #: requests/s where meets_slo, else 0
    best_batch: int | None
    best_goodput_requests_per_s: float
    meets_ttft: np.ndarray  #: TTFT ≤ its SLO
    meets_tpot: np.ndarray  #: TPOT ≤ its SLO (a one-token answer has no TPOT: met)
    fits_in_memory: np.ndarray
    e2e_s: np.ndarray | None = None  #: E2E of each batch, seconds (by ``figures``)
    figures: str = "estimate"  #: one of :data:`GOODPUT_FIGURES`

    @property
    def mean_arrival_wait_s(self) -> np.ndarray:
        """The mean wait, seconds, of a request that arrives at a random moment while batches run
        back to back: the running batch must end first, E2E ÷ 2 on average. Not in ``ttft_s``,
        which is timed from the batch's start (the sweep assumes arrivals line up with batches)."""
        return self.e2e_s / 2

    @property
    def max_arrival_wait_s(self) -> np.ndarray:
        """The longest such wait, seconds: a whole E2E (a request that just missed a batch's start)."""
        return self.e2e_s

    def misses(self, batch: int) -> tuple[str, ...]:
        """What ``batch`` (one of ``self.batch``) fails: any of ``"TTFT"``, ``"TPOT"``, ``"memory"``."""
        where = np.flatnonzero(self.batch == batch)
        if where.size == 0:
            raise RooflineInputError(f"batch {batch!r} is not in this sweep; it has {[int(b) for b in self.batch]}")
        i = int(where[0])
        return tuple(name for name, ok in (("TTFT", self.meets_ttft[i]), ("TPOT", self.meets_tpot[i]),
                                           ("memory", self.fits_in_memory[i])) if not ok)


def _slo_checks(ttft_s, tpot_s, ttft_slo_s: float, tpot_slo_s: float) -> tuple[np.ndarray, np.ndarray]:
    """Per batch: TTFT within its SLO, and TPOT within its SLO (seconds); a one-token answer has no
    TPOT (NaN) and so cannot miss it."""
    return (np.asarray(ttft_s) <= ttft_slo_s), np.where(np.isnan(tpot_s), True, np.asarray(tpot_s) <= tpot_slo_s)


def goodput_requests_per_s(model: Model | str, part: Part | str, *, prompt_tokens: int, output_tokens: int,
                           batches, ttft_slo_s: float, tpot_slo_s: float, figures: str = "estimate",
                           **workload_dtypes) -> Goodput:
    """Requests/s that meet a TTFT and a TPOT service-level objective, over a batch sweep.

    The model: at batch B every request sees the timeline of batch B (B requests arrive together,
    prefill together, decode together; no mixing of phases). Requests/s = B / E2E (Little's law);
    goodput counts only batches whose TTFT and TPOT meet the SLOs (seconds) and that fit in memory.

    It ignores queueing: each batch's requests are assumed to arrive exactly when the previous
    batch ends. A request that arrives mid-batch waits up to one E2E before its prefill starts, so
    its real TTFT can be up to E2E + TTFT, and random arrivals wait longer still. So this is an
    estimate of a static-batch schedule (its times the placement's estimates, its queue assumed
    away), neither a bound on goodput (a continuous-batching engine can beat the static schedule)
    nor on the chips a load needs. :attr:`Goodput.mean_arrival_wait_s` is the wait it assumes away.

    ``figures``: ``"estimate"`` (default) times every batch by the estimate; ``"lower_bound"`` by
    its steps' lower bounds: no implementation of this schedule, under its arrival assumption,
    serves a batch faster, so a batch that misses an objective by the lower bounds misses it by
    any implementation. Where the two sweeps pick different batches, the objective sits between
    the two figures.
    """
    ttft_slo = _number("ttft_slo_s", ttft_slo_s, "a number of seconds > 0", lambda v: v > 0)
    tpot_slo = _number("tpot_slo_s", tpot_slo_s, "a number of seconds > 0", lambda v: v > 0)
    if figures not in GOODPUT_FIGURES:
        raise RooflineInputError(f"figures must be one of {', '.join(GOODPUT_FIGURES)}, got {figures!r}")
    pa = pareto(model, part, prompt_tokens=prompt_tokens, output_tokens=output_tokens, batches=batches,
                **workload_dtypes)
    if figures == "estimate":
        ttft, tpot, e2e = pa.ttft_s, pa.tpot_s, pa.e2e_s
    else:
        ttft, tpot, e2e = pa.ttft_lower_bound_s, pa.tpot_lower_bound_s, pa.e2e_lower_bound_s
    rps = pa.batch / e2e
    ttft_ok, tpot_ok = _slo_checks(ttft, tpot, ttft_slo, tpot_slo)
    meets = ttft_ok & tpot_ok & pa.fits_in_memory
    good = np.where(meets, rps, 0.0)
    best = int(np.argmax(good))
    return Goodput(batch=pa.batch, ttft_s=ttft, tpot_s=tpot, requests_per_s=rps, meets_slo=meets,
                   goodput_requests_per_s=good, best_batch=int(pa.batch[best]) if meets[best] else None,
                   best_goodput_requests_per_s=float(good[best]), meets_ttft=ttft_ok, meets_tpot=tpot_ok,
                   fits_in_memory=pa.fits_in_memory, e2e_s=e2e, figures=figures)


# ---- money and energy ----------------------------------------------------------------------


def cost_per_million_output_tokens(price_per_hour_usd, output_tokens_per_s):
    """US dollars per 10^6 output tokens: price per hour / 3,600 / tokens per second × 10^6.

    The price is the learner's input (a rental or amortised price per chip-hour); the catalog holds
    none. With a request's tokens/s upper bound this is, at that batch, a lower bound on the cost of
    any engine serving that workload as priced (that many requests in flight, each prompt's
    uncached part prefilled, those number formats) without speculative decoding; not a bound on
    an engine that batches more, caches more of the prompt, stores fewer bytes or speculates.
    """
    price = _number("price_per_hour_usd", price_per_hour_usd, "a price in US dollars per hour >= 0",
                    lambda v: v >= 0)
    tps = _number("output_tokens_per_s", output_tokens_per_s, "a rate in tokens/s > 0", lambda v: v > 0)
    return np.divide(price, tps) / 3600.0 * 1e6


def energy_per_token_upper_bound_j(board_power_w, output_tokens_per_s):
    """Joules per output token if the board draws its full rated power: board power (W) ÷ tokens/s.

    ``board_power_w`` is watts, or a part (id or :class:`Part`) whose catalog entry has a sourced
    ``board_power_w``; a part without one is an error. The rated power is the most the board may
    draw, so for a given tokens/s this is an upper bound on energy per token; pairing it with the
    roofline's tokens/s upper bound is an estimate, not a bound either way.
    """
    if isinstance(board_power_w, (str, Part)):
        p = get_part(board_power_w)
        if p.board_power_w is None:
            from ..core.hardware import list_parts

            have = [pid for pid in list_parts() if get_part(pid).board_power_w is not None]
            raise RooflineInputError(f"{p.id} has no sourced board power in the catalog; give the watts yourself "
                                     f"(parts with one: {', '.join(have) or 'none'})")
        watts = p.board_power_w
    else:
        watts = _number("board_power_w", board_power_w, "a power in watts > 0", lambda v: v > 0)
    tps = _number("output_tokens_per_s", output_tokens_per_s, "a rate in tokens/s > 0", lambda v: v > 0)
    return np.divide(watts, tps)


# ---- a frontier as a chart marks it (appended for lesson 10's dashboard) ---------------------------


@dataclass(frozen=True, eq=False)
class Frontier:
    """The throughput–latency frontier (:func:`pareto`, its arrays read-only) and what a chart of it
    marks: the largest batch whose weights, KV cache and state at prompt + output tokens per
    sequence fit in memory (0 if none), and the critical batch's point, (TPOT seconds, total output
    tokens/s), both estimates, when the critical batch lies within the sweep (else None)."""

    pareto: Pareto
    max_batch_that_fits: int
    critical_point: tuple[float, float] | None

    def meets(self, ttft_slo_s: float, tpot_slo_s: float) -> np.ndarray:
        """Per batch: TTFT and TPOT within their SLOs (seconds, by the estimates) and fits in memory."""
        pa = self.pareto
        ttft_ok, tpot_ok = _slo_checks(pa.ttft_s, pa.tpot_s, ttft_slo_s, tpot_slo_s)
        return ttft_ok & tpot_ok & pa.fits_in_memory

    def largest_meeting(self, ttft_slo_s: float, tpot_slo_s: float, among) -> tuple[int | None, float | None]:
        """The largest of the batches ``among`` that meets both SLOs and fits, and its total output
        tokens/s (estimate); (None, None) if none does."""
        ok = np.isin(self.pareto.batch, among) & self.meets(ttft_slo_s, tpot_slo_s)
        if not ok.any():
            return None, None
        return int(self.pareto.batch[ok][-1]), float(self.pareto.output_tokens_per_s[ok][-1])


def frontier(model: Model | str, part: Part | str, prompt_tokens: int, output_tokens: int, batches) -> Frontier:
    """The frontier over ``batches`` of ``prompt_tokens`` in and ``output_tokens`` out per request,
    one static batch on one chip (BF16), with the largest batch that fits and the critical batch's
    point on it (:class:`Frontier`)."""
    from ..core.memory import max_batch_that_fits

    pa = pareto(model, part, prompt_tokens=prompt_tokens, output_tokens=output_tokens, batches=batches)
    cap = int(max_batch_that_fits(model, part, prompt_tokens + output_tokens))
    crit, point = pa.critical_batch, None
    if crit is not None and crit <= int(pa.batch.max()):
        t = request_timeline(model, part, prompt_tokens=prompt_tokens, output_tokens=output_tokens, batch=crit)
        point = (float(t.tpot_s), float(t.output_tokens_per_s))
    for arr in (pa.ttft_s, pa.tpot_s, pa.output_tokens_per_s, pa.fits_in_memory):
        arr.setflags(write=False)
    return Frontier(pareto=pa, max_batch_that_fits=cap, critical_point=point)
