"""Many chips (lesson 11): one step split over chips by tensor, expert and pipeline parallelism.

Everything here is built on :func:`~roofline_lessons.core.placement.place` with a
:class:`~roofline_lessons.core.parallel.Parallelism`, so it follows the modelling rules stated in
:mod:`roofline_lessons.core.parallel` (read its docstring). What a lesson can quote:

- **Per chip.** With more than one chip every FLOP, byte and second is one chip's (the busiest
  pipeline stage's); ``tokens_per_s`` is the whole group's rate (one copy's, with replicas).
- **Past one server.** A split of more chips than the scale-up domain joins spans servers: the
  traffic between them crosses the part's scale-out link (a NIC per chip), priced hierarchically
  (see :mod:`roofline_lessons.core.parallel`); a part with no scale-out link in the catalog is refused.
- **Not overlapped by default.** A stage takes max(compute, memory) + communication; a setup with
  ``overlap_comm=True`` is the best case, max(compute, memory, communication).
- **Per direction.** A collective's bytes move at the link's per-direction bandwidth, half the
  vendor's bidirectional headline; :func:`one_all_reduce` shows the time both ways.
- **Assumed latency.** Each collective call costs the link's ``latency_s``, ONE fixed cost per
  call whatever the number of chips (the catalog's ``latency_basis`` says "assumed": an order of
  magnitude, not a measurement). :func:`latency_sensitivity` reprices a step at other latencies.
- **Two figures per step.** ``step_s`` / ``tokens_per_s`` are the placement's **estimate**
  (``time_estimate_s``): operators unfused, collectives by the ring with the assumed per-call
  latency, after the compute. ``lower_bound_s`` / ``tokens_per_s_upper_bound`` are its **lower
  bound** (``time_lower_bound_s``): compulsory bytes, the least bytes any algorithm the link
  supports sends (in-switch reduction where the switch does it, ring elsewhere), overlapped with
  compute and memory, no per-call latency. The bound never moves with the assumed latency.

Seconds per chip; rates in tokens per second of all chips together; memory in bytes (show it in
GiB), bandwidths in bytes per second (SI), intensities in FLOPs per byte.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace

import numpy as np

from ..core.costs import ModelCost, expected_experts_touched, model_cost
from ..core.dtypes import bytes_per_element
from ..core.errors import RooflineInputError, whole_number
from ..core.hardware import Link, Part, get_part
from ..core.memory import Footprint
from ..core.models import Model, get_model
from .datasheets import best_measurement
from ..core.parallel import (SINGLE_CHIP, Comm, Parallelism, check_parallelism, choose_link, interconnect_ridge_flop_per_byte,
                             max_batch_that_fits_on_chips)
from ..core.placement import Placement, place

PHASES = ("decode", "prefill")

#: the lesson's 70B comparison: model, context and the four setups' parts
LLAMA_70B = "llama-3.1-70b"
MOE_MODEL = "qwen3-235b-a22b"  #: lesson 11's MoE across a node (DeepSeek-V3, 671B, needs MLA: lesson 12)

#: the part whose catalog holds a published all-reduce rate with in-switch reduction (NVLS)
NVLS_ALGBW_PART = "h100-sxm"


def nvls_all_reduce_measurement():
    """The catalog's measured NVLS all-reduce algorithm bandwidth (a :class:`Measurement` of
    ``all_reduce_algorithm_bytes_per_s``, bytes/s, with its chips, conditions, source and date)."""
    return best_measurement(NVLS_ALGBW_PART, "all_reduce_algorithm_bytes_per_s")

#: the catalog's measured multi-chip figure (gpt-fast, Llama-3.1-70B, TP 8 on 8 A100s)
GPT_FAST_PART = "a100-80gb"
GPT_FAST_QUANTITY = "decode_tokens_per_s"
#: ASSUMPTION (topics/published.py): the middle of the contexts gpt-fast's run saw, the same context
#: lesson 3 prices its Llama-2-7B figure at
from .published import GPT_FAST_CONTEXT_TOKENS  # noqa: E402


# ---- validation ------------------------------------------------------------------------------




def _phase(phase) -> str:
    if phase not in PHASES:
        raise RooflineInputError(f"phase must be one of {', '.join(PHASES)}, got {phase!r}")
    return phase


def _model(model) -> Model:
    if isinstance(model, Model):
        return model
    if not isinstance(model, str):
        raise RooflineInputError(f"model must be a catalog id (text) or a Model, got {model!r}")
    return get_model(model)


def _part(part) -> Part:
    if isinstance(part, Part):
        return part
    if not isinstance(part, str):
        raise RooflineInputError(f"part must be a catalog id (text) or a Part, got {part!r}")
    return get_part(part)


def _parallelism(par) -> Parallelism:
    if not isinstance(par, Parallelism):
        raise RooflineInputError(
            f"parallelism must be a Parallelism(tensor=…, expert=…, pipeline=…), got {par!r}")
    return par


def _in_one_server(part: Part, par: Parallelism, what: str) -> None:
    """Refuse a split whose copy spans servers where ``what`` compares splits inside one server."""
    domain = max((lk.max_chips for lk in (part.scale_up_link, part.host_link) if lk is not None), default=1)
    n = par.chips_per_replica
    if n > domain:
        raise RooflineInputError(f"{n} chips exceed {part.id}'s in-server domain of {domain}: {what} compares splits "
                                 "inside one server (place prices a split across servers, over the scale-out link)")


def _step_fields(phase: str, batch, context_tokens, prompt_tokens) -> dict:
    """The workload fields of one step: a decode step at ``context_tokens`` cached, or a prefill of
    ``prompt_tokens``."""
    phase = _phase(phase)
    fields = {"phase": phase, "batch": batch}
    if phase == "decode":
        fields["context_tokens"] = context_tokens
    else:
        fields["prompt_tokens"] = prompt_tokens
    return fields


# ---- one setup, one row ----------------------------------------------------------------------


@dataclass(frozen=True)
class Setup:
    """One way to run a step: a part, a split, the weights' format, and a label for a table."""

    label: str
    part: str
    parallelism: Parallelism = SINGLE_CHIP
    weights_dtype: str = "bf16"
    kv_dtype: str = "bf16"

    def __post_init__(self) -> None:
        if not isinstance(self.label, str) or not self.label.strip():
            raise RooflineInputError(f"a setup needs a label (text), got {self.label!r}")
        _part(self.part)
        _parallelism(self.parallelism)


@dataclass(frozen=True)
class SplitRow:
    """One setup's step. Seconds, bytes and FLOPs are PER CHIP (the busiest stage's) when
    ``chips`` > 1; ``tokens_per_s`` counts every chip of the group together."""

    label: str
    placement: Placement
    chips: int
    link_name: str | None  #: the link the traffic uses (None on one chip)
    compute_s: float  #: per chip: FLOPs ÷ peak
    memory_s: float  #: per chip: bytes ÷ HBM bandwidth
    comm_s: float  #: per chip, the estimate's collectives: calls × latency + ring bytes ÷ per-direction bandwidth
    step_s: float  #: the ESTIMATE (all pipeline stages in turn, comm added unless overlapped): time_estimate_s
    bound: str  #: the estimate's binding roof: "compute", "memory" or "interconnect" (largest per-chip time)
    memory_per_chip_bytes: float  #: weights + KV cache + state resident on one chip
    capacity_per_chip_bytes: float
    fits: bool
    tokens_per_s: float  #: new tokens per second, all chips together (the estimate's)
    max_batch: int  #: largest batch whose weights + KV fit every chip at this step's context
    latency_s: float  #: per chip: the estimate's assumed per-call latency, calls × latency (0 on one chip)
    lower_bound_s: float  #: the step's LOWER BOUND: time_lower_bound_s (no per-call latency, least bytes, overlapped)
    comm_lower_bound_s: float  #: per chip: the bound's communication (least bytes ÷ per-direction bandwidth)
    lower_bound_roof: str  #: the bound's binding roof
    tokens_per_s_upper_bound: float  #: all chips together: tokens ÷ lower_bound_s

    @property
    def latency_share(self) -> float:
        """Share of the estimate (``step_s``) that is assumed per-call latency, 0 to 1."""
        return self.latency_s / self.step_s if self.step_s else 0.0

    @property
    def part(self) -> Part:
        return self.placement.part

    @property
    def parallelism(self) -> Parallelism:
        return self.placement.parallelism

    @property
    def roof(self) -> str:
        """The estimate's binding roof named by its cause (:func:`roof_label`): ``bound``, or
        "interconnect (latency)" where the communication that binds is mostly assumed per-call latency."""
        return roof_label(self.placement)


#: a binding link roof is called "interconnect (latency)" when more than this share of the
#: communication is the assumed per-call latency
LATENCY_DOMINATES = 0.5


def _roof_name(bound: str, comm_s: float, comm_latency_s: float) -> str:
    if bound == "interconnect" and comm_s > 0 and comm_latency_s / comm_s > LATENCY_DOMINATES:
        return "interconnect (latency)"
    return bound


def roof_label(placement: Placement) -> str:
    """The estimate's binding roof of one (scalar) placement, named by its cause: "compute",
    "memory", "interconnect", or "interconnect (latency)" where the communication that outlasts
    compute and memory is more than half assumed per-call latency (``LATENCY_DOMINATES``). The link
    roof prices bytes only; a latency-bound step lies under no roof, so the label says which it is."""
    if not isinstance(placement, Placement):
        raise RooflineInputError(f"roof_label needs a Placement, got {placement!r}")
    bound = placement.bound
    if np.ndim(bound) != 0:
        raise RooflineInputError("roof_label needs a placement of one step (not arrays of batch or tokens)")
    bound = str(bound)
    if bound != "interconnect":
        return bound
    s = comm_split(placement)
    return _roof_name(bound, s.total_s, s.latency_s)


def _row(label: str, p: Placement) -> SplitRow:
    w = p.workload
    best = max_batch_that_fits_on_chips(p.model, p.part, w.cached_tokens_after, p.parallelism,
                                        weights_dtype=w.weights_dtype, kv_dtype=w.kv_dtype,
                                        state_dtype=w.state_dtype, activations_dtype=w.activations_dtype)
    return SplitRow(
        label=label, placement=p, chips=p.chips, link_name=None if p.link is None else p.link.name,
        compute_s=float(p.compute_time_s), memory_s=float(p.memory_time_s), comm_s=float(p.comm_time_s),
        step_s=float(p.time_estimate_s), bound=str(p.bound), memory_per_chip_bytes=float(p.memory_required_bytes),
        capacity_per_chip_bytes=float(p.part.memory_capacity_bytes), fits=bool(p.fits_in_memory),
        tokens_per_s=float(p.tokens_per_s_estimate), max_batch=int(best), latency_s=_latency_total_s(p),
        lower_bound_s=float(p.time_lower_bound_s), comm_lower_bound_s=float(p.comm_lower_bound_s),
        lower_bound_roof=str(p.lower_bound_roof), tokens_per_s_upper_bound=float(p.tokens_per_s_upper_bound))


def _latency_per_call_s(p: Placement) -> float:
    """The per-call latency the estimate charges this placement (0 on one chip)."""
    if p.link is None:
        return 0.0
    lat = p.parallelism.collective_latency_s
    return float(p.link.latency_s if lat is None else lat)


def _latency_total_s(p: Placement) -> float:
    """Seconds of the estimate that are assumed per-call latency: the estimate minus the same
    estimate with free calls (``collective_latency_s=0``); 0 on one chip."""
    if p.comm is None or (_latency_per_call_s(p) == 0 and not p.network_latency_s):
        return 0.0
    free = place(p.model, p.part, p.workload,
                 parallelism=replace(p.parallelism, collective_latency_s=0.0, network_latency_s=0.0))
    return float(p.time_estimate_s) - float(free.time_estimate_s)


def place_setup(model, setup: Setup, *, phase: str = "decode", batch: int = 1, context_tokens: int = 4096,
                prompt_tokens: int = 4096) -> Placement:
    """Place one step of ``model`` as ``setup`` says (decode at ``context_tokens`` cached, or a
    prefill of ``prompt_tokens``), ``batch`` sequences in all."""
    if not isinstance(setup, Setup):
        raise RooflineInputError(f"setup must be a Setup(label, part, parallelism, weights_dtype), got {setup!r}")
    return place(_model(model), setup.part, parallelism=setup.parallelism, weights_dtype=setup.weights_dtype,
                 kv_dtype=setup.kv_dtype, **_step_fields(phase, batch, context_tokens, prompt_tokens))


def compare_setups(model, setups, *, phase: str = "decode", batch: int = 1, context_tokens: int = 4096,
                   prompt_tokens: int = 4096) -> tuple[SplitRow, ...]:
    """One row per setup for the same step (see :class:`SplitRow`; per chip where chips > 1): the
    estimate and the lower bound of each."""
    setups = tuple(setups)
    if not setups:
        raise RooflineInputError("compare_setups needs at least one Setup")
    m = _model(model)
    return tuple(_row(s.label, place_setup(m, s, phase=phase, batch=batch, context_tokens=context_tokens,
                                           prompt_tokens=prompt_tokens)) for s in setups)


def seventy_b_setups() -> tuple[Setup, ...]:
    """The lesson's four ways to run Llama-3.1-70B when one H100 SXM's 80 GiB is too small:
    two H100 SXM by tensor parallel (communication not overlapped, then overlapped: the best
    case), one H200 (141 GiB), and one H100 SXM with FP8 weights (weight-only: BF16 compute)."""
    return (
        Setup("2 × H100 SXM, TP 2", "h100-sxm", Parallelism(tensor=2)),
        Setup("1 × H200", "h200"),
        Setup("1 × H100 SXM, FP8 weights", "h100-sxm", weights_dtype="fp8"),
        Setup("2 × H100 SXM, TP 2, comm overlapped (best case)", "h100-sxm", Parallelism(tensor=2, overlap_comm=True)),
    )


def with_link_latency(part, latency_s: float) -> Part:
    """A what-if copy of ``part`` whose links (scale-up, PCIe and scale-out) cost ``latency_s`` seconds
    per collective call instead of the catalog's assumed figures (``place`` accepts the Part)."""
    p = _part(part)
    if isinstance(latency_s, bool) or not isinstance(latency_s, (int, float, np.integer, np.floating)) \
            or not math.isfinite(latency_s) or latency_s < 0:
        raise RooflineInputError(f"latency_s must be a number of seconds >= 0, got {latency_s!r}")
    links = {k: replace(lk, latency_s=float(latency_s), latency_basis="what-if")
             for k, lk in (("scale_up_link", p.scale_up_link), ("host_link", p.host_link),
                           ("scale_out_link", p.scale_out_link)) if lk is not None}
    return replace(p, **links)


@dataclass(frozen=True)
class LatencyRow:
    """One tensor-parallel decode step at one per-call latency (per chip; seconds)."""

    latency_s: float  #: the per-call latency this row assumes
    tensor: int
    step_s: float  #: the estimate at that latency (ring bytes + calls × latency, after the compute)
    comm_s: float  #: per chip, the estimate's
    memory_s: float  #: per chip, the estimate's
    bound: str  #: the estimate's binding roof
    speedup: float  #: one chip's estimate ÷ this estimate (one chip pays no latency)
    lower_bound_s: float  #: the step's lower bound: the same at every latency (it counts none)
    lower_bound_speedup: float  #: one chip's lower bound ÷ this lower bound
    lower_bound_roof: str  #: the bound's binding roof
    comm_latency_s: float = 0.0  #: per chip, the assumed per-call latency inside ``comm_s`` (calls × latency)

    @property
    def roof(self) -> str:
        """The estimate's binding roof named by its cause (see :func:`roof_label`)."""
        return _roof_name(self.bound, self.comm_s, self.comm_latency_s)


def latency_sensitivity(model, part, sizes, latencies_s, *, batch: int = 1, context_tokens: int = 4096
                        ) -> tuple[LatencyRow, ...]:
    """The decode step of ``model`` at each tensor-parallel size in ``sizes`` and each per-call
    latency in ``latencies_s`` (latency-major order): how much of a conclusion rests on the assumed
    per-call latency. Each row holds the estimate at that latency and the lower bound, which counts
    no latency and so is the same on every row of a size."""
    m, p = _model(model), _part(part)
    sizes = tuple(whole_number("tensor parallel size", t, 1) for t in sizes)
    latencies = tuple(latencies_s)
    if not sizes or not latencies:
        raise RooflineInputError("latency_sensitivity needs at least one size and one latency")
    alone = place(m, p, phase="decode", batch=batch, context_tokens=context_tokens)
    one, one_bound = float(alone.time_estimate_s), float(alone.time_lower_bound_s)
    rows = []
    for lat in latencies:
        q = with_link_latency(p, lat)
        for t in sizes:
            pl = place(m, q, phase="decode", batch=batch, context_tokens=context_tokens,
                       parallelism=Parallelism(tensor=t))
            rows.append(LatencyRow(latency_s=float(lat), tensor=t, step_s=float(pl.time_estimate_s),
                                   comm_s=float(pl.comm_time_s), memory_s=float(pl.memory_time_s),
                                   bound=str(pl.bound), speedup=one / float(pl.time_estimate_s),
                                   lower_bound_s=float(pl.time_lower_bound_s),
                                   lower_bound_speedup=one_bound / float(pl.time_lower_bound_s),
                                   lower_bound_roof=str(pl.lower_bound_roof),
                                   comm_latency_s=comm_split(pl).latency_s if pl.comm is not None else 0.0))
    return tuple(rows)


# ---- tensor parallel sweep -------------------------------------------------------------------


def allowed_tensor_sizes(model, part) -> tuple[int, ...]:
    """Tensor-parallel sizes the model's heads allow and the part's links join (powers of two from 1)."""
    m, p = _model(model), _part(part)
    domain = max((lk.max_chips for lk in (p.scale_up_link, p.host_link) if lk is not None), default=1)
    out = []
    t = 1
    while t <= domain:
        try:
            check_parallelism(m, Parallelism(tensor=t))
            out.append(t)
        except RooflineInputError:
            pass
        t *= 2
    return tuple(out)


def tensor_parallel_sweep(model, part, *, phase: str = "decode", batch: int = 1, context_tokens: int = 4096,
                          prompt_tokens: int = 4096, sizes=None, overlap_comm: bool = False,
                          weights_dtype: str = "bf16", kv_dtype: str = "bf16") -> tuple[SplitRow, ...]:
    """The same step at each tensor-parallel size (default: :func:`allowed_tensor_sizes`), one row
    each: per-chip compute, memory and communication seconds (the estimate's), the step's estimate
    and lower bound, the assumed latency inside the estimate, memory per chip, whether it fits,
    tokens/s of the group, and the largest batch that fits at this context. Every size stays inside one
    server (refused past the in-server link's domain)."""
    m, p = _model(model), _part(part)
    if sizes is None:
        sizes = allowed_tensor_sizes(m, p)
    sizes = tuple(whole_number("tensor parallel size", t, 1) for t in sizes)
    if not sizes:
        raise RooflineInputError("sizes must name at least one tensor-parallel size (a whole number >= 1)")
    rows = []
    for t in sizes:
        par = Parallelism(tensor=t, overlap_comm=overlap_comm)
        _in_one_server(p, par, "the tensor-parallel sweep")
        setup = Setup(f"{t} × {p.name}" + (f", TP {t}" if t > 1 else ""), p.id, par, weights_dtype, kv_dtype)
        rows.append(_row(setup.label, place_setup(m, setup, phase=phase, batch=batch, context_tokens=context_tokens,
                                                  prompt_tokens=prompt_tokens)))
    return tuple(rows)


# ---- one all-reduce, and the split of a step's communication -----------------------------------


@dataclass(frozen=True)
class AllReduce:
    """One all-reduce of a ``message_bytes`` message over ``tensor`` chips: the estimate's ring (at
    the per-direction rate, and at the headline: the error) and the least bytes the link allows."""

    tensor: int
    link: Link
    message_bytes: float  #: the activations all-reduced (tokens × hidden × bytes per element)
    ring_factor: float  #: 2(n − 1)/n: the share of the message each chip sends (and receives)
    sent_bytes: float  #: bytes each chip sends = ring_factor × message
    latency_s: float  #: the link's assumed fixed cost of one call
    time_s: float  #: latency + sent ÷ per-direction bandwidth (what the course uses)
    headline_time_s: float  #: latency + sent ÷ the bidirectional headline: the classic error (too fast)
    in_switch: bool  #: the link's switch reduces in the switch (NVLink SHARP): each byte sent once
    least_factor: float  #: the least share of the message a chip must send: 1 in the switch, else the ring's
    bound_time_s: float  #: least_factor × message ÷ per-direction bandwidth, no latency: the lower bound

    @property
    def ring_algorithm_bytes_per_s(self) -> float:
        """Message ÷ the ring's bandwidth term: the most "algorithm bandwidth" (nccl-tests' algbw) a
        ring can reach on this link, per-direction bandwidth ÷ 2(n − 1)/n, bytes/s."""
        return self.link.per_direction_bytes_per_s / self.ring_factor

    @property
    def least_algorithm_bytes_per_s(self) -> float:
        """Message ÷ the bound's time: the most algorithm bandwidth any algorithm the link supports
        can reach (per-direction bandwidth ÷ least_factor), bytes/s."""
        return self.link.per_direction_bytes_per_s / self.least_factor

    @property
    def bandwidth_s(self) -> float:
        """The bandwidth term alone at the per-direction rate, seconds."""
        return self.sent_bytes / self.link.per_direction_bytes_per_s


def activation_message_bytes(model, tokens: int, activations_dtype: str = "bf16") -> float:
    """Bytes of one tensor-parallel all-reduce: ``tokens`` × hidden size × bytes per element."""
    m = _model(model)
    return float(whole_number("tokens", tokens, 1) * m.hidden_size * bytes_per_element(activations_dtype))


def one_all_reduce(part, tensor: int, message_bytes: float, *, link: str = "auto") -> AllReduce:
    """An all-reduce of ``message_bytes`` over ``tensor`` chips of ``part``. The estimate's ring:
    every chip sends 2(n − 1)/n of the message at the link's per-direction bandwidth, plus one call's
    assumed latency. The bound: the least bytes (once, where the switch reduces in the switch), no
    latency."""
    p = _part(part)
    t = whole_number("tensor", tensor, 2)
    if isinstance(message_bytes, bool) or not isinstance(message_bytes, (int, float, np.integer, np.floating)) \
            or not math.isfinite(message_bytes) or message_bytes <= 0:
        raise RooflineInputError(f"message_bytes must be a number of bytes above 0, got {message_bytes!r}")
    lk, _ = choose_link(p, Parallelism(tensor=t, link=link))
    ring = 2.0 * (t - 1) / t
    sent = ring * float(message_bytes)
    least = 1.0 if lk.in_switch_reduction else ring
    return AllReduce(tensor=t, link=lk, message_bytes=float(message_bytes), ring_factor=ring, sent_bytes=sent,
                     latency_s=lk.latency_s, time_s=lk.latency_s + sent / lk.per_direction_bytes_per_s,
                     headline_time_s=lk.latency_s + sent / lk.bidirectional_bytes_per_s,
                     in_switch=bool(lk.in_switch_reduction), least_factor=least,
                     bound_time_s=least * float(message_bytes) / lk.per_direction_bytes_per_s)


@dataclass(frozen=True)
class CommSplit:
    """A chip's collectives in one step, split into the latency term and the bandwidth term. Past one
    server both sum over the two links (the in-server link's figures are the ones named here; the
    network's per-call latency and bytes are in ``network_*``)."""

    calls: float  #: collective calls in the step (per chip, busiest stage)
    latency_per_call_s: float  #: the in-server link's per-call latency (see ``latency_basis``)
    latency_basis: str  #: "assumed" or "measured", from the catalog
    latency_s: float  #: Σ calls × each link's latency per call
    sent_bytes: float  #: bytes the chip sends in those calls (every link)
    per_direction_bytes_per_s: float  #: the in-server link's
    bandwidth_s: float  #: Σ sent bytes ÷ each link's per-direction bandwidth
    total_s: float  #: latency_s + bandwidth_s (the placement's comm_time_s): the estimate's
    bound_bytes: float  #: the least bytes the chip must send (in-switch reduction where the link does it)
    bound_s: float  #: the least bytes ÷ each link's per-direction bandwidth, links at once, no latency: the bound's
    network_latency_per_call_s: float = 0.0  #: the scale-out link's per-call latency (0 in one server)
    network_bytes: float = 0.0  #: of ``sent_bytes``, those over the network between servers

    @property
    def latency_share(self) -> float:
        """Fraction of the communication time that is the per-call latency."""
        return self.latency_s / self.total_s if self.total_s else 0.0


def comm_split(placement: Placement) -> CommSplit:
    """The latency-vs-bandwidth split of a multi-chip placement's collectives (sends between
    pipeline stages are not collectives and are left out, as in ``comm_time_s``): the estimate's
    terms, and beside them the lower bound's (least bytes, no latency)."""
    if not isinstance(placement, Placement):
        raise RooflineInputError(f"comm_split needs a Placement from place(..., parallelism=...), got {placement!r}")
    if placement.comm is None or placement.link is None:
        raise RooflineInputError("comm_split needs a placement on more than one chip (parallelism with "
                                 "tensor, expert or pipeline > 1): one chip sends nothing")
    lk, net = placement.link, placement.scale_out_link
    calls = placement.comm.calls
    sent = float(placement.comm.bytes)
    per_call = _latency_per_call_s(placement)
    net_call = 0.0 if net is None else float(placement.network_latency_s)
    latency = bandwidth = 0.0
    for c in placement.comm.parts:
        on_net = net is not None and c.link is net
        latency += float(c.calls) * (net_call if on_net else per_call)
        bandwidth += float(c.bytes) / (net if on_net else lk).per_direction_bytes_per_s
    return CommSplit(calls=calls, latency_per_call_s=per_call, latency_basis=lk.latency_basis, latency_s=latency,
                     sent_bytes=sent, per_direction_bytes_per_s=lk.per_direction_bytes_per_s, bandwidth_s=bandwidth,
                     total_s=latency + bandwidth, bound_bytes=float(placement.comm.bound_bytes),
                     bound_s=float(placement.comm_lower_bound_s), network_latency_per_call_s=net_call,
                     network_bytes=float(placement.network_bytes))


# ---- the third roof --------------------------------------------------------------------------


@dataclass(frozen=True)
class ThreeRoofs:
    """One chip's step against its three roofs: FLOP/s, HBM bytes/s and link bytes/s (per direction),
    with the estimate's bytes (unfused HBM traffic, the ring's bytes over the link)."""

    flops: float  #: per chip
    hbm_bytes: float  #: per chip, unfused (the estimate's)
    sent_bytes: float  #: per chip, over the link, by the ring (the estimate's)
    peak_flops_per_s: float
    hbm_bytes_per_s: float
    link_bytes_per_s: float  #: per direction
    hbm_intensity: float  #: FLOPs per HBM byte
    hbm_ridge: float  #: peak ÷ HBM bandwidth
    link_intensity: float  #: FLOPs per byte sent
    link_ridge: float  #: peak ÷ per-direction link bandwidth: the third ridge
    bound: str  #: the estimate's binding roof

    @property
    def link_limits_compute(self) -> bool:
        """True when the step sends more bytes per FLOP than the link can carry at the peak
        (its link intensity is below the third ridge)."""
        return self.link_intensity < self.link_ridge


def three_roofs(placement: Placement) -> ThreeRoofs:
    """The HBM intensity and ridge, and the interconnect intensity (FLOPs per byte sent) and the
    third ridge (peak ÷ per-direction link bandwidth) of a multi-chip placement, per chip."""
    if not isinstance(placement, Placement) or placement.link is None:
        raise RooflineInputError("three_roofs needs a placement on more than one chip (it has a link)")
    p = placement
    return ThreeRoofs(
        flops=float(p.cost.flops), hbm_bytes=float(p.cost.bytes), sent_bytes=float(p.comm_bytes),
        peak_flops_per_s=float(p.peak_flops_per_s), hbm_bytes_per_s=float(p.bandwidth_bytes_per_s),
        link_bytes_per_s=float(p.interconnect_bandwidth_bytes_per_s), hbm_intensity=float(p.intensity),
        hbm_ridge=float(p.ridge_point_flop_per_byte), link_intensity=float(p.interconnect_intensity),
        link_ridge=float(p.interconnect_ridge_point_flop_per_byte), bound=str(p.bound))


@dataclass(frozen=True)
class LinkRidge:
    """A part's link as a roof: its ridge per direction (right) and with the headline (the error)."""

    part_id: str
    link: Link
    chips: int
    hbm_ridge: float  #: peak ÷ HBM bandwidth, FLOP/byte
    link_ridge: float  #: peak ÷ per-direction link bandwidth, FLOP/byte
    headline_ridge: float  #: peak ÷ bidirectional headline: half the true ridge (the classic error)


def link_ridges(parts, chips: int = 8, dtype: str = "bf16") -> tuple[LinkRidge, ...]:
    """For each part, the link ``chips`` chips of one server would use (scale-up if they fit its
    domain, else PCIe) and its ridge at ``dtype``'s dense peak; more chips than a server joins are
    refused (two links would carry their traffic)."""
    n = whole_number("chips", chips, 2)
    rows = []
    for pid in parts:
        p = _part(pid)
        domain = max((lk.max_chips for lk in (p.scale_up_link, p.host_link) if lk is not None), default=1)
        if n > domain:
            raise RooflineInputError(f"link_ridges compares the link inside one server: {n} chips exceed the "
                                     f"largest in-server domain of {p.id} ({domain} chips); past it two links "
                                     "carry the traffic (see place's scale-out link)")
        lk, _ = choose_link(p, Parallelism(tensor=n))
        peak = p.peak_flops_per_s(dtype)
        rows.append(LinkRidge(part_id=p.id, link=lk, chips=n, hbm_ridge=peak / p.memory_bandwidth_bytes_per_s,
                              link_ridge=interconnect_ridge_flop_per_byte(peak, lk),
                              headline_ridge=peak / lk.bidirectional_bytes_per_s))
    return tuple(rows)


# ---- where the all-reduce takes over -----------------------------------------------------------


@dataclass(frozen=True)
class Crossover:
    """Where one chip's communication time first exceeds max(compute, memory) as the batch (decode)
    or the prompt (prefill) grows, for a fixed split, by one figure's terms (``figure``: the
    estimate's ring bytes and assumed latency, or the bound's least bytes and compulsory traffic).
    ``first`` is None when it never does up to ``searched_up_to``; then ``placement`` is the step
    at ``searched_up_to``."""

    model_id: str
    part_id: str
    parallelism: Parallelism
    phase: str
    variable: str  #: "batch" (decode) or "prompt_tokens" (prefill)
    searched_up_to: int
    first: int | None  #: smallest value at which communication takes longest
    last: int | None  #: largest value of that first stretch (== searched_up_to if it never ends)
    placement: Placement  #: the step at ``first`` (or at ``searched_up_to`` when there is none)
    figure: str = "estimate"  #: "estimate" or "bound": whose terms were compared

    @property
    def found(self) -> bool:
        return self.first is not None


FIGURES = ("estimate", "bound")


def _over(m: Model, part: Part, par: Parallelism, phase: str, values, batch: int, context_tokens: int,
          dtypes: dict, figure: str = "estimate") -> np.ndarray:
    values = np.asarray(values, dtype=np.int64)
    if phase == "decode":
        p = place(m, part, phase="decode", batch=values, context_tokens=context_tokens, parallelism=par, **dtypes)
    else:
        p = place(m, part, phase="prefill", batch=batch, prompt_tokens=values, parallelism=par, **dtypes)
    if figure == "bound":
        comm_s, rest_s = p.comm_lower_bound_s, np.maximum(p.compute_lower_bound_s, p.memory_lower_bound_s)
    else:
        comm_s, rest_s = p.comm_time_s, np.maximum(p.compute_time_s, p.memory_time_s)
    comm = np.broadcast_to(np.asarray(comm_s, dtype=float), values.shape)
    rest = np.broadcast_to(np.asarray(rest_s, dtype=float), values.shape)
    return comm > rest


def _exact_edge(m, part, par, phase, lo: int, hi: int, want: bool, batch, context_tokens, dtypes,
                figure: str = "estimate") -> int:
    """The first whole value in (lo, hi] whose 'over' equals ``want`` (hi if the grid skipped it)."""
    values = np.arange(lo + 1, hi + 1, dtype=np.int64)
    hits = np.nonzero(_over(m, part, par, phase, values, batch, context_tokens, dtypes, figure) == want)[0]
    return int(values[hits[0]]) if hits.size else hi


def comm_crossover(model, part, parallelism: Parallelism | int, *, phase: str = "decode", context_tokens: int = 4096,
                   batch: int = 1, up_to: int | None = None, weights_dtype: str = "bf16",
                   kv_dtype: str = "bf16", figure: str = "estimate") -> Crossover:
    """The batch (decode, at ``context_tokens`` cached) or prompt length (prefill, ``batch``
    sequences) at which one chip's communication first takes longer than max(compute, memory):
    where the step becomes interconnect-bound. Searched over whole numbers up to ``up_to``
    (default: 4,096 sequences, or the model's context length), exact to one.

    ``figure="estimate"`` compares the estimate's terms (ring bytes + calls × the assumed latency
    against unfused compute and memory); ``figure="bound"`` the lower bound's (the least bytes, no
    latency, against compulsory traffic and overlapped units).

    An integer ``parallelism`` means tensor parallel of that size (communication not overlapped).
    """
    m, p = _model(model), _part(part)
    par = Parallelism(tensor=whole_number("tensor parallel size", parallelism, 2)) if not isinstance(
        parallelism, Parallelism) else parallelism
    if par.chips < 2:
        raise RooflineInputError(f"comm_crossover needs more than one chip, got {par.label}")
    phase = _phase(phase)
    if figure not in FIGURES:
        raise RooflineInputError(f"figure must be one of {', '.join(FIGURES)}, got {figure!r}")
    variable = "batch" if phase == "decode" else "prompt_tokens"
    top = whole_number("up_to", up_to, 2) if up_to is not None else (4096 if phase == "decode" else m.max_context_tokens)
    context_tokens = whole_number("context_tokens", context_tokens, 0)
    batch = whole_number("batch", batch, 1)
    dtypes = {"weights_dtype": weights_dtype, "kv_dtype": kv_dtype}
    grid = np.unique(np.concatenate([np.round(np.geomspace(1, top, 160)), [top]]).astype(np.int64))
    over = _over(m, p, par, phase, grid, batch, context_tokens, dtypes, figure)
    first = last = None
    if over.any():
        i = int(np.argmax(over))
        first = int(grid[0]) if i == 0 else _exact_edge(m, p, par, phase, int(grid[i - 1]), int(grid[i]), True,
                                                         batch, context_tokens, dtypes, figure)
        after = np.nonzero(~over[i:])[0]
        if after.size:
            j = i + int(after[0])
            last = _exact_edge(m, p, par, phase, int(grid[j - 1]), int(grid[j]), False, batch, context_tokens,
                               dtypes, figure) - 1
        else:
            last = top
    at = first if first is not None else top
    fields = _step_fields(phase, at if phase == "decode" else batch, context_tokens, at)
    return Crossover(model_id=m.id, part_id=p.id, parallelism=par, phase=phase, variable=variable,
                     searched_up_to=top, first=first, last=last,
                     placement=place(m, p, parallelism=par, **dtypes, **fields), figure=figure)


# ---- expert parallel -------------------------------------------------------------------------


@dataclass(frozen=True)
class ExpertRow:
    """One split of an MoE step. Per chip where chips > 1 (see :class:`SplitRow`)."""

    row: SplitRow
    #: routed experts (slots) whose weights sit on one chip: a 1/t column slice of each of slots/e, or under
    #: attention data parallel slots/(t·e) whole ones
    experts_held_per_chip: int
    experts_touched_per_chip: float  #: expected distinct experts of those the step's tokens reach (uniform routing)
    all_reduce_bytes: float  #: bytes one chip sends in tensor-parallel all-reduces and the logits all-gather
    #: bytes one chip moves in expert-parallel all-to-alls (dispatch + combine), counted on the receive
    #: side: every token routed to its group arrives whole at each of the group's t chips
    all_to_all_bytes: float

    @property
    def label(self) -> str:
        return self.row.label


def expert_parallel_compare(model=MOE_MODEL, part="h200", splits=None, *, batch: int = 64,
                            context_tokens: int = 4096) -> tuple[ExpertRow, ...]:
    """The same MoE decode step split different ways over one node (default: TP 8, EP 8, TP 2 × EP 4,
    TP 4 × EP 2).

    Experts touched per chip: the step's ``batch`` tokens each pick k of E experts; an expert group
    receives the tokens routed to its E/e experts from every group, so a chip reaches
    E·(1 − (1 − k/E)^tokens) ÷ e of them (uniform routing, the same expectation as lesson 4).
    """
    m = _model(model)
    if not m.is_moe:
        raise RooflineInputError(f"expert_parallel_compare needs a mixture-of-experts model; {m.id} is dense")
    if splits is None:
        splits = (Parallelism(tensor=8), Parallelism(expert=8), Parallelism(tensor=2, expert=4),
                  Parallelism(tensor=4, expert=2))
    p = _part(part)
    rows = []
    for par in splits:
        par = _parallelism(par)
        setup = Setup(f"{par.chips} × {p.name}, {par.label}", p.id, par)
        r = _row(setup.label, place_setup(m, setup, phase="decode", batch=batch, context_tokens=context_tokens))
        comm = r.placement.comm
        a2a = sum((float(c.bytes) for c in comm.parts if "all-to-all" in c.name), 0.0) if comm else 0.0
        ar = (float(comm.bytes) - a2a) if comm else 0.0
        tokens = float(r.placement.workload.tokens)
        slots = m.num_experts if par.expert_slots is None else par.expert_slots
        degree = par.expert_parallel_degree
        touched = float(expected_experts_touched(slots, m.num_experts_per_tok, tokens)) / degree
        rows.append(ExpertRow(row=r, experts_held_per_chip=slots // degree,
                              experts_touched_per_chip=touched, all_reduce_bytes=ar, all_to_all_bytes=a2a))
    return tuple(rows)


# ---- measured against both figures: gpt-fast's 70B on 8 A100s ------------------------------------


@dataclass(frozen=True)
class MeasuredVsFigures:
    """A measured multi-chip decode rate against the package's two figures for the same setup: the
    estimate (ring, assumed per-call latency, communication after compute) and the lower bound.

    ``fraction_of_estimate`` = measured ÷ the estimate's rate; ``fraction_of_upper_bound`` =
    measured ÷ the bound's rate (never above 1). The two *what-ifs* say how large one suspect would
    have to be to explain the whole gap to the estimate alone; they are hypotheses to test, not
    findings. ``placement`` is laid out as gpt-fast runs it (:func:`as_gpt_fast_runs`).
    """

    measurement: object  #: the catalog's Measurement (value, conditions, source)
    placement: Placement  #: per chip
    context_tokens: int  #: the context both figures assume (the catalog states none)
    measured_tokens_per_s: float
    estimate_tokens_per_s: float
    fraction_of_estimate: float
    measured_step_s: float
    estimate_step_s: float
    lower_bound_step_s: float  #: time_lower_bound_s: no latency, least bytes, overlapped
    upper_bound_tokens_per_s: float
    fraction_of_upper_bound: float
    comm: CommSplit
    latency_per_call_to_close_gap_s: float  #: per-call latency that alone would explain the gap to the estimate
    hbm_fraction_to_close_gap: float  #: share of the HBM bandwidth that alone would explain that gap
    #: the package's own tensor-parallel layout of the same step (embedding and lm_head split over the
    #: vocabulary, an embedding all-reduce and a logits all-gather): what gpt-fast would get with them split
    vocab_parallel: Placement
    #: bytes of lm_head weights each chip reads beyond the vocab-parallel layout's share (gpt-fast
    #: keeps the whole lm_head on every chip)
    replicated_head_bytes: float


def _from_text(pattern: str, text: str, what: str) -> int:
    found = re.search(pattern, text or "")
    if not found:
        raise RooflineInputError(f"the catalog's gpt-fast entry does not state its {what} ({text!r})")
    return int(found.group(1))


#: gpt-fast's tensor parallelism (tp.py, ``apply_tp``): only each layer's attention (wqkv column-split,
#: wo row-split) and MLP (w1, w3 column-split, w2 row-split) are sharded, each followed by one
#: all-reduce; the token embedding and the output projection (lm_head) stay whole on every GPU, so
#: there is no embedding all-reduce and no logits all-gather, and every GPU reads the whole lm_head
GPT_FAST_SOURCE_TP = "pytorch-labs/gpt-fast tp.py (apply_tp shards Attention and FeedForward only)"
#: the blocks gpt-fast keeps whole on every GPU, and the collectives it therefore never makes
_GPT_FAST_WHOLE_BLOCKS = ("embedding", "head")
_GPT_FAST_NO_COLLECTIVES = ("embedding all-reduce", "logits all-gather")


def as_gpt_fast_runs(placement: Placement) -> Placement:
    """A tensor-parallel placement re-laid-out as gpt-fast's tp.py runs it: the layers split as the
    package splits them (attention heads and MLP columns over the chips, two all-reduces per layer),
    but the embedding and the lm_head whole on every chip — each chip does and reads the whole
    lm_head, and holds both matrices whole — with no embedding all-reduce and no logits all-gather.
    The estimate and the lower bound are then recomputed by the placement itself, like for like."""
    if not isinstance(placement, Placement) or placement.comm is None:
        raise RooflineInputError(f"as_gpt_fast_runs needs a multi-chip Placement, got {placement!r}")
    par = placement.parallelism
    if par.expert > 1 or par.pipeline > 1:
        raise RooflineInputError(f"gpt-fast's tp.py is tensor parallel only, got {par.label}")
    whole = {(op.name, op.block): op for op in model_cost(placement.model, placement.workload).ops}
    ops = tuple(whole[(op.name, op.block)] if op.block in _GPT_FAST_WHOLE_BLOCKS else op
                for op in placement.cost.ops)
    names = [c.name for c in placement.comm.parts]
    missing = [n for n in _GPT_FAST_NO_COLLECTIVES if n not in names]
    if missing:
        raise RooflineInputError(f"the placement's collectives changed names; expected {missing} among {names}")
    comm = replace(placement.comm,
                   parts=tuple(c for c in placement.comm.parts if c.name not in _GPT_FAST_NO_COLLECTIVES))
    fp = placement.footprint
    extra = sum(w.weight_params * w.layers * w.bytes_per_weight for w in ops) - sum(
        o.weight_params * o.layers * o.bytes_per_weight for o in placement.cost.ops)
    return replace(placement, cost=ModelCost(model=placement.model, workload=placement.workload, ops=ops), comm=comm,
                   footprint=Footprint(weight_bytes=fp.weight_bytes + float(extra), kv_cache_bytes=fp.kv_cache_bytes,
                                       state_bytes=fp.state_bytes))


def _lm_head_bytes(placement: Placement) -> float:
    """Bytes of lm_head weights one chip reads in the step."""
    return float(sum(o.weight_bytes * o.layers for o in placement.cost.ops if o.name == "lm_head"))


def gpt_fast_measurement():
    """The catalog's gpt-fast Llama-3.1-70B decode measurement on 8 A100s (value, conditions, source)."""
    part = get_part(GPT_FAST_PART)
    found = [ms for ms in part.measurements(GPT_FAST_QUANTITY) if ms.model == LLAMA_70B]
    if not found:
        raise RooflineInputError(f"the catalog has no {GPT_FAST_QUANTITY} measurement of {LLAMA_70B} on "
                                 f"{GPT_FAST_PART}")
    return found[0]


def gpt_fast_empirical_bandwidth_bytes_per_s() -> float:
    """The A100's empirical peak HBM bandwidth gpt-fast's README notes, read from the catalog entry's
    conditions ("about N GB/s"), in bytes per second."""
    text = gpt_fast_measurement().conditions or ""
    found = re.search(r"empirical peak bandwidth is about ([\d,.]+) GB/s", text)
    if not found:
        raise RooflineInputError(f"the catalog's gpt-fast entry does not state an empirical bandwidth ({text!r})")
    return float(found.group(1).replace(",", "")) * 1e9


def gpt_fast_70b(context_tokens: int = GPT_FAST_CONTEXT_TOKENS, *, memory_bandwidth_bytes_per_s: float | None = None,
                 latency_s: float | None = None) -> MeasuredVsFigures:
    """gpt-fast's measured Llama-3.1-70B decode on 8 A100s (tensor parallel, batch 1; from the
    catalog, with its conditions) against the estimate and the lower bound at ``context_tokens``
    cached (an assumption: the catalog states the prompt, not how many tokens were generated).

    Like for like: both figures price the layout gpt-fast's tp.py runs (:func:`as_gpt_fast_runs`:
    the layers split, the embedding and the lm_head whole on every GPU, 2 all-reduces per layer);
    ``vocab_parallel`` keeps the package's own layout of the same step beside it.

    What-ifs: ``memory_bandwidth_bytes_per_s`` replaces the A100's datasheet HBM bandwidth (e.g. the
    README's empirical figure, :func:`gpt_fast_empirical_bandwidth_bytes_per_s`; it moves both
    figures); ``latency_s`` replaces the assumed per-call latency (it moves the estimate only)."""
    part = get_part(GPT_FAST_PART)
    if memory_bandwidth_bytes_per_s is not None:
        bw = memory_bandwidth_bytes_per_s
        if isinstance(bw, bool) or not isinstance(bw, (int, float, np.integer, np.floating)) \
                or not math.isfinite(bw) or bw <= 0:
            raise RooflineInputError(f"memory_bandwidth_bytes_per_s must be a number above 0, got {bw!r}")
        part = replace(part, memory_bandwidth_bytes_per_s=float(bw))
    if latency_s is not None:
        part = with_link_latency(part, latency_s)
    ms = gpt_fast_measurement()
    text = f"{ms.kernel or ''}; {ms.conditions}"
    tensor = _from_text(r"tensor parallel (\d+)", text, "tensor-parallel size")
    batch = _from_text(r"batch (\d+)", text, "batch")
    ctx = whole_number("context_tokens", context_tokens, 0)
    vocab_parallel = place(LLAMA_70B, part, phase="decode", batch=batch, context_tokens=ctx,
                           parallelism=Parallelism(tensor=tensor))
    p = as_gpt_fast_runs(vocab_parallel)  # like for like: the layout gpt-fast's tp.py runs
    measured = float(ms.tokens_per_s or ms.value)
    estimate = float(p.tokens_per_s_estimate)
    upper = float(p.tokens_per_s_upper_bound)
    split = comm_split(p)
    measured_step = batch / measured
    estimate_step = float(p.time_estimate_s)
    gap = measured_step - estimate_step
    without_latency = estimate_step - split.latency_s
    per_call = (measured_step - without_latency) / split.calls if split.calls else math.inf
    memory_room = measured_step - float(p.comm_time_s)  # the time left for HBM if comm were as modelled
    return MeasuredVsFigures(measurement=ms, placement=p, context_tokens=ctx, measured_tokens_per_s=measured,
                             estimate_tokens_per_s=estimate, fraction_of_estimate=measured / estimate,
                             measured_step_s=measured_step, estimate_step_s=estimate_step,
                             lower_bound_step_s=float(p.time_lower_bound_s), upper_bound_tokens_per_s=upper,
                             fraction_of_upper_bound=measured / upper, comm=split,
                             latency_per_call_to_close_gap_s=per_call if gap > 0 else split.latency_per_call_s,
                             hbm_fraction_to_close_gap=(float(p.memory_time_s) / memory_room if memory_room > 0
                                                        else 0.0),
                             vocab_parallel=vocab_parallel,
                             replicated_head_bytes=_lm_head_bytes(p) - _lm_head_bytes(vocab_parallel))


# ---- pipeline parallel -----------------------------------------------------------------------


def pipeline_vs_tensor(model, part, chips: int = 2, *, batch: int = 1, context_tokens: int = 4096
                       ) -> tuple[SplitRow, ...]:
    """One decode step three ways: on one chip (whether or not it fits), tensor parallel over
    ``chips`` and pipeline parallel over ``chips`` stages (one batch in flight: no micro-batches).
    The rows' ``step_s`` is the estimate (the stages one after another); ``lower_bound_s`` is the
    package's bound: the larger of the busiest stage's bound and one token's crossing of the stages
    one after another (:attr:`~roofline_lessons.core.placement.Placement.pipeline_lower_bound_basis`
    says which binds; at batch 1 the crossing, about one chip's bound)."""
    n = whole_number("chips", chips, 2)
    p = _part(part)
    setups = (Setup(f"1 × {p.name}", p.id), Setup(f"{n} × {p.name}, TP {n}", p.id, Parallelism(tensor=n)),
              Setup(f"{n} × {p.name}, PP {n}", p.id, Parallelism(pipeline=n)))
    return compare_setups(model, setups, batch=batch, context_tokens=context_tokens)



# ---- one split beside one chip (the lesson 11 dashboard) ---------------------------------------


@dataclass(frozen=True, kw_only=True)
class SplitStep:
    """One step split over chips beside the same step on one chip, in numbers. With more than one chip
    every figure is one chip's (the busiest stage's), by the rules of :mod:`roofline_lessons.core.parallel`.
    ``step_s`` and its terms are the estimate's; ``lower_bound_s`` is the bound (``tokens_per_s`` an
    estimate, ``tokens_per_s_upper_bound`` a bound). Seconds, bytes, FLOP/s and FLOP/byte; every field
    has a default, so a record of a setting that could not be placed (a dashboard's error) is all blank."""

    placement: Placement | None = None  #: per chip when chips > 1
    single: Placement | None = None  #: the same step on one chip (``placement`` itself on one chip)
    step_s: float | None = None  #: the whole step's estimate (all pipeline stages), seconds
    compute_s: float | None = None  #: one chip's compute time, seconds
    memory_s: float | None = None  #: one chip's HBM time, seconds
    comm_s: float | None = None  #: one chip's collectives per stage, seconds
    wait_s: float = 0.0  #: pipeline: the other stages and the sends, seconds
    #: what communication (and sends) add to the step: step − stages × max(compute, memory), seconds
    exposed_comm_s: float = 0.0
    comm_share: float = 0.0  #: exposed_comm_s / step_s
    bound: str = ""  #: the estimate's binding roof: "compute", "memory" or "interconnect"
    achieved_flops_per_s: float | None = None  #: per-chip FLOPs ÷ step time
    peak_flops_per_s: float | None = None
    hbm_bandwidth_bytes_per_s: float | None = None
    hbm_intensity: float | None = None  #: FLOPs per HBM byte (per chip)
    hbm_ridge: float | None = None
    link_name: str | None = None
    link_bytes_per_s: float | None = None  #: per direction
    link_intensity: float | None = None  #: FLOPs per byte sent (None: one chip or nothing sent)
    link_ridge: float | None = None
    comm_latency_s: float = 0.0  #: the collectives' per-call latency, seconds (calls × the link's latency)
    memory_required_bytes: float | None = None  #: per chip
    capacity_bytes: float | None = None
    fits: bool | None = None
    tokens_per_s: float | None = None  #: all chips together, the estimate's
    lower_bound_s: float | None = None  #: the step's lower bound (least bytes, overlapped, no latency), seconds
    lower_bound_roof: str = ""  #: the bound's binding roof
    tokens_per_s_upper_bound: float | None = None  #: all chips together
    assumed_latency_s: float = 0.0  #: seconds of the estimate that are the assumed per-call latency
    single_step_s: float | None = None
    single_fits: bool | None = None
    single_memory_bytes: float | None = None
    speedup: float | None = None  #: single_step_s / step_s (the estimates'; below 1: the split is slower)
    single_lower_bound_s: float | None = None
    lower_bound_speedup: float | None = None  #: single_lower_bound_s / lower_bound_s
    warnings: tuple[str, ...] = ()


def split_step(model, part, parallelism: Parallelism, *, phase: str = "decode", batch: int = 1,
               context_tokens: int = 4096, prompt_tokens: int = 4096) -> SplitStep:
    """One step of ``model`` split over chips of ``part`` by ``parallelism`` (decode at
    ``context_tokens`` cached, or a prefill of ``prompt_tokens``), the same step on one chip, and what
    the split adds: the exposed communication (not hidden under compute and memory), a pipeline's
    wait for the other stages and the assumed per-call latency (see :class:`SplitStep`). The split must fit
    one server (its chips within the in-server link's domain): one link carries all its traffic."""
    m, p, par = _model(model), _part(part), _parallelism(parallelism)
    fields = _step_fields(phase, batch, context_tokens, prompt_tokens)
    pl = place(m, p, parallelism=par, **fields)  # the package's own refusals first
    _in_one_server(p, par, "this view of one split beside one chip")
    one = place(m, p, **fields) if par.chips > 1 else pl
    step, lk, comm = float(pl.time_estimate_s), pl.link, pl.comm
    exposed = max(step - par.pipeline * max(float(pl.compute_time_s), float(pl.memory_time_s)), 0.0)
    exposed = exposed if par.chips > 1 else 0.0
    sent = None if lk is None else float(pl.interconnect_intensity)  # FLOPs per byte sent
    return SplitStep(
        placement=pl, single=one, step_s=step, compute_s=float(pl.compute_time_s), memory_s=float(pl.memory_time_s),
        comm_s=float(pl.comm_time_s), wait_s=step - float(pl.stage_time_s) if par.pipeline > 1 else 0.0,
        exposed_comm_s=exposed, comm_share=exposed / step if step > 0 else 0.0, bound=str(pl.bound),
        achieved_flops_per_s=float(pl.cost.flops) / step, peak_flops_per_s=float(pl.peak_flops_per_s),
        hbm_bandwidth_bytes_per_s=float(pl.bandwidth_bytes_per_s), hbm_intensity=float(pl.intensity),
        hbm_ridge=float(pl.ridge_point_flop_per_byte), link_name=None if lk is None else lk.name,
        link_bytes_per_s=None if lk is None else float(lk.per_direction_bytes_per_s),
        link_intensity=sent if sent is not None and np.isfinite(sent) and sent > 0 else None,
        link_ridge=None if lk is None else float(pl.interconnect_ridge_point_flop_per_byte),
        comm_latency_s=0.0 if comm is None else float(comm_split(pl).latency_s),  # the set per-call latency
        memory_required_bytes=float(pl.memory_required_bytes), capacity_bytes=float(p.memory_capacity_bytes),
        fits=bool(pl.fits_in_memory), tokens_per_s=float(pl.tokens_per_s_estimate),
        lower_bound_s=float(pl.time_lower_bound_s), lower_bound_roof=str(pl.lower_bound_roof),
        tokens_per_s_upper_bound=float(pl.tokens_per_s_upper_bound), assumed_latency_s=_latency_total_s(pl),
        single_step_s=float(one.time_estimate_s), single_fits=bool(one.fits_in_memory),
        single_memory_bytes=float(one.memory_required_bytes), speedup=float(one.time_estimate_s) / step,
        single_lower_bound_s=float(one.time_lower_bound_s),
        lower_bound_speedup=float(one.time_lower_bound_s) / float(pl.time_lower_bound_s), warnings=tuple(pl.warnings))
