"""One model, one part, one workload → one point on the roofline (and one per operator)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import roofline
from .costs import ModelCost, Workload, model_cost
from .hardware import Part, get_part
from .memory import Footprint, footprint
from .models import Model


@dataclass(frozen=True)
class Placement:
    """Where a whole step sits under a part's roofs, with the numbers behind it."""

    part: Part
    cost: ModelCost
    footprint: Footprint

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
    def compute_time_s(self):
        """Seconds the FLOPs need at their own peaks: weight matmuls at ``compute_dtype``'s rate,
        the rest at ``other_compute_dtype``'s."""
        c = self.cost
        return np.divide(c.weight_matmul_flops, self.matmul_peak_flops_per_s) + np.divide(
            c.other_flops, self.other_peak_flops_per_s)

    @property
    def memory_time_s(self):
        """Seconds the bytes need at the memory bandwidth."""
        return np.divide(self.cost.bytes, self.bandwidth_bytes_per_s)

    @property
    def peak_flops_per_s(self):
        """The compute roof for this step's mix of FLOPs, FLOP/s.

        With one format for everything it is that format's dense peak. When the weight matmuls run
        in FP8 and attention in BF16 (W8A8), it is FLOPs ÷ compute time: a blend of the two peaks
        weighted by where the FLOPs are.
        """
        if self.workload.other_compute_dtype == self.workload.compute_dtype:
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
        """``"memory"`` when the bytes take longer than the FLOPs, ``"compute"`` otherwise."""
        return _which(self.compute_time_s, self.memory_time_s)

    @property
    def time_lower_bound_s(self):
        """max(compute time, bytes / bandwidth) for the whole step, perfect overlap assumed."""
        return np.maximum(self.compute_time_s, self.memory_time_s)

    def op_compute_time_s(self, op):
        """Seconds one layer of ``op`` needs for its FLOPs at their own peaks."""
        return np.divide(op.weight_matmul_flops, self.matmul_peak_flops_per_s) + np.divide(
            op.other_flops, self.other_peak_flops_per_s)

    @property
    def time_lower_bound_per_op_sum_s(self):
        """Σ over operators of each one's own bound: tighter when operators run one after another."""
        return sum(
            np.maximum(self.op_compute_time_s(op), np.divide(op.bytes, self.bandwidth_bytes_per_s)) * op.layers
            for op in self.cost.ops
        )

    @property
    def tokens_per_s_upper_bound(self):
        """New tokens per second the step can produce at best (decode: batch / step time)."""
        return np.divide(self.workload.tokens, self.time_lower_bound_s)

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
        out = []
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
                "time_lower_bound_s": np.maximum(compute_s, memory_s),
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
            "time_lower_bound_per_op_sum_s": num(self.time_lower_bound_per_op_sum_s),
            "tokens_per_s_upper_bound": num(self.tokens_per_s_upper_bound),
            "memory_required_bytes": num(self.memory_required_bytes),
            "memory_capacity_bytes": num(self.part.memory_capacity_bytes),
            "fits_in_memory": num(self.fits_in_memory),
            "ops": [
                {k: (num(v) if k not in ("name", "block", "note", "bound") else
                     (v if isinstance(v, str) else list(v))) for k, v in row.items()}
                for row in self.op_rows()
            ],
        }
        return out


def _which(compute_s, memory_s):
    out = np.where(np.asarray(memory_s) > np.asarray(compute_s), roofline.MEMORY, roofline.COMPUTE)
    return str(out) if out.ndim == 0 else out


def place(model: Model | str, part: Part | str, workload: Workload | None = None, **workload_fields) -> Placement:
    """Place one step of ``model`` on ``part``: ``place("qwen3.8-27b", "h100-sxm", phase="decode")``."""
    p = get_part(part)
    cost = model_cost(model, workload, **workload_fields)
    p.peak_flops_per_s(cost.workload.compute_dtype)  # fail early if the part lacks that rate
    p.peak_flops_per_s(cost.workload.other_compute_dtype)
    return Placement(part=p, cost=cost, footprint=footprint(cost.model, cost.workload))
