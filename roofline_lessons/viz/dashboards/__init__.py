"""ipywidgets dashboards, one module per lesson. Each has a plain update function of the widget
values (``lessonNN_view``, unit-tested without a browser), a chart that redraws only what moves,
``lessonNN_frame`` (verdict, chart PNG and alt text for one update) and a thin widget layer
(``lessonNN_dashboard``) that puts the frame in one HTML panel (:mod:`roofline_lessons.viz.panel`, on the shared base :mod:`roofline_lessons.viz.dashboard_base`).
"""

from ..panel import Frame, frame_html
from .lesson01 import (BATCH_CHOICES, TOKEN_CHOICES, Lesson01Chart, Lesson01View, lesson01_dashboard, lesson01_draw,
                       lesson01_frame, lesson01_png, lesson01_view)
from .lesson02 import Lesson02Chart, Lesson02View, lesson02_dashboard, lesson02_frame, lesson02_view
from .lesson03 import Lesson03Chart, Lesson03View, lesson03_dashboard, lesson03_frame, lesson03_view
from .lesson04 import Lesson04Chart, Lesson04View, lesson04_dashboard, lesson04_frame, lesson04_view
from .lesson05 import Lesson05Chart, Lesson05View, lesson05_dashboard, lesson05_frame, lesson05_view
from .lesson06 import Lesson06Chart, Lesson06View, lesson06_dashboard, lesson06_frame, lesson06_view
from .lesson07 import Lesson07Chart, Lesson07View, lesson07_dashboard, lesson07_frame, lesson07_view
from .lesson10 import Lesson10Chart, Lesson10View, lesson10_dashboard, lesson10_frame, lesson10_view
from .lesson11 import Lesson11Chart, Lesson11View, lesson11_dashboard, lesson11_frame, lesson11_view
from .lesson12 import Lesson12Chart, Lesson12View, lesson12_dashboard, lesson12_frame, lesson12_view

__all__ = ["Frame", "frame_html", "Lesson01Chart", "lesson01_frame", "lesson02_frame", "lesson03_frame",
           "lesson04_frame", "lesson05_frame", "lesson06_frame", "lesson07_frame", "BATCH_CHOICES", "TOKEN_CHOICES", "Lesson01View", "Lesson02Chart", "Lesson02View", "Lesson03Chart",
           "Lesson03View", "Lesson04Chart", "Lesson04View", "lesson01_dashboard", "lesson01_draw", "lesson01_png",
           "lesson01_view", "lesson02_dashboard", "lesson02_view", "lesson03_dashboard", "lesson03_view",
           "lesson04_dashboard", "lesson04_view", "Lesson05Chart", "Lesson05View", "lesson05_dashboard",
           "lesson05_view", "Lesson06Chart", "Lesson06View", "lesson06_dashboard", "lesson06_view",
           "Lesson07Chart", "Lesson07View", "lesson07_dashboard", "lesson07_view",
           "Lesson10Chart", "Lesson10View", "lesson10_dashboard", "lesson10_frame", "lesson10_view",
           "Lesson11Chart", "Lesson11View", "lesson11_dashboard", "lesson11_frame", "lesson11_view",
           "Lesson12Chart", "Lesson12View", "lesson12_dashboard", "lesson12_frame", "lesson12_view"]
