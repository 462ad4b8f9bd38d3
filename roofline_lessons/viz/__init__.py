"""What a learner looks at: matplotlib charts and ipywidgets dashboards (above core, topics and measure).

- :mod:`.fastfig`    — cached static figures, redrawing only the artists that move.
- :mod:`.charts`     — roofline charts (log-log, units on both axes, colour-blind-safe).
- :mod:`.plots`      — the lessons' other figures.
- :mod:`.display`    — Markdown and tables in a notebook.
- :mod:`.dashboards` — one dashboard per lesson; its update logic is a plain function.
"""

from .display import register_alt_text_formatter as _register

_register()  # inside IPython: every figure is shown as an <img> with its alt text
