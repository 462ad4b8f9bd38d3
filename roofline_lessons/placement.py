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
    def peak_flops_per_s(self) -> float:
        return self.part.peak_flops_per_s(self.workload.compute_dtype)

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
        return roofline.bound(self.intensity, self.peak_flops_per_s, self.bandwidth_bytes_per_s)

    @property
    def time_lower_bound_s(self):
        """max(FLOPs / peak, bytes / bandwidth) for the whole step, perfect overlap assumed."""
        return roofline.time_lower_bound_s(self.cost.flops, self.cost.bytes, self.peak_flops_per_s,
                                           self.bandwidth_bytes_per_s)

    @property
    def time_lower_bound_per_op_sum_s(self):
        """Σ over operators of each one's own bound: tighter when operators run one after another."""
        return sum(
            roofline.time_lower_bound_s(op.flops, op.bytes, self.peak_flops_per_s, self.bandwidth_bytes_per_s)
            * op.layers
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

    def op_rows(self) -> list[dict]:
        """One row per operator, summed over its layers: name, flops, bytes, intensity, bound."""
        rows = []
        for op in self.cost.ops:
            total = op.scaled_to_all_layers()
            intensity = total.intensity
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
                "bound": roofline.bound(np.nan_to_num(intensity, nan=0.0, posinf=np.inf),
                                        self.peak_flops_per_s, self.bandwidth_bytes_per_s),
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
            "flash_attention": w.flash_attention,
            "flops": num(self.cost.flops),
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


def place(model: Model | str, part: Part | str, workload: Workload | None = None, **workload_fields) -> Placement:
    """Place one step of ``model`` on ``part``: ``place("qwen3.8-27b", "h100-sxm", phase="decode")``."""
    p = get_part(part)
    cost = model_cost(model, workload, **workload_fields)
    p.peak_flops_per_s(cost.workload.compute_dtype)  # fail early if the part lacks that rate
    return Placement(part=p, cost=cost, footprint=footprint(cost.model, cost.workload))
