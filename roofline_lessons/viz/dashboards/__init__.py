"""ipywidgets dashboards, one module per lesson. Each has a plain update function of the widget
values (``lessonNN_view``, unit-tested without a browser), a chart that redraws only what moves,
and a thin widget layer (``lessonNN_dashboard``) that calls them through ``interactive_output``.
"""

from .lesson01 import (BATCH_CHOICES, TOKEN_CHOICES, Lesson01View, lesson01_dashboard, lesson01_draw, lesson01_png,
                       lesson01_view)
from .lesson02 import Lesson02Chart, Lesson02View, lesson02_dashboard, lesson02_view
from .lesson03 import Lesson03Chart, Lesson03View, lesson03_dashboard, lesson03_view
from .lesson04 import Lesson04Chart, Lesson04View, lesson04_dashboard, lesson04_view
from .lesson05 import Lesson05Chart, Lesson05View, lesson05_dashboard, lesson05_view
from .lesson06 import Lesson06Chart, Lesson06View, lesson06_dashboard, lesson06_view
from .lesson07 import Lesson07Chart, Lesson07View, lesson07_dashboard, lesson07_view

__all__ = ["BATCH_CHOICES", "TOKEN_CHOICES", "Lesson01View", "Lesson02Chart", "Lesson02View", "Lesson03Chart",
           "Lesson03View", "Lesson04Chart", "Lesson04View", "lesson01_dashboard", "lesson01_draw", "lesson01_png",
           "lesson01_view", "lesson02_dashboard", "lesson02_view", "lesson03_dashboard", "lesson03_view",
           "lesson04_dashboard", "lesson04_view", "Lesson05Chart", "Lesson05View", "lesson05_dashboard",
           "lesson05_view", "Lesson06Chart", "Lesson06View", "lesson06_dashboard", "lesson06_view",
           "Lesson07Chart", "Lesson07View", "lesson07_dashboard", "lesson07_view"]
