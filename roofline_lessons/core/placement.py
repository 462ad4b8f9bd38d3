"""One model, one part, one workload → one point on the roofline (and one per operator).

With more than one chip (a :class:`~roofline_lessons.core.parallel.Parallelism`), every FLOP, byte
and second is **per chip**, for the busiest pipeline stage (element by element when batch or tokens
are arrays), and the step gains a third term: the communication over the link — past one server over
the in-server link and the scale-out network both (see :mod:`roofline_lessons.core.parallel`). Memory
(footprint, fit) is the fullest chip's. With replicas the workload is ONE copy's: every per-chip figure
is unchanged by them, ``tokens_per_s_*`` are one copy's and ``aggregate_tokens_per_s_*`` every copy's.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from . import roofline
from .costs import ModelCost, Workload, model_cost
from .dtypes import effective_weight_group
from .errors import RooflineInputError
from .hardware import Part, get_part
from .memory import Footprint, footprint
from .models import Model
from .parallel import SINGLE_CHIP, Comm, CommPart, Parallelism, check_parallelism, chip_shares, split_topology
from .parallel import interconnect_ridge_flop_per_byte

INTERCONNECT = "interconnect"

#: what the estimate (:attr:`Placement.time_estimate_s`) assumes that the lower bound does not
ESTIMATE_CONVENTIONS = {
    "unfused": "operators unfused: each one's activations written to HBM and read back",
    "dequant": "weight-only dequantisation in series with the matmuls (added, not overlapped)",
    "ring": "all-reduces and gathers by the ring algorithm",
    "all_to_all": "all-to-alls sending one copy of a token per chosen expert",
    "kv_replicated": ("the KV cache replicated {r}× on the tensor-parallel chips, each reading its whole copy (no "
                      "decode context parallel; the bound shards it 1/{t} per chip)"),
    "group_routing": ("routing uniform over all the experts, not limited to {top} of the {groups} expert groups per "
                      "token as the model routes (the bound allows the limit)"),
    "latency": "{us:g} µs per collective call (assumed)",
    "serial": "communication after the compute, not overlapped",
    "stages": "pipeline stages one after another, each send with its latency",
    "network": "across servers: {what}; each link's time added to the other's",
    "network_all_reduce": ("all-reduces hierarchical (reduce-scatter in the server, all-reduce of 1/t_in of the "
                           "message across servers by the ring, all-gather in the server)"),
    "network_all_to_all": "an all-to-all's off-server copies over the network, after its on-server ones",
    "network_sends": "sends between stages on different servers over the network",
    "network_latency": "{us:g} µs per call on the network between servers (assumed)",
}


@dataclass(frozen=True)
class Placement:
    """Where a whole step sits under a part's roofs, with the numbers behind it."""

    part: Part
    cost: ModelCost  #: per chip when ``chips`` > 1 (the busiest stage's share)
    footprint: Footprint  #: per chip when ``chips`` > 1: the fullest chip's (every chip must fit), which with
    #: pipeline stages of unequal size is the first stage's, not necessarily the busiest one's
    parallelism: Parallelism = SINGLE_CHIP
    comm: Comm | None = None  #: what one chip sends; None on one chip (per copy)
    parallel_warnings: tuple[str, ...] = ()
    other_stages_s: object = 0.0  #: seconds of every other pipeline stage of the step, summed (the estimate)
    other_stages_lower_bound_s: object = 0.0  #: the largest lower bound of any other pipeline stage
    #: Σ over every pipeline stage of its lower bound for the least work one token must take through it
    #: (decode: one sequence; prefill: a one-token chunk): what one token's crossing of the stages, one
    #: after another, cannot beat (0 without pipeline parallelism; see :attr:`time_lower_bound_s`)
    pipeline_crossing_lower_bound_s: object = 0.0
    stage_repeats: int = 1  #: how many of the pipeline's stages are this one (same layers, same ends)

    @property
    def chips(self) -> int:
        """Every chip: tensor × expert × pipeline × replicas."""
        return self.parallelism.chips

    @property
    def replicas(self) -> int:
        """Independent copies of the split, each serving its own batch (the workload is one copy's)."""
        return self.parallelism.replicas

    @property
    def chips_per_replica(self) -> int:
        """The chips of one copy: tensor × expert × pipeline."""
        return self.parallelism.chips_per_replica

    @property
    def scale_out_link(self):
        """The network between servers when one copy spans several (None in one server)."""
        return None if self.comm is None else self.comm.scale_out_link

    @property
    def server_chips(self):
        """Chips one server joins over the in-server link (None on one chip)."""
        return None if self.comm is None else self.comm.server_chips

    @property
    def servers_per_replica(self) -> int:
        """Servers one copy spans (1 while it fits one)."""
        if self.scale_out_link is None:
            return 1
        return int(self.chips_per_replica // self.server_chips)

    @property
    def network_bytes(self):
        """Bytes each chip sends over the network between servers in its collectives (0 in one server)."""
        return 0.0 if self.comm is None else self.comm.network_bytes

    @property
    def network_intensity(self):
        """FLOPs per byte this chip sends over the network between servers (None in one server)."""
        if self.scale_out_link is None:
            return None
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.divide(self.cost.flops, self.network_bytes)

    @property
    def network_ridge_point_flop_per_byte(self):
        """Peak ÷ the network's per-direction bandwidth: the network's ridge (None in one server)."""
        if self.scale_out_link is None:
            return None
        return interconnect_ridge_flop_per_byte(self.peak_flops_per_s, self.scale_out_link)

    @property
    def network_latency_s(self):
        """The estimate's per-call latency on the network between servers (None in one server)."""
        if self.scale_out_link is None:
            return None
        lat = self.parallelism.network_latency_s
        return self.scale_out_link.latency_s if lat is None else float(lat)

    @property
    def per_chip(self) -> bool:
        """True when the figures are one chip's share of a step split over several."""
        return self.chips > 1

    @property
    def link(self):
        return None if self.comm is None else self.comm.link

    @property
    def interconnect_bandwidth_bytes_per_s(self):
        """The link's per-direction bandwidth, bytes/s (None on one chip)."""
        return None if self.link is None else self.link.per_direction_bytes_per_s

    @property
    def comm_bytes(self):
        """Bytes each chip sends in the step: its collectives + its send to the next stage (the expert
        all-to-all under TP × EP counted on its receive side, what each chip must receive)."""
        if self.comm is None:
            return 0.0
        return self.comm.bytes + (self.comm.pipeline_send_bytes if self.parallelism.pipeline > 1 else 0.0)

    @property
    def comm_time_s(self):
        """Seconds of the busiest stage's collectives per step (0 on one chip)."""
        return 0.0 if self.comm is None else self.comm.time_s

    @property
    def pipeline_send_s(self):
        """Seconds of one send between pipeline stages (0 without pipeline parallelism)."""
        return 0.0 if self.comm is None or self.parallelism.pipeline == 1 else self.comm.pipeline_send_s

    @property
    def interconnect_intensity(self):
        """FLOPs per byte this chip sends over the link (inf when it sends nothing)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.divide(self.cost.flops, self.comm_bytes)

    @property
    def interconnect_ridge_point_flop_per_byte(self):
        """Peak ÷ link bandwidth per direction: the third ridge (None on one chip)."""
        return None if self.link is None else interconnect_ridge_flop_per_byte(self.peak_flops_per_s, self.link)

    @property
    def model(self) -> Model:
        return self.cost.model

    @property
    def workload(self) -> Workload:
        return self.cost.workload

    @property
    def matmul_peak_flops_per_s(self) -> float:
        """Dense peak of the weight matmuls' format (``compute_dtype``), FLOP/s."""
        return self.part.peak_flops_per_s(self.workload.compute_dtype)

    @property
    def other_peak_flops_per_s(self) -> float:
        """Dense peak for every other FLOP (attention, softmax, norms), FLOP/s."""
        return self.part.peak_flops_per_s(self.workload.other_compute_dtype)

    @property
    def vector_peak_flops_per_s(self) -> float:
        """Rate of the vector units that dequantise weight-only weights: the part's FP32 (non-tensor)
        rate, or its BF16 rate where the catalog has no FP32 figure (TPUs), FLOP/s."""
        rates = self.part.dense_flops_per_s
        return rates["fp32"] if "fp32" in rates else rates["bf16"]

    @property
    def dequant_time_s(self):
        """Seconds dequantising weight-only weights takes on the vector units (0 otherwise)."""
        return np.divide(self.cost.dequant_flops, self.vector_peak_flops_per_s)

    def tensor_seconds(self, weight_matmul_flops, other_flops, unquantized_matmul_flops=0.0):
        """Seconds these FLOPs need on this part's tensor units under this placement's formats, each
        class at its own format's peak: quantised weight matmuls at ``compute_dtype``'s rate, the
        ``unquantized_matmul_flops`` among them (weights the recipe keeps BF16) at the BF16 rate,
        ``other_flops`` at ``other_compute_dtype``'s. Arrays broadcast."""
        unq = unquantized_matmul_flops
        t = (np.divide(np.asarray(weight_matmul_flops) - unq, self.matmul_peak_flops_per_s)
             + np.divide(other_flops, self.other_peak_flops_per_s))
        if np.any(np.asarray(unq) > 0):
            t = t + np.divide(unq, self.part.peak_flops_per_s("bf16"))
        return t

    def _tensor_time_s(self, c) -> object:
        """Seconds ``c``'s FLOPs (an op or a whole step) need on the tensor units (:meth:`tensor_seconds`)."""
        return self.tensor_seconds(c.weight_matmul_flops, c.other_flops, c.unquantized_matmul_flops)

    def lower_bound_for_s(self, tensor_s, dequant_s, compulsory_bytes, comm_lower_bound_s=0.0):
        """One chip's lower bound from its parts, seconds: max(tensor, dequantisation, compulsory
        bytes ÷ bandwidth, least communication) — separate units overlapped, no per-call latency."""
        return np.maximum(np.maximum(np.maximum(tensor_s, dequant_s),
                                     np.divide(compulsory_bytes, self.bandwidth_bytes_per_s)), comm_lower_bound_s)

    @property
    def tensor_time_s(self):
        """Seconds the model's FLOPs need on the tensor units (no dequantisation)."""
        return self._tensor_time_s(self.cost)

    @property
    def compute_time_s(self):
        """The estimate's compute seconds: the tensor units' time (:attr:`tensor_time_s`) plus any
        weight-only dequantisation on the vector units, in series (the conservative convention)."""
        return self.tensor_time_s + self.dequant_time_s

    @property
    def compute_lower_bound_s(self):
        """The bound's compute seconds: tensor units and vector units are separate, so the larger of
        the tensor time and the dequantisation time (they overlap), never their sum."""
        return np.maximum(self.tensor_time_s, self.dequant_time_s)

    @property
    def memory_time_s(self):
        """The estimate's memory seconds: every byte of the unfused view at the memory bandwidth."""
        return np.divide(self.cost.bytes, self.bandwidth_bytes_per_s)

    @property
    def memory_lower_bound_s(self):
        """The bound's memory seconds: compulsory bytes only (``cost.compulsory_bytes``)."""
        return np.divide(self.cost.compulsory_bytes, self.bandwidth_bytes_per_s)

    @property
    def compulsory_intensity(self):
        """FLOPs per compulsory byte: the intensity the lower bound sees (FLOP/byte)."""
        return self.cost.compulsory_intensity

    @property
    def comm_lower_bound_s(self):
        """The bound's communication seconds: the least bytes any algorithm the link supports sends
        (in-switch reduction where the switch does it), at its bandwidth, no per-call latency; past
        one server max(network bytes ÷ NIC, all the bytes ÷ (NIC + in-server link)): the NIC must carry
        the cross-server bytes, the two links share the rest (:attr:`Comm.bound_time_s`)."""
        return 0.0 if self.comm is None else self.comm.bound_time_s

    @property
    def kv_replication(self) -> int:
        """How many tensor-parallel chips hold each KV entry in the estimate and the memory: t ÷ the KV
        heads when t exceeds them, t for an MLA latent (shared by every head), else 1. The lower bound
        reads each entry once per tensor-parallel group (1/t per chip, as decode context parallel
        shards it); the estimate and the footprint keep the replication."""
        t = self.parallelism.tensor
        if t == 1 or self.model.kv_bytes_per_token("bf16") == 0:
            return 1
        return t if self.model.is_mla else max(1, t // self.model.num_key_value_heads)

    @property
    def peak_flops_per_s(self):
        """The compute roof for this step's mix of FLOPs, FLOP/s.

        With one format for everything it is that format's dense peak. When the weight matmuls run
        in FP8 and attention in BF16 (W8A8), it is FLOPs ÷ compute time: a blend of the two peaks
        weighted by where the FLOPs are. Weight-only formats blend the same way: dequantising on the
        vector units takes compute time but adds no model FLOPs, so it lowers the roof (and the
        ridge) for that step, and the point's side of the ridge agrees with :attr:`bound`.
        """
        if (self.workload.other_compute_dtype == self.workload.compute_dtype
                and not np.any(np.asarray(self.cost.dequant_flops) > 0)):
            return self.matmul_peak_flops_per_s
        with np.errstate(divide="ignore", invalid="ignore"):
            blended = np.divide(self.cost.flops, self.compute_time_s)
        out = np.where(np.asarray(self.compute_time_s) > 0, blended, self.matmul_peak_flops_per_s)
        return float(out) if np.ndim(out) == 0 else out

    @property
    def bandwidth_bytes_per_s(self) -> float:
        return self.part.memory_bandwidth_bytes_per_s

    @property
    def ridge_point_flop_per_byte(self) -> float:
        return self.peak_flops_per_s / self.bandwidth_bytes_per_s

    @property
    def intensity(self):
        """FLOPs per byte of all traffic."""
        return self.cost.intensity

    @property
    def intensity_per_weight_byte(self):
        return self.cost.intensity_per_weight_byte

    @property
    def attainable_flops_per_s(self):
        return roofline.attainable_flops_per_s(self.intensity, self.peak_flops_per_s, self.bandwidth_bytes_per_s)

    @property
    def fraction_of_peak(self):
        return roofline.fraction_of_peak(self.intensity, self.peak_flops_per_s, self.bandwidth_bytes_per_s)

    @property
    def bound(self):
        """The estimate's binding roof: ``"memory"`` when its bytes take longer than its FLOPs,
        ``"compute"`` otherwise; ``"interconnect"`` when the link's time is the longest of the three
        (:attr:`lower_bound_roof` is the bound's)."""
        if self.comm is None:
            return _which(self.compute_time_s, self.memory_time_s)
        return _which3(self.compute_time_s, self.memory_time_s, self.comm_time_s)

    @property
    def stage_time_s(self):
        """One chip's (the busiest stage's) step: max(compute, memory) + communication, or with
        ``overlap_comm`` max of the three. On one chip, max(compute, memory)."""
        return self.step_time_for_s(self.compute_time_s, self.memory_time_s, self.comm_time_s, stage_only=True)

    def step_time_for_s(self, compute_s, memory_s, comm_s=None, *, stage_only: bool = False):
        """The step's seconds from one chip's compute, memory and communication seconds, by this
        placement's rules: overlap or not, then this stage + every other stage (one after another:
        one batch passes through the stages in turn) + the p − 1 sends between them."""
        if self.comm is None:
            return np.maximum(compute_s, memory_s)
        comm_s = self.comm_time_s if comm_s is None else comm_s
        if self.parallelism.overlap_comm:
            stage = np.maximum(np.maximum(compute_s, memory_s), comm_s)
        else:
            stage = np.maximum(compute_s, memory_s) + comm_s
        if stage_only:
            return stage
        p = self.parallelism.pipeline
        return stage + self.other_stages_s + (p - 1) * self.pipeline_send_s

    @property
    def lower_bound_roof(self):
        """Which term of this chip's lower bound is the largest: ``"compute"``, ``"memory"`` or
        ``"interconnect"`` (:attr:`bound` is the estimate's)."""
        if self.comm is None:
            return _which(self.compute_lower_bound_s, self.memory_lower_bound_s)
        return _which3(self.compute_lower_bound_s, self.memory_lower_bound_s, self.comm_lower_bound_s)

    @property
    def stage_lower_bound_s(self):
        """One chip's (the busiest stage's) lower bound: max(compute, compulsory memory, least
        communication), everything overlapped, no per-call latency."""
        return np.maximum(np.maximum(self.compute_lower_bound_s, self.memory_lower_bound_s), self.comm_lower_bound_s)

    @property
    def time_lower_bound_s(self):
        """The step's **lower bound**, seconds: no implementation on this part can be faster.

        Compulsory traffic only (:attr:`memory_lower_bound_s`), each FLOP class at its own format's
        peak with the tensor and vector units overlapped (:attr:`compute_lower_bound_s`), the least
        communication overlapped with both (:attr:`comm_lower_bound_s`), no per-call latency. With
        pipeline stages, the larger of two bounds (:attr:`pipeline_lower_bound_basis` says which binds):

        - **the busiest stage**: every stage must do its share of the whole step's work, however the
          work is cut into micro-batches (sequences in decode, chunks of a prompt in prefill);
        - **one token's crossing** (:attr:`pipeline_crossing_lower_bound_s`): the sum of the stages'
          bounds for the least work a token takes through each (decode: its sequence alone; prefill:
          a one-token chunk). A decode token needs the token before it, so in every step each
          sequence's token crosses all the stages one after another, each reading its weights. With
          fewer sequences than stages this term is the larger (at batch 1, about one chip's bound:
          pipelining does not cut one sequence's latency); with enough micro-batches to keep every
          stage busy the busiest stage can bind instead.

        The sends between stages overlap in both (no latency; a send can stream while the stage
        computes); the estimate runs the stages one after another, each send with its latency.

        What it takes as given, so what "no implementation is faster" is relative to: the split,
        the formats, the kernels' FLOP counts (an eager attention's whole score square, the MLA form
        chosen) and, for an MoE, the experts touched under uniform routing (skewed routing touches
        fewer) and the groups reached under it, within the model's own group limit where it has one
        (DeepSeek-V3: at most 4 of 8 groups per token). What it does not take from the split: a KV
        cache the split replicates (tensor parallel past the KV heads, an MLA latent) is read once per
        tensor-parallel group, 1/t per chip, as decode context parallel shards it; the estimate and
        the footprint keep the replication (:attr:`kv_replication`).
        """
        if self.comm is None:
            return self.stage_lower_bound_s
        return np.maximum(self.busiest_stage_lower_bound_s, self.pipeline_crossing_lower_bound_s)

    @property
    def busiest_stage_lower_bound_s(self):
        """The largest of the stages' lower bounds for the whole step (this chip's with no pipeline)."""
        return np.maximum(self.stage_lower_bound_s, self.other_stages_lower_bound_s)

    @property
    def pipeline_lower_bound_basis(self):
        """Which term sets :attr:`time_lower_bound_s` with pipeline stages: ``"crossing"`` (one token
        through the stages one after another: fewer micro-batches than stages keep them busy) or
        ``"busiest stage"``; None without pipeline parallelism (arrays: element by element)."""
        if self.parallelism.pipeline == 1:
            return None
        out = np.where(np.asarray(self.pipeline_crossing_lower_bound_s, dtype=float)
                       > np.asarray(self.busiest_stage_lower_bound_s, dtype=float), "crossing", "busiest stage")
        return str(out) if out.ndim == 0 else out

    @property
    def time_estimate_s(self):
        """The step's **estimate**, seconds, by named conventions (:data:`ESTIMATE_CONVENTIONS`):
        operators unfused (every activation through HBM), weight-only dequantisation in series with
        the matmuls, collectives by the ring algorithm with the per-call latency and — unless
        ``overlap_comm`` — after the compute. Several chips: Σ of the stages + the sends
        (:meth:`step_time_for_s`). Never below :attr:`time_lower_bound_s` (tested)."""
        return self.step_time_for_s(self.compute_time_s, self.memory_time_s)

    @property
    def estimate_conventions(self) -> tuple[str, ...]:
        """The conventions behind :attr:`time_estimate_s` that apply to this placement."""
        out = [ESTIMATE_CONVENTIONS["unfused"]]
        if np.any(np.asarray(self.cost.dequant_flops) > 0):
            out.append(ESTIMATE_CONVENTIONS["dequant"])
        if self.comm is not None:
            lat = self.parallelism.collective_latency_s
            lat = self.link.latency_s if lat is None else lat
            names = [part.name for part in self.comm.parts if np.any(np.asarray(part.calls) > 0)]
            if any("all-to-all" not in n for n in names):
                out.append(ESTIMATE_CONVENTIONS["ring"] + (" (the link reduces in the switch; the bound counts that)"
                                                           if self.link.in_switch_reduction else ""))
            if any("all-to-all" in n for n in names):
                out.append(ESTIMATE_CONVENTIONS["all_to_all"])
                if self.model.group_limited_routing:
                    out.append(ESTIMATE_CONVENTIONS["group_routing"].format(top=self.model.topk_group,
                                                                            groups=self.model.n_group))
            replicated = self.kv_replication
            if replicated > 1:
                out.append(ESTIMATE_CONVENTIONS["kv_replicated"].format(r=replicated, t=self.parallelism.tensor))
            if names:
                out.append(ESTIMATE_CONVENTIONS["latency"].format(us=lat * 1e6))
            if not self.parallelism.overlap_comm:
                out.append(ESTIMATE_CONVENTIONS["serial"])
            if self.parallelism.pipeline > 1:
                out.append(ESTIMATE_CONVENTIONS["stages"])
            if self.scale_out_link is not None:
                across = [n for n in names if n.endswith("across servers")]
                what = ([ESTIMATE_CONVENTIONS["network_all_reduce"]]
                        if any("all-to-all" not in n for n in across) else [])
                what += [ESTIMATE_CONVENTIONS["network_all_to_all"]] if any("all-to-all" in n for n in across) else []
                what += [ESTIMATE_CONVENTIONS["network_sends"]] if self.comm.pipeline_network_sends else []
                if what:
                    out.append(ESTIMATE_CONVENTIONS["network"].format(what=", ".join(what)))
                    out.append(ESTIMATE_CONVENTIONS["network_latency"].format(us=self.network_latency_s * 1e6))
        return tuple(out)

    def op_compute_time_s(self, op):
        """Seconds one layer of ``op`` needs for its FLOPs at their own peaks (dequantisation included)."""
        return self._tensor_time_s(op) + np.divide(op.dequant_flops, self.vector_peak_flops_per_s)

    @property
    def time_estimate_per_op_sum_s(self):
        """An estimate: Σ over operators of each one's time as a kernel of its own (a kernel per
        operator, run one after another, each at max(compute, its unfused bytes)); several chips: per
        stage, plus its communication (the estimate's), or with ``overlap_comm`` the larger of the two,
        times the stages, plus the sends."""
        ops = sum(
            np.maximum(self.op_compute_time_s(op), np.divide(op.bytes, self.bandwidth_bytes_per_s)) * op.layers
            for op in self.cost.ops
        )
        if self.comm is None:
            return ops
        p = self.parallelism.pipeline
        stage = np.maximum(ops, self.comm_time_s) if self.parallelism.overlap_comm else ops + self.comm_time_s
        return stage + self.other_stages_s + (p - 1) * self.pipeline_send_s

    @property
    def tokens_per_s_upper_bound(self):
        """New tokens per second no implementation can beat (tokens / :attr:`time_lower_bound_s`)."""
        return np.divide(self.workload.tokens, self.time_lower_bound_s)

    @property
    def tokens_per_s_estimate(self):
        """New tokens per second by the estimate's conventions (tokens / :attr:`time_estimate_s`): one
        copy's (with replicas, :attr:`aggregate_tokens_per_s_estimate` is every copy's)."""
        return np.divide(self.workload.tokens, self.time_estimate_s)

    @property
    def aggregate_tokens_per_s_estimate(self):
        """Every copy's new tokens per second together (replicas × one copy's), the estimate's."""
        return self.replicas * np.asarray(self.tokens_per_s_estimate)

    @property
    def aggregate_tokens_per_s_upper_bound(self):
        """Every copy's new tokens per second together (replicas × one copy's upper bound)."""
        return self.replicas * np.asarray(self.tokens_per_s_upper_bound)

    @property
    def memory_required_bytes(self):
        return self.footprint.total_bytes

    @property
    def fits_in_memory(self):
        return np.asarray(self.memory_required_bytes) <= self.part.memory_capacity_bytes

    @property
    def context_tokens_per_sequence(self):
        """Tokens each sequence holds after the step (prompt in prefill, context + 1 in decode)."""
        return self.workload.cached_tokens_after

    @property
    def context_beyond_model(self) -> bool:
        """True when a sequence holds more tokens than the model's ``max_context_tokens``."""
        return bool(np.any(np.asarray(self.context_tokens_per_sequence) > self.model.max_context_tokens))

    @property
    def warnings(self) -> tuple[str, ...]:
        """What a reader should know about this placement (the numbers are still computed)."""
        out = list(self.parallel_warnings)
        if self.context_beyond_model:
            out.append(
                f"context of {int(np.max(self.context_tokens_per_sequence)):,} tokens exceeds {self.model.id}'s "
                f"max_context_tokens of {self.model.max_context_tokens:,} (config.json max_position_embeddings): "
                "a what-if, not a configuration the model supports")
        return tuple(out)

    def op_rows(self) -> list[dict]:
        """One row per operator, summed over its layers: name, flops, bytes, intensity, bound."""
        rows = []
        for op in self.cost.ops:
            total = op.scaled_to_all_layers()
            intensity = total.intensity
            compute_s = self.op_compute_time_s(total)
            memory_s = np.divide(total.bytes, self.bandwidth_bytes_per_s)
            rows.append({
                "name": op.name,
                "block": op.block,
                "layers": op.layers,
                "flops": total.flops,
                "bytes": total.bytes,
                "weight_bytes": total.weight_bytes,
                "kv_bytes": total.kv_bytes,
                "state_bytes": total.state_bytes,
                "activation_bytes": total.activation_bytes,
                "intensity": intensity,
                "weight_matmul_flops": total.weight_matmul_flops,
                "time_estimate_s": np.maximum(compute_s, memory_s),  # a kernel of its own: unfused, dequant in series
                "bound": _which(compute_s, memory_s),
                "note": op.note,
            })
        return rows

    def to_dict(self) -> dict:
        """Plain JSON-ready numbers (arrays become lists)."""

        def num(x):
            a = np.asarray(x)
            if a.ndim:
                return a.tolist()
            v = a.item()
            return v if not isinstance(v, float) or np.isfinite(v) else None

        w = self.workload
        out = {
            "hardware": self.part.id,
            "model": self.model.id,
            "phase": w.phase,
            "batch": num(w.batch),
            "prompt_tokens": num(w.prompt_tokens) if w.phase == "prefill" else None,
            "context_tokens": num(w.context_tokens) if w.phase == "decode" else None,
            "weights_dtype": w.weights_dtype,
            "activations_dtype": w.activations_dtype,
            "kv_dtype": w.kv_dtype,
            "state_dtype": w.state_dtype or self.model.state_dtype,
            "compute_dtype": w.compute_dtype,
            "attention_compute_dtype": w.other_compute_dtype,
            "flash_attention": w.flash_attention,
            "max_context_tokens": self.model.max_context_tokens,
            "context_beyond_model": self.context_beyond_model,
            "warnings": list(self.warnings),
            "flops": num(self.cost.flops),
            "weight_matmul_flops": num(self.cost.weight_matmul_flops),
            "dequant_flops": num(self.cost.dequant_flops),
            "dequant_time_s": num(self.dequant_time_s),
            "weight_group_size": effective_weight_group(w.weights_dtype, w.weight_group_size),
            "quantized_weights": w.weight_recipe,
            "stored_weight_bytes": num(self.footprint.weight_bytes),
            "bytes": num(self.cost.bytes),
            "weight_bytes": num(self.cost.weight_bytes),
            "kv_bytes": num(self.cost.kv_bytes),
            "kv_read_bytes": num(self.cost.kv_read_bytes),
            "kv_write_bytes": num(self.cost.kv_write_bytes),
            "state_bytes": num(self.cost.state_bytes),
            "state_read_bytes": num(self.cost.state_read_bytes),
            "state_write_bytes": num(self.cost.state_write_bytes),
            "activation_bytes": num(self.cost.activation_bytes),
            "intensity": num(self.intensity),
            "intensity_per_weight_byte": num(self.intensity_per_weight_byte),
            "ridge_point": num(self.ridge_point_flop_per_byte),
            "peak_flops_per_s": num(self.peak_flops_per_s),
            "matmul_peak_flops_per_s": num(self.matmul_peak_flops_per_s),
            "attention_peak_flops_per_s": num(self.other_peak_flops_per_s),
            "compute_time_s": num(self.compute_time_s),
            "memory_time_s": num(self.memory_time_s),
            "bandwidth_bytes_per_s": num(self.bandwidth_bytes_per_s),
            "attainable_flops_per_s": num(self.attainable_flops_per_s),
            "fraction_of_peak": num(self.fraction_of_peak),
            "bound": self.bound if isinstance(self.bound, str) else list(self.bound),
            "time_lower_bound_s": num(self.time_lower_bound_s),
            "busiest_stage_lower_bound_s": num(self.busiest_stage_lower_bound_s),
            "pipeline_crossing_lower_bound_s": num(self.pipeline_crossing_lower_bound_s),
            "pipeline_lower_bound_basis": (None if self.pipeline_lower_bound_basis is None
                                           else np.asarray(self.pipeline_lower_bound_basis).tolist()),
            "time_estimate_s": num(self.time_estimate_s),
            "estimate_conventions": list(self.estimate_conventions),
            "compute_lower_bound_s": num(self.compute_lower_bound_s),
            "lower_bound_roof": self.lower_bound_roof if isinstance(self.lower_bound_roof, str)
            else list(self.lower_bound_roof),
            "memory_lower_bound_s": num(self.memory_lower_bound_s),
            "comm_lower_bound_s": num(self.comm_lower_bound_s),
            "compulsory_bytes": num(self.cost.compulsory_bytes),
            "compulsory_intensity": num(self.compulsory_intensity),
            "tokens_per_s_estimate": num(self.tokens_per_s_estimate),
            "time_estimate_per_op_sum_s": num(self.time_estimate_per_op_sum_s),
            "tokens_per_s_upper_bound": num(self.tokens_per_s_upper_bound),
            "memory_required_bytes": num(self.memory_required_bytes),
            "memory_capacity_bytes": num(self.part.memory_capacity_bytes),
            "fits_in_memory": num(self.fits_in_memory),
            "chips": self.chips,
            "per_chip": self.per_chip,
            "replicas": self.replicas,
            "chips_per_replica": self.chips_per_replica,
            "aggregate_tokens_per_s_estimate": num(self.aggregate_tokens_per_s_estimate),
            "aggregate_tokens_per_s_upper_bound": num(self.aggregate_tokens_per_s_upper_bound),
            "expert_slots": (None if not self.model.is_moe else
                             int(self.model.num_experts if self.parallelism.expert_slots is None
                                 else self.parallelism.expert_slots)),
            "attention_data_parallel": bool(self.parallelism.attention_data_parallel),
            "kv_replication": self.kv_replication,
            "group_limited_routing": (None if not self.model.group_limited_routing
                                      else {"n_group": self.model.n_group, "topk_group": self.model.topk_group}),
            "parallelism": self.parallelism.label,
            "tensor_parallel": self.parallelism.tensor,
            "expert_parallel": self.parallelism.expert,
            "pipeline_parallel": self.parallelism.pipeline,
            "overlap_comm": bool(self.parallelism.overlap_comm),
            "link": None if self.link is None else self.link.name,
            "interconnect_bandwidth_bytes_per_s": self.interconnect_bandwidth_bytes_per_s,
            "interconnect_bidirectional_bytes_per_s": None if self.link is None else self.link.bidirectional_bytes_per_s,
            "collective_latency_s": None if self.link is None else (
                self.link.latency_s if self.parallelism.collective_latency_s is None
                else float(self.parallelism.collective_latency_s)),
            "in_switch_reduction": None if self.link is None else self.link.in_switch_reduction,
            "server_chips": self.server_chips,
            "servers_per_replica": self.servers_per_replica,
            "scale_out_link": None if self.scale_out_link is None else self.scale_out_link.name,
            "scale_out_bandwidth_bytes_per_s": (None if self.scale_out_link is None
                                                else self.scale_out_link.per_direction_bytes_per_s),
            "scale_out_in_network_reduction": (None if self.scale_out_link is None
                                               else self.scale_out_link.in_switch_reduction),
            "network_latency_s": self.network_latency_s,
            "network_bytes": num(self.network_bytes),
            "network_intensity": None if self.scale_out_link is None else num(self.network_intensity),
            "network_ridge_point": (None if self.scale_out_link is None
                                    else num(self.network_ridge_point_flop_per_byte)),
            "pipeline_network_sends": 0 if self.comm is None else self.comm.pipeline_network_sends,
            "comm_bound_bytes": num(0.0 if self.comm is None else self.comm.bound_bytes),
            "collective_calls": 0 if self.comm is None else num(self.comm.calls),
            "comm_bytes": num(self.comm_bytes),
            "comm_time_s": num(self.comm_time_s),
            "comm": [] if self.comm is None else [
                {"name": c.name, "link": (c.link or self.link).name, "calls": num(c.calls), "bytes": num(c.bytes),
                 "bound_bytes": num(c.least_bytes), "time_s": num(c.time_s)}
                for c in self.comm.parts],
            "pipeline_send_bytes": num(0.0 if self.comm is None else self.comm.pipeline_send_bytes),
            "pipeline_send_s": num(self.pipeline_send_s),
            "stage_time_s": num(self.stage_time_s),
            "interconnect_intensity": num(self.interconnect_intensity) if self.comm is not None else None,
            "interconnect_ridge_point": (None if self.link is None
                                         else num(self.interconnect_ridge_point_flop_per_byte)),
            "ops": [
                {k: (num(v) if k not in ("name", "block", "note", "bound") else
                     (v if isinstance(v, str) else list(v))) for k, v in row.items()}
                for row in self.op_rows()
            ],
        }
        return out


def _plain(x):
    a = np.asarray(x, dtype=float)
    return float(a) if a.ndim == 0 else a


def _which(compute_s, memory_s):
    out = np.where(np.asarray(memory_s) > np.asarray(compute_s), roofline.MEMORY, roofline.COMPUTE)
    return str(out) if out.ndim == 0 else out


def _which3(compute_s, memory_s, comm_s):
    c, m, k = np.broadcast_arrays(np.asarray(compute_s, dtype=float), np.asarray(memory_s, dtype=float),
                                  np.asarray(comm_s, dtype=float))
    out = np.where((k > m) & (k > c), INTERCONNECT, np.where(m > c, roofline.MEMORY, roofline.COMPUTE))
    return str(out) if out.ndim == 0 else out


def stage_placements(model: Model | str, part: Part | str, workload: Workload | None = None, *,
                     parallelism: Parallelism | None = None, **workload_fields) -> tuple[Placement, ...]:
    """One placement per distinct pipeline stage, first to last (one entry without pipeline
    parallelism): each stage's per-chip figures, footprint and communication, every stage timed by
    :meth:`Placement.step_time_for_s`. :func:`place` returns the busiest (memory: the fullest)."""
    p = get_part(part)
    cost = model_cost(model, workload, **workload_fields)
    p.peak_flops_per_s(cost.workload.compute_dtype)  # fail early if the part lacks that rate
    p.peak_flops_per_s(cost.workload.other_compute_dtype)
    par = SINGLE_CHIP if parallelism is None else parallelism
    if not isinstance(par, Parallelism):
        raise RooflineInputError(f"parallelism must be a Parallelism(tensor=…, expert=…, pipeline=…), got {par!r}")
    if par == replace(SINGLE_CHIP, collective_latency_s=par.collective_latency_s,
                      network_latency_s=par.network_latency_s):
        return (Placement(part=p, cost=cost, footprint=footprint(cost.model, cost.workload)),)
    warnings = check_parallelism(cost.model, par)
    topo = split_topology(p, par)
    link = topo.link
    out = tuple(Placement(part=p, cost=s.cost, footprint=s.footprint, parallelism=par,
                          comm=None if par.chips_per_replica == 1 else s.comm,
                          parallel_warnings=warnings + topo.notes, stage_repeats=s.stages)
                for s in chip_shares(cost.model, cost.workload, par, link, topology=topo))
    total = sum(s.stage_repeats * np.asarray(s.stage_time_s, dtype=float) for s in out)
    crossing = _crossing_lower_bound(p, cost.model, cost.workload, par, topo) if par.pipeline > 1 else 0.0
    return tuple(replace(s, other_stages_s=_plain(total - np.asarray(s.stage_time_s, dtype=float)),
                         other_stages_lower_bound_s=_largest_other(out, i), pipeline_crossing_lower_bound_s=crossing)
                 for i, s in enumerate(out))


def _crossing_lower_bound(part: Part, model: Model, workload: Workload, par: Parallelism, topo):
    """Σ over the pipeline's stages of each one's lower bound for the least work one token takes
    through it: a decode step of one sequence at the same context (each sequence's next token needs
    this one, so it crosses every stage in turn), or in prefill a one-token chunk (the prompt's last
    chunk crosses every stage in turn). Every stage reads its weights for it, so with fewer
    micro-batches than stages this is what keeps one token's step near one chip's bound."""
    unit = (replace(workload, batch=1) if workload.phase == "decode"
            else replace(workload, batch=1, prompt_tokens=1))
    cost = model_cost(model, unit)
    total = 0.0
    for s in chip_shares(cost.model, cost.workload, par, topo.link, topology=topo):
        stage = Placement(part=part, cost=s.cost, footprint=s.footprint, parallelism=par, comm=s.comm)
        total = total + s.stages * np.asarray(stage.stage_lower_bound_s, dtype=float)
    return _plain(total)


def _largest_other(stages: tuple[Placement, ...], i: int):
    """The largest lower bound of the stages other than ``i`` (0 when there is none)."""
    others = [np.asarray(s.stage_lower_bound_s, dtype=float) for j, s in enumerate(stages) if j != i]
    if stages[i].stage_repeats > 1:
        others.append(np.asarray(stages[i].stage_lower_bound_s, dtype=float))
    if not others:
        return 0.0
    return _plain(np.max(np.stack(np.broadcast_arrays(*others)), axis=0))


def place(model: Model | str, part: Part | str, workload: Workload | None = None, *,
          parallelism: Parallelism | None = None, **workload_fields) -> Placement:
    """Place one step of ``model`` on ``part``: ``place("qwen3.8-27b", "h100-sxm", phase="decode")``.

    ``parallelism=Parallelism(tensor=2)`` splits the step over chips; the placement's figures are
    then one chip's (the busiest pipeline stage's, element by element for arrays), communication
    included; its memory figures are the fullest chip's (every chip must fit).
    """
    stages = stage_placements(model, part, workload, parallelism=parallelism, **workload_fields)
    if len(stages) == 1:
        return stages[0]
    # memory: every chip must fit, so the footprint is the fullest stage's (with unequal stages the
    # first: most layers and the embedding)
    fullest = max((s.footprint for s in stages), key=lambda f: float(np.max(f.total_bytes)))
    total = sum(s.stage_repeats * np.asarray(s.stage_time_s, dtype=float) for s in stages)
    busiest = _busiest(list(stages))
    every = _plain(np.max(np.stack(np.broadcast_arrays(*[np.asarray(s.stage_lower_bound_s, dtype=float)
                                                         for s in stages])), axis=0))
    return replace(busiest, footprint=fullest,
                   other_stages_s=_plain(total - np.asarray(busiest.stage_time_s, dtype=float)),
                   other_stages_lower_bound_s=every,
                   pipeline_crossing_lower_bound_s=stages[0].pipeline_crossing_lower_bound_s)


#: OpCost fields that differ between pipeline stages (merged element by element)
_OP_FIELDS = ("flops", "weight_matmul_flops", "dequant_flops", "weight_bytes", "activation_bytes", "kv_read_bytes",
              "kv_write_bytes", "state_read_bytes", "state_write_bytes", "weight_params", "active_weight_params",
              "unquantized_matmul_flops", "kv_scratch_bytes", "state_scratch_bytes", "io_bytes")


def _busiest(cands: list[Placement]) -> Placement:
    """The busiest stage's placement (longest stage time; the first of equals). With arrays of batch
    or tokens, the busiest stage can change along the array: each element then takes its own busiest
    stage's figures (an operator a stage lacks counts as 0 there), as a scalar placement would."""
    if len(cands) == 1:
        return cands[0]
    pick = np.argmax(np.stack(np.broadcast_arrays(*[np.asarray(c.stage_time_s, dtype=float) for c in cands])),
                     axis=0)
    if pick.ndim == 0 or np.all(pick == pick.flat[0]):
        return cands[int(pick.flat[0])]

    def choose(values):
        out = np.choose(pick, [np.asarray(v, dtype=float) for v in values])
        return float(out) if out.ndim == 0 else out

    keys: list[tuple[str, str]] = []
    for c in cands:
        for op in c.cost.ops:
            if (op.name, op.block) not in keys:
                keys.append((op.name, op.block))
    ops = []
    for key in keys:
        present = [next((o for o in c.cost.ops if (o.name, o.block) == key), None) for c in cands]
        template = next(o for o in present if o is not None)
        ops.append(replace(template, **{f: choose([0.0 if o is None else getattr(o, f) for o in present])
                                        for f in _OP_FIELDS}))
    names: list[str] = []
    for c in cands:
        names += [part.name for part in c.comm.parts if part.name not in names]
    parts = []
    for name in names:
        present = [next((x for x in c.comm.parts if x.name == name), None) for c in cands]
        parts.append(CommPart(name=name, calls=choose([0.0 if x is None else x.calls for x in present]),
                              bytes=choose([0.0 if x is None else x.bytes for x in present]),
                              time_s=choose([0.0 if x is None else x.time_s for x in present]),
                              bound_bytes=choose([0.0 if x is None else x.least_bytes for x in present]),
                              link=next(x for x in present if x is not None).link))
    first = cands[0]
    comm = replace(first.comm, parts=tuple(parts),
                   pipeline_send_bytes=choose([c.comm.pipeline_send_bytes for c in cands]),
                   pipeline_send_s=choose([c.comm.pipeline_send_s for c in cands]))
    return replace(first, cost=ModelCost(model=first.cost.model, workload=first.cost.workload, ops=tuple(ops)),
                   comm=comm)
