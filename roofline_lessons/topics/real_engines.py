"""Lesson 13: how close real engines get. Every published run in the engine-runs catalog
(:mod:`roofline_lessons.core.engine_runs`) priced by the course for its own workload — the lower
bound no engine can beat and the course's estimate — and the measured figure as a fraction of each;
then a per-regime efficiency calibrated on some runs and used to forecast the others, and a sizing
calculator built on the bound and that efficiency.

How a run is priced (the conventions a lesson can quote):

- **The workload is the run's**: its part, model, number formats, prompt and output lengths and its
  split over chips (tensor, expert, pipeline parallel, attention data parallel, redundant expert
  slots, data-parallel replicas). A data-parallel replica is an independent copy: an aggregate
  figure is the replicas' sum, priced as replicas × one copy (the chips of one copy are what
  :func:`~roofline_lessons.topics.serving.request_timeline` prices).
- **Rates per user, TPOT** (``output_tokens_per_s_per_user``, ``tpot_s``): the decode steps of a
  request of the run's prompt and output lengths at the run's batch (1 when the source states none,
  the batch-1 regime's premise), as :func:`~roofline_lessons.topics.serving.request_timeline` prices
  them: (E2E − TTFT) ÷ (output − 1), the lower bound from each step's lower bound. The per-user rate
  is 1 ÷ TPOT: engines that quote a decode rate time the decode steps (TensorRT-LLM's per-user
  rates); a source that folds the prefill into its rate (gpt-fast, a 5-token prompt) publishes a
  rate the prefill lowers a little, so against the decode-only bound its fraction reads a little
  low: still at most 1.
- **TTFT** (``ttft_s``): the prefill of the batch's prompts, lower bound and estimate.
- **Aggregate rates** (``output_tokens_per_s``, ``..._per_chip``, ``total_tokens_per_s``): at the
  run's batch when the source states one; for a maximum-throughput run that states none, the bound
  takes the largest batch whose weights and KV fit every chip's whole memory with each sequence at
  the mean context of a request's life, prompt + output/2 (continuous batching with a paged KV
  cache holds requests at every stage, each only what it has cached; the continuous-batching bound
  only rises with the batch), and the estimate the largest that fits at
  :data:`ESTIMATE_MEMORY_UTILIZATION` of memory with each sequence at its final context (a static
  batch that reserves every request's whole KV). The bound is
  continuous batching's steady state
  (:func:`~roofline_lessons.topics.serving.continuous_batching_cycle_lower_bound_s`): the prefills
  ride in the decode steps, each unit's work summed over the cycle. The estimate is one static
  batch (prefill, then the decode steps, the placement's conventions). Total tokens/s counts the
  prompts' tokens too: output rate × (prompt + output) ÷ output.
- **Prefill throughput** (``input_tokens_per_s``): batch × prompt ÷ the prefill's lower bound, at the
  run's batch or the largest that fits.
- **Fraction of the bound**: measured ÷ bound for a rate, bound ÷ measured for a time, so it is at most
  1 wherever the bound holds, and the same reading for both. Fraction of the estimate likewise
  (it can exceed 1: the estimate is not a bound).
- **Speculative decoding**: a run the catalog marks speculative can yield several tokens per step;
  the per-user and TPOT bounds then assume every drafted token accepted (the most a verify step can
  yield), which no acceptance rate can beat.
- **MoE routing**: for a mixture of experts every figure, bound and estimate, assumes the tokens of
  a step route uniformly and independently (the experts a step touches are the expected number
  under that routing). That is a property of the traffic, not of the engine: tokens that share
  experts (consecutive verify tokens often do) read fewer expert weights, so for an MoE the bound is
  a bound on traffic routed that way.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace

import numpy as np

from ..core.engine_runs import METRICS, NOT_STATED, REGIMES, EngineRun, get_engine_run, list_engine_runs
from ..core.errors import RooflineInputError
from ..core.hardware import get_part
from ..core.memory import VLLM_DEFAULT_MEMORY_UTILIZATION
from ..core.parallel import Parallelism, max_batch_that_fits_on_chips
from ..core.placement import place
from .published import GPT_FAST_NEW_TOKENS
from .serving import request_timeline

#: the share of memory the estimate lets weights and KV use: the course's serving-engine figure
#: (vLLM's long-standing default ``gpu_memory_utilization``; engines differ)
ESTIMATE_MEMORY_UTILIZATION = VLLM_DEFAULT_MEMORY_UTILIZATION
#: metrics that are times (seconds): fraction of the bound = bound ÷ measured
TIME_METRICS = ("ttft_s", "tpot_s")
#: the largest batch the search tries for an unstated batch (sequences); a cap, not a figure any run states
MAX_BATCH = 4096


@dataclass(frozen=True)
class Pricing:
    """What the course prices a run as: the run's own figures, with every gap the source leaves
    filled by a stated assumption (:attr:`assumed`), chosen so the bound stays loose — the engine is
    given the benefit of the doubt (the shortest prompt, the smallest KV format, the split with the
    highest bound)."""

    parallelism: Parallelism  #: one copy's split
    copies: int  #: data-parallel copies the aggregate figure covers
    prompt_tokens: int
    output_tokens: int
    batch: int | None  #: sequences per copy; None: the largest that fits
    fields: dict  #: the workload's number formats (request_timeline's keywords)
    mode: str  #: "request", "decode step", "prefill step" or "any batch" (see :data:`MODES`)
    assumed: tuple[str, ...]  #: each gap the source left, and what the course assumed


#: how a run is priced: a request's whole life (the default); one decode step at a stated KV length (a
#: source that times decode alone, prefill assumed unlimited); one prefill step; or "any batch" (a
#: production figure whose lengths and batch are unstated: a step at the shortest context and a batch
#: so large that the per-token costs — FLOPs, the routed tokens' traffic — set the rate; the weights
#: and per-call costs amortise to nothing)
MODES = ("request", "decode step", "prefill step", "any batch")

#: per-run gaps the source leaves that no general rule fills: field -> (value, why)
RUN_ASSUMPTIONS: dict[str, dict[str, tuple[object, str]]] = {
    "mlperf-4.1-llama-2-70b-h200x8-offline": {
        "prompt_tokens": (1, "MLPerf's prompts are a public OpenOrca subset whose lengths the log does not state "
                             "(derivable from the dataset, not derived here): the loosest case, a 1-token prompt"),
        "output_tokens": (291, "the log's output rate ÷ its sample rate (31,302.7 ÷ 107.477 ≈ 291 tokens per "
                               "sample), derived here"),
        "batch": (806, "the submission's config: gpu_batch_size 806, one copy per GPU (tensor_parallelism 1)"),
    },
    "mlperf-4.1-llama-2-70b-mi300x8-offline": {
        "prompt_tokens": (1, "OpenOrca's distribution, lengths unstated: the loosest case, a 1-token prompt"),
        "output_tokens": (293, "the log's output rate ÷ its sample rate (23,514.8 ÷ 80.15 ≈ 293 tokens per sample), "
                               "derived here"),
    },
    "mlperf-4.1-llama-2-70b-h200x8-server-ttft": {
        "prompt_tokens": (1, "OpenOrca's distribution, lengths unstated: the loosest case, a 1-token prompt "
                             "(its prefill reads the weights once)"),
        "output_tokens": (291, "the offline run's mean output per sample, derived there"),
    },
    "deepseek-online-decode-h800-ep144": {
        "mode": ("any batch", "a day of production traffic: batch per GPU and prompt lengths unstated (a mean KV "
                              "length of 4,989 tokens per output token is stated), so the bound takes any batch at the "
                              "shortest context: only the per-token costs remain (here the all-to-alls over the NIC, "
                              "which do not depend on the context)"),
    },
    "deepseek-online-prefill-h800-ep32": {
        "mode": ("any batch", "production traffic: prompt lengths and batch unstated; 56.3 % of input tokens "
                              "hit the on-disk KV cache and are not computed, so the bound is divided by 1 − 0.563"),
        "cache_hit_fraction": (0.563, "stated by DeepSeek for the same 24 hours"),
    },
    "sglang-deepseek-v3-decode-h100x72-ep72": {
        "mode": ("decode step", "the blog times decode alone (prefill assumed unlimited) at a KV cache length of "
                                "2,000 tokens"),
        "batch": (256 * 72, "batch 256 read as per GPU (the blog's two-batch-overlap section speaks of 256 tokens "
                            "per device): the larger reading, so the looser bound"),
        "weights_dtype": ("fp8", "unstated; DeepSeek-V3's released weights are FP8 and DeepGEMM is an FP8 GEMM library"),
        "expert_slots": (288, "unstated for this run; the blog's EPLB option of 32 redundant experts: 256 + 32 = 288 "
                              "slots, 4 a GPU (72 does not divide 256)"),
    },
    "sglang-deepseek-v3-prefill-h100x32-ep32-2k": {
        "mode": ("any batch", "the blog times prefill alone (decode assumed unlimited) and states tokens per device "
                              "only for another prompt length: any batch and the shortest prompt, so only the per-token "
                              "costs remain"),
        "weights_dtype": ("fp8", "unstated; DeepSeek-V3's released weights are FP8"),
    },
    "trtllm-deepseek-r1-b200x8-bs1-no-mtp": {
        "quantized_weights": ("mlp", "stated: the blog's precision table keeps attention, the MTP layers and the router "
                                     "GEMM in BF16, the dense and MoE FFNs in NVFP4"),
    },
    "trtllm-deepseek-r1-b200x8-bs1-mtp3-relaxed": {
        "quantized_weights": ("mlp", "stated: the blog's precision table keeps attention, the MTP layers and the router "
                                     "GEMM in BF16, the dense and MoE FFNs in NVFP4"),
    },
    "gpt-fast-llama-2-7b-int4-a100-bs1": {
        "quantized_weights": ("all", "gpt-fast's quantize.py quantizes every nn.Linear, the output head included (the "
                                     "course's 'all' also puts the embedding and norms in int4: a looser bound)"),
    },
    "gpt-fast-llama-2-70b-int4-a100-bs1": {
        "quantized_weights": ("all", "gpt-fast's quantize.py quantizes every nn.Linear, the output head included (the "
                                     "course's 'all' also puts the embedding and norms in int4: a looser bound)"),
    },
}


def _has_units(part: str, dtype: str) -> bool:
    return dtype in get_part(part).dense_flops_per_s


def run_pricing(run: EngineRun) -> Pricing:
    """The run's workload as the course prices it, its gaps filled and listed (:class:`Pricing`)."""
    extra = RUN_ASSUMPTIONS.get(run.id, {})
    assumed: list[str] = []

    def pick(name, stated, default=None, why=""):
        if name in extra:
            value, reason = extra[name]
            assumed.append(f"{name.replace('_', ' ')} = {value}: {reason}")
            return value
        if stated is not None and stated != NOT_STATED:
            return stated
        if default is not None:
            assumed.append(f"{name.replace('_', ' ')} = {default}: {why}")
        return default

    weights = pick("weights_dtype", run.weights_dtype, "bf16", "unstated: BF16")
    compute = pick("compute_dtype", run.compute_dtype,
                   weights if weights in ("bf16", "fp16", "fp8", "fp4") and _has_units(run.part, weights) else "bf16",
                   "unstated: the weights' format where the part computes in it, else BF16")
    kv = pick("kv_dtype", run.kv_dtype, "fp8" if _has_units(run.part, "fp8") else compute,
              "unstated: FP8 where the part computes FP8 (the smallest KV format these engines offer there, so the "
              "bound stays loose); on a part without FP8 the engine's own format, as a build without a quantisation "
              "flag keeps it (an INT8 KV cache would loosen the bound further)")
    fields = {"weights_dtype": weights, "compute_dtype": compute, "kv_dtype": kv}
    if "quantized_weights" in extra:
        fields["quantized_weights"] = pick("quantized_weights", None)
    if run.bits_per_weight and weights == "int4":
        # the core charges one 16-bit scale per group of g weights (4 + 16/g bits a weight): the group that
        # gives the run's stated bits per weight (gpt-fast's 5.0: a scale and a zero point per 32 weights)
        group = int(round(16 / (run.bits_per_weight - 4))) if run.bits_per_weight > 4 else None
        if group:
            fields["weight_group_size"] = group
            assumed.append(f"int4 priced at {run.bits_per_weight:g} bits a weight (one 16-bit scale per {group} "
                           "weights in the course's format: the same bytes)")
    prompt = pick("prompt_tokens", run.prompt_tokens)
    if run.output_tokens is None and run.engine.startswith("gpt-fast"):
        output = pick("output_tokens", None, GPT_FAST_NEW_TOKENS, "unstated; gpt-fast's generate.py default "
                      "--max_new_tokens (lesson 11's assumption)")
    else:
        output = pick("output_tokens", run.output_tokens)
    mode = pick("mode", None, "request") if "mode" in extra else "request"
    batch = pick("batch", run.batch)
    # the split: TensorRT-LLM's --tp counts every rank and --ep splits the experts inside them
    t, e, p = run.tensor or 1, run.expert or 1, run.pipeline or 1
    copies = run.replicas or 1
    slots = pick("expert_slots", run.expert_slots)
    if run.attention_data_parallel:
        par = Parallelism(tensor=1, expert=run.chips // (p * copies), pipeline=p, attention_data_parallel=True,
                          expert_slots=slots)
        if e != run.chips // (p * copies) or t > 1:
            source_split = f"TP {t} × EP {e}" if run.expert else f"TP {t}, EP unstated"
            assumed.append(f"split: attention data parallel over {run.chips // (p * copies)} ranks, experts expert "
                           f"parallel over all of them (the source's {source_split} counts the same ranks)")
    elif t * e * p * copies > run.chips:
        par = Parallelism(tensor=t, pipeline=p)
        assumed.append(f"split: the experts tensor parallel over all {t} ranks with attention (the source's "
                       f"MoE TP {t // e} × EP {e} on the same {t} chips is not a layout the course prices; under "
                       "uniform routing each chip reads the same expert bytes in the mean)")
    else:
        par = Parallelism(tensor=t, expert=e, pipeline=p)
    if mode != "any batch" and (prompt is None or (output is None and mode == "request")):
        raise RooflineInputError(f"run {run.id!r}: its prompt or output length is unstated and no assumption "
                                 "fills it; add one to RUN_ASSUMPTIONS")
    return Pricing(par, copies, int(prompt or 1), int(output or 1), batch, fields, mode, tuple(assumed))


def _split_candidates(run: EngineRun, pricing: Pricing):
    """For a run whose split is unstated (no degree given): every tensor-parallel degree dividing its
    chips, the rest as data-parallel copies; the lesson takes the highest bound among them."""
    if run.tensor is not None or run.expert is not None or run.parallelism_stated:
        return [pricing]
    out = []
    for t in (d for d in range(1, run.chips + 1) if run.chips % d == 0):
        out.append(replace(pricing, parallelism=Parallelism(tensor=t), copies=run.chips // t,
                           assumed=pricing.assumed + (f"split unstated: the highest bound over TP 1 … {run.chips} "
                                                      f"with the other chips as copies",)))
    return out


def largest_batch_that_fits(run: EngineRun, memory_utilization: float = 1.0, pricing: Pricing | None = None, *,
                            steady_state: bool = False) -> int:
    """Sequences one copy holds, weights and KV on every chip within ``memory_utilization`` of its
    memory: each sequence at the run's final context (prompt + output tokens, what a scheduler that
    reserves a request's whole KV up front must hold), or with ``steady_state`` at the mean context
    of a request's life (prompt + output/2: continuous batching with a paged KV cache, requests at
    every stage of their decoding, each holding only what it has cached). Raises when not even one
    sequence fits."""
    pr = pricing or run_pricing(run)
    f = pr.fields
    context = pr.prompt_tokens + (pr.output_tokens // 2 if steady_state else pr.output_tokens)
    fits = max_batch_that_fits_on_chips(run.model, run.part, context, pr.parallelism,
                                        weights_dtype=f["weights_dtype"], kv_dtype=f["kv_dtype"],
                                        memory_utilization=memory_utilization,
                                        weight_group_size=f.get("weight_group_size"))
    if fits < 1:
        raise RooflineInputError(f"run {run.id!r}: not one sequence of {context} tokens "
                                 f"fits {run.model} on {pr.parallelism.chips_per_replica} × {run.part} at "
                                 f"{memory_utilization:.0%} of memory")
    return int(fits)


@dataclass(frozen=True)
class PricedRun:
    """One published run beside the course's figures for the same workload, in the run's metric's
    unit (tokens/s or seconds)."""

    run: EngineRun
    bound: float  #: the lower bound's figure: the highest rate, or the shortest time, no engine can beat
    estimate: float  #: the course's estimate (named conventions; not a bound)
    bound_batch: int  #: sequences per copy the bound was priced at
    estimate_batch: int  #: sequences per copy the estimate was priced at
    bound_unit: str  #: what sets the bound: "compute", "memory", "communication", … or "steps" (per-step bounds)
    pricing: Pricing | None = None  #: the workload as priced, with its assumptions

    @property
    def measured(self) -> float:
        return self.run.value

    @property
    def is_time(self) -> bool:
        return self.run.metric in TIME_METRICS

    @property
    def fraction_of_bound(self) -> float:
        """Measured ÷ bound for a rate, bound ÷ measured for a time: at most 1 where the bound holds."""
        return self.bound / self.measured if self.is_time else self.measured / self.bound

    @property
    def fraction_of_estimate(self) -> float:
        """The same reading against the estimate (may exceed 1: the estimate is not a bound)."""
        return self.estimate / self.measured if self.is_time else self.measured / self.estimate

    @property
    def beats_bound(self) -> bool:
        return bool(self.fraction_of_bound > 1 + 1e-9)

    def as_rate(self, figure: float) -> float:
        """A figure as a rate (per second): a time's reciprocal, a rate unchanged (for one log-log chart)."""
        return 1.0 / figure if self.is_time else figure


def _timeline(run: EngineRun, pr: Pricing, batch: int, *, speculative: bool = False):
    kw = {}
    if speculative:
        # every drafted token accepted: the most tokens a verify step yields (acceptance must be < 1)
        kw = {"speculative_tokens": int(run.speculative_tokens), "acceptance": 1.0 - 1e-12}
    return request_timeline(run.model, run.part, prompt_tokens=pr.prompt_tokens, output_tokens=pr.output_tokens,
                            batch=batch, parallelism=pr.parallelism, **kw, **pr.fields)


#: sequences per chip at which an "any batch" step is priced: enough that the per-token costs set the rate
_ROOF_BATCH_PER_CHIP = 1 << 16


def _per_copy_rates(run: EngineRun, pr: Pricing) -> tuple[float, float, int, int, str]:
    """(bound, estimate, bound batch, estimate batch, what binds) for one copy, in the run's metric's
    unit before any per-chip or copies scaling (rates: tokens/s of the copy; times: seconds)."""
    metric, mode = run.metric, pr.mode
    speculative = bool(run.speculative_tokens)
    chips = pr.parallelism.chips_per_replica
    if mode == "any batch":
        b = _ROOF_BATCH_PER_CHIP * chips
        # b one-token prompts, or b decode tokens each with one token cached: the shortest context
        if metric.startswith("input_tokens"):
            step = place(run.model, run.part, phase="prefill", batch=b, prompt_tokens=1, parallelism=pr.parallelism,
                         **pr.fields)
        else:
            step = place(run.model, run.part, phase="decode", batch=b, context_tokens=1, parallelism=pr.parallelism,
                         **pr.fields)
        hit = float(RUN_ASSUMPTIONS.get(run.id, {}).get("cache_hit_fraction", (0.0, ""))[0])
        bound = b / float(step.time_lower_bound_s) / (1.0 - hit)
        return bound, float("nan"), b, b, str(step.lower_bound_roof)
    if mode == "decode step":
        b = pr.batch
        step = place(run.model, run.part, phase="decode", batch=b, context_tokens=pr.prompt_tokens,
                     parallelism=pr.parallelism, **pr.fields)
        return (b / float(step.time_lower_bound_s), b / float(step.time_estimate_s), b, b, str(step.bound))
    if mode == "prefill step":
        b = pr.batch
        step = place(run.model, run.part, phase="prefill", batch=b, prompt_tokens=pr.prompt_tokens,
                     parallelism=pr.parallelism, **pr.fields)
        tokens = b * pr.prompt_tokens
        return (tokens / float(step.time_lower_bound_s), tokens / float(step.time_estimate_s), b, b, str(step.bound))
    if metric in ("output_tokens_per_s_per_user", "tpot_s", "ttft_s"):
        b = pr.batch or 1
        t = _timeline(run, pr, b)
        if metric == "ttft_s":
            return t.ttft_lower_bound_s, t.ttft_s, b, b, "steps"
        bound_s = _timeline(run, pr, b, speculative=True).tpot_lower_bound_s if speculative else t.tpot_lower_bound_s
        if metric == "tpot_s":
            return bound_s, t.tpot_s, b, b, "steps"
        return 1.0 / bound_s, 1.0 / t.tpot_s, b, b, "steps"
    b_bound = pr.batch or largest_batch_that_fits(run, pricing=pr, steady_state=True)
    b_est = pr.batch or largest_batch_that_fits(run, ESTIMATE_MEMORY_UTILIZATION, pricing=pr)
    tb = _timeline(run, pr, b_bound)
    te = tb if b_est == b_bound else _timeline(run, pr, b_est)
    if metric.startswith("input_tokens"):
        return (b_bound * pr.prompt_tokens / tb.ttft_lower_bound_s, b_est * pr.prompt_tokens / te.ttft_s,
                b_bound, b_est, "steps")
    bound = tb.output_tokens_per_s_upper_bound
    if not math.isfinite(bound):
        raise RooflineInputError(f"run {run.id!r}: the continuous-batching bound is not computed for pipeline "
                                 "stages or speculation; price this run per step instead")
    scale = (pr.prompt_tokens + pr.output_tokens) / pr.output_tokens if metric == "total_tokens_per_s" else 1.0
    return bound * scale, te.output_tokens_per_s * scale, b_bound, b_est, tb.upper_bound_unit or "steps"


def price_run(run: EngineRun | str) -> PricedRun:
    """The course's lower bound and estimate for one published run, in its metric's unit."""
    if isinstance(run, str):
        run = get_engine_run(run)
    if run.metric not in METRICS:
        raise RooflineInputError(f"run {run.id!r}: metric {run.metric!r} is not priced; metrics are {', '.join(METRICS)}")
    best = None
    for pr in _split_candidates(run, run_pricing(run)):
        try:
            bound, estimate, bb, be, unit = _per_copy_rates(run, pr)
        except RooflineInputError:
            if len(_split_candidates(run, run_pricing(run))) == 1:
                raise
            continue  # a split the model or the memory refuses
        if run.metric not in TIME_METRICS:
            bound, estimate = bound * pr.copies, estimate * pr.copies
            if run.metric.endswith("_per_chip"):
                bound, estimate = bound / run.chips, estimate / run.chips
        cand = PricedRun(run, bound, estimate, bb, be, unit, pr)
        if best is None or cand.fraction_of_bound < best.fraction_of_bound:
            best = cand  # the highest bound: the lowest fraction of it
    if best is None:
        raise RooflineInputError(f"run {run.id!r}: no split of {run.chips} × {run.part} holds {run.model}")
    return best


def priced_runs(runs=None) -> tuple[PricedRun, ...]:
    """Every catalogued run (or ``runs``), priced, in catalog order (the catalog's pricing is cached:
    the catalogs do not change while the package runs)."""
    if runs is None:
        return _priced_catalog()
    return tuple(price_run(r) for r in runs)


@functools.lru_cache(maxsize=1)
def _priced_catalog() -> tuple[PricedRun, ...]:
    return tuple(price_run(r) for r in list_engine_runs())


# ---- the spread, per regime ------------------------------------------------------------------


@dataclass(frozen=True)
class RegimeSpread:
    """Fractions of the bound that one regime's runs reach."""

    regime: str
    fractions: tuple[float, ...]  #: each run's fraction of the bound, catalog order

    @property
    def runs(self) -> int:
        return len(self.fractions)

    @property
    def median(self) -> float:
        return float(np.median(self.fractions))

    @property
    def lowest(self) -> float:
        return float(np.min(self.fractions))

    @property
    def highest(self) -> float:
        return float(np.max(self.fractions))


def spread_by_regime(priced) -> tuple[RegimeSpread, ...]:
    """Each regime's fractions of the bound, in :data:`REGIMES` order (regimes with no run left out)."""
    out = []
    for regime in REGIMES:
        f = tuple(p.fraction_of_bound for p in priced if p.run.regime == regime)
        if f:
            out.append(RegimeSpread(regime, f))
    return tuple(out)


# ---- calibrate and forecast ------------------------------------------------------------------


@dataclass(frozen=True)
class Forecast:
    """One run predicted from the others of its regime: the calibrated efficiency (the median
    fraction of the bound of the calibration runs) × the bound, against what was measured."""

    priced: PricedRun
    efficiency: float  #: the fraction of the bound the calibration runs reach (median)
    calibration_runs: int

    @property
    def predicted(self) -> float:
        """The forecast in the run's metric's unit (a time: bound ÷ efficiency)."""
        p = self.priced
        return p.bound / self.efficiency if p.is_time else p.bound * self.efficiency

    @property
    def error(self) -> float:
        """Forecast ÷ measured − 1, as a rate (a time's forecast is inverted first): +0.25 predicted
        25 % more speed than the engine delivered."""
        p = self.priced
        return p.as_rate(self.predicted) / p.as_rate(p.measured) - 1.0


def leave_one_out(priced) -> tuple[Forecast, ...]:
    """Each run forecast from the OTHER runs of its regime (their median fraction of the bound), so
    no run calibrates its own forecast. A regime with one run has nothing to calibrate on: its run
    is left out."""
    out = []
    for p in priced:
        others = [q.fraction_of_bound for q in priced if q.run.regime == p.run.regime and q is not p]
        if others:
            out.append(Forecast(p, float(np.median(others)), len(others)))
    return tuple(out)


def calibrate(priced, regime: str) -> tuple[float, float, float]:
    """(lowest, median, highest) fraction of the bound among ``priced`` runs of ``regime``."""
    if regime not in REGIMES:
        raise RooflineInputError(f"unknown regime {regime!r}; regimes are: {', '.join(REGIMES)}")
    f = [p.fraction_of_bound for p in priced if p.run.regime == regime]
    if not f:
        raise RooflineInputError(f"no run of regime {regime!r} to calibrate on")
    return float(np.min(f)), float(np.median(f)), float(np.max(f))


# ---- sizing a deployment -----------------------------------------------------------------------


@dataclass(frozen=True)
class Sizing:
    """Chips for a target output rate under a TPOT limit: one copy of ``tensor`` chips at the largest
    batch whose forecast TPOT (the bound ÷ the efficiency) meets the limit and whose KV fits, copies
    enough that their forecast rate (the bound × the efficiency) reaches the target."""

    model_id: str
    part_id: str
    tensor: int
    efficiency: float
    batch: int  #: sequences per copy
    tpot_s: float  #: forecast TPOT at that batch (batch ÷ the copy's forecast rate), seconds
    copy_output_tokens_per_s: float  #: forecast output rate of one copy (all its chips), tokens/s
    copies: int
    target_output_tokens_per_s: float

    @property
    def chips(self) -> int:
        return self.copies * self.tensor


def size_deployment(model: str, part: str, *, target_output_tokens_per_s: float, tpot_slo_s: float,
                    prompt_tokens: int, output_tokens: int, efficiency: float, tensor: int = 1,
                    weights_dtype: str = "bf16", kv_dtype: str = "bf16", compute_dtype: str | None = None,
                    memory_utilization: float = 1.0) -> Sizing:
    """How many chips reach ``target_output_tokens_per_s`` with every request's TPOT within
    ``tpot_slo_s``, forecast as the bound × ``efficiency`` (a fraction in (0, 1], calibrated on
    published runs). Conventions (a forecast, not a bound): the batch is capped where each sequence's
    final KV fits ``memory_utilization`` of memory (default all of it: a calibrated efficiency
    already carries the engine's own memory margin); the TPOT forecast is batch ÷ the copy's forecast
    rate (Little's law in the continuous-batching steady state the rate assumes, the prefills riding
    in the decode steps), so rate and TPOT forecast the same deployment.
    Raises when even batch 1's forecast TPOT misses the limit, or one sequence does not fit."""
    for name, v in (("target_output_tokens_per_s", target_output_tokens_per_s), ("tpot_slo_s", tpot_slo_s)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
            raise RooflineInputError(f"{name} must be a positive number, got {v!r}")
    if isinstance(efficiency, bool) or not isinstance(efficiency, (int, float)) or not 0 < efficiency <= 1:
        raise RooflineInputError(f"efficiency must be a fraction of the bound in (0, 1], got {efficiency!r}")
    par = Parallelism(tensor=tensor)
    fields = {"weights_dtype": weights_dtype, "kv_dtype": kv_dtype}
    if compute_dtype:
        fields["compute_dtype"] = compute_dtype
    most = int(min(MAX_BATCH, max_batch_that_fits_on_chips(model, part, prompt_tokens + output_tokens, par,
                                                            weights_dtype=weights_dtype, kv_dtype=kv_dtype,
                                                            memory_utilization=memory_utilization)))
    if most < 1:
        raise RooflineInputError(f"not one sequence of {prompt_tokens + output_tokens} tokens fits {model} on "
                                 f"{tensor} × {part} at {memory_utilization:.0%} of memory")

    def timeline(b):
        return request_timeline(model, part, prompt_tokens=prompt_tokens, output_tokens=output_tokens, batch=b,
                                parallelism=par, **fields)

    def tpot(b):
        # Little's law in the steady state the rate assumes: each of b sequences gets one token per
        # b ÷ rate seconds, the prefills riding in the same steps included
        return b / (timeline(b).output_tokens_per_s_upper_bound * efficiency)

    if tpot(1) > tpot_slo_s:
        raise RooflineInputError(f"even one sequence's forecast TPOT ({tpot(1) * 1e3:.1f} ms at {efficiency:.0%} of the "
                                 f"bound) misses the {tpot_slo_s * 1e3:g} ms limit on {tensor} × {part}: "
                                 "use more tensor parallel or a faster part")
    lo, hi = 1, most  # the TPOT bound rises with the batch: bisect for the largest that meets the limit
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if tpot(mid) <= tpot_slo_s:
            lo = mid
        else:
            hi = mid - 1
    t = timeline(lo)
    rate = t.output_tokens_per_s_upper_bound * efficiency
    copies = max(1, math.ceil(target_output_tokens_per_s / rate))
    return Sizing(str(model), str(part), tensor, float(efficiency), lo, lo / rate, rate,
                  copies, float(target_output_tokens_per_s))


# ---- tables the lesson shows -------------------------------------------------------------------

RUN_TABLE_HEADERS = ("run", "engine", "part × chips", "model", "weights / KV", "prompt → output", "batch",
                     "published figure", "bound", "fraction of the bound", "source, date")


def _lengths(p: PricedRun) -> str:
    r = p.run
    pr = p.pricing
    text = f"{r.prompt_tokens if r.prompt_tokens is not None else '?'} → " \
           f"{r.output_tokens if r.output_tokens is not None else '?'}"
    if pr is not None and pr.mode == "any batch":
        return text + " (priced at any batch, the shortest context)"
    if pr is not None and pr.mode == "decode step":
        return f"a decode step at {pr.prompt_tokens:,} cached"
    if pr is not None and pr.mode == "prefill step":
        return f"a prefill of {pr.prompt_tokens:,}"
    if pr is not None and (r.prompt_tokens is None or r.output_tokens is None):
        text += f" (priced {pr.prompt_tokens} → {pr.output_tokens})"
    return text


def engine_family(run: EngineRun) -> str:
    """The engine without its harness or front end ("TensorRT-LLM" for TensorRT-LLM behind Triton)."""
    return run.engine.split(" (")[0].split(" + ")[0]


def engine_name(run: EngineRun) -> str:
    """The engine as the table writes it: its name without the parenthesis, and its version when
    stated (a commit shortened to 10 characters; a version that repeats the name kept once)."""
    import re
    name = run.engine.split(" (")[0]
    version = run.engine_version
    if version.startswith(NOT_STATED):
        return name
    version = re.sub(r"\b([0-9a-f]{10})[0-9a-f]{30}\b", r"\1", version)
    return version if version.lower().startswith(name.lower()) else f"{name} {version}"


def figure_text(metric: str, value: float) -> str:
    """A figure in its metric's unit as the lesson writes it."""
    from ..core.units import duration, num
    if metric in TIME_METRICS:
        return f"{'TTFT' if metric == 'ttft_s' else 'TPOT'} {duration(value)}"
    unit = {"output_tokens_per_s": "output tok/s", "output_tokens_per_s_per_chip": "output tok/s per chip",
            "output_tokens_per_s_per_user": "tok/s per user", "total_tokens_per_s": "tok/s in + out",
            "input_tokens_per_s": "input tok/s", "input_tokens_per_s_per_chip": "input tok/s per chip"}[metric]
    return f"{num(value)} {unit}"


def runs_table(priced) -> tuple[tuple[str, ...], list[list[str]]]:
    """Headers and one row per priced run: what the source states, and the course's bound beside it."""
    rows = []
    for p in priced:
        r = p.run
        pr = p.pricing
        formats = f"{r.weights_dtype} / {r.kv_dtype}"
        if pr is not None:
            formats = f"{pr.fields['weights_dtype']} / {pr.fields['kv_dtype']}" + (
                "*" if NOT_STATED in (r.weights_dtype, r.kv_dtype) else "")
        rows.append([r.id, engine_name(r), f"{r.part} × {r.chips}", r.model_as_published, formats, _lengths(p),
                     str(r.batch) if r.batch else "—", figure_text(r.metric, r.value), figure_text(r.metric, p.bound),
                     f"{p.fraction_of_bound:.2f}", f"{r.source} ({r.published})"])
    return RUN_TABLE_HEADERS, rows


def half_batch_bound_drop(priced: PricedRun) -> float:
    """How much a throughput run's bound falls when its batch is halved (0.1 = 10 % lower): how much
    of the gap a smaller batch than the bound's could explain."""
    pr = priced.pricing
    if pr is None or priced.run.metric in TIME_METRICS or pr.mode != "request":
        raise RooflineInputError(f"run {priced.run.id!r}: the half-batch drop is for throughput runs priced per request")
    half = replace(pr, batch=max(1, priced.bound_batch // 2))
    return 1.0 - _per_copy_rates(priced.run, half)[0] / _per_copy_rates(priced.run, replace(pr, batch=priced.bound_batch))[0]


def range_coverage(priced) -> tuple[int, int]:
    """(held, tried): how many runs, held out, fall inside the range (lowest to highest fraction of the
    bound) of the OTHER runs of their regime — how often "quote the regime's range" would have held."""
    held = tried = 0
    for p in priced:
        others = [q.fraction_of_bound for q in priced if q.run.regime == p.run.regime and q is not p]
        if others:
            tried += 1
            held += min(others) <= p.fraction_of_bound <= max(others)
    return held, tried
