"""Operator tables for lessons and the CLI: FLOPs, bytes, intensity and bound per operator."""

from __future__ import annotations

import numpy as np

from ..core import roofline
from ..core.placement import Placement
from ..core.units import duration, num, si

#: the per-operator view is unfused: each operator a kernel of its own, its activations through HBM, so its
#: time is that kernel's max(FLOPs ÷ peak, bytes ÷ bandwidth), not a share of the step's lower bound
OP_HEADERS = ["operator", "layers", "FLOPs", "bytes (unfused)", "of which weights", "KV", "state", "FLOP/byte",
              "bound", "time as its own kernel"]


def seconds_text(t: float) -> str:
    """A duration in the unit a person would say: 6.11 ns, 850 µs, 12.3 ms, 1.5 s (never 0.00611 µs)."""
    return duration(t)


def _intensity(flops: float, nbytes: float) -> str:
    if nbytes == 0:
        return "∞"
    return num(flops / nbytes)


def op_rows(placement: Placement, block: str | None = None, per_layer: bool = False, top: int | None = None,
            ) -> list[list[str]]:
    """Formatted rows, one per operator (optionally only ``block``'s), longest first: each operator as
    a kernel of its own (the unfused view).

    ``per_layer=True`` gives one layer's numbers; otherwise each operator is summed over its layers.
    """
    peak, bw = placement.peak_flops_per_s, placement.bandwidth_bytes_per_s
    rows = []
    for op in placement.cost.ops:
        if block is not None and op.block != block:
            continue
        o = op if per_layer else op.scaled_to_all_layers()
        flops, nbytes = float(np.asarray(o.flops)), float(np.asarray(o.bytes))
        t = float(roofline.time_lower_bound_s(flops, nbytes, peak, bw))
        which = roofline.bound(flops / nbytes, peak, bw) if nbytes else "compute"
        rows.append((t, [f"{op.block}.{op.name}" if block is None else op.name,
                         str(op.layers), si(flops, "FLOP"), si(nbytes, "B"), si(float(o.weight_bytes), "B"),
                         si(float(o.kv_bytes), "B"), si(float(o.state_bytes), "B"), _intensity(flops, nbytes), which,
                         seconds_text(t)]))
    rows.sort(key=lambda r: r[0], reverse=True)
    out = [r[1] for r in rows]
    return out[:top] if top else out


def block_summary(placement: Placement) -> list[list[str]]:
    """One row per block (embedding, full_attention, gated_deltanet, mlp, moe, head), all layers."""
    c = placement.cost
    peak, bw = placement.peak_flops_per_s, placement.bandwidth_bytes_per_s
    rows = []
    for block in c.blocks():
        flops, nbytes = float(c.block_total(block, "flops")), float(c.block_total(block, "bytes"))
        t = float(roofline.time_lower_bound_s(flops, nbytes, peak, bw))
        rows.append([block, si(flops, "FLOP"), si(nbytes, "B"), _intensity(flops, nbytes),
                     roofline.bound(flops / nbytes, peak, bw), seconds_text(t)])
    return rows


BLOCK_HEADERS = ["block", "FLOPs", "bytes (unfused)", "FLOP/byte", "bound", "time as its own kernels"]
