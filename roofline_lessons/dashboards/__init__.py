"""ipywidgets dashboards, one module per lesson. Each has a plain update function of the widget
values (``lessonNN_view``, unit-tested without a browser), a drawing function, and a thin widget
layer (``lessonNN_dashboard``) that calls them through ``interactive_output``.
"""

from .lesson01 import BATCH_CHOICES, TOKEN_CHOICES, Lesson01View, lesson01_dashboard, lesson01_draw, lesson01_png, lesson01_view

__all__ = ["BATCH_CHOICES", "TOKEN_CHOICES", "Lesson01View", "lesson01_dashboard", "lesson01_draw", "lesson01_png",
           "lesson01_view"]
