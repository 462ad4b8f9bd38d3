"""Lesson figures built from the package's sweeps: each titled, axes labelled with units, in the
colour-blind-safe palette, and returned as a figure (shown inline when it ends a cell)."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..core.hardware import get_part
from ..core.models import get_model
from ..core.placement import Placement
from ..core.units import binary
from ..topics.batching import decode_sweep
from .charts import PALETTE, Roof, plain_log_ticks, point_on_roof, roofline_chart
from .fastfig import bare_figure

DEFAULT_BATCHES = np.unique(np.round(np.logspace(0, 11, 89, base=2)))  # 1 … 2,048 sequences


def intensity_vs_batch(model: str, part: str, contexts: Sequence[int], batches=DEFAULT_BATCHES, dtype: str = "bf16"):
    """Decode intensity against batch: one all-traffic curve per context, the weight-lens line, the ridge."""
    p = get_part(part)
    ridge = p.ridge_point_flop_per_byte(dtype)
    fig = bare_figure((8.5, 4.8), dpi=100)
    ax = fig.add_subplot()
    sweep = None
    for i, ctx in enumerate(contexts):
        sweep = decode_sweep(model, p, batches, context_tokens=ctx)
        ax.plot(batches, sweep.intensity, color=PALETTE[i % len(PALETTE)], linewidth=2,
                label=f"all traffic, {ctx:,} tokens cached")
    ax.plot(batches, sweep.intensity_per_weight_byte, color="black", linestyle="--", linewidth=1.5,
            label=f"per weight byte ({contexts[-1]:,} cached; nearly the same at any context)")
    ax.axhline(ridge, color="0.4", linestyle=":", label=f"{p.id} {dtype} ridge ({ridge:,.0f})")
    ax.set(xscale="log", yscale="log", xlabel="Batch (sequences)", ylabel="Decode intensity (FLOP/byte)",
           title=f"{get_model(model).name} decode on {p.name}: intensity against batch")
    ax.grid(True, alpha=0.4)
    plain_log_ticks(ax)
    ax.legend(fontsize=8)
    return fig


def throughput_vs_latency(model: str, parts: Sequence[str], context_tokens: int, batches=DEFAULT_BATCHES,
                          marks: Sequence[int] = (1, 16, 64)):
    """Throughput upper bound against time-per-token lower bound as the batch grows, per part;
    dotted where the batch no longer fits in memory."""
    fig = bare_figure((8.5, 4.8), dpi=100)
    ax = fig.add_subplot()
    for i, part in enumerate(parts):
        s = decode_sweep(model, part, batches, context_tokens=context_tokens)
        ok = s.fits_in_memory
        colour = PALETTE[i % len(PALETTE)]
        ax.plot(s.step_time_s[ok] * 1e3, s.tokens_per_s[ok], color=colour, linewidth=2, label=f"{part} (fits)")
        ax.plot(s.step_time_s[~ok] * 1e3, s.tokens_per_s[~ok], color=colour, linewidth=1.5, linestyle=":",
                label=f"{part} (does not fit)")
        for b in marks:
            j = int(np.argmin(np.abs(batches - b)))
            ax.annotate(f"B={b}", (s.step_time_s[j] * 1e3, s.tokens_per_s[j]), fontsize=7,
                        textcoords="offset points", xytext=(4, -10))
    ax.set(xscale="log", yscale="log", xlabel="Time per output token, lower bound (ms)",
           ylabel="Throughput, upper bound (tokens/s)",
           title=f"{get_model(model).name} decode, {context_tokens:,} tokens cached")
    ax.grid(True, alpha=0.4)
    plain_log_ticks(ax)
    ax.legend(fontsize=8, ncol=2)
    return fig


def operators_on_roofline(placement: Placement, title: str, intensity_range=(0.01, 1e5)):
    """Every operator (summed over its layers) as a square on the roof, and the whole step as a dot."""
    roof = Roof(f"{placement.part.id} {placement.workload.compute_dtype}", placement.peak_flops_per_s,
                placement.bandwidth_bytes_per_s)
    fig = bare_figure((8.5, 5.0), dpi=100)
    ax = fig.add_subplot()
    roofline_chart([roof], [point_on_roof("whole step", float(placement.intensity), roof)], title=title,
                   intensity_range=intensity_range, ax=ax)
    xs, ys = [], []
    for op in placement.cost.ops:
        total = op.scaled_to_all_layers()
        if float(total.flops) > 0 and float(total.bytes) > 0:
            pt = point_on_roof(op.name, float(total.intensity), roof)
            xs.append(pt.intensity_flop_per_byte)
            ys.append(pt.flops_per_s / 1e12)
    ax.scatter(xs, ys, s=24, marker="s", color=PALETTE[1], edgecolor="black", linewidth=0.5, zorder=3,
               label="one operator (all its layers)")
    ax.legend(fontsize=7.5, loc="lower right")
    return fig


def measured_roofline(measurement, title: str | None = None, kernels: bool = True):
    """The measured roofline: matmul ceilings (float64, float32), bandwidth roofs for each cache level
    and DRAM, and every measured kernel at (estimated intensity, achieved FLOP/s)."""
    from .charts import LINESTYLES, MARKERS

    m = measurement
    fig = bare_figure((12, 5.6), dpi=100)
    ax = fig.add_subplot()
    fig.subplots_adjust(left=0.07, right=0.62, bottom=0.1, top=0.92)
    x = np.logspace(-2, 3, 300)
    peak64 = m.peak_flops_per_s("float64")
    dtypes = sorted({s.dtype for s in m.matmul})
    for i, dt in enumerate(dtypes):
        ax.axhline(m.peak_flops_per_s(dt) / 1e9, color="black", linestyle=LINESTYLES[i % len(LINESTYLES)],
                   linewidth=1.2, label=f"{dt} matmul: {m.peak_flops_per_s(dt) / 1e9:,.0f} GFLOP/s")
    for i, roof in enumerate(m.roofs()):
        y = np.minimum(peak64, roof.bytes_per_s * x) / 1e9
        ax.plot(x, y, color=PALETTE[i % len(PALETTE)], linewidth=2.4 if roof.name == "DRAM" else 1.6,
                linestyle="-" if roof.name == "DRAM" else "--",
                label=f"{roof.name} bandwidth: {roof.bytes_per_s / 1e9:,.1f} GB/s"
                      + (f" (ridge {peak64 / roof.bytes_per_s:,.1f})" if roof.name == "DRAM" else ""))
    if kernels:
        for j, k in enumerate(m.kernels):
            colour = PALETTE[(j + j // len(MARKERS)) % (len(PALETTE) - 1)]  # unique marker/colour pairs
            ax.plot([k.intensity], [k.flops_per_s / 1e9], marker=MARKERS[j % len(MARKERS)], markersize=8,
                    linestyle="none", color="black", markerfacecolor=colour,
                    label=f"{k.name}: I = {k.intensity:.3g}, {k.flops_per_s / 1e9:,.3g} GFLOP/s")
            ax.annotate(k.name, (k.intensity, k.flops_per_s / 1e9), textcoords="offset points", xytext=(6, -3),
                        fontsize=6.5, color="0.25")
    ax.set(xscale="log", yscale="log", xlabel="Arithmetic intensity (FLOP/byte, estimated from each kernel's operands)",
           ylabel="Performance (GFLOP/s, 1 GFLOP/s = 10⁹ FLOP/s)",
           title=title or f"Measured roofline: {m.machine.get('cpu', 'this machine')}, {m.machine.get('cores')} cores "
                          f"({m.mode} mode)")
    ax.set_xlim(x[0], x[-1])
    ax.grid(True, alpha=0.35)
    plain_log_ticks(ax)
    ax.legend(fontsize=7.5, loc="upper left", bbox_to_anchor=(1.02, 1.0), framealpha=0.9)
    return fig


def bandwidth_sweep_chart(measurement):
    """Achieved bandwidth against working-set size, per kernel, with the cache sizes marked."""
    m = measurement
    fig = bare_figure((8.5, 4.6), dpi=100)
    ax = fig.add_subplot()
    for i, kernel in enumerate(("read", "copy", "triad")):
        pts = sorted((s for s in m.bandwidth if s.kernel == kernel), key=lambda s: s.working_set_bytes)
        if pts:
            ax.plot([s.working_set_bytes / 2**20 for s in pts], [s.bytes_per_s / 1e9 for s in pts], marker="o",
                    markersize=4, color=PALETTE[i], linewidth=1.8, label=kernel)
    for level, size in m.machine.get("caches", {}).items():
        ax.axvline(int(size) / 2**20, color="0.5", linestyle=":", linewidth=1)
        ax.annotate(f"{level} ({binary(int(size))})", (int(size) / 2**20, ax.get_ylim()[1]), rotation=90,
                    fontsize=7.5, va="top", ha="right", color="0.35")
    ax.set(xscale="log", xlabel="Working set (MiB, all arrays the kernel touches)",
           ylabel="Achieved bandwidth (GB/s, 10⁹ B/s)", title="Bandwidth against working-set size")
    ax.grid(True, alpha=0.35)
    plain_log_ticks(ax)
    ax.legend(fontsize=8)
    return fig
