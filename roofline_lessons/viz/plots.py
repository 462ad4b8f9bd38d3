"""Lesson figures built from the package's sweeps: each titled, axes labelled with units, in the
colour-blind-safe palette (every series also differs by line style or marker), no type smaller
than :data:`~roofline_lessons.viz.charts.MIN_FONT_PT`, and returned as a figure (shown inline when
it ends a cell) that carries alt text stating the chart's message with its numbers
(:func:`~roofline_lessons.viz.display.alt_of`)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from matplotlib.transforms import Bbox

from ..core.hardware import get_part
from ..core.memory import max_batch_that_fits
from ..core.models import get_model
from ..core.placement import Placement, place
from ..core.units import binary, count, duration, num, percent, share_percent, si
from ..measure.probes import cache_capacity_bytes
from ..topics.batching import critical_batch, decode_sweep, intensity_ceiling
from .charts import (LINE_COLOURS, LINESTYLES, MARKERS, MIN_FONT_PT, PALETTE, TERA, Roof, part_style, plain_log_ticks,
                     point_on_roof, roofline_chart)
from .display import set_alt
from .fastfig import bare_figure
from .labels import number_ranges

DEFAULT_BATCHES = np.unique(np.round(np.logspace(0, 11, 89, base=2)))  # 1 … 2,048 sequences

#: legend and label type of these figures, in points (never below MIN_FONT_PT)
LEGEND_PT = max(MIN_FONT_PT, 9.5)
LABEL_PT = max(MIN_FONT_PT, 9.5)


def _reach_text(model: str, part, context_tokens: int, shown_max: float) -> str:
    """Where the all-traffic curve reaches the ridge, from :func:`~roofline_lessons.topics.batching.critical_batch`
    (the exact integer batch the lesson's table and checker use, never a point of the plotting grid)."""
    cb = critical_batch(model, part, context_tokens, lens="all traffic")
    if cb is None:
        ceiling = intensity_ceiling(model, context_tokens)
        if ceiling < part.ridge_point_flop_per_byte("bf16"):
            return f"below the ridge at every batch (it levels off towards {num(ceiling)} FLOP/byte as the batch grows)"
        return f"below the ridge up to batch {count(1 << 16)}"
    if cb > shown_max:
        return f"reaching the ridge only at batch {count(cb)}, beyond the batches shown"
    return f"reaching the ridge at batch {count(cb)}"


def intensity_vs_batch(model: str, part: str, contexts: Sequence[int], batches=DEFAULT_BATCHES):
    """Decode intensity against batch (BF16 throughout): one all-traffic curve per context, the weight-lens
    line, the BF16 ridge. The alt text's batches that reach the ridge are
    :func:`~roofline_lessons.topics.batching.critical_batch`'s, the exact figures of lesson 4's table.
    Each curve is solid up to the largest batch that fits in the part's whole memory at its context
    (:func:`_largest_fitting_batch`, one :func:`~roofline_lessons.core.memory.max_batch_that_fits` call:
    the figure lesson 4's capacity table and its throughput chart give), marked there with a dot, and
    faint beyond it, where the batch does not fit; the alt text states that batch for every context."""
    p = get_part(part)
    grid = np.asarray(batches, dtype=float)
    ridge = p.ridge_point_flop_per_byte("bf16")
    fig = bare_figure((10.5, 4.8), dpi=100)
    ax = fig.add_subplot()
    fig.subplots_adjust(left=0.08, right=0.66, bottom=0.11, top=0.91)
    sweep = None
    said = []
    any_beyond = False
    for i, ctx in enumerate(contexts):
        cap = _largest_fitting_batch(model, p.id, ctx)
        pts = np.union1d(grid, [cap]) if grid[0] <= cap <= grid[-1] else grid
        sweep = decode_sweep(model, p, pts, context_tokens=ctx)
        assert np.isclose(sweep.ridge_point_flop_per_byte, ridge)  # the ridge critical_batch compares with
        ok = np.asarray(sweep.fits_in_memory)
        assert np.array_equal(ok, pts <= cap), (ctx, cap)  # the solid part is exactly the batches that fit
        colour, style = LINE_COLOURS[i % len(LINE_COLOURS)], LINESTYLES[i % len(LINESTYLES)]
        label = f"all traffic, {ctx:,} tokens cached"
        if ok.any():
            ax.plot(pts[ok], sweep.intensity[ok], color=colour, linestyle=style, linewidth=2, label=label)
            label = None
        if not ok.all():  # ok is a prefix (asserted): the faint part starts where the solid one ends
            any_beyond = True
            start = max(int(ok.sum()) - 1, 0)
            ax.plot(pts[start:], sweep.intensity[start:], color=colour, linestyle=style, linewidth=1.2, alpha=0.4,
                    label=label)
        if ok.any() and not ok.all():
            j = int(ok.sum()) - 1
            ax.plot([pts[j]], [sweep.intensity[j]], marker="o", markersize=7, color=colour, markeredgecolor="black",
                    linestyle="none")
        if cap < 1:
            fit = f"no batch fits in its memory at this context (the whole curve is faint)"
        elif cap < pts[-1]:
            fit = f"at most {count(cap)} sequences fit in its memory (the dot; the curve past it is faint)"
        else:
            fit = f"every batch shown fits in its memory (up to {count(cap)} do)"
        said.append(f"with {count(ctx)} tokens cached it rises from {num(sweep.intensity[0])} FLOP/byte at batch "
                    f"{count(pts[0])} to {num(sweep.intensity[-1])} at batch {count(pts[-1])}, "
                    + _reach_text(model, p, ctx, pts[-1]) + "; " + fit)
    ax.plot(grid, decode_sweep(model, p, grid, context_tokens=contexts[-1]).intensity_per_weight_byte, color="black",
            linestyle=(0, (5, 2)), linewidth=1.5, label="FLOPs per weight byte\n(about the same at any context)")
    ax.axhline(ridge, color="0.4", linestyle=":", linewidth=1.5, label=f"{p.id} bf16 ridge ({ridge:,.0f})")
    if any_beyond:
        ax.plot([], [], color="0.3", marker="o", markeredgecolor="black", linewidth=1.2, alpha=0.5,
                label="dot: largest batch that fits;\nfaint: does not fit in memory")
    title = f"{get_model(model).name} decode on {p.name}: intensity against batch"
    ax.set(xscale="log", yscale="log", xlabel="Batch (sequences)", ylabel="Decode intensity (FLOP/byte)", title=title)
    ax.grid(True, alpha=0.4)
    plain_log_ticks(ax)
    ax.legend(fontsize=LEGEND_PT, loc="upper left", bbox_to_anchor=(1.02, 1.0), framealpha=0.9)
    weight_reach = critical_batch(model, p, contexts[-1], lens="weights only")
    set_alt(fig, f"{title}, log-log: decode intensity (FLOP/byte) against batch, one curve per context length, "
                 f"and the {p.id} bf16 ridge at {num(ridge)} FLOP/byte. Each curve is solid up to the largest batch "
                 f"that fits in the {p.id}'s whole memory at its context and faint beyond. "
                 + "".join(s[0].upper() + s[1:] + ". " for s in said)
                 + "FLOPs per weight byte grow with the batch without levelling off"
                 + (f" and reach the ridge at batch {count(weight_reach)}." if weight_reach else "."))
    return fig


def _largest_fitting_batch(model: str, part: str, context_tokens: int) -> int:
    """The largest decode batch whose weights + KV cache + state fit in the part's whole memory, a step
    with ``context_tokens`` cached (the cache holds one more token after it, as
    :attr:`~roofline_lessons.core.placement.Placement.fits_in_memory` counts): one
    :func:`~roofline_lessons.core.memory.max_batch_that_fits` call, the figure the throughput chart's
    alt text gives and where its solid line ends."""
    after = place(model, part, phase="decode", batch=1, context_tokens=context_tokens).workload.cached_tokens_after
    return int(max_batch_that_fits(model, part, after))


def throughput_vs_latency(model: str, parts: Sequence[str], context_tokens: int, batches=DEFAULT_BATCHES,
                          marks: Sequence[int] = (1, 16, 64)):
    """Throughput upper bound against time-per-token lower bound as the batch grows, per part;
    dotted where the batch no longer fits in memory. Each part keeps its course-wide colour and
    marker (:func:`~roofline_lessons.viz.charts.part_style`); the marked batches carry the marker.
    Each part's curve includes its exact largest fitting batch (:func:`_largest_fitting_batch`), where
    the solid line ends and the dotted one begins; the alt text states that batch, not a grid point."""
    from matplotlib.lines import Line2D

    grid = np.asarray(batches, dtype=float)
    fig = bare_figure((8.5, 4.8), dpi=100)
    ax = fig.add_subplot()
    said = []
    for part in parts:
        cap = _largest_fitting_batch(model, part, context_tokens)
        pts = np.union1d(grid, [cap]) if grid[0] <= cap <= grid[-1] else grid
        s = decode_sweep(model, part, pts, context_tokens=context_tokens)
        ok = s.fits_in_memory
        assert np.array_equal(ok, pts <= cap), (part, cap)  # the chart's split is the alt text's batch
        look = part_style(part)
        ax.plot(s.step_time_s[ok] * 1e3, s.tokens_per_s[ok], color=look.colour, linestyle=look.linestyle,
                linewidth=2, label=f"{part}")
        if not ok.all():  # ok is a prefix (asserted): the dotted part starts where the solid one ends
            start = max(int(ok.sum()) - 1, 0)
            ax.plot(s.step_time_s[start:] * 1e3, s.tokens_per_s[start:], color=look.colour, linewidth=1.5,
                    linestyle=":")
        for b in marks:
            j = int(np.argmin(np.abs(pts - b)))
            ax.plot([s.step_time_s[j] * 1e3], [s.tokens_per_s[j]], marker=look.marker, markersize=7,
                    color=look.colour, markeredgecolor="black", linestyle="none")
            ax.annotate(f"B={b}", (s.step_time_s[j] * 1e3, s.tokens_per_s[j]), fontsize=LABEL_PT,
                        textcoords="offset points", xytext=(7, 0), va="center")
        first = (f"at batch {count(pts[0])}: {duration(s.step_time_s[0])} per token, "
                 f"{num(s.tokens_per_s[0])} tokens/s")
        if cap < 1:
            first += " (does not fit)"
            most = "no batch fits in its memory: the whole curve is dotted"
        else:
            at_cap = decode_sweep(model, part, [cap], context_tokens=context_tokens)
            most = (f"the largest batch that fits, {count(cap)}: {duration(at_cap.step_time_s[0])} per token, "
                    f"{num(at_cap.tokens_per_s[0])} tokens/s"
                    + (f" (beyond the largest batch shown, {count(grid[-1])})" if cap > grid[-1] else ""))
        said.append(f"{part}: {first}; {most}")
    ax.plot([], [], color="0.3", linestyle=":", linewidth=1.5, label="dotted: the batch does not fit in memory")
    ax.set(xscale="log", yscale="log", xlabel="Time per output token, lower bound (ms)",
           ylabel="Throughput, upper bound (tokens/s)",
           title=f"{get_model(model).name} decode, {context_tokens:,} tokens cached")
    low, high = ax.get_ylim()
    ax.set_ylim(low / 1.3, high)  # room under the batch-1 labels
    ax.grid(True, alpha=0.4)
    plain_log_ticks(ax)
    handles, labels = ax.get_legend_handles_labels()
    handles = [Line2D([], [], color=h.get_color(), linestyle=h.get_linestyle(), linewidth=h.get_linewidth(),
                      marker=part_style(lab).marker if lab in parts else None, markeredgecolor="black")
               for h, lab in zip(handles, labels)]
    ax.legend(handles, labels, fontsize=LEGEND_PT, loc="lower right", framealpha=0.9)
    set_alt(fig, f"{get_model(model).name} decode with {count(context_tokens)} tokens cached: throughput upper bound "
                 f"(tokens/s) against time per output token (ms), log-log, one curve per part as the batch grows "
                 f"from {count(batches[0])} to {count(batches[-1])}; larger batches buy throughput with latency. "
                 + ". ".join(said) + ".")
    return fig


def operators_on_roofline(placement: Placement, title: str, intensity_range=(0.01, 1e5)):
    """Every operator (summed over its layers) as a square on the roof, and the whole step as a dot."""
    roof = Roof(f"{placement.part.id} {placement.workload.compute_dtype}", placement.peak_flops_per_s,
                placement.bandwidth_bytes_per_s, placement.part.id)
    fig = bare_figure((8.5, 5.0), dpi=100)
    ax = fig.add_subplot()
    step = point_on_roof("whole step", float(placement.intensity), roof)
    roofline_chart([roof], [step], title=title, intensity_range=intensity_range, ax=ax)
    xs, ys, below, above = [], [], [], []
    ridge = roof.ridge_point_flop_per_byte
    for op in placement.cost.ops:
        total = op.scaled_to_all_layers()
        if float(total.flops) > 0 and float(total.bytes) > 0:
            pt = point_on_roof(op.name, float(total.intensity), roof)
            xs.append(pt.intensity_flop_per_byte)
            ys.append(pt.flops_per_s / 1e12)
            (below if pt.intensity_flop_per_byte < ridge else above).append((op.name, pt.intensity_flop_per_byte))

    def group(ops, bound):
        if not ops:
            return f"none {bound}"
        names = list(dict.fromkeys(name for name, _ in ops))
        lo, hi = min(i for _, i in ops), max(i for _, i in ops)
        span = f"at {num(lo)} FLOP/byte" if num(lo) == num(hi) else f"from {num(lo)} to {num(hi)} FLOP/byte"
        return f"{len(ops)} {bound}, {span} ({', '.join(names)})"

    roof_colour = part_style(placement.part).colour
    face = next(c for c in (PALETTE[0], PALETTE[2], PALETTE[4]) if c != roof_colour)  # unlike the roof and the step
    ax.scatter(xs, ys, s=24, marker="s", color=face, edgecolor="black", linewidth=0.5, zorder=3,
               label="one operator (all its layers)")
    for t in ax.texts:
        t.set_fontsize(max(t.get_fontsize(), LABEL_PT))
    ax.set_ylim(top=roof.peak_flops_per_s / 1e12 * 3)  # room for the ridge label above the flat roof
    ax.legend(fontsize=LEGEND_PT, loc="lower right", framealpha=0.9)
    set_alt(fig, f"{title}. Log-log roofline of {placement.part.name} in {placement.workload.compute_dtype}: "
                 f"compute roof {si(roof.peak_flops_per_s, 'FLOP/s')}, "
                 f"bandwidth {si(roof.bandwidth_bytes_per_s, 'B/s')}, ridge at {num(ridge)} FLOP/byte. "
                 f"The whole step sits at {num(step.intensity_flop_per_byte)} FLOP/byte, "
                 f"{si(step.flops_per_s, 'FLOP/s')} ({placement.bound}-bound). "
                 f"{len(xs)} operators, each summed over its layers: "
                 f"{group(below, 'memory-bound, left of the ridge')}; "
                 f"{group(above, 'compute-bound, at or right of it')}.")
    return fig


# --- lesson 8: the measured roofline -------------------------------------------------------------

#: kernel kinds on the measured roofline: (name prefix, legend label, marker, face colour)
_KERNEL_KINDS = (
    ("dot", "vector kernels", "o", PALETTE[3]),
    ("axpy", "vector kernels", "o", PALETTE[3]),
    ("gemv", "matrix–vector (gemv)", "s", PALETTE[4]),
    ("gemm", "matrix–matrix (gemm)", "^", PALETTE[6]),
    ("attention", "attention", "D", PALETTE[5]),
)
_OTHER_KIND = ("", "other kernels", "v", "white")
#: bandwidth roofs by level: (colour, line style, line width)
_ROOF_STYLE = {"L1": (PALETTE[5], ":", 1.8), "L2": (PALETTE[0], "--", 1.8), "L3": (PALETTE[1], "-.", 1.8),
               "DRAM": (PALETTE[2], "-", 2.6)}


def _kernel_kind(name: str):
    return next((k for k in _KERNEL_KINDS if name.startswith(k[0])), _OTHER_KIND)


def _place_labels(ax, xy: Sequence[tuple[float, float]], texts: Sequence[str], marker_pt: float,
                  obstacles=(), gid: str = "point-label", fontsize: float = LABEL_PT) -> list:
    """Annotate each point of ``xy`` (data coordinates) with its text where it overlaps no marker,
    no label placed before it and none of ``obstacles`` (display-space boxes): the first free spot
    among eight directions at growing distances, with a leader line when it had to go far. The
    axes limits must be final. Returns the annotations (each with ``gid``)."""
    fig = ax.figure
    renderer = fig.canvas.get_renderer()
    px_per_pt = fig.dpi / 72
    centres = ax.transData.transform(np.asarray(xy, dtype=float))
    half = marker_pt * px_per_pt / 2 + 1
    taken = [Bbox.from_extents(cx - half, cy - half, cx + half, cy + half) for cx, cy in centres] + list(obstacles)
    inside = ax.get_window_extent(renderer)
    base = marker_pt / 2 + 2
    spots = [(base * r * dx, base * r * dy) for r in (1.0, 2.0, 3.2, 4.6)
             for dx, dy in ((1, 1), (1, -1), (-1, 1), (-1, -1), (1.4, 0), (-1.4, 0), (0, 1.4), (0, -1.4))]

    def style(dx, dy):
        return {"ha": "left" if dx > 0 else "right" if dx < 0 else "center",
                "va": "bottom" if dy > 0 else "top" if dy < 0 else "center"}

    def overlap(a, b) -> float:
        w = min(a.x1, b.x1) - max(a.x0, b.x0)
        h = min(a.y1, b.y1) - max(a.y0, b.y0)
        return w * h if w > 0 and h > 0 else 0.0

    out = []
    for (x, y), text in zip(xy, texts):
        probe = ax.annotate(text, (x, y), textcoords="offset points", xytext=(0, 0), fontsize=fontsize)
        best, best_cost, best_box = spots[0], float("inf"), None
        for dx, dy in spots:
            probe.set_position((dx, dy))
            probe.set(**style(dx, dy))
            box = probe.get_window_extent(renderer).expanded(1.08, 1.1)
            cost = sum(overlap(box, t) for t in taken)
            if not (inside.x0 <= box.x0 and box.x1 <= inside.x1 and inside.y0 <= box.y0 and box.y1 <= inside.y1):
                cost += box.width * box.height
            if cost < best_cost:
                best, best_cost, best_box = (dx, dy), cost, box
            if cost == 0:
                break
        probe.remove()
        dx, dy = best
        far = abs(dx) > 1.5 * base or abs(dy) > 1.5 * base
        ann = ax.annotate(text, (x, y), textcoords="offset points", xytext=(dx, dy), fontsize=fontsize,
                          fontweight="bold", gid=gid, zorder=5, **style(dx, dy),
                          arrowprops={"arrowstyle": "-", "color": "0.35", "linewidth": 0.8,
                                      "shrinkA": 0, "shrinkB": marker_pt / 2} if far else None)
        taken.append(best_box)
        out.append(ann)
    return out


def measured_roofline(measurement, title: str | None = None, kernels: bool = True):
    """The measured roofline: matmul ceilings (float64, float32, labelled on the chart), bandwidth
    roofs for each cache level and DRAM, and every measured kernel at (estimated intensity, achieved
    FLOP/s), numbered where no label overlaps another; the key to the numbers sits beside the
    legend, which groups kernels by kind. The alt text states each roof and each kernel."""
    m = measurement
    fig = bare_figure((10.8, 5.6), dpi=100)
    ax = fig.add_subplot()
    fig.subplots_adjust(left=0.08, right=0.64, bottom=0.1, top=0.92)
    x = np.logspace(-2, 3, 300)
    peak64 = m.peak_flops_per_s("float64")
    ceilings = sorted(((m.peak_flops_per_s(dt), dt) for dt in {s.dtype for s in m.matmul}), reverse=True)
    roofs = m.roofs()
    dram = m.dram_bytes_per_s()
    lowest = min([r.bytes_per_s * x[0] for r in roofs] + [k.flops_per_s for k in m.kernels if kernels])
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(x[0], x[-1])
    ax.set_ylim(lowest / 1e9 / 1.6, ceilings[0][0] / 1e9 * 1.9)
    for i, (rate, dt) in enumerate(ceilings):
        ax.axhline(rate / 1e9, color="black", linestyle=LINESTYLES[i % len(LINESTYLES)], linewidth=1.2)
    for roof in roofs:
        colour, style, width = _ROOF_STYLE.get(roof.name, ("0.3", "-", 1.5))
        ax.plot(x, np.minimum(peak64, roof.bytes_per_s * x) / 1e9, color=colour, linestyle=style, linewidth=width,
                label=f"{roof.name}: {si(roof.bytes_per_s, 'B/s')}, ridge {num(peak64 / roof.bytes_per_s)} FLOP/B")
    ax.set(xlabel="Arithmetic intensity (FLOP/byte, estimated from each kernel's operands)",
           ylabel="Performance (GFLOP/s, 1 GFLOP/s = 10⁹ FLOP/s)",
           title=title or f"Measured roofline: {m.machine.get('cpu', 'this machine')}, {m.machine.get('cores')} cores "
                          f"({m.mode} mode)")
    ax.grid(True, alpha=0.35)
    plain_log_ticks(ax)
    renderer = fig.canvas.get_renderer()
    # the ceilings' labels sit on their lines, at an end clear of the kernels: the top one above its
    # line, the others below theirs where they can
    half = 8 * fig.dpi / 72 / 2 + 1
    markers = [Bbox.from_extents(cx - half, cy - half, cx + half, cy + half) for cx, cy in
               ax.transData.transform([(k.intensity, k.flops_per_s / 1e9) for k in m.kernels])] if kernels else []
    obstacles = []
    for i, (rate, dt) in enumerate(ceilings):
        label = ax.annotate(f"{dt} matmul: {si(rate, 'FLOP/s')}", (x[-1], rate / 1e9), textcoords="offset points",
                            xytext=(0, 0), fontsize=LABEL_PT, gid="ceiling-label")
        sides = [(1, "bottom"), (-1, "top")] if i == 0 else [(-1, "top"), (1, "bottom")]
        for end, (sign, va) in [(e, s) for s in sides for e in ("right", "left")]:
            label.xy = (x[-1] if end == "right" else x[0], rate / 1e9)
            label.set(ha=end, va=va)
            label.set_position((-4 if end == "right" else 4, 3 * sign))
            box = label.get_window_extent(renderer)
            if not any(box.overlaps(b) for b in markers + obstacles):
                break
        obstacles.append(label.get_window_extent(renderer))
    said_kernels = []
    if kernels:
        kinds: dict[str, list] = {}
        for j, k in enumerate(m.kernels, start=1):
            _, kind, marker, face = _kernel_kind(k.name)
            kinds.setdefault(kind, [marker, face, []])[2].append(j)
            ax.plot([k.intensity], [k.flops_per_s / 1e9], marker=marker, markersize=8, linestyle="none",
                    color="black", markerfacecolor=face, zorder=4)
            under = min(peak64, dram * k.intensity)
            where = (f"{num(k.flops_per_s / under * 100)} % of the DRAM roof there" if k.flops_per_s <= under
                     else f"{num(k.flops_per_s / under)} × the DRAM roof there, fed from a cache")
            said_kernels.append(f"{j} {k.name}: {num(k.intensity)} FLOP/byte, {si(k.flops_per_s, 'FLOP/s')}, {where}")
        for kind, (marker, face, numbers) in kinds.items():
            ax.plot([], [], marker=marker, markersize=8, linestyle="none", color="black", markerfacecolor=face,
                    label=f"{kind}: {number_ranges(numbers)}")
        _place_labels(ax, [(k.intensity, k.flops_per_s / 1e9) for k in m.kernels],
                      [str(j) for j in range(1, len(m.kernels) + 1)], marker_pt=8, obstacles=obstacles,
                      gid="kernel-number")
        key = "\n".join(f"{j:>2}  {k.name}" for j, k in enumerate(m.kernels, start=1))
        fig.text(0.66, 0.1, "Kernels by number\n" + key, fontsize=LABEL_PT, va="bottom", ha="left",
                 linespacing=1.35, gid="kernel-key")
    ax.legend(fontsize=LEGEND_PT, loc="upper left", bbox_to_anchor=(1.02, 1.0), framealpha=0.9)
    roof_text = "; ".join(f"{r.name} {si(r.bytes_per_s, 'B/s')} (ridge {num(peak64 / r.bytes_per_s)} FLOP/byte)"
                          for r in roofs)
    set_alt(fig, f"{ax.get_title()}. Log-log roofline measured on this machine: GFLOP/s against FLOP/byte. "
                 f"Compute roofs (best matrix multiply): "
                 + ", ".join(f"{dt} {si(rate, 'FLOP/s')}" for rate, dt in ceilings) + ". "
                 f"Bandwidth roofs from the triad sweep, ridges against the float64 peak: {roof_text}."
                 + (" Kernels, numbered on the chart: " + "; ".join(said_kernels) + "." if said_kernels else ""))
    return fig


def _plateau_spans(m) -> list[tuple[str, float, float, float]]:
    """(level, smallest and largest working set in bytes, bandwidth in bytes/s) of each triad
    plateau, chosen as :func:`~roofline_lessons.measure.probes.bandwidth_plateaus` chooses them."""
    pts = sorted((s for s in m.bandwidth if s.kernel == "triad"), key=lambda s: s.working_set_bytes)
    caches = {k: int(v) for k, v in m.machine.get("caches", {}).items()}
    shared = m.machine.get("cache_shared_cpus")
    rates = {r.name: r.bytes_per_s for r in m.roofs()}
    if not pts:
        return []
    threads = max(s.threads for s in pts)
    spans, lower = [], 0
    for level in sorted(caches):
        size = cache_capacity_bytes(level, caches, threads, shared)
        inside = [s.working_set_bytes for s in pts if lower < s.working_set_bytes <= size // 2]
        if inside and level in rates:
            spans.append((level, min(inside), max(inside), rates[level]))
        lower = size
    llc = max(cache_capacity_bytes(level, caches, threads, shared) for level in caches) if caches else 0
    big = [s.working_set_bytes for s in pts if llc and s.working_set_bytes >= 4 * llc] or \
          [s.working_set_bytes for s in pts[-2:]]
    spans.append(("DRAM", min(big), max(big), rates["DRAM"]))
    return spans


def bandwidth_sweep_chart(measurement):
    """Achieved bandwidth against working-set size, per kernel, with the cache sizes marked along
    the top and each triad plateau (a bandwidth roof) drawn over the working sets it comes from and
    labelled at the right. The alt text states each plateau and where DRAM begins."""
    m = measurement
    fig = bare_figure((9.5, 4.9), dpi=100)
    ax = fig.add_subplot()
    fig.subplots_adjust(left=0.08, right=0.79, bottom=0.12, top=0.83)
    looks = {"read": (LINE_COLOURS[0], "o", "--", 1.6), "copy": (LINE_COLOURS[1], "s", "-.", 1.6),
             "triad": (LINE_COLOURS[2], "^", "-", 2.2)}
    sizes = [s.working_set_bytes for s in m.bandwidth]
    caches = {k: int(v) for k, v in m.machine.get("caches", {}).items()}
    top = max(s.bytes_per_s for s in m.bandwidth) / 1e9
    lo_mib = min(sizes + list(caches.values())) / 2**20 / 1.6
    hi_mib = max(sizes) / 2**20 * 1.6
    ax.set_xscale("log")
    ax.set_xlim(lo_mib, hi_mib)
    ax.set_ylim(0, top * 1.1)
    for kernel, (colour, marker, style, width) in looks.items():
        pts = sorted((s for s in m.bandwidth if s.kernel == kernel), key=lambda s: s.working_set_bytes)
        if pts:
            ax.plot([s.working_set_bytes / 2**20 for s in pts], [s.bytes_per_s / 1e9 for s in pts], marker=marker,
                    markersize=5, color=colour, linestyle=style, linewidth=width, label=kernel)
    for size in caches.values():
        ax.axvline(size / 2**20, color="0.5", linestyle=":", linewidth=1)
    if caches:  # cache sizes as ticks along the top, clear of the data
        top_axis = ax.secondary_xaxis("top")
        top_axis.set_xticks([v / 2**20 for v in caches.values()],
                            [f"{k}\n{binary(v)}" for k, v in caches.items()], fontsize=LABEL_PT)
        top_axis.tick_params(axis="x", which="minor", top=False, labeltop=False)
    spans = _plateau_spans(m)
    renderer = fig.canvas.get_renderer()
    floor = None  # the lowest edge of the label above, in pixels: each label stays clear of it
    for i, (level, lo, hi, rate) in enumerate(sorted(spans, key=lambda s: -s[3])):
        y = rate / 1e9
        a, b = lo / 2**20 / 1.15, hi / 2**20 * 1.15
        ax.plot([a, b], [y, y], color="black", linewidth=4, alpha=0.35, solid_capstyle="butt", zorder=1,
                label="triad plateau = bandwidth roof" if i == 0 else None)
        ax.plot([b, hi_mib], [y, y], color="0.4", linestyle=":", linewidth=0.9, zorder=1)
        label = ax.annotate(f"{level} roof\n{si(rate, 'B/s')}", (1.0, y), xycoords=("axes fraction", "data"),
                            xytext=(6, 0), textcoords="offset points", va="center", fontsize=LABEL_PT, gid="roof-label")
        box = label.get_window_extent(renderer)
        if floor is not None and box.y1 > floor - 2:
            label.set_position((6, -(box.y1 - floor + 2) * 72 / fig.dpi))
            box = label.get_window_extent(renderer)
        floor = box.y0
    ax.set(xlabel="Working set (MiB, all arrays the kernel touches)", ylabel="Achieved bandwidth (GB/s, 10⁹ B/s)")
    threads = max((s.threads for s in m.bandwidth), default=1)
    ax.set_title(f"Bandwidth against working-set size: {m.machine.get('cpu', 'this machine')}, "
                 f"{threads} thread{'s' if threads != 1 else ''}", pad=10)
    ax.grid(True, alpha=0.35)
    plain_log_ticks(ax)
    ax.legend(fontsize=LEGEND_PT, loc="lower left", framealpha=0.9)
    plateaus = "; ".join(f"{level} {si(rate, 'B/s')} (working sets {binary(lo)} to {binary(hi)})"
                         for level, lo, hi, rate in spans if level != "DRAM")
    dram = next((s for s in spans if s[0] == "DRAM"), None)
    shared = m.machine.get("cache_shared_cpus")
    llc_level = max(caches, key=caches.get) if caches else None
    llc = cache_capacity_bytes(llc_level, caches, threads, shared) if llc_level else None
    who = "one thread" if threads == 1 else f"the {count(threads)} threads together"
    where = (f"Working sets past {binary(llc)} (the {llc_level} that {who} can fill) stream from DRAM"
             if llc else "The largest working sets stream from DRAM")
    sizes_text = (f"at a working set of {binary(dram[1])}" if dram[1] == dram[2]
                  else f"from working sets of {binary(dram[1])} to {binary(dram[2])}")
    set_alt(fig, f"{ax.get_title()}. Achieved bandwidth (GB/s) against working set (MiB, log axis) for the read, "
                 f"copy and triad kernels; cache sizes marked: "
                 + ", ".join(f"{k} {binary(v)}" for k, v in caches.items()) + ". "
                 + (f"Triad plateaus, the cache roofs: {plateaus}. " if plateaus else "")
                 + f"{where}; the DRAM roof is {si(dram[3], 'B/s')}, measured {sizes_text}. "
                   f"Bandwidth peaks at {si(top * 1e9, 'B/s')}.")
    return fig


def decode_vs_bound_chart(check):
    """Lesson 9: measured decode step time against the roofline bound over batch (log-log), from a
    :class:`~roofline_lessons.measure.reality.RealityCheck`. The alt text states the gap at the
    smallest and largest batch and the lower bound's knee (compulsory bytes)."""
    steps = sorted(check.decode_by_batch, key=lambda s: s.batch)
    if not steps:
        raise ValueError("decode_vs_bound_chart needs a reality check with decode_by_batch steps, got none")
    batches = [s.batch for s in steps]
    fig = bare_figure((10.5, 4.8), dpi=100)
    ax = fig.add_subplot()
    fig.subplots_adjust(left=0.08, right=0.66, bottom=0.12, top=0.9)
    ax.plot(batches, [s.measured_s * 1e3 for s in steps], color=LINE_COLOURS[1], marker="o", linestyle="-",
            linewidth=2.2, markersize=6, label="measured (median step)")
    ax.plot(batches, [s.bound_s * 1e3 for s in steps], color=LINE_COLOURS[0], marker="s", linestyle="--",
            linewidth=2, markersize=6, label="lower bound: max(compute, memory)")
    # the bound's own memory term (compulsory bytes), so the bound is the max of the two lines drawn
    ax.plot(batches, [s.memory_lower_bound_s * 1e3 for s in steps], color=LINE_COLOURS[2], linestyle=":",
            linewidth=1.5, label="memory time\n(compulsory bytes ÷\nmeasured DRAM bandwidth)")
    ax.plot(batches, [s.compute_s * 1e3 for s in steps], color=LINE_COLOURS[3], linestyle="-.", linewidth=1.5,
            label="compute time\n(FLOPs ÷ measured matmul rate)")
    knee = check.critical_batch()
    if knee is not None and batches[0] <= knee <= batches[-1]:
        ax.axvline(knee, color="0.45", linestyle=(0, (1, 3)), linewidth=1.2,
                   label=f"lower bound's knee (batch {knee}):\ncompute time reaches\ncompulsory bytes' time")
    context = steps[0].tokens
    ax.set(xscale="log", yscale="log", xlabel="Batch (sequences decoded together)", ylabel="Step time (ms)",
           title=f"{check.model.get('name', 'numpy decoder')} decode, {count(context)} tokens cached:\n"
                 "measured step time against the roofline bound")
    ax.tick_params(labelsize=LABEL_PT)
    ax.grid(True, which="both", alpha=0.3)
    plain_log_ticks(ax)
    ax.set_xticks(batches, [count(b) for b in batches])
    ax.legend(fontsize=LEGEND_PT, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0, framealpha=0.9)
    first, last = steps[0], steps[-1]
    set_alt(fig, f"{ax.get_title().replace(chr(10), ' ')}. Step time (ms, log axis) against batch (log axis) for batches "
                 f"{', '.join(count(b) for b in batches)}. At batch {count(first.batch)} the step took "
                 f"{duration(first.measured_s)} against a bound of {duration(first.bound_s)} ({first.binds}-bound), "
                 f"{percent(first.achieved, 0)} of the roof; at batch {count(last.batch)} it took "
                 f"{duration(last.measured_s)} against {duration(last.bound_s)} ({last.binds}-bound), "
                 f"{percent(last.achieved, 0)} of the roof. "
                 + (f"The lower bound's knee, where compute time reaches the compulsory bytes' memory time, is at "
                    f"batch {count(knee)}." if knee is not None else
                    "The lower bound has no knee within 4,096 sequences."))
    return fig


# --- lesson 11: many chips -----------------------------------------------------------------------

#: the time breakdown's kinds: (fill colour, hatch, edge colour). Hatches keep them apart in grey too.
TIME_LOOK = {
    "compute": (PALETTE[3], "xx", "white"),
    "memory": (PALETTE[0], "", "white"),
    "communication": (PALETTE[1], "//", "white"),
    "pipeline wait": ("#DDDDDD", "..", "0.45"),
}
#: what each bound's name means on the three-roof chart
BOUND_ROOF = {"compute": "the compute roof", "memory": "the HBM roof", "interconnect": "the link"}
#: the compute roof is dark grey (every part's colour is taken by its HBM roof)
COMPUTE_ROOF_COLOUR = "0.35"
#: faces of the placements' points, in order, skipping colours a roof already uses
POINT_FACES = (PALETTE[5], PALETTE[1], PALETTE[4], PALETTE[2], PALETTE[6], PALETTE[0], PALETTE[3])
HBM_POINT_MARKER, LINK_POINT_MARKER = "o", "^"


def _one_step(placement: Placement) -> None:
    if not isinstance(placement, Placement):
        raise TypeError(f"expected a Placement (from roofline_lessons.core.placement.place), got {placement!r}")
    if np.ndim(placement.cost.flops) != 0:
        raise ValueError("these charts draw one step per placement; place() was given an array of batches or "
                         "tokens — place one setting at a time")


def _achieved_flops_per_s(placement: Placement) -> float:
    """What one chip achieves over the step, FLOP/s: its FLOPs (per chip) ÷ the step time (the whole
    step, communication and pipeline stages included)."""
    return float(placement.cost.flops) / float(placement.time_estimate_s)


def _link_intensity(placement: Placement) -> float | None:
    """FLOPs per byte one chip sends over the link; None on one chip or when it sends nothing."""
    if placement.link is None:
        return None
    value = float(placement.interconnect_intensity)
    return value if np.isfinite(value) and value > 0 else None


def _link_roof_look(part_colour: str, part_linestyle: str) -> tuple[str, str]:
    """Colour and line style of a link roof drawn beside a part's HBM roof: never the same as it."""
    colour = next(c for c in (PALETTE[2], PALETTE[4], PALETTE[0]) if c != part_colour)
    return colour, ("-." if part_linestyle == "--" else "--")


def _compute_format(placement: Placement) -> str:
    """The step's compute format as a reader says it: ``bf16``, or ``fp8 matmuls, bf16 attention``."""
    w = placement.workload
    if w.other_compute_dtype == w.compute_dtype:
        return w.compute_dtype
    return f"{w.compute_dtype} matmuls, {w.other_compute_dtype} attention"


def _time_unit(seconds: float) -> tuple[float, str]:
    """(factor, unit) to show times up to ``seconds`` on an axis: s, ms, µs or ns."""
    for factor, unit in ((1.0, "s"), (1e3, "ms"), (1e6, "µs")):
        if seconds * factor >= 1:
            return factor, unit
    return 1e9, "ns"


@dataclass(frozen=True)
class TimeSegment:
    """One piece of a step's time bar: ``kind`` (a key of :data:`TIME_LOOK`), where it starts and how
    long it lasts (seconds, per chip), and its height as a fraction of the bar's (thinner bars run
    at the same time as the wider one they sit on)."""

    kind: str
    start_s: float
    width_s: float
    height: float


def _time_segments(placement: Placement) -> tuple[TimeSegment, ...]:
    """One chip's step as bar pieces, by the placement's own rules (:mod:`~roofline_lessons.core.parallel`).

    Not overlapped: the longer of compute and memory (full height, the shorter as a thin bar inside
    it: they run together), then the communication after it. Overlapped: all three from zero, the
    longest full height, the others thinner on top. Pipeline parallel: then the wait while the other
    stages run, plus the sends between them (grey). The last piece ends at the step time."""
    _one_step(placement)
    c, m = float(placement.compute_time_s), float(placement.memory_time_s)
    k = float(placement.comm_time_s)
    step, stage = float(placement.time_estimate_s), float(placement.stage_time_s)
    out = []
    if placement.comm is not None and placement.parallelism.overlap_comm:
        ranked = sorted((("compute", c), ("memory", m), ("communication", k)), key=lambda kv: -kv[1])
        for (kind, secs), h in zip(ranked, (1.0, 0.62, 0.3)):
            if secs > 0:
                out.append(TimeSegment(kind, 0.0, secs, h))
        end = max(c, m, k)
    else:
        big, small = (("compute", c), ("memory", m)) if c >= m else (("memory", m), ("compute", c))
        out.append(TimeSegment(big[0], 0.0, big[1], 1.0))
        if small[1] > 0:
            out.append(TimeSegment(small[0], 0.0, small[1], 0.4))
        if k > 0:
            out.append(TimeSegment("communication", big[1], k, 1.0))
        end = big[1] + k
    wait = step - stage
    if placement.parallelism.pipeline > 1 and wait > 0:
        out.append(TimeSegment("pipeline wait", end, wait, 1.0))
    return tuple(out)


def _step_rule(placement: Placement) -> str:
    """How the step time is made, in words (matches :func:`_time_segments`)."""
    if placement.comm is None:
        return "max(compute, memory)"
    rule = ("max(compute, memory, communication): communication overlapped, the best case"
            if placement.parallelism.overlap_comm else "max(compute, memory) + communication: not overlapped")
    p = placement.parallelism.pipeline
    if p > 1:
        rule += f"; then {p} pipeline stages one after another, plus {p - 1} sends between them"
    return rule


def _comm_latency_s(placement: Placement) -> float:
    """Seconds of the chip's collectives that are per-call latency (calls × the link's latency)."""
    if placement.comm is None:
        return 0.0
    return float(placement.comm.calls * placement.link.latency_s)


def _time_breakdown_text(placement: Placement) -> str:
    """compute, memory, communication (and pipeline wait) seconds of one chip, in words."""
    pieces = [f"compute {duration(placement.compute_time_s)}", f"memory {duration(placement.memory_time_s)}"]
    if placement.comm is not None:
        pieces.append(f"communication {duration(placement.comm_time_s)}")
        wait = float(placement.time_estimate_s - placement.stage_time_s)
        if placement.parallelism.pipeline > 1:
            pieces.append(f"pipeline wait {duration(wait)}")
    return ", ".join(pieces)


def _side(x: float, ridge: float) -> str:
    return "left of" if x < ridge else "at or right of"


def _wrap(text: str, width: int = 50) -> str:
    import textwrap

    return "\n".join(textwrap.fill(line, width) for line in text.split("\n"))


def interconnect_roofline_chart(placements, labels=None, title=None):
    """The roofline with a third roof: per chip, the compute roof (the step's format), the HBM roof
    (memory bandwidth × intensity) and the link roof (the link's bandwidth PER DIRECTION × FLOPs per
    byte sent), each ridge marked. Every placement is two points at the FLOP/s one chip achieves
    over the step (per-chip FLOPs ÷ step time): a circle at its FLOPs per HBM byte and a triangle
    at its FLOPs per byte sent (none for one chip), joined by a dotted line and labelled. The roofs
    are the first placement's part's (and those of any other part, format or link among the
    placements, thinner); the ridges marked are the first placement's. Alt text states which roof
    binds each step, its two intensities and the ridges.

    ``placements``: Placements from :func:`~roofline_lessons.core.placement.place` (one step each);
    ``labels``: one per placement (default: its split, e.g. ``TP 2``)."""
    from .charts import padded_log_range, set_log_axis

    if isinstance(placements, Placement):
        placements = [placements]
    placements = list(placements)
    if not placements:
        raise ValueError("interconnect_roofline_chart needs at least one Placement")
    for pl in placements:
        _one_step(pl)
    many_parts = len({pl.part.id for pl in placements}) > 1
    if labels is None:
        labels = [pl.parallelism.label + (f" on {pl.part.id}" if many_parts else "") for pl in placements]
    labels = [str(x) for x in labels]
    if len(labels) != len(placements):
        raise ValueError(f"got {len(labels)} labels for {len(placements)} placements; give one label each")
    first = placements[0]
    part = first.part
    title = title or (f"{first.model.name} {first.workload.phase} on {part.name}: three roofs, per chip")
    parts = {pl.part.id: pl.part for pl in placements}
    # the roofs: compute per (peak, format), HBM per part, link per (part, link); the first placement's first
    peaks: dict = {}
    for pl in placements:
        peaks.setdefault((float(pl.peak_flops_per_s), _compute_format(pl)), []).append(pl.part.id)
    hbm = list(dict.fromkeys(pl.part.id for pl in placements))
    link_of = {(pl.part.id, pl.link.name): pl.link for pl in placements if pl.link is not None}
    top_peak = {pid: max(float(pl.peak_flops_per_s) for pl in placements if pl.part.id == pid) for pid in hbm}
    peak0 = float(first.peak_flops_per_s)
    hbm_ridge0 = peak0 / part.memory_bandwidth_bytes_per_s

    achieved = [_achieved_flops_per_s(pl) for pl in placements]
    hbm_i = [float(pl.intensity) for pl in placements]
    link_i = [_link_intensity(pl) for pl in placements]
    ridges_x = [top_peak[pid] / parts[pid].memory_bandwidth_bytes_per_s for pid in hbm]
    ridges_x += [top_peak[pid] / lk.per_direction_bytes_per_s for (pid, _), lk in link_of.items()]
    xs = hbm_i + [x for x in link_i if x is not None] + ridges_x + [hbm_ridge0]
    x_lo, x_hi = padded_log_range(min(xs), max(xs), 6.0, 6.0, min_ratio=100.0)
    y_hi = max(pk for pk, _ in peaks) / TERA * 4.0
    y_lo = min(min(achieved) / TERA / 4.0, y_hi / 3.0e3)

    fig = bare_figure((11.0, 5.4), dpi=100)
    ax = fig.add_subplot()
    fig.subplots_adjust(left=0.075, right=0.6, bottom=0.11, top=0.92)
    ax.set_xscale("log")
    ax.set_yscale("log")
    set_log_axis(ax.xaxis, x_lo, x_hi)
    set_log_axis(ax.yaxis, y_lo, y_hi)
    x = np.logspace(np.log10(x_lo), np.log10(x_hi), 300)
    roof_colours = set()
    roof_lines = []  # every roof drawn: the points' labels keep clear of them
    for j, ((pk, fmt), pids) in enumerate(peaks.items()):
        who = f" {', '.join(pids)}" if many_parts else ""
        extra = "" if j == 0 else f" (HBM ridge {num(pk / part.memory_bandwidth_bytes_per_s)} FLOP/byte)"
        roof_lines.append(ax.axhline(pk / TERA, color=COMPUTE_ROOF_COLOUR, linestyle=LINESTYLES[j % len(LINESTYLES)],
                                     linewidth=2.4 if j == 0 else 1.6,
                                     label=_wrap(f"compute roof{who} ({fmt}): {si(pk, 'FLOP/s')}{extra}")))
    ridge_marks = []  # (x, text, colour) of the first placement's ridges
    for pid in hbm:
        p = parts[pid]
        look = part_style(p)
        main = pid == part.id
        roof_colours.add(look.colour)
        bw, end = p.memory_bandwidth_bytes_per_s, top_peak[pid] / p.memory_bandwidth_bytes_per_s
        xr = x[x <= end]
        ridge = (peak0 if main else top_peak[pid]) / bw
        roof_lines += ax.plot(np.append(xr, end), np.append(xr * bw, top_peak[pid]) / TERA, color=look.colour,
                              linestyle=look.linestyle, linewidth=2.4 if main else 1.4,
                              label=_wrap(f"HBM roof{' ' + pid if many_parts else ''}: {si(bw, 'B/s')}, "
                                          f"ridge {num(ridge)} FLOP/byte"))
        if main:
            ridge_marks.append((ridge, f"HBM ridge {num(ridge)}", look.colour))
    for j, ((pid, name), lk) in enumerate(link_of.items()):
        look = part_style(parts[pid])
        colour, style = _link_roof_look(look.colour, look.linestyle)
        if j:
            colour = next(c for c in (PALETTE[4], PALETTE[0], PALETTE[5], PALETTE[1]) if c not in roof_colours)
            style = LINESTYLES[(j + 1) % len(LINESTYLES)]
        roof_colours.add(colour)
        bw = lk.per_direction_bytes_per_s
        end = top_peak[pid] / bw
        xr = x[x <= end]
        main = pid == part.id
        ridge = (peak0 if main else top_peak[pid]) / bw
        roof_lines += ax.plot(np.append(xr, end), np.append(xr * bw, top_peak[pid]) / TERA, color=colour,
                              linestyle=style, linewidth=2.4 if main else 1.4,
                              label=_wrap(f"link roof{' ' + pid if many_parts else ''}: {name}, {si(bw, 'B/s')} "
                                          f"per direction, ridge {num(ridge)} FLOP/byte"))
        if main:
            ridge_marks.append((ridge, f"link ridge {num(ridge)}", colour))
    renderer = fig.canvas.get_renderer()
    for rx, _text, colour in ridge_marks:
        ax.plot([rx, rx], [y_lo, peak0 / TERA], color=colour, linestyle=":", linewidth=1.2)
    # the ridges' labels above the compute roof: the HBM ridge's ends at its line, the links' start at
    # theirs (an HBM ridge always lies left of a link's); one raised where it would touch another
    ridge_boxes = []
    for rx, text, colour in sorted(ridge_marks):
        hbm_mark = text.startswith("HBM")
        label = ax.annotate(text, (rx, peak0 / TERA), textcoords="offset points", xytext=(-3 if hbm_mark else 3, 3),
                            ha="right" if hbm_mark else "left", va="bottom", fontsize=LABEL_PT, color=colour,
                            fontweight="bold", gid="ridge-label",
                            bbox={"boxstyle": "square,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.85})
        box = label.get_window_extent(renderer)
        if not hbm_mark and box.x1 > ax.get_window_extent(renderer).x1:  # would run past the frame: end at its line
            label.set_position((-3, 3))
            label.set_horizontalalignment("right")
            box = label.get_window_extent(renderer)
        while any(box.overlaps(b) for b in ridge_boxes):
            label.set_position((label.get_position()[0], label.get_position()[1] + 13))
            box = label.get_window_extent(renderer)
        ridge_boxes.append(box)

    faces = [c for c in POINT_FACES if c not in roof_colours]
    anchors, texts, all_points = [], [], []
    said = []
    for j, (pl, label) in enumerate(zip(placements, labels)):
        face = faces[j % len(faces)]
        y = achieved[j] / TERA
        xi, xl = hbm_i[j], link_i[j]
        if xl is not None:
            ax.plot([xi, xl], [y, y], color="0.3", linestyle=":", linewidth=1.2, zorder=3)
        ax.plot([xi], [y], marker=HBM_POINT_MARKER, markersize=10, linestyle="none", color="black",
                markerfacecolor=face, zorder=4, gid="hbm-point")
        all_points.append((xi, y))
        if xl is not None:
            ax.plot([xl], [y], marker=LINK_POINT_MARKER, markersize=11, linestyle="none", color="black",
                    markerfacecolor=face, zorder=4, gid="link-point")
            all_points.append((xl, y))
        anchors.append((xl, y) if xl is not None else (xi, y))  # the label sits by the triangle if any
        texts.append(label)
        bound = str(pl.bound)
        ax.plot([], [], marker="s", markersize=9, linestyle="none", color="black", markerfacecolor=face,
                label=_wrap(f"{label}: {duration(pl.time_estimate_s)} per step, {bound}-bound"))
        ridge_hbm = float(pl.ridge_point_flop_per_byte)
        s = (f"{label}: {si(achieved[j], 'FLOP/s')} per chip ({duration(pl.time_estimate_s)} per step, "
             f"{bound}-bound: {BOUND_ROOF[bound]} binds); FLOPs per HBM byte {num(xi)}, {_side(xi, ridge_hbm)} the "
             f"HBM ridge at {num(ridge_hbm)}")
        if xl is not None:
            s += (f"; FLOPs per byte sent {num(xl)}, {_side(xl, float(pl.interconnect_ridge_point_flop_per_byte))} "
                  f"the {pl.link.name} ridge at {num(pl.interconnect_ridge_point_flop_per_byte)}; " + _comm_text(pl))
        elif pl.chips > 1:
            s += "; it sends nothing over the link"
        else:
            s += "; one chip, no link"
        said.append(s)
    ax.plot([], [], marker=HBM_POINT_MARKER, markersize=9, linestyle="none", color="black", markerfacecolor="white",
            label="circle: at FLOPs per HBM byte")
    ax.plot([], [], marker=LINK_POINT_MARKER, markersize=10, linestyle="none", color="black",
            markerfacecolor="white", label="triangle: at FLOPs per byte sent\n(same height: FLOP/s one chip achieves)")
    half = 11 * fig.dpi / 72 / 2 + 1
    obstacles = ridge_boxes + [Bbox.from_extents(cx - half, cy - half, cx + half, cy + half)
                               for cx, cy in ax.transData.transform(np.asarray(all_points))]
    # the roofs as a chain of small boxes (one every 3 px, as wide as the roof plus a pixel either side), so
    # that a label sits beside a roof, never across it (a label over the link roof hid its ridge)
    frame = ax.get_window_extent(renderer)
    for line in roof_lines:
        pts = line.get_transform().transform(np.column_stack([line.get_xdata(), line.get_ydata()]))
        r = line.get_linewidth() * fig.dpi / 72 / 2 + 1
        for (xa, ya), (xb, yb) in zip(pts[:-1], pts[1:]):
            for t in np.linspace(0.0, 1.0, int(max(abs(xb - xa), abs(yb - ya)) // 3) + 2):
                cx, cy = xa + t * (xb - xa), ya + t * (yb - ya)
                if frame.x0 <= cx <= frame.x1 and frame.y0 <= cy <= frame.y1:
                    obstacles.append(Bbox.from_extents(cx - r, cy - r, cx + r, cy + r))
    _place_labels(ax, anchors, texts, marker_pt=11, obstacles=obstacles, gid="placement-label")
    ax.set_xlabel("Intensity (FLOP per byte: of HBM traffic for circles, sent over the link for triangles)")
    ax.set_ylabel("Performance per chip (TFLOP/s, 10¹² FLOP/s)")
    ax.set_title(title, fontsize=11)
    ax.grid(True, alpha=0.35)
    ax.legend(fontsize=LEGEND_PT, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0, framealpha=0.9)
    roofs = [f"compute roof ({_compute_format(first)}) {si(peak0, 'FLOP/s')}",
             f"HBM roof {si(part.memory_bandwidth_bytes_per_s, 'B/s')}, ridge {num(hbm_ridge0)} FLOP/byte"]
    for (pid, name), lk in link_of.items():
        if pid == part.id:
            bw = lk.per_direction_bytes_per_s
            roofs.append(f"{name} link roof {si(bw, 'B/s')} per direction, ridge {num(peak0 / bw)} FLOP/byte")
    if not link_of:
        roofs.append("no link roof: every setup is one chip")
    set_alt(fig, f"{title}. Log-log roofline per chip of {part.name}, performance against intensity: "
                 + "; ".join(roofs) + ". Each setup is drawn at the FLOP/s one chip achieves over the step, a circle "
                 "at its FLOPs per HBM byte and a triangle at its FLOPs per byte sent. " + ". ".join(said) + ".")
    return fig


def _comm_text(placement: Placement) -> str:
    """What one chip's communication costs, in words: collectives (and how much of them is per-call
    latency, which a bandwidth roof does not show) and pipeline sends."""
    pl = placement
    if pl.comm is None:
        return "no communication (one chip)"
    said = []
    if pl.comm.calls:
        said.append(f"communication {duration(pl.comm_time_s)} per chip per stage ({count(pl.comm.calls)} collective "
                    f"calls, {si(pl.comm.bytes, 'B')} sent), of which {duration(_comm_latency_s(pl))} is per-call "
                    f"latency ({duration(pl.link.latency_s)} each, assumed), which the link roof does not show")
    if pl.parallelism.pipeline > 1:
        said.append(f"each stage sends {si(pl.comm.pipeline_send_bytes, 'B')} to the next "
                    f"({duration(pl.pipeline_send_s)} per send)")
    return "; ".join(said) or "no communication"


def _placements_and_labels(placements, labels, chart: str) -> tuple[list, list[str]]:
    """One Placement or a list, and one label each: a ValueError naming ``chart`` otherwise."""
    if isinstance(placements, Placement):
        placements = [placements]
    placements = list(placements)
    labels = [str(x) for x in labels]
    if not placements:
        raise ValueError(f"{chart} needs at least one Placement")
    if len(labels) != len(placements):
        raise ValueError(f"got {len(labels)} labels for {len(placements)} placements; give one label each")
    return placements, labels


def time_breakdown_chart(placements, labels, title=None):
    """One horizontal bar per setup: one chip's compute, memory and communication seconds in a step,
    drawn by the placement's rules (:func:`_time_segments`): not overlapped, the longer of compute
    and memory (the shorter as a thin bar inside it) then the communication; overlapped, all three
    from zero. The step time is printed at each bar's end. Colours and hatches read in grey too.
    Under the colour legend a drawn key shows one wide bar with a thin bar over it, labelled: the
    thin bar runs at the same time as the wide one (picture first, words second)."""
    from matplotlib.patches import Patch, Rectangle

    key_in, key_room_in = (2.45, 1.0), 2.9  # the drawn key's size, and the figure height it needs under the legend

    def key_kinds(segments) -> tuple[str, str]:
        """(wide, thin) kinds for the key: the first bar's own pair where it has one, else memory under compute."""
        for pieces in segments:
            wide = next((sg.kind for sg in pieces if sg.height == 1.0), None)
            thin = next((sg.kind for sg in pieces if sg.height < 1.0), None)
            if wide and thin:
                return wide, thin
        return "memory", "compute"

    def draw_key(fig, legend, wide: str, thin: str, then: str | None):
        """Under ``legend``: a wide bar with a thin bar over its start, then (when the chart has it) the
        communication after them, and one short label with an arrow to the thin bar."""
        renderer = fig.canvas.get_renderer()
        box = legend.get_window_extent(renderer)
        w_px, h_px = (v * fig.dpi for v in key_in)
        top = box.y0 - 0.12 * fig.dpi
        key = fig.add_axes((box.x0 / fig.bbox.width, (top - h_px) / fig.bbox.height, w_px / fig.bbox.width,
                            h_px / fig.bbox.height))
        key.set_axis_off()
        key.set_xlim(0, 1)
        key.set_ylim(0, 1)
        key.text(0.0, 1.0, "Reading a bar:", fontsize=LEGEND_PT, fontweight="bold", ha="left", va="top",
                 gid="bar-key-title")
        pieces = [(wide, 0.02, 0.5, 0.44, 0.26, False), (thin, 0.02, 0.28, 0.52, 0.1, True)]
        if then is not None:
            pieces.append((then, 0.52, 0.2, 0.44, 0.26, False))
        for kind, x, w, y, h, outline in pieces:
            colour, hatch, edge = TIME_LOOK[kind]
            key.add_patch(Rectangle((x, y), w, h, facecolor=colour, hatch=hatch,
                                    edgecolor="black" if outline else edge, linewidth=0.8 if outline else 0.6,
                                    zorder=3 if outline else 2, gid=f"bar-key-{kind}"))
        key.annotate("thin bar: runs at the same\ntime as the wide bar under it", xy=(0.16, 0.52),
                     xytext=(0.0, 0.3), textcoords="axes fraction", fontsize=LEGEND_PT, ha="left", va="top",
                     arrowprops={"arrowstyle": "-|>", "color": "black", "linewidth": 0.9, "shrinkA": 0,
                                 "shrinkB": 1}, gid="bar-key-label")

    placements, labels = _placements_and_labels(placements, labels, "time_breakdown_chart")
    segs = [_time_segments(pl) for pl in placements]
    steps = [float(pl.time_estimate_s) for pl in placements]
    factor, unit = _time_unit(max(steps))
    n = len(placements)
    height_in = max(1.5 + 0.62 * n, key_room_in)  # room for the legend and the key under it
    fig = bare_figure((10.5, height_in), dpi=100)
    ax = fig.add_subplot()
    fig.subplots_adjust(left=0.2, right=0.74, bottom=0.72 / height_in, top=1 - 0.45 / height_in)
    bar_h = 0.62
    used = set()
    for i, pieces in enumerate(segs):
        y = n - 1 - i
        for sg in pieces:
            colour, hatch, edge = TIME_LOOK[sg.kind]
            used.add(sg.kind)
            h = bar_h * sg.height
            ax.barh(y, sg.width_s * factor, left=sg.start_s * factor, height=h, color=colour, hatch=hatch,
                    edgecolor=edge if sg.height == 1 else "black",  # a thin bar outlined (and hatched) in black
                    linewidth=0.6 if sg.height == 1 else 0.8, zorder=2 + (1 - sg.height))
        pl = placements[i]
        note = "" if pl.comm is None else (" (comm overlapped)" if pl.parallelism.overlap_comm else "")
        ax.annotate(f"{duration(steps[i])}{note}", (steps[i] * factor, y), textcoords="offset points",
                    xytext=(5, 0), va="center", ha="left", fontsize=LABEL_PT, gid="step-time")
    ax.set_yticks(range(n), labels[::-1], fontsize=LABEL_PT)
    ax.set_ylim(-0.6, n - 0.4)
    ax.set_xlim(0, max(steps) * factor * 1.22)  # room for the step-time labels
    ax.tick_params(axis="x", labelsize=LABEL_PT)
    assumed = any(pl.link is not None and pl.link.latency_basis == "assumed" for pl in placements)
    ax.set_xlabel(f"Time per step, per chip ({unit}"
                  + ("; estimate, comm at the assumed per-call latency)" if assumed else "; estimate)"))
    ax.set_ylabel("Setup", fontsize=LABEL_PT)
    title = title or "One step per chip: compute, memory and communication"
    ax.set_title(title, fontsize=11)
    ax.grid(True, axis="x", alpha=0.35)
    handles = [Patch(facecolor=TIME_LOOK[k][0], hatch=TIME_LOOK[k][1], edgecolor=TIME_LOOK[k][2], label=k)
               for k in TIME_LOOK if k in used]
    legend = ax.legend(handles=handles, fontsize=LEGEND_PT, loc="upper left", bbox_to_anchor=(1.02, 1.0),
                       borderaxespad=0, framealpha=0.9)
    draw_key(fig, legend, *key_kinds(segs), then="communication" if "communication" in used else None)
    said = []
    for pl, label, step in zip(placements, labels, steps):
        said.append(f"{label}: {_time_breakdown_text(pl)}; step {duration(step)} = {_step_rule(pl)}; "
                    f"{pl.bound}-bound")
    set_alt(fig, f"{title}. Horizontal bars, one per setup, seconds per chip for one step; a thin bar drawn over "
                 "a wide one runs at the same time as it: " + ". ".join(said) + ".")
    return fig


# ---- lesson 12: shrinking the bytes ----------------------------------------------------------

#: the kinds of bytes a step moves: (fill colour, hatch, hatch/edge colour), as lesson 4's dashboard
#: draws them; the hatches keep them apart in grey too
BYTES_LOOK = {
    "weights": (PALETTE[0], "", "white"),
    "KV cache": (PALETTE[1], "//", "white"),
    "state": (PALETTE[2], "..", "0.15"),
    "activations": (PALETTE[3], "xx", "white"),
}
#: the context a lesson quotes KV sizes at (32K tokens), when a curve reaches it
KV_QUOTE_TOKENS = 32768
#: line styles of the KV curves: never dotted (dotted means "past the model's max context")
KV_LINESTYLES = ("-", "--", "-.", (0, (9, 3)), (0, (5, 1.5, 1, 1.5, 1, 1.5)), (0, (2.5, 1.5)))


def _step_bytes_by_kind(placement: Placement) -> dict[str, float]:
    """Bytes one step moves, split by kind (keys of :data:`BYTES_LOOK`): weights, KV cache (read and
    written), recurrent state (read and written) and activations. Per chip for several chips."""
    _one_step(placement)
    c = placement.cost
    return {"weights": float(c.weight_bytes), "KV cache": float(c.kv_bytes), "state": float(c.state_bytes),
            "activations": float(c.activation_bytes)}


def _byte_unit(value_bytes: float) -> tuple[float, str, str]:
    """(divisor, unit, what the unit is) to show SI byte counts up to ``value_bytes`` on an axis."""
    for factor, unit, said in ((1e12, "TB", "10¹²"), (1e9, "GB", "10⁹"), (1e6, "MB", "10⁶"), (1e3, "kB", "10³")):
        if value_bytes >= factor:
            return factor, unit, said
    return 1.0, "B", "1"


def _tokens_tick(value: float, _pos=None) -> str:
    """A context length on an axis: 1K = 1,024 tokens, 1M = 1,048,576."""
    if value <= 0:
        return ""
    if value >= 2 ** 20:
        return f"{num(value / 2 ** 20)}M"
    if value >= 1024:
        return f"{num(value / 1024)}K"
    return count(value)


def _binary_log_ticks(lo: float, hi: float, max_ticks: int = 8) -> list[float]:
    """Powers of two from ``lo`` to ``hi`` (bytes, 0 < lo < hi), every 1st, 2nd, 3rd, 5th or 10th so
    that at most ``max_ticks`` remain; exponents that are multiples of the step, so 1 KiB, 1 MiB and
    1 GiB appear when the step divides 10."""
    if not (0 < lo < hi):
        raise ValueError(f"a log axis needs 0 < lo < hi, got lo={lo!r}, hi={hi!r}")
    e0, e1 = math.ceil(math.log2(lo)), math.floor(math.log2(hi))
    for step in (1, 2, 3, 5, 10, 20):
        ticks = [2.0 ** e for e in range(e0, e1 + 1) if e % step == 0]
        if len(ticks) <= max_ticks:
            return ticks or [2.0 ** e0]
    return [2.0 ** e0, 2.0 ** e1]


def _value_at(x: np.ndarray, y: np.ndarray, at: float) -> float:
    """``y`` at ``x = at``, interpolated on log-log axes (both positive)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    hit = np.nonzero(x == at)[0]
    if hit.size:
        return float(y[hit[0]])
    ly = np.log(np.maximum(y, 1e-300))
    return float(np.exp(np.interp(np.log(at), np.log(x), ly)))


def _check_curve(curve) -> tuple[np.ndarray, np.ndarray]:
    for name in ("label", "context_tokens", "kv_bytes", "state_bytes", "beyond_limit_from", "kind"):
        if not hasattr(curve, name):
            raise TypeError(f"a KV curve needs the attributes label, context_tokens, kv_bytes, state_bytes, "
                            f"beyond_limit_from and kind (a KvCurve); {curve!r} has no {name!r}")
    x = np.asarray(curve.context_tokens, dtype=float)
    y = np.asarray(curve.kv_bytes, dtype=float)
    if x.ndim != 1 or x.size < 2 or x.shape != y.shape:
        raise ValueError(f"{curve.label}: context_tokens and kv_bytes must be 1-D arrays of the same length (at "
                         f"least 2), got shapes {x.shape} and {y.shape}")
    if not (np.all(x > 0) and np.all(y > 0) and np.all(np.diff(x) > 0)):
        raise ValueError(f"{curve.label}: context_tokens must rise and both arrays be > 0 (a log-log chart)")
    return x, y


#: the panels of the KV chart, one idea each: (test on a curve's ``kind``, the panel's title)
KV_PANELS = (
    (lambda kind: kind.startswith(("gqa", "mqa", "multi-head")), "Fewer KV heads: GQA, MQA"),
    (lambda kind: kind.startswith("mla"), "One latent per token: MLA"),
    (lambda kind: kind.startswith("sliding"), "Windows on the local layers"),
    (lambda kind: kind.startswith("hybrid"), "Linear-attention layers: a fixed state"),
)
#: two curves closer than this factor at every shared context read as one line: the legend says so
KV_COINCIDE = 1.25


def _kv_panels(curves) -> list[tuple[str, list[int]]]:
    """The curves (indices) grouped into panels by idea (:data:`KV_PANELS`), in that order; a kind no
    panel takes gets a panel of its own, titled with the kind."""
    panels: dict[str, list[int]] = {}
    order = {title: j for j, (_, title) in enumerate(KV_PANELS)}
    for i, c in enumerate(curves):
        kind = str(c.kind).lower()
        title = next((t for test, t in KV_PANELS if test(kind)), str(c.kind))
        panels.setdefault(title, []).append(i)
    return sorted(panels.items(), key=lambda kv: order.get(kv[0], len(order)))


def _coincide(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> bool:
    """True when two curves lie within :data:`KV_COINCIDE` of each other at every context they share
    (interpolated on log-log axes): on the chart they would read as one line."""
    lo, hi = max(a[0][0], b[0][0]), min(a[0][-1], b[0][-1])
    if lo >= hi:
        return False
    xs = np.geomspace(lo, hi, 25)
    ya = np.array([_value_at(*a, x) for x in xs])
    yb = np.array([_value_at(*b, x) for x in xs])
    return bool(np.all(np.abs(np.log(ya / yb)) < math.log(KV_COINCIDE)))


def _legend_covers_a_line(ax, legend) -> bool:
    """True when a line of ``ax`` (its points and the straight pieces between them, on the axes' own
    scales) passes under ``legend``."""
    renderer = ax.figure.canvas.get_renderer()
    box = legend.get_window_extent(renderer)
    for line in ax.get_lines():
        x, y = (np.asarray(v, dtype=float) for v in line.get_data())
        if x.size == 0:
            continue
        if x.size == 2 and line.get_xydata()[0, 0] == 0 and np.allclose(x, [0, 1]):  # an axhline: axes x
            x = np.asarray(ax.get_xlim(), dtype=float)
        lx, ly = np.log(x), np.log(y)
        t = np.linspace(0, 1, 12)
        px = np.exp(np.concatenate([a + (b - a) * t for a, b in zip(lx[:-1], lx[1:])] or [lx]))
        py = np.exp(np.concatenate([a + (b - a) * t for a, b in zip(ly[:-1], ly[1:])] or [ly]))
        pts = ax.transData.transform(np.column_stack([px, py]))
        pad = line.get_linewidth() * ax.figure.dpi / 72 / 2
        if np.any((pts[:, 0] >= box.x0 - pad) & (pts[:, 0] <= box.x1 + pad)
                  & (pts[:, 1] >= box.y0 - pad) & (pts[:, 1] <= box.y1 + pad)):
            return True
    return False


def kv_bytes_vs_context_chart(curves, title=None):
    """KV-cache bytes per sequence against context tokens, log-log, one panel per idea (fewer KV heads,
    one latent, windows, linear-attention layers: :data:`KV_PANELS`), every panel on the same axes.
    Each curve has its own colour, line style and marker; with more than one panel the first curve of
    the first panel is repeated in the others as a thin grey line, for scale. Past a model's
    ``max_context_tokens`` (a curve's ``beyond_limit_from``) a line is dotted with hollow markers: a
    what-if. A hybrid model's recurrent state, the same at any context, is a flat band labelled as
    state. Two lines of one panel that would read as one (within :data:`KV_COINCIDE` at every
    context) say so in the legend, with both sizes. The y axis is binary (KiB, MiB, GiB).

    ``curves``: objects with ``label``, ``context_tokens`` (tokens, rising), ``kv_bytes`` (bytes per
    sequence at each context), ``state_bytes`` (bytes, 0 without recurrent state),
    ``beyond_limit_from`` (tokens, or None) and ``kind`` ("GQA", "MQA", "MLA", "sliding window",
    "hybrid linear"): :class:`roofline_lessons.topics.shrinking.KvCurve`. Alt text: the panels, every
    curve's bytes at 32K tokens (or mid-range) and at the longest context, and which is smallest."""
    from matplotlib.lines import Line2D
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    from .fastfig import CHART_DPI

    curves = list(curves)
    if not curves:
        raise ValueError("kv_bytes_vs_context_chart needs at least one curve")
    data = [_check_curve(c) for c in curves]
    x_lo = min(float(x[0]) for x, _ in data)
    x_hi = max(float(x[-1]) for x, _ in data)
    states = [float(c.state_bytes or 0.0) for c in curves]
    ys = [float(v) for _, y in data for v in (y.min(), y.max())] + [s for s in states if s > 0]
    y_lo, y_hi = min(ys) / 1.6, max(ys) * 1.6
    title = title or "KV cache per sequence against context"
    panels = _kv_panels(curves)
    reference = panels[0][1][0] if len(panels) > 1 else None

    n = len(panels)
    cols = 1 if n == 1 else 2
    rows = math.ceil(n / cols)
    height_in = 5.2 if n == 1 else 0.95 + 2.95 * rows
    fig = bare_figure((10.5, height_in), dpi=CHART_DPI)
    top = 1 - (0.5 if n == 1 else 0.72) / height_in
    if n == 1:
        fig.subplots_adjust(left=0.095, right=0.6, bottom=0.11, top=top)
    else:
        fig.subplots_adjust(left=0.1, right=0.985, bottom=0.85 / height_in, top=top, wspace=0.07,
                            hspace=0.55 / 2.95 * rows / max(rows - 1, 1) if rows > 1 else 0)
    axes = [fig.add_subplot(rows, cols, j + 1) for j in range(n)]
    xt = [2.0 ** e for e in range(math.ceil(math.log2(x_lo)), math.floor(math.log2(x_hi)) + 1) if e % 2 == 0]

    def set_y(hi: float) -> None:
        for ax in axes:
            ax.set_ylim(y_lo, hi)
            ax.yaxis.set_major_locator(FixedLocator(_binary_log_ticks(y_lo, hi, 7 if n > 1 else 8)))

    for j, ax in enumerate(axes):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log", base=2)
        ax.set_xlim(x_lo, x_hi)
        ax.xaxis.set_major_locator(FixedLocator(xt or [x_lo, x_hi]))
        ax.xaxis.set_major_formatter(FuncFormatter(_tokens_tick))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: binary(v)))
        for axis in (ax.xaxis, ax.yaxis):
            axis.set_minor_locator(NullLocator())
        ax.tick_params(labelsize=LABEL_PT)
        ax.grid(True, alpha=0.35)
        ax.set_xlabel("Context (tokens; 1K = 1,024)" if n > 1 else
                      "Context (tokens per sequence; 1K = 1,024 tokens)", fontsize=LABEL_PT)
        if j % cols == 0:
            ax.set_ylabel("KV cache per sequence\n(bytes; 1 GiB = 2³⁰ bytes)" if n > 1 else
                          "KV cache per sequence (bytes; 1 GiB = 2³⁰ bytes)", fontsize=LABEL_PT + 0.5)
        else:
            ax.set_ylabel("KV cache per sequence", fontsize=LABEL_PT)
            ax.yaxis.label.set_visible(False)  # the left panel's label names the shared axis
            ax.tick_params(labelleft=False)
    set_y(y_hi)

    looks = [(LINE_COLOURS[i % len(LINE_COLOURS)], KV_LINESTYLES[i % len(KV_LINESTYLES)], MARKERS[i % len(MARKERS)])
             for i in range(len(curves))]
    targets = np.geomspace(x_lo, x_hi, 7)
    past = []
    coinciding = []

    def draw(ax, i):
        c, (x, y) = curves[i], data[i]
        colour, style, marker = looks[i]
        # markers at a few log-spaced contexts, shifted per curve so two curves that cross show each one
        shift = (i % 3) / 3.0
        marks = sorted({int(np.argmin(np.abs(np.log(x) - np.log(t) - shift * np.log(targets[1] / targets[0]))))
                        for t in targets[:-1]})
        limit = c.beyond_limit_from
        inside = x <= limit if limit is not None else np.ones_like(x, dtype=bool)
        cut = int(np.count_nonzero(inside))
        if cut:
            ax.plot(x[:cut], y[:cut], color=colour, linestyle=style, linewidth=2.2, marker=marker, markersize=7,
                    markeredgecolor="black", markevery=[j for j in marks if j < cut], zorder=3)
        if cut < x.size:
            start = max(cut - 1, 0)
            ax.plot(x[start:], y[start:], color=colour, linestyle=":", linewidth=1.8, marker=marker, markersize=7,
                    markerfacecolor="white", markeredgecolor=colour,
                    markevery=[j - start for j in marks if j >= cut], zorder=3)
            past.append(f"{c.label} from {count(limit)} tokens")
        # the kind, unless the label or the panel (one kind only) already says it
        one_kind = n > 1 and len({str(curves[k].kind) for k in members_of[i]}) == 1
        kind = "" if one_kind or str(c.kind).lower() in c.label.lower() else f" ({c.kind})"
        return Line2D([], [], color=colour, linestyle=style, linewidth=2.2, marker=marker, markersize=7,
                      markeredgecolor="black", label=_wrap(f"{c.label}{kind}", 40))

    members_of = {i: members for _, members in panels for i in members}
    legends = []
    for ax, (panel_title, members) in zip(axes, panels):
        handles = []
        shown = list(members)
        if reference is not None and reference not in members:
            c, (x, y) = curves[reference], data[reference]
            limit = c.beyond_limit_from
            keep = x <= limit if limit is not None else np.ones_like(x, dtype=bool)
            ax.plot(x[keep], y[keep], color="0.55", linewidth=1.4, zorder=2, gid="kv-reference")
            handles.append(Line2D([], [], color="0.55", linewidth=1.4,
                                  label=_wrap(f"{c.label} ({c.kind}), for scale", 40)))
            shown = [reference] + shown
        for i in members:
            handles.append(draw(ax, i))
            if states[i] > 0:
                colour = looks[i][0]
                # a broad pale band: a level, unlike any curve's line
                ax.axhline(states[i], color=colour, linewidth=7, alpha=0.4, solid_capstyle="butt", zorder=2)
                # labelled at the right end, under the band: the curves have all risen above it there
                ax.annotate(f"{curves[i].label}: state {binary(states[i])}", (x_hi, states[i]),
                            textcoords="offset points", xytext=(-4, -6), va="top", ha="right", fontsize=LABEL_PT,
                            color="black", bbox={"boxstyle": "square,pad=0.1", "fc": "white", "ec": "none",
                                                 "alpha": 0.8})
                handles.append(Line2D([], [], color=colour, linewidth=7, alpha=0.4, solid_capstyle="butt",
                                      label=_wrap(f"recurrent state, {binary(states[i])} at any context", 40)))
        # two lines of this panel that would read as one: the later one's entry says so, with both sizes
        for a_pos, a in enumerate(shown):
            for b in shown[a_pos + 1:]:
                if _coincide(data[a], data[b]):
                    at = KV_QUOTE_TOKENS if x_lo <= KV_QUOTE_TOKENS <= x_hi else float(np.sqrt(x_lo * x_hi))
                    va, vb = _value_at(*data[a], at), _value_at(*data[b], at)
                    note = (f"{curves[b].label} lies on {curves[a].label}: {binary(vb)} and {binary(va)} at "
                            f"{count(at)} tokens")
                    coinciding.append(note)
                    entry = next(h for h in handles if h.get_label().replace("\n", " ").startswith(curves[b].label))
                    entry.set_label(entry.get_label() + "\n" + _wrap(f"(on the line of {curves[a].label}: "
                                                                     f"{binary(vb)} vs {binary(va)} at {count(at)})",
                                                                     40))
        if n > 1:
            legends.append(ax.legend(handles=handles, fontsize=LEGEND_PT, loc="upper left", borderaxespad=0.4,
                                     framealpha=0.92, handlelength=2.6))
        else:
            if past:
                handles.append(Line2D([], [], color="0.3", linestyle=":", linewidth=1.8, marker="o",
                                      markerfacecolor="white", markeredgecolor="0.3",
                                      label="dotted, hollow markers: past the model's\nmax context (a what-if)"))
            ax.legend(handles=handles, fontsize=LEGEND_PT, loc="upper left", bbox_to_anchor=(1.02, 1.0),
                      borderaxespad=0, framealpha=0.9)
        ax.set_title(panel_title if n > 1 else title, fontsize=LABEL_PT + 1.5 if n > 1 else 11)
    # a legend inside a panel sits in its empty upper-left corner: raise the (shared) top of the y axis
    # an octave at a time until no line passes under any legend
    for _ in range(8):
        if not any(_legend_covers_a_line(ax, legend) for ax, legend in zip(axes, legends)):
            break
        y_hi *= 2
        set_y(y_hi)

    if n > 1:
        fig.suptitle(title, fontsize=12, y=1 - 0.12 / height_in, va="top")
        note = "Dotted, hollow markers: past the model's max context (a what-if)." if past else ""
        if reference is not None:
            note += f" Grey in every panel: {curves[reference].label}, for scale. All panels share their axes."
        fig.text(0.1, 0.08 / height_in, note.strip(), fontsize=LABEL_PT, ha="left", va="bottom")

    at = KV_QUOTE_TOKENS if x_lo <= KV_QUOTE_TOKENS <= x_hi else float(np.sqrt(x_lo * x_hi))
    quoted = []
    for c, (x, y) in zip(curves, data):
        if x[0] <= at <= x[-1]:
            quoted.append((_value_at(x, y, at), c))
    said = [f"{title}. Log-log chart: KV-cache bytes per sequence (binary units) against context, "
            f"{count(x_lo)} to {count(x_hi)} tokens"
            + (", one line per model." if n == 1 else
               f", in {count(n)} panels on the same axes, one idea each: "
               + "; ".join(f"{t} ({', '.join(curves[i].label for i in m)})" for t, m in panels) + ".")]
    if reference is not None:
        said.append(f"Each panel also shows {curves[reference].label} in grey, for scale.")
    if quoted:
        quoted.sort(key=lambda vc: vc[0])
        said.append(f"At {count(at)} tokens: " + "; ".join(f"{c.label} ({c.kind}) {binary(v)}" for v, c in quoted)
                    + ".")
        small, big = quoted[0], quoted[-1]
        if len(quoted) > 1:
            said.append(f"Smallest there: {small[1].label}, {binary(small[0])}; largest: {big[1].label}, "
                        f"{binary(big[0])}, {num(big[0] / small[0])} times as much.")
    said.append("At the longest context each reaches: "
                + "; ".join(f"{c.label} {binary(y[-1])} at {count(x[-1])} tokens" for c, (x, y) in zip(curves, data))
                + ".")
    flat = [c.label for c, (x, y) in zip(curves, data) if y[-1] <= y[0] * 1.0001]
    if flat:
        said.append("Flat (their cache stops growing): " + ", ".join(flat) + ".")
    for c, s in zip(curves, states):
        if s > 0:
            said.append(f"{c.label} also keeps a recurrent state of {binary(s)} per sequence, the same at any "
                        "context (a flat band).")
    if coinciding:
        said.append("Lines that coincide: " + "; ".join(coinciding) + ".")
    if past:
        said.append("Dotted where the context is past the model's max context, a what-if: " + "; ".join(past) + ".")
    set_alt(fig, " ".join(said))
    return fig


def _budget_time_text(pl: Placement) -> str:
    """A step's two figures, and on a second line its binding roof: "≥ 17.7 ms, estimate 17.7 ms" /
    "memory-bound" (the roof of each figure when they differ)."""
    lb, est = str(pl.lower_bound_roof), str(pl.bound)
    roof = f"{lb}-bound" if lb == est else f"{lb}-bound by the bound, {est}-bound by the estimate"
    return f"≥ {duration(pl.time_lower_bound_s)}, estimate {duration(pl.time_estimate_s)}\n{roof}"


def byte_budget_chart(placements, labels, title=None):
    """One horizontal stacked bar per step: the bytes it moves (SI: GB of traffic; the estimate's
    unfused view) split into weights, KV cache, recurrent state and activations, in colours and
    hatches that read in grey too; at each bar's end its total, its lower bound ("≥"), its estimate
    and its binding roof. Per chip for several chips. Alt text: every bar's pieces with their shares,
    its two times and its roof."""
    from matplotlib.patches import Patch

    placements, labels = _placements_and_labels(placements, labels, "byte_budget_chart")
    kinds = [_step_bytes_by_kind(pl) for pl in placements]
    totals = [sum(k.values()) for k in kinds]
    factor, unit, said_unit = _byte_unit(max(totals))
    n = len(placements)
    height_in = 1.6 + 0.62 * n
    fig = bare_figure((10.5, height_in), dpi=100)
    ax = fig.add_subplot()
    fig.subplots_adjust(left=0.2, right=0.855, bottom=0.72 / height_in, top=1 - 0.45 / height_in)
    used = set()
    ends = []
    for i, (by_kind, pl) in enumerate(zip(kinds, placements)):
        y = n - 1 - i
        left = 0.0
        for kind, value in by_kind.items():
            if value <= 0:
                continue
            colour, hatch, edge = BYTES_LOOK[kind]
            used.add(kind)
            ax.barh(y, value / factor, left=left / factor, height=0.62, color=colour, hatch=hatch, edgecolor=edge,
                    linewidth=0.6, zorder=2)
            left += value
        fits = "" if bool(np.all(pl.fits_in_memory)) else f"; does not fit {binary(pl.part.memory_capacity_bytes)}"
        ends.append(ax.annotate(f"{si(totals[i], 'B')}: {_budget_time_text(pl)}{fits}",
                                (totals[i] / factor, y), textcoords="offset points", xytext=(5, 0), va="center",
                                ha="left", fontsize=LABEL_PT, gid="step-bytes", zorder=3,
                                bbox={"boxstyle": "square,pad=0.1", "facecolor": "white", "edgecolor": "none"}))
    ax.set_yticks(range(n), [_wrap(x, 24) for x in labels[::-1]], fontsize=LABEL_PT)
    ax.set_ylim(-0.6, n - 0.4)
    # room for the labels at the bars' ends: the x range at which the widest ends inside the frame
    renderer = fig.canvas.get_renderer()
    width_px = ax.get_window_extent(renderer).width
    pad_px = 5 * fig.dpi / 72 + 6
    x_max = max(t / factor * width_px / max(width_px - label.get_window_extent(renderer).width - pad_px, width_px / 4)
                for t, label in zip(totals, ends))
    ax.set_xlim(0, x_max)
    # ticks (and grid lines) over the whole axis, so that every bar's end can be read off it; the labels at
    # the bars' ends sit on a white box, so the grid lines do not run through their text
    from matplotlib.ticker import FixedLocator, MaxNLocator

    ticks = [t for t in MaxNLocator(nbins=6).tick_values(0, x_max) if 0 <= t <= x_max]
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.tick_params(axis="x", labelsize=LABEL_PT)
    ax.set_xlabel(f"Bytes moved per step ({unit}; 1 {unit} = {said_unit} bytes)")
    ax.set_ylabel("Setup", fontsize=LABEL_PT)
    title = title or "The bytes of one step: weights, KV cache, state, activations"
    ax.set_title(title, fontsize=11)
    ax.grid(True, axis="x", alpha=0.35)
    handles = [Patch(facecolor=BYTES_LOOK[k][0], hatch=BYTES_LOOK[k][1], edgecolor=BYTES_LOOK[k][2], label=k)
               for k in BYTES_LOOK if k in used]
    ax.legend(handles=handles, fontsize=LEGEND_PT, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0,
              framealpha=0.9)
    said = []
    for label, by_kind, total, pl in zip(labels, kinds, totals, placements):
        parts = ", ".join(f"{k} {si(v, 'B')} ({share_percent(v / total)})" for k, v in by_kind.items() if v > 0)
        fits = "" if bool(np.all(pl.fits_in_memory)) else \
            f"; it does not fit the {binary(pl.part.memory_capacity_bytes)} of memory"
        said.append(f"{label}: {si(total, 'B')} per step ({parts}); lower bound {duration(pl.time_lower_bound_s)} "
                    f"and estimate {duration(pl.time_estimate_s)} per step, {pl.bound}-bound by the estimate{fits}")
    set_alt(fig, f"{title}. Horizontal stacked bars, one per setup, bytes moved in one step: " + ". ".join(said)
            + ".")
    return fig
