"""A hybrid model on the roofline: full-attention layers whose KV history grows with context, and
Gated DeltaNet layers whose fixed recurrent state does not. Per-step byte breakdowns, the two
layer kinds as two dots, the context where KV traffic overtakes weights, and counterfactuals."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..core.costs import ModelCost, model_cost
from ..core.models import FULL_ATTENTION, GATED_DELTANET, Model, get_model

BREAKDOWN = ("weights", "KV read", "KV written", "state read", "state written", "activations")


def step_bytes_breakdown(model: Model | str, context_tokens, batch=1, **workload) -> dict[str, np.ndarray]:
    """Bytes of one decode step by kind, for each context length in ``context_tokens`` (an array)."""
    c = model_cost(model, phase="decode", batch=batch, context_tokens=np.asarray(context_tokens, dtype=float),
                   **workload)
    shape = np.shape(np.asarray(context_tokens))
    as_array = lambda x: np.broadcast_to(np.asarray(x, dtype=float), shape).copy()  # noqa: E731
    return {
        "weights": as_array(c.weight_bytes),
        "KV read": as_array(c.kv_read_bytes),
        "KV written": as_array(c.kv_write_bytes),
        "state read": as_array(c.state_read_bytes),
        "state written": as_array(c.state_write_bytes),
        "activations": as_array(c.activation_bytes),
    }


def kv_overtakes_weights_context(model: Model | str, batch: int = 1, **workload) -> float:
    """Context length (tokens cached) at which a decode step's KV reads equal its weight reads.

    KV reads grow linearly with context; weight reads do not, so the crossing is exact from two
    evaluations of the cost model.
    """
    a = model_cost(model, phase="decode", batch=batch, context_tokens=0, **workload)
    b = model_cost(model, phase="decode", batch=batch, context_tokens=1000, **workload)
    slope = (b.kv_read_bytes - a.kv_read_bytes) / 1000.0
    return float((a.weight_bytes - a.kv_read_bytes) / slope)


@dataclass(frozen=True)
class LayerKindPoint:
    """All layers of one mixer kind (with their share of the MLPs) as one point."""

    kind: str
    layers: int
    flops: object
    bytes: object

    @property
    def intensity(self):
        return np.divide(self.flops, self.bytes)


def layer_kind_points(cost: ModelCost) -> dict[str, LayerKindPoint]:
    """FLOPs and bytes of the full-attention layers and of the Gated DeltaNet layers, each with its
    share of the MLP (every layer has one). Embedding and lm_head are left out."""
    m = cost.model
    counts = {FULL_ATTENTION: m.num_full_attention_layers, GATED_DELTANET: m.num_deltanet_layers}
    mlp_block = "moe" if m.is_moe else "mlp"
    mlp_flops, mlp_bytes = cost.block_total(mlp_block, "flops"), cost.block_total(mlp_block, "bytes")
    out = {}
    for kind, n in counts.items():
        if n == 0:
            continue
        share = n / m.num_hidden_layers
        out[kind] = LayerKindPoint(kind, n, cost.block_total(kind, "flops") + share * mlp_flops,
                                   cost.block_total(kind, "bytes") + share * mlp_bytes)
    return out


def all_full_attention(model: Model | str) -> Model:
    """The counterfactual: the same model with every layer full attention (no Gated DeltaNet)."""
    m = get_model(model)
    return replace(m, id=f"{m.id}-all-attention", name=f"{m.name} (all {m.num_hidden_layers} layers full attention)",
                   full_attention_interval=None, published_total_params=None)


def layer_kind_dots(cost: ModelCost, peak_flops_per_s: float, bandwidth_bytes_per_s: float) -> dict:
    """Each layer kind of :func:`layer_kind_points` as a dot on a roofline: kind -> (intensity in
    FLOP/byte, attainable FLOP/s under a roof of ``peak_flops_per_s`` and ``bandwidth_bytes_per_s``)."""
    from ..core.roofline import attainable_flops_per_s

    dots = {}
    for kind, pt in layer_kind_points(cost).items():
        x = float(pt.intensity)
        dots[kind] = (x, float(attainable_flops_per_s(x, peak_flops_per_s, bandwidth_bytes_per_s)))
    return dots
