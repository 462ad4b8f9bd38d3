"""Helpers the chart tests share (no test lives here)."""

from __future__ import annotations

from matplotlib.text import Text


def visible_texts(fig):
    """Visible, non-empty texts, less the labels of ticks outside the axis range (matplotlib keeps
    those Tick objects around but does not draw them)."""
    hidden = set()
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            lo, hi = sorted(axis.get_view_interval())
            for tick in [*axis.majorTicks, *axis.minorTicks]:
                if not lo <= tick.get_loc() <= hi:
                    hidden.update((id(tick.label1), id(tick.label2)))
    return [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip() and id(t) not in hidden]
