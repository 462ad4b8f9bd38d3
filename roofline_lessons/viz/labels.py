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

from .fastfig import CHART_DPI

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


# ---- several labels placed in turn, in pixels (the lesson 1 and 3 dashboards) -------------------------
#
# Here a label is a box of known size (:func:`text_size_px`) placed beside its anchor; obstacles are
# (x0, y0, x1, y1) pixel boxes, lines are (x, y) pixel samples (:func:`roof_samples_px`), and each label
# placed becomes an obstacle for the next. The caller sets the texts (:func:`offset_label` for an
# annotation) and draws the leader lines (:func:`leader_to`).

#: where a label may go relative to what it names: (dx, dy) direction, horizontal and vertical alignment.
#: Up-left and down-right first: on a roof (slope or flat) they never cross the line.
DIRECTIONS = ((-1, 1, "right", "bottom"), (1, -1, "left", "top"), (0, 1, "center", "bottom"),
              (0, -1, "center", "top"), (1, 1, "left", "bottom"), (-1, -1, "right", "top"),
              (-1, 0, "right", "center"), (1, 0, "left", "center"))
#: how far from its anchor (pixels) a label is tried, nearest first
DISTANCES_PX = (6.0, 16.0, 30.0, 50.0, 80.0, 120.0)


def _box(x: float, y: float, w: float, h: float, ha: str, va: str) -> tuple[float, float, float, float]:
    x0 = x - w if ha == "right" else x - w / 2 if ha == "center" else x
    y0 = y - h if va == "top" else y - h / 2 if va == "center" else y
    return x0, y0, x0 + w, y0 + h


def _overlap(a, b) -> float:
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    return w * h if w > 0 and h > 0 else 0.0


def leader_end(anchor_px, box) -> tuple[float, float]:
    """The point of ``box`` (x0, y0, x1, y1 pixels) nearest to ``anchor_px``: where a leader line ends."""
    ax_, ay = anchor_px
    return min(max(ax_, box[0]), box[2]), min(max(ay, box[1]), box[3])


def _segment_hits_box(p, q, box, samples: int = 12) -> bool:
    t = np.linspace(0.0, 1.0, samples)
    xs, ys = p[0] + t * (q[0] - p[0]), p[1] + t * (q[1] - p[1])
    return bool(np.any((xs > box[0]) & (xs < box[2]) & (ys > box[1]) & (ys < box[3])))


def place_label_boxes(anchors_px, sizes_px, obstacles, line_px: np.ndarray, frame_px, directions=DIRECTIONS,
                      distances=DISTANCES_PX, leader_from_px: float | None = None):
    """For each anchor (x, y) with a label of (width, height) pixels, in turn, the first candidate place
    (``directions`` × ``distances``) that overlaps no obstacle box, no line sample, no label already
    placed and stays inside ``frame_px``; if none is clear, the least-overlapping one.

    With ``leader_from_px``, a label set that far from its anchor or further gets a leader line (drawn
    by the caller, from the anchor to :func:`leader_end`): such a line must cross no label placed
    before it, and later labels keep off it.
    Returns ``[(x, y, ha, va, box)]``: text positions and label boxes, in pixels."""
    taken = list(obstacles)
    labels: list = []  # boxes of the labels placed so far
    out = []
    for (ax_, ay), (w, h) in zip(anchors_px, sizes_px):
        best, best_cost = None, None
        for dist in distances:
            for dx, dy, ha, va in directions:
                x, y = ax_ + dx * dist, ay + dy * dist
                box = _box(x, y, w, h, ha, va)
                cost = sum(_overlap(box, t) for t in taken)
                if leader_from_px is not None:
                    end = leader_end((ax_, ay), box)
                    if np.hypot(end[0] - ax_, end[1] - ay) >= leader_from_px:
                        cost += sum(400.0 for b in labels if _segment_hits_box((ax_, ay), end, b))
                if line_px.size:
                    inside = ((line_px[:, 0] > box[0]) & (line_px[:, 0] < box[2]) & (line_px[:, 1] > box[1])
                              & (line_px[:, 1] < box[3]))
                    cost += 40.0 * int(inside.sum())
                outside = (max(0.0, frame_px[0] - box[0]) + max(0.0, box[2] - frame_px[2])
                           + max(0.0, frame_px[1] - box[1]) + max(0.0, box[3] - frame_px[3]))
                cost += 1000.0 * outside
                cost += dist * 0.01  # among equals, the nearest
                if best_cost is None or cost < best_cost:
                    best, best_cost = (x, y, ha, va, box), cost
                if cost < 1.0:
                    break
            if best_cost is not None and best_cost < 1.0:
                break
        x, y, ha, va, box = best
        taken.append(box)
        labels.append(box)
        if leader_from_px is not None:
            end = leader_end((ax_, ay), box)
            if np.hypot(end[0] - ax_, end[1] - ay) >= leader_from_px:  # later labels keep off the leader
                taken += [(ax_ + f * (end[0] - ax_) - 2, ay + f * (end[1] - ay) - 2,
                           ax_ + f * (end[0] - ax_) + 2, ay + f * (end[1] - ay) + 2) for f in (0.3, 0.5, 0.7, 0.9)]
        out.append((x, y, ha, va, box))
    return out


def text_size_px(text, renderer, pad: float = 2.5) -> tuple[float, float]:
    """(width, height) in pixels of ``text`` with ``pad`` pixels all round (the white box behind it)."""
    box = text.get_window_extent(renderer)
    return box.width + 2 * pad, box.height + 2 * pad


def roof_samples_px(ax, roofs, intensity_range: tuple[float, float], samples: int = 300) -> np.ndarray:
    """Pixel points (x, y rows) along each roof (``peak_flops_per_s``, ``bandwidth_bytes_per_s``) of a
    roofline drawn in FLOP/byte against TFLOP/s, ``samples`` per roof, log-spaced over ``intensity_range``."""
    xs = np.logspace(np.log10(intensity_range[0]), np.log10(intensity_range[1]), samples)
    return np.vstack([ax.transData.transform(np.column_stack(
        [xs, np.minimum(r.peak_flops_per_s, r.bandwidth_bytes_per_s * xs) / 1e12])) for r in roofs])


def fixed_boxes(ax, renderer, moving=()) -> list[tuple[float, float, float, float]]:
    """Pixel boxes of what a label must not cover on ``ax``: its legend, then every text with words in
    it except the ``moving`` ones."""
    return [tuple(ax.get_legend().get_window_extent(renderer).extents)] + [
        tuple(t.get_window_extent(renderer).extents) for t in ax.texts if t.get_text() and t not in moving]


def offset_label(label, anchor_px, placed, dpi: float) -> None:
    """Set ``label`` (an annotation in offset points) where :func:`place_label_boxes` placed it
    (``placed``: x, y, ha, va, box) for the anchor at ``anchor_px``, on a figure of ``dpi``."""
    x, y, ha, va, _box_ = placed
    to_pt = 72 / dpi
    label.set_position(((x - anchor_px[0]) * to_pt, (y - anchor_px[1]) * to_pt))
    label.set_horizontalalignment(ha)
    label.set_verticalalignment(va)


def leader_to(leader, anchor_px, box, from_px: float) -> list:
    """Draw ``leader`` (a Line2D in pixels) from ``anchor_px`` to the nearest point of ``box`` if that
    is ``from_px`` or further; returns ``[leader]`` then, else ``[]`` (a near label needs none)."""
    ex, ey = leader_end(anchor_px, box)
    if np.hypot(ex - anchor_px[0], ey - anchor_px[1]) < from_px:
        return []
    leader.set_data([anchor_px[0], ex], [anchor_px[1], ey])
    return [leader]


def clusters(points_px, radius_px: float, square: bool = False) -> list[list[int]]:
    """Group points (pixel rows x, y) that lie within ``radius_px`` of another point of the group
    (``square``: closer than ``radius_px`` along both x and y). Groups come in the order of their first
    point, each in index order."""
    points_px = np.asarray(points_px, dtype=float).reshape(-1, 2)
    n = len(points_px)
    parent = list(range(n))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i in range(n):
        diff = np.abs(points_px[i + 1:] - points_px[i])
        d = diff.max(axis=1) if square else np.hypot(*diff.T)
        for j in np.nonzero(d < radius_px)[0] + i + 1:
            parent[root(int(j))] = root(i)
    groups: dict[int, list[int]] = {}
    for i in range(n):
        groups.setdefault(root(i), []).append(i)
    return list(groups.values())


def number_ranges(numbers) -> str:
    """``[1, 2, 3, 5, 7, 8]`` → ``"1–3, 5, 7–8"``: one label for several numbered points."""
    ns = sorted({int(n) for n in numbers})
    parts, i = [], 0
    while i < len(ns):
        j = i
        while j + 1 < len(ns) and ns[j + 1] == ns[j] + 1:
            j += 1
        parts.append(str(ns[i]) if i == j else f"{ns[i]}–{ns[j]}")
        i = j + 1
    return ", ".join(parts)


def wrap_ranges(text: str, width: int) -> str:
    """Break ``"1–9, 11–14, 16–17, 20"`` into lines of at most ``width`` characters, at commas."""
    lines: list[str] = []
    for item in text.split(", "):
        if lines and len(lines[-1]) + 2 + len(item) + 1 <= width:  # + 1: the comma a break adds
            lines[-1] += ", " + item
        else:
            if lines:
                lines[-1] += ","
            lines.append(item)
    return "\n".join(lines)


def ring_sizes_pt(points_px, overlap_px: float, alone_pt: float, largest_pt: float, smallest_pt: float) -> list[float]:
    """Marker sizes (points) that keep overlapping markers apart without moving them: ``alone_pt`` for
    a point (pixels, x y) that overlaps no other; within a group of points closer than ``overlap_px``
    along x and y (:func:`clusters`, ``square``), sizes step down evenly from ``largest_pt`` to
    ``smallest_pt`` in the given order, so that drawn largest first, each shows as a ring around the next."""
    sizes = [float(alone_pt)] * len(np.asarray(points_px).reshape(-1, 2))
    for members in clusters(points_px, overlap_px, square=True):
        if len(members) > 1:
            for size, i in zip(np.linspace(largest_pt, smallest_pt, len(members)), members):
                sizes[i] = float(size)
    return sizes


# ---- moving labels and their candidate places (appended for the lesson 11 and 12 dashboards) -------

#: a moving point's label: a white rounded box with a grey edge (its pad, 0.25 em, is part of the box)
LABEL_BOX = {"boxstyle": "round,pad=0.25", "fc": "white", "ec": "0.6", "alpha": 0.9}

#: where a label can sit around its point: offset direction (in gaps), then ha and va
SPOTS = {"below": (0, -1, "center", "top"), "below right": (1, -1, "left", "top"),
         "below left": (-1, -1, "right", "top"), "right": (1, 0, "left", "center"),
         "left": (-1, 0, "right", "center"), "above": (0, 1, "center", "bottom"),
         "above right": (1, 1, "left", "bottom"), "above left": (-1, 1, "right", "bottom")}


def spots(gap: float, *names: str) -> list[tuple[float, float, str, str]]:
    """Candidates for :func:`place_label` (offset in points, ha, va), ``gap`` points from the point, in
    the order named (keys of :data:`SPOTS`: "below", "above right", ...)."""
    return [(dx * gap, dy * gap, ha, va) for dx, dy, ha, va in (SPOTS[n] for n in names)]


def point_label(ax, fontsize: float, zorder: float = 6):
    """An empty, animated label in a :data:`LABEL_BOX` for a moving point (:func:`place_label` puts it)."""
    return ax.annotate("", (1, 1), textcoords="offset points", xytext=(0, 0), fontsize=fontsize, animated=True,
                       bbox=LABEL_BOX, zorder=zorder)


def marker_boxes(ax, points, size_pt: float) -> np.ndarray:
    """Obstacle rows (weight 1) for markers ``size_pt`` points across at the data ``points`` of ``ax``:
    each marker's square on screen, a pixel wider each way."""
    half = size_pt * ax.figure.dpi / 72 / 2 + 1
    xy = ax.transData.transform(np.asarray(points, dtype=float).reshape(-1, 2))
    return np.column_stack([xy - half, xy + half, np.ones(len(xy))])


def layer_obstacles(artists, ax, renderer, weight: float = 1.0, dotted_weight: float = 0.1):
    """What a layer's ``artists`` put in a moving label's way on ``ax``: its texts there as obstacle
    rows (:func:`box_rows`, at ``weight``) and its lines there as :func:`line_samples`."""
    from matplotlib.lines import Line2D

    mine = [a for a in artists if a.axes is ax]
    return (box_rows([a.get_window_extent(renderer) for a in mine if hasattr(a, "get_text")], weight),
            line_samples([a for a in mine if isinstance(a, Line2D)], dotted_weight))


# ---- labels on a rising curve (appended: the lesson 4 and 10 dashboards' batch labels) ----------------


#: a batch label's size in pixels of the PNG, with room to spare ("B=512" at 9 pt is 33 x 11 px at 80 dpi)
LABEL_BOX_PX = (40 * CHART_DPI / 80, 16 * CHART_DPI / 80)


def label_placement(xy_px, axes_box, gap_pt: float = 5):
    """Offset (points), horizontal and vertical alignment for a label at pixel ``xy_px`` on a curve that
    only rises to the right (a throughput–latency curve), inside ``axes_box`` (x0, y0, x1, y1 in pixels).

    The quadrants below-right and above-left of any of such a curve's points are free of it: the label
    goes below-right, or above-left where that would leave the axes, or straight right (clear of the
    steep start of the curve) at a corner."""
    x, y = xy_px
    x0, y0, x1, y1 = axes_box
    w, h = LABEL_BOX_PX
    gap = gap_pt * CHART_DPI / 72
    if y - gap - h >= y0 and x + gap + w <= x1:
        return (gap_pt, -gap_pt), "left", "top"
    if x - gap - w >= x0 and y + gap + h <= y1:
        return (-gap_pt, gap_pt), "right", "bottom"
    return (2 * gap_pt, 0), "left", "center"


def curve_labels(ax, points, texts, fontsize: float) -> list:
    """An animated label per (x, y) data point of ``points`` on a rising curve of ``ax``, each put by
    :func:`label_placement` (the axes' layout must be final). Returns them."""
    box, labels = ax.bbox.extents, []
    for (x, y), text in zip(points, texts):
        offset, ha, va = label_placement(ax.transData.transform((x, y)), box)
        labels.append(ax.annotate(text, (x, y), textcoords="offset points", xytext=offset, ha=ha, va=va,
                                  fontsize=fontsize, animated=True))
    return labels


# ---- several labels in turn (appended for the lesson 11 and 12 dashboards' point labels) -------------


def place_in_turn(items, taken: np.ndarray, inside, renderer, weight: float = 1.0, **options) -> np.ndarray:
    """Put each (label, xy, candidates) of ``items``, in order, with :func:`place_label` (``options``:
    its keywords), clear of the obstacles ``taken`` and of the labels put before it, whose boxes join
    them at ``weight``. Returns the obstacles with every label's box."""
    for label, xy, candidates in items:
        taken = np.vstack([taken, box_rows([place_label(label, xy, candidates, taken, inside, renderer, **options)],
                                           weight)])
    return taken
