"""Lesson 9's reality check: run the numpy decoder here and hold every measured step against the
bound the cost model gives from this machine's measured roofs (lesson 8's probes).

For each step the lower bound is ``max(FLOPs / measured matmul rate, compulsory bytes / measured
DRAM bandwidth)`` (seconds) from :func:`roofline_lessons.core.costs.model_cost` of the very model
that ran, in float32; the estimate (every operator's activations through memory, unfused) sits
beside it. The **achieved fraction** is bound / measured (1 = on the roof). **MBU** (model bandwidth
utilisation) = bytes the step must move / measured time / bandwidth; **MFU** (model FLOP
utilisation) = the step's FLOPs / measured time / peak. A third term, a fixed **overhead** per step
(Python dispatching the numpy calls of each layer here, `decoder.numpy_calls_per_layer`; kernel launches and CPU scheduling on a GPU), is
measured on a tiny model with the same calls (never fitted): time ≈ max(compute, memory) + overhead. Where that
fixed cost is not clearly smaller than a step's fastest run, the two cannot be separated on that
run (:class:`OverheadSplit` says so; it never reports a negative or clamped figure).

The decoder is sized so its weights dwarf the last-level cache (:data:`~.decoder.CACHE_MULTIPLE` ×),
within a budget: quick mode keeps a batch-1 step's weight stream to ``step_budget_s`` at the
measured bandwidth, and every mode keeps the weights within :data:`MEMORY_SHARE` of the free memory.
:class:`ModelSizing` records which limit, if any, held the model below the target.

Results are saved as JSON next to lesson 8's measurements (``reality-*.json``), atomically.
"""

from __future__ import annotations

import json
import statistics
import time
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from ..core.costs import model_cost
from ..core.errors import RooflineInputError
from ..core.files import atomic_write_text
from ..core.models import Model
from .decoder import (CACHE_MULTIPLE, FAMILY_LAYERS, KVCache, NumpyDecoder, family_member, llama_like,
                      sized_for_cache, streamed_weight_bytes)
from .machine import available_memory_bytes
from .probes import Measurement, measure
from .results import data_dir

#: what each mode runs: decode batches (at ``context``), decode contexts (batch 1), prefill prompts,
#: timed runs per step (after a warm-up), the time budget of one batch-1 step's weight stream at
#: the measured bandwidth (seconds) that caps the model's size, and the time budget of the whole run
#: (seconds): a step whose predicted timing would overrun it is skipped, and the check says so
MODES = {
    "quick": {"batches": (1, 2, 4, 8, 16), "context": 128, "contexts": (64, 512), "prompts": (32, 128),
              "steps": 3, "step_budget_s": 0.08, "run_budget_s": 60.0},
    "full": {"batches": (1, 2, 4, 8, 16, 32, 64), "context": 256, "contexts": (64, 512, 2048),
             "prompts": (32, 128, 512, 1024), "steps": 7, "step_budget_s": 0.5, "run_budget_s": 600.0},
}
#: the largest share of the free memory (``MemAvailable``) the decoder's weights may take
MEMORY_SHARE = 0.25
#: the largest share of the free memory the weights and one step's buffers (KV cache, attention
#: scores, activations) may take together; a step that would need more is skipped, and the check says so
BUFFER_SHARE = 0.6
#: to predict a step's time before running it, the step is assumed to reach at least this share of
#: its bound (or the worst share measured so far in the run, if lower)
PREDICT_FLOOR = 0.25
#: how the numpy decoder runs, as cost-model workload fields: float32 throughout, and eager attention
#: (prefill computes the whole score square, then masks it: no FlashAttention fusion)
FP32 = {"weights_dtype": "fp32", "activations_dtype": "fp32", "kv_dtype": "fp32", "compute_dtype": "fp32",
        "attention_compute_dtype": "fp32", "flash_attention": False}
#: a timing whose median is this much above its best run was disturbed (another process, a frequency change)
NOISY_SPREAD = 1.2


@dataclass(frozen=True)
class StepSample:
    """One measured step, its lower bound and its estimate. ``tokens`` is the context already cached
    (decode) or the prompt length (prefill). Times in seconds; FLOPs and bytes from the cost model.

    ``bytes`` is the cost model's whole-step traffic with every operator's activations through
    memory (unfused, the estimate's convention), ``memory_s`` its time at the measured bandwidth;
    ``compulsory_bytes`` is the traffic no implementation avoids (weights, KV cache read and written,
    tokens in, logits out). ``None`` means ``bytes`` are all compulsory (a hand-made sample); a
    file from before the field was kept gets it recomputed on load (:meth:`RealityCheck.from_dict`).
    """

    phase: str
    batch: int
    tokens: int
    measured_s: float
    best_s: float
    flops: float
    bytes: float
    compute_s: float
    memory_s: float
    compulsory_bytes: float | None = None

    @property
    def memory_lower_bound_s(self) -> float:
        """Compulsory bytes at the measured bandwidth (seconds)."""
        if self.compulsory_bytes is None or self.bytes <= 0:
            return self.memory_s
        return self.memory_s * self.compulsory_bytes / self.bytes

    @property
    def bound_s(self) -> float:
        """The lower bound on this step at the measured roofs: max(compute, compulsory bytes ÷ bandwidth)."""
        return max(self.compute_s, self.memory_lower_bound_s)

    @property
    def estimate_s(self) -> float:
        """The estimate at the measured roofs: max(compute, unfused bytes ÷ bandwidth)."""
        return max(self.compute_s, self.memory_s)

    @property
    def binds(self) -> str:
        """Which roof the lower bound sits on."""
        return "memory" if self.memory_lower_bound_s >= self.compute_s else "compute"

    @property
    def achieved(self) -> float:
        """bound / measured: 1 is on the roof; below 1 is the gap the lesson explains."""
        return self.bound_s / self.measured_s

    @property
    def spread(self) -> float:
        """median ÷ best of the timed runs: near 1 for a steady measurement."""
        return self.measured_s / self.best_s

    @property
    def noisy(self) -> bool:
        return self.spread > NOISY_SPREAD

    @property
    def tokens_per_s(self) -> float:
        """Output tokens per second (decode) or prompt tokens per second (prefill)."""
        return self.batch * (1 if self.phase == "decode" else self.tokens) / self.measured_s


def mbu(bytes_moved: float, step_s: float, bandwidth_bytes_per_s: float) -> float:
    """Model bandwidth utilisation: the bytes a step must move, over its time, over the bandwidth.
    Its numerator is the model's byte count, not a measured bandwidth."""
    return bytes_moved / step_s / bandwidth_bytes_per_s


def mfu(flops: float, step_s: float, peak_flops_per_s: float) -> float:
    """Model FLOP utilisation: the step's FLOPs over its time, over the peak FLOP/s."""
    return flops / step_s / peak_flops_per_s


@dataclass(frozen=True)
class ModelSizing:
    """How the decoder of a run was sized. ``target_multiple`` × the last-level cache is what its
    streamed weights aim at (so a step reads them from DRAM); ``limited_by`` is ``""`` when that
    was reached, else ``"time"`` (quick mode's step budget) or ``"memory"`` (:data:`MEMORY_SHARE`
    of the free memory), with ``budget_bytes`` the cap that held it (bytes of streamed weights), or
    ``"family"`` when even the family's largest model (:data:`~.decoder.FAMILY_LAYERS` layers) is
    short of the target."""

    last_level_cache_bytes: int
    target_multiple: int
    streamed_weight_bytes: int
    limited_by: str = ""
    budget_bytes: int | None = None

    @property
    def multiple(self) -> float:
        """Streamed weight bytes ÷ the last-level cache."""
        return self.streamed_weight_bytes / self.last_level_cache_bytes

    @property
    def reached(self) -> bool:
        return self.multiple >= self.target_multiple

    @property
    def over_budget(self) -> bool:
        """True when even the smallest model (one layer) streams more than the budget allowed."""
        return self.budget_bytes is not None and self.streamed_weight_bytes > self.budget_bytes


def size_model(last_level_cache_bytes: int, mode: str, bandwidth_bytes_per_s: float,
               available_bytes: int | None) -> tuple[Model, ModelSizing]:
    """The decoder for ``mode``: the smallest of the family whose streamed weights reach
    :data:`~.decoder.CACHE_MULTIPLE` × the cache, unless a budget holds it smaller — quick mode's
    ``step_budget_s`` × the measured bandwidth, or :data:`MEMORY_SHARE` of ``available_bytes`` (the
    free memory; None: unknown, no memory cap)."""
    if mode not in MODES:
        raise RooflineInputError(f"mode must be one of {sorted(MODES)}, got {mode!r}")
    if not bandwidth_bytes_per_s > 0:
        raise RooflineInputError(f"bandwidth_bytes_per_s must be positive, got {bandwidth_bytes_per_s!r}")
    caps = {}
    budget_s = MODES[mode].get("step_budget_s")
    if budget_s is not None:
        caps["time"] = int(budget_s * bandwidth_bytes_per_s)
    if available_bytes:
        one = family_member(1)
        embedding = one.vocab_size * one.hidden_size * 4  # the float32 table a step reads one row of
        caps["memory"] = max(int(MEMORY_SHARE * available_bytes) - embedding, 1)
    cap_name, cap = min(caps.items(), key=lambda kv: kv[1]) if caps else ("", None)
    try:
        model = sized_for_cache(last_level_cache_bytes, CACHE_MULTIPLE, max_streamed_bytes=cap)
    except RooflineInputError:  # no cap, and even the family's largest model is short of the target
        model = family_member(FAMILY_LAYERS)
    streamed = streamed_weight_bytes(model)
    sizing = ModelSizing(int(last_level_cache_bytes), CACHE_MULTIPLE, streamed)
    if not sizing.reached:
        if model.num_hidden_layers >= FAMILY_LAYERS and (cap is None or streamed <= cap):
            sizing = ModelSizing(sizing.last_level_cache_bytes, CACHE_MULTIPLE, streamed, "family")
        else:  # a budget held it (one layer may even exceed a very small budget: ``over_budget``)
            sizing = ModelSizing(sizing.last_level_cache_bytes, CACHE_MULTIPLE, streamed, cap_name, cap)
    return model, sizing


#: the kernels' own time (fastest run − fixed cost) must be at least this share of the step's fastest
#: run, and more than the two timings' spreads, for the split to be made: a smaller difference of two
#: noisy timings would print a bandwidth that means nothing
SPLIT_MARGIN = 0.1


@dataclass(frozen=True)
class OverheadSplit:
    """A decode step's measured time against its bound, with the fixed cost per step taken out.
    Seconds; ``bytes`` the step's compulsory bytes (cost model), ``bandwidth_bytes_per_s`` the measured
    DRAM roof, ``binds`` the roof that sets the bound (``"memory"`` or ``"compute"``), and
    ``overhead_spread_s`` how much the fixed cost's own runs spread (median − best).

    The split is made only where it can be (``separable``): the step's fastest run must exceed the
    fixed cost by more than :data:`SPLIT_MARGIN` of that fastest run and by more than both timings'
    spreads.
    Otherwise the two cannot be told apart on this run, and the figures that need the difference
    (``streaming_s``, ``effective_bandwidth_bytes_per_s``, ``fraction_of_roof``) are None — never a
    negative, clamped or noise-sized number. ``verdict`` names the case:

    - ``"not separable"``: as above;
    - ``"beat the bound"``: the step ran at or under its bound (so on this run the roofs are not this
      step's roofs);
    - ``"fixed cost covers the gap"``: the fixed cost is at least the whole gap, so with it taken out
      the kernels ran at or above the roof that binds;
    - ``"fixed cost and streaming"``: part of the gap is the fixed cost, the rest is the kernels
      running below the roof that binds."""

    measured_s: float
    best_s: float
    bound_s: float
    overhead_s: float
    bytes: float
    bandwidth_bytes_per_s: float
    binds: str = "memory"
    overhead_spread_s: float = 0.0

    @property
    def gap_s(self) -> float:
        """measured − bound (negative if the step beat its bound)."""
        return self.measured_s - self.bound_s

    @property
    def separable(self) -> bool:
        noise = max(SPLIT_MARGIN * self.best_s, (self.measured_s - self.best_s) + max(self.overhead_spread_s, 0.0))
        return self.best_s - self.overhead_s > noise

    @property
    def streaming_s(self) -> float | None:
        """measured − fixed cost: the time the kernels themselves took; None when not separable."""
        return self.measured_s - self.overhead_s if self.separable else None

    @property
    def effective_bandwidth_bytes_per_s(self) -> float | None:
        """bytes ÷ (measured − fixed cost); None when not separable."""
        streaming = self.streaming_s
        return None if streaming is None else self.bytes / streaming

    @property
    def fraction_of_roof(self) -> float | None:
        """bound ÷ (measured − fixed cost): how close the kernels came to the roof that binds once
        the fixed cost is out (the DRAM roof for a memory-bound step: the effective bandwidth over it);
        None when not separable."""
        streaming = self.streaming_s
        return None if streaming is None else self.bound_s / streaming

    @property
    def overhead_share_of_gap(self) -> float | None:
        """fixed cost ÷ gap, where there is a gap (None when the step beat its bound or is not separable)."""
        return self.overhead_s / self.gap_s if self.separable and self.gap_s > 0 else None

    @property
    def verdict(self) -> str:
        if not self.separable:
            return "not separable"
        if self.gap_s <= 0:
            return "beat the bound"
        if self.overhead_s >= self.gap_s:
            return "fixed cost covers the gap"
        return "fixed cost and streaming"


def describe_split(split: OverheadSplit) -> str:
    """What a learner reads about a step's split (Markdown): every comparison in it is the verdict's,
    every figure from ``split``; a hypothesis is called one."""
    from ..core.units import duration, percent

    roof = "the DRAM (triad) roof" if split.binds == "memory" else "the matmul roof"
    fixed = f"Fixed cost per step: **{duration(split.overhead_s)}**"
    if split.verdict == "not separable":
        return (f"{fixed} — not clearly smaller than the step's fastest run ({duration(split.best_s)}): the difference "
                f"is under {percent(SPLIT_MARGIN, 0)} of the run or inside the timings' own spread. On this run the "
                "fixed cost and the kernels' own time **cannot be separated**: the model is too small against the "
                "fixed cost, or the machine was busy while one of them was timed. Run the measurement again, or in "
                "full mode.")
    reached = percent(split.fraction_of_roof, 0)
    if split.verdict == "beat the bound":
        return (f"{fixed}. The step ran at or under its bound ({duration(split.measured_s)} against "
                f"{duration(split.bound_s)}): there is no gap to split, and with the fixed cost taken out its kernels "
                f"ran at {reached} of {roof}. The roof or the bound's counts, not the step, are what to question here "
                "(see the note under the tables).")
    if split.verdict == "fixed cost covers the gap":
        return (f"{fixed}, at least the whole gap ({duration(split.gap_s)}): with it taken out, the kernels ran at "
                f"{reached} of {roof} — at or above it. A **hypothesis** for this run: the fixed cost explains the "
                "gap, and the roof reads low for these kernels (the tiny model's fixed cost may also not carry over "
                "unchanged to the real one).")
    share = split.overhead_share_of_gap
    rest = (f"the other {percent(1 - share, 0)}" if round(100 * (1 - share)) >= 1 else "the rest (under 1 %)")
    why = ("the kernels (mostly matrix–vector products here, which read far more than they write) stream below the "
           "rate the triad reached — the triad is not every access pattern's ceiling: a read-mostly kernel can beat "
           "it, or fall short of it" if split.binds == "memory" else
           "the kernels run below the best square matmul's rate at this step's shapes")
    return (f"{fixed}, {percent(share, 0)} of the gap ({duration(split.gap_s)}); {rest} is put down to the kernels "
            f"themselves, at {reached} of {roof} once the fixed cost is out. That share is what is *left* after the "
            f"measured fixed cost, not a measurement of its own: a **hypothesis** is that {why}. Another: the tiny "
            "model's calls are too small for the matrix library to split over threads, so its fixed cost leaves out "
            "what a real-size call pays to start and join its threads — that cost would sit in the residual too.")


def critical_batch_for(model: Model, bandwidth_bytes_per_s: float, peak_flops_per_s: float, context_tokens: int,
                       largest: int = 4096, *, unfused: bool = False, dtypes: dict | None = None) -> int | None:
    """The smallest decode batch whose compute time reaches its memory time on these roofs;
    ``None`` if none up to ``largest``. By default the memory time is the compulsory bytes' (the
    lower bound's knee); ``unfused=True`` takes every operator's activations through memory too (the
    estimate's knee, never at a smaller batch). Priced in ``dtypes`` (float32 by default, the numpy
    decoder's)."""
    formats = dtypes or FP32
    for batch in range(1, largest + 1):
        cost = model_cost(model, phase="decode", batch=batch, context_tokens=context_tokens, **formats)
        moved = cost.bytes if unfused else cost.compulsory_bytes
        if float(cost.flops) / peak_flops_per_s >= float(moved) / bandwidth_bytes_per_s:
            return batch
    return None


#: "nearly doubling": a doubled batch whose throughput is at least this many times the previous
#: batch's is still on the linear part; below it, the step is sub-linear (:func:`measured_knee`).
#: Equivalently, for a doubled batch: the step's time grew by more than ``2 / KNEE_FLAT_BELOW``.
KNEE_FLAT_BELOW = 1.5


def measured_knee(samples, flat_below: float = KNEE_FLAT_BELOW) -> int | None:
    """The first sub-linear step of measured decode throughput: the first batch whose tokens/s is
    less than ``flat_below`` × the previous one's × (batch ratio ÷ 2) — for batches doubling, less
    than ``flat_below`` (1.5) times the previous tokens/s, i.e. a step time more than ``2 /
    flat_below`` (1.33) times the previous one's. Where compute meets memory it bends; but anything
    else that grows with the batch (a slower kernel for more rows) bends it too — the lesson
    compares the measured step time's growth across it with the lower bound's (the same rule applied
    to the bound's times) and says which explains it."""
    if not flat_below > 0:
        raise RooflineInputError(f"flat_below must be positive, got {flat_below!r}")
    decode = sorted((s for s in samples if s.phase == "decode"), key=lambda s: s.batch)
    contexts, batches = {s.tokens for s in decode}, [s.batch for s in decode]
    if len(contexts) > 1 or len(set(batches)) != len(batches):
        raise RooflineInputError("measured_knee needs one decode step per batch, all at one context (a batch "
                                 f"sweep such as check.decode_by_batch); got batches {batches} at contexts "
                                 f"{sorted(contexts)}")
    for prev, cur in zip(decode, decode[1:]):
        if cur.tokens_per_s < flat_below * prev.tokens_per_s * (cur.batch / prev.batch) / 2:
            return cur.batch
    return None


@dataclass
class RealityCheck:
    """Everything one run measured: the roofs it used, the model that ran, every step."""

    mode: str
    created: str
    model: dict
    bandwidth_bytes_per_s: float
    peak_flops_per_s: float
    last_level_cache_bytes: int
    weight_bytes: int
    machine: dict = field(default_factory=dict)
    dtypes: dict = field(default_factory=lambda: dict(FP32))
    dispatch_s: float = 0.0
    decode_by_batch: list[StepSample] = field(default_factory=list)
    decode_by_context: list[StepSample] = field(default_factory=list)
    prefill: list[StepSample] = field(default_factory=list)
    #: how the decoder was sized (:class:`ModelSizing` as a dict); empty for a given model or an old file
    sizing: dict = field(default_factory=dict)
    #: the fastest run of the fixed-cost measurement (``dispatch_s`` is its median); 0 in an old file
    dispatch_best_s: float = 0.0
    #: steps of the plan that were not run, each ``{"phase", "batch", "tokens", "reason", "why"}``:
    #: reason ``"memory"`` (weights + its buffers past :data:`BUFFER_SHARE` of the free memory) or
    #: ``"time"`` (its predicted timing past the mode's ``run_budget_s``)
    skipped: list = field(default_factory=list)

    @property
    def samples(self) -> list[StepSample]:
        return self.decode_by_batch + self.decode_by_context + self.prefill

    def model_config(self) -> Model:
        """The :class:`Model` that ran (its shape is all the cost model needs)."""
        return Model(**self.model)

    def critical_batch(self, unfused: bool = False) -> int | None:
        """The lower bound's knee on these measured roofs (compulsory bytes), at the batch sweep's
        context and in the run's number formats; ``unfused=True``: the estimate's knee (unfused bytes)."""
        context = self.decode_by_batch[0].tokens if self.decode_by_batch else 0
        return critical_batch_for(self.model_config(), self.bandwidth_bytes_per_s, self.peak_flops_per_s, context,
                                  unfused=unfused, dtypes={**FP32, **(self.dtypes or {})})

    def overhead_s(self) -> float:
        """The fixed cost of a decode step (seconds), measured directly: the step time of a tiny
        model with the same layers and calls (``dispatch_s``: Python dispatching numpy calls), whose
        arrays are too small to cost anything else.

        There is no fallback. Fitting measured − bound over batch-1 steps of several contexts
        cannot tell a fixed cost from kernels streaming below the roof: where the bound barely moves
        with context, a shortfall proportional to the bytes is nearly constant too. A check without
        the measurement (a file from before it was kept) raises a clear error instead."""
        if self.dispatch_s > 0:
            return self.dispatch_s
        raise RooflineInputError(
            "this reality check has no fixed-cost measurement (dispatch_s; a file from before it was kept): run "
            "lesson 9's measurement again. A constant fitted to measured − bound cannot separate a fixed cost "
            "from kernels streaming below the roof, so none is made up.")

    def model_sizing(self) -> ModelSizing | None:
        """How the decoder was sized (None for a run given its model, or a file from before sizing was kept)."""
        return ModelSizing(**self.sizing) if self.sizing else None

    def overhead_split(self, sample: StepSample) -> OverheadSplit:
        """``sample`` split into the fixed cost per step and the rest (:class:`OverheadSplit`)."""
        spread = self.dispatch_s - self.dispatch_best_s if self.dispatch_s > 0 and self.dispatch_best_s > 0 else 0.0
        compulsory = sample.bytes if sample.compulsory_bytes is None else sample.compulsory_bytes
        return OverheadSplit(sample.measured_s, sample.best_s, sample.bound_s, self.overhead_s(), compulsory,
                             self.bandwidth_bytes_per_s, sample.binds, spread)

    def effective_bandwidth_bytes_per_s(self, sample: StepSample) -> float | None:
        """The bandwidth the step's kernels actually reached once the fixed cost is taken out:
        bytes ÷ (measured − overhead). Below the triad roof, it is the second part of the gap.
        None when the fixed cost is not smaller than the step's fastest run: on this run the two
        cannot be separated."""
        return self.overhead_split(sample).effective_bandwidth_bytes_per_s

    def noisy_samples(self) -> list[StepSample]:
        """Steps whose timings spread too much to trust (median ÷ best above ``NOISY_SPREAD``)."""
        return [s for s in self.samples if s.noisy]

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "RealityCheck":
        if not isinstance(data, dict) or "decode_by_batch" not in data:
            raise RooflineInputError("not a reality-check file (no decode_by_batch)")
        lists = {k: [StepSample(**s) for s in data.get(k, [])] for k in ("decode_by_batch", "decode_by_context",
                                                                             "prefill")}
        rest = {k: v for k, v in data.items() if k not in lists}
        if any(s.compulsory_bytes is None for v in lists.values() for s in v) and "model" in rest:
            model, dtypes = Model(**rest["model"]), {**FP32, **rest.get("dtypes", {})}
            lists = {k: [s if s.compulsory_bytes is not None else
                         replace(s, compulsory_bytes=_compulsory_bytes(model, s.phase, s.batch, s.tokens, dtypes))
                         for s in v] for k, v in lists.items()}
        return cls(**rest, **lists)


def _time_steps(fn, steps: int) -> tuple[float, float]:
    fn()  # warm-up
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), min(times)


def _sample(model: Model, phase: str, batch: int, tokens: int, timing: tuple[float, float],
            bandwidth: float, peak: float) -> StepSample:
    fields = {"prompt_tokens": tokens} if phase == "prefill" else {"context_tokens": tokens}
    cost = model_cost(model, phase=phase, batch=batch, **fields, **FP32)
    flops, moved = float(cost.flops), float(cost.bytes)
    return StepSample(phase, batch, tokens, timing[0], timing[1], flops, moved, flops / peak, moved / bandwidth,
                      float(cost.compulsory_bytes))


def _compulsory_bytes(model: Model, phase: str, batch: int, tokens: int, dtypes: dict) -> float:
    fields = {"prompt_tokens": tokens} if phase == "prefill" else {"context_tokens": tokens}
    return float(model_cost(model, phase=phase, batch=batch, **fields, **dtypes).compulsory_bytes)


def _tiled(one: KVCache, batch: int) -> KVCache:
    """``batch`` copies of one prefilled sequence (prefill once, not ``batch`` times)."""
    return KVCache([np.repeat(k, batch, axis=0) for k in one.k], [np.repeat(v, batch, axis=0) for v in one.v],
                   one.length)


def _decode_timing(dec: NumpyDecoder, cache: KVCache, steps: int) -> tuple[float, float]:
    token = np.zeros(cache.batch, dtype=np.int64)
    start = cache.length

    def step():
        cache.length = start  # every timed step sees the same context (it rewrites one slot)
        dec.decode(token, cache)

    try:
        return _time_steps(step, steps)
    finally:
        cache.length = start


def step_buffer_bytes(model: Model, phase: str, batch: int, tokens: int) -> int:
    """Bytes the numpy decoder allocates for one step besides its weights (float32): the KV cache of
    every layer (``batch`` sequences of ``tokens`` + 1 positions; a prefill's cache holds its prompt),
    the attention scores with their masked and exponentiated copies (three arrays of one layer), and
    the widest activations (the MLP's gate, up and product). An estimate of the peak, for budgeting."""
    layers, nq, nkv, d = model.num_hidden_layers, model.num_attention_heads, model.num_key_value_heads, model.head_dim
    rows = batch * (tokens if phase == "prefill" else 1)  # new tokens in this step
    cached = tokens if phase == "prefill" else tokens + 1
    kv = 2 * layers * batch * nkv * cached * d
    scores = 3 * batch * nq * (rows // batch) * cached
    activations = 3 * rows * max(model.intermediate_size, model.vocab_size, model.hidden_size)
    return 4 * (kv + scores + activations)


def _plan(plan: dict) -> list[tuple[str, int, int]]:
    """The steps of a mode, cheapest first within each sweep: (phase, batch, tokens)."""
    steps = [("decode", 1, tokens) for tokens in sorted(plan["contexts"])]
    steps += [("decode", batch, plan["context"]) for batch in sorted(plan["batches"])]
    steps += [("prefill", 1, prompt) for prompt in sorted(plan["prompts"])]
    return list(dict.fromkeys(steps))  # the batch-1 step at the batch sweep's context runs once


def predicted_step_s(model: Model, phase: str, batch: int, tokens: int, runs: int, share: float,
                     bandwidth: float, peak: float, cache_built: bool = True) -> float:
    """Seconds a planned step is predicted to take before it runs: ``runs`` timed runs and a warm-up
    at its lower bound ÷ ``share`` (the achieved share assumed), plus — for a decode step whose
    context's cache is not built yet (``cache_built`` False) — the untimed batch-1 prefill of
    ``tokens`` that builds it, priced the same way."""
    priced = _sample(model, phase, batch, tokens, (1.0, 1.0), bandwidth, peak)
    seconds = (runs + 1) * priced.bound_s / share
    if phase == "decode" and not cache_built and tokens > 0:
        seconds += _sample(model, "prefill", 1, tokens, (1.0, 1.0), bandwidth, peak).bound_s / share
    return seconds


def run(mode: str = "quick", roofs: Measurement | None = None, model: Model | None = None,
        seed: int = 0, available_bytes: int | None = None) -> RealityCheck:
    """Measure the roofs (or take lesson 8's ``roofs``: anything with ``dram_bytes_per_s()``,
    ``peak_flops_per_s("float32")`` and a ``machine`` dict), build a decoder whose float32 weights are
    at least 8× the last-level cache within the mode's budgets (:func:`size_model`; or run
    ``model``), and time decode (by batch and by context) and prefill.

    Two budgets hold the run: a step whose weights and buffers (:func:`step_buffer_bytes`) would
    take more than :data:`BUFFER_SHARE` of the free memory (``available_bytes``, read from the OS
    by default) is skipped, and so is a step whose predicted time (:func:`predicted_step_s`: its bound
    at :data:`PREDICT_FLOOR` of the roof, or the worst share seen so far, times its runs, plus the
    prefill that builds a decode context's cache the first time that context runs) would end the
    run past the mode's ``run_budget_s``. Skipped steps are listed in ``check.skipped`` with why."""
    if mode not in MODES:
        raise RooflineInputError(f"mode must be one of {sorted(MODES)}, got {mode!r}")
    started = time.perf_counter()
    plan = MODES[mode]
    roofs = roofs if roofs is not None else measure(mode, gpu=False)
    bandwidth, peak = roofs.dram_bytes_per_s(), roofs.peak_flops_per_s("float32")
    caches = {k: int(v) for k, v in roofs.machine.get("caches", {}).items()}
    llc = max(caches.values()) if caches else 32 * 2**20
    free = available_bytes if available_bytes is not None else available_memory_bytes()
    sizing = None
    if model is None:
        model, sizing = size_model(llc, mode, bandwidth, free)
    dec = NumpyDecoder(model, seed=seed)
    steps = plan["steps"]
    # the fixed cost per step: the same layers and calls on arrays too small to cost anything else
    tiny = NumpyDecoder(llama_like("dispatch-probe", hidden_size=32, num_hidden_layers=model.num_hidden_layers,
                                   num_attention_heads=4, num_key_value_heads=2, head_dim=8, intermediate_size=64,
                                   vocab_size=64), seed=seed)
    tiny_cache = tiny.new_cache(1, 9)
    tiny.prefill(np.zeros((1, 8), dtype=np.int64), tiny_cache)
    dispatch_s, dispatch_best_s = _decode_timing(tiny, tiny_cache, max(steps, 5) * 4)
    check = RealityCheck(mode, datetime.now(timezone.utc).isoformat(timespec="seconds"),
                         {k: v for k, v in asdict(model).items() if v not in (None, 0, 0.0, False, "")},
                         bandwidth, peak, llc, dec.weight_bytes(), dict(roofs.machine), dict(FP32), dispatch_s,
                         sizing=asdict(sizing) if sizing else {}, dispatch_best_s=dispatch_best_s)
    budget_s = plan.get("run_budget_s")
    worst = PREDICT_FLOOR  # the lowest achieved fraction so far, for predicting the next step's time
    prompts = {}  # tokens → a prefilled batch-1 cache (tiled for the batch sweep)
    for phase, batch, tokens in _plan(plan):
        need = dec.weight_bytes() + step_buffer_bytes(model, phase, batch, tokens)
        predicted_s = predicted_step_s(model, phase, batch, tokens, steps, worst, bandwidth, peak,
                                       cache_built=tokens in prompts)
        elapsed = time.perf_counter() - started
        why = None
        if free and need > BUFFER_SHARE * free:
            why = ("memory", f"needs {need / 2**30:.2f} GiB with the weights; the budget is "
                             f"{BUFFER_SHARE:.0%} of {free / 2**30:.2f} GiB free")
        elif budget_s is not None and elapsed + predicted_s > budget_s:
            why = ("time", f"predicted {predicted_s:.1f} s after {elapsed:.1f} s; the run's budget is {budget_s:.0f} s")
        if why:
            check.skipped.append({"phase": phase, "batch": batch, "tokens": tokens, "reason": why[0], "why": why[1]})
            continue
        if phase == "prefill":
            cache = dec.new_cache(1, tokens)
            prompt = np.zeros((1, tokens), dtype=np.int64)

            def prefill(cache=cache, prompt=prompt):
                cache.length = 0  # the same cache each run: allocating it is not part of the step
                dec.prefill(prompt, cache)
            timing = _time_steps(prefill, steps)
        else:
            if tokens not in prompts:
                one = dec.new_cache(1, tokens + 1)
                dec.prefill(np.zeros((1, tokens), dtype=np.int64), one)
                prompts[tokens] = one
            cache = prompts[tokens] if batch == 1 else _tiled(prompts[tokens], batch)
            timing = _decode_timing(dec, cache, steps)
            del cache
        sample = _sample(model, phase, batch, tokens, timing, bandwidth, peak)
        worst = min(worst, sample.achieved)
        if phase == "prefill":
            check.prefill.append(sample)
        elif batch == 1 and tokens in plan["contexts"]:
            check.decode_by_context.append(sample)
        if phase == "decode" and tokens == plan["context"]:
            check.decode_by_batch.append(sample)
    return check


def save(check: RealityCheck, path: Path | str | None = None) -> Path:
    """Write ``check`` as JSON (atomically) into the learner's data folder; returns the path."""
    if path is None:
        stamp = check.created.replace(":", "").replace("-", "")[:15]
        path = data_dir() / f"reality-{check.mode}-{stamp}.json"
    path = Path(path)
    atomic_write_text(path, json.dumps(check.to_dict(), indent=1) + "\n")
    return path


def load(path: Path | str) -> RealityCheck:
    """Read a saved reality check; a file that is not one gets a clear error naming it."""
    path = Path(path)
    try:
        return RealityCheck.from_dict(json.loads(path.read_text("utf-8")))
    except (OSError, ValueError, TypeError) as exc:
        raise RooflineInputError(f"{path} is not a readable reality-check file: {exc}") from None


def example() -> RealityCheck:
    """A reality check shipped with the course (quick mode, on the machine named inside it), for the
    exercises and the tests when you have not run lesson 9 yet."""
    from importlib import resources

    text = resources.files("roofline_lessons").joinpath("data", "example_reality.json").read_text("utf-8")
    return RealityCheck.from_dict(json.loads(text))


def latest_saved(directory: Path | str | None = None) -> Path | None:
    """The newest CPU reality check saved in your data folder (``reality-*.json``), if any (a GPU
    run, ``reality-gpu-*.json``, is priced in BF16 and kept apart)."""
    found = sorted((p for p in Path(directory or data_dir()).glob("reality-*.json")
                    if not p.name.startswith("reality-gpu")), key=lambda p: p.stat().st_mtime)
    return found[-1] if found else None


def gpu_status() -> dict:
    """Whether the GPU path can run here: ``{"available": bool, "why": str}`` (PyTorch is never a
    dependency of the course; without it or without CUDA the lesson says so and runs on the CPU)."""
    from .gpu import gpu_status as probe_status

    available, why = probe_status()
    return {"available": available, "why": why}


def run_gpu(mode: str = "quick", seed: int = 0) -> RealityCheck | dict:
    """The same reality check on a CUDA GPU in BF16 (PyTorch), against roofs measured by lesson 8's
    GPU probes (device copy bandwidth, BF16 matmul rate). Without PyTorch or CUDA returns
    :func:`gpu_status`'s dict, which says why. The model's BF16 weights are at least 8× the L2."""
    status = gpu_status()
    if not status["available"]:
        return status
    if mode not in MODES:
        raise RooflineInputError(f"mode must be one of {sorted(MODES)}, got {mode!r}")
    import torch

    from .gpu import gpu_probes
    from .torch_decoder import TorchDecoder

    probes = gpu_probes(mode)
    copy = next(p for p in probes["probes"] if p["kind"] == "bandwidth")
    matmul = next(p for p in probes["probes"] if p["kind"] == "matmul" and p["dtype"] == "bf16")
    bandwidth, peak = copy["bytes"] / copy["best_s"], matmul["flops"] / matmul["best_s"]
    model = sized_for_cache(int(probes["l2_bytes"]), element_bytes=2)
    dec = TorchDecoder(NumpyDecoder(model, seed=seed), device="cuda", dtype="bfloat16")
    bf16 = {**{k: "bf16" for k in FP32 if k.endswith("_dtype")}, "flash_attention": False}
    plan, steps = MODES[mode], MODES[mode]["steps"] * 3
    check = RealityCheck(mode, datetime.now(timezone.utc).isoformat(timespec="seconds"),
                         {k: v for k, v in asdict(model).items() if v not in (None, 0, 0.0, False, "")},
                         bandwidth, peak, int(probes["l2_bytes"]), dec.weight_bytes(),
                         {"device": probes.get("device", "cuda"), "catalog_part": probes.get("catalog_part")}, bf16)

    def timed(fn) -> tuple[float, float]:
        fn()
        torch.cuda.synchronize()
        times = []
        for _ in range(steps):
            t0 = time.perf_counter()
            fn()
            torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)
        return statistics.median(times), min(times)

    def sample(phase, batch, tokens, timing):
        fields = {"prompt_tokens": tokens} if phase == "prefill" else {"context_tokens": tokens}
        cost = model_cost(model, phase=phase, batch=batch, **fields, **bf16)
        flops, moved = float(cost.flops), float(cost.bytes)
        return StepSample(phase, batch, tokens, timing[0], timing[1], flops, moved, flops / peak, moved / bandwidth,
                          float(cost.compulsory_bytes))

    with torch.inference_mode():
        context = plan["context"]
        for batch in plan["batches"]:
            cache = dec.new_cache(batch, context + 1)
            dec.forward(torch.zeros((batch, context), dtype=torch.long, device="cuda"), cache)
            token = torch.zeros((batch, 1), dtype=torch.long, device="cuda")

            def step(cache=cache, token=token):
                cache["length"] = context
                dec.forward(token, cache)

            check.decode_by_batch.append(sample("decode", batch, context, timed(step)))
        for prompt in plan["prompts"]:
            tokens = torch.zeros((1, prompt), dtype=torch.long, device="cuda")
            check.prefill.append(sample("prefill", 1, prompt,
                                        timed(lambda tokens=tokens, prompt=prompt: dec.forward(
                                            tokens, dec.new_cache(1, prompt)))))
    return check
