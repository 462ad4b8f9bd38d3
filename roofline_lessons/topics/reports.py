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


# ---- operators as points on the roofline (the lesson 3 dashboard) -----------------------------------


def op_points(placement: Placement) -> list[tuple[str, float, float, float]]:
    """Every operator of the step with FLOPs and bytes, summed over its layers, in the step's order:
    (``"block.name"``, intensity in FLOP/byte, attainable FLOP/s at that intensity, time lower bound in
    seconds as a kernel of its own). An operator that only moves data (a KV write, the embedding
    gather) has no intensity and is left out."""
    peak, bw = placement.peak_flops_per_s, placement.bandwidth_bytes_per_s
    points = []
    for op in placement.cost.ops:
        total = op.scaled_to_all_layers()
        flops, nbytes = float(total.flops), float(total.bytes)
        if flops <= 0 or nbytes <= 0:
            continue
        x = flops / nbytes
        points.append((f"{op.block}.{op.name}", x, float(roofline.attainable_flops_per_s(x, peak, bw)),
                       float(roofline.time_lower_bound_s(flops, nbytes, peak, bw))))
    return points


def numbered_op_rows(placement: Placement, numbered, mark: str = "–") -> tuple[dict[str, int], list[tuple]]:
    """:func:`op_rows` (longest first) with a ``#`` cell in front: 1, 2, … for the operators named in
    ``numbered``, in table order, and ``mark`` for the others; with each numbered operator's number."""
    numbered = set(numbered)
    number_of, rows = {}, []
    for row in op_rows(placement):
        if row[0] in numbered:
            number_of[row[0]] = len(number_of) + 1
            rows.append((str(number_of[row[0]]), *row))
        else:
            rows.append((mark, *row))
    return number_of, rows
