"""Placing a chart's moving labels where they can be read: inside the axes, off other text, clear of
the lines. Shared by the dashboards (a label per moving point, placed on every update).

Obstacles are an N × 5 array of display-pixel boxes with a weight each (x0, y0, x1, y1, weight): how
bad it is to cover that box, per pixel of overlap. Lines are sampled into display points with a
weight each (:func:`line_samples`); a label that runs over, or within ``clearance_px`` of, a sample
pays its weight.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

NO_OBSTACLES = np.zeros((0, 5))
NO_LINES = np.zeros((0, 3))


def clamp(x: float, lo: float, hi: float) -> tuple[float, bool]:
    """``x`` held to [lo, hi], and whether it had to be moved (a point off the axes is drawn at the
    edge, marked as clipped)."""
    return (lo, True) if x < lo else ((hi, True) if x > hi else (x, False))


def box_rows(boxes: Iterable, weight: float = 1.0) -> np.ndarray:
    """Obstacle rows (x0, y0, x1, y1, weight) for matplotlib Bboxes."""
    rows = [[b.x0, b.y0, b.x1, b.y1, weight] for b in boxes]
    return np.array(rows, dtype=float).reshape(-1, 5)


def line_samples(lines: Iterable, dotted_weight: float = 0.1) -> np.ndarray:
    """Display points about every pixel along ``lines`` (matplotlib Line2D), with a weight each: a
    line counts fully, a dotted guide (a ridge's vertical line) ``dotted_weight``. Rows: x, y, weight."""
    out = [NO_LINES]
    for ln in lines:
        if not ln.get_visible() or len(ln.get_xdata()) < 2:
            continue
        pts = ln.get_transform().transform(np.column_stack([ln.get_xdata(), ln.get_ydata()]))
        weight = dotted_weight if ln.get_linestyle() == ":" else 1.0
        for (x0, y0), (x1, y1) in zip(pts[:-1], pts[1:]):
            n = int(min(max(abs(x1 - x0), abs(y1 - y0)), 4000)) + 1
            t = np.linspace(0.0, 1.0, n + 1)
            out.append(np.column_stack([x0 + t * (x1 - x0), y0 + t * (y1 - y0), np.full(t.size, weight)]))
    return np.concatenate(out)


def _overlap_cost(box, obstacles: np.ndarray) -> float:
    if obstacles.size == 0:
        return 0.0
    w = np.clip(np.minimum(obstacles[:, 2], box.x1) - np.maximum(obstacles[:, 0], box.x0), 0, None)
    h = np.clip(np.minimum(obstacles[:, 3], box.y1) - np.maximum(obstacles[:, 1], box.y0), 0, None)
    return float(np.sum(w * h * obstacles[:, 4]))


def _line_cost(box, samples: np.ndarray, clearance_px: float) -> float:
    if samples.size == 0:
        return 0.0
    c = clearance_px
    near = ((samples[:, 0] >= box.x0 - c) & (samples[:, 0] <= box.x1 + c) & (samples[:, 1] >= box.y0 - c)
            & (samples[:, 1] <= box.y1 + c))
    return float(samples[near, 2].sum())


def place_label(label, xy, candidates: Sequence[tuple[float, float, str, str]], obstacles: np.ndarray, inside,
                renderer, lines: np.ndarray = NO_LINES, outside_weight: float = 4.0, clearance_px: float = 6.0):
    """Put ``label`` (a matplotlib Annotation) for the point ``xy`` at the first candidate (offset in
    points, ha, va) that stays inside ``inside`` (a Bbox), covers no obstacle and keeps clear of the
    lines. Where none does: the candidate that leaves the least of it outside (each pixel at
    ``outside_weight``) and covering obstacles (at their weights), and among those the one the lines
    cross least (text over text is worse than a line through a label). Returns the label's Bbox."""
    best, best_cost = None, (float("inf"), float("inf"))
    label.xy = xy
    for dx, dy, ha, va in candidates:
        label.set_position((dx, dy))
        label.set_horizontalalignment(ha)
        label.set_verticalalignment(va)
        b = label.get_window_extent(renderer)
        iw = max(min(inside.x1, b.x1) - max(inside.x0, b.x0), 0.0)
        ih = max(min(inside.y1, b.y1) - max(inside.y0, b.y0), 0.0)
        cost = (outside_weight * (b.width * b.height - iw * ih) + _overlap_cost(b, obstacles),
                _line_cost(b, lines, clearance_px))
        if cost == (0.0, 0.0):
            return b
        if cost < best_cost:
            best, best_cost = (dx, dy, ha, va), cost
    dx, dy, ha, va = best
    label.set_position((dx, dy))
    label.set_horizontalalignment(ha)
    label.set_verticalalignment(va)
    return label.get_window_extent(renderer)
