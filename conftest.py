"""Checks that apply to every notebook nbval runs (notebooks/, exercises/, solutions/).

Every chart a learner sees carries alt text: each image an executed cell shows must come with an
``<img alt="...">`` in its HTML (the package's IPython formatter adds it from the figure's alt text,
see roofline_lessons.viz.display). A chart without one fails its cell.

The kernels nbval starts draw figures inline, as a learner's do (the test process itself uses Agg):
otherwise no image would ever be shown and the check above would pass vacuously. And they write into
a scratch data folder, never the learner's.
"""

from __future__ import annotations

import os
import re
import tempfile

import matplotlib
import pytest

matplotlib.use("Agg")  # this process; set before the variable below, which only kernels read
os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"

# Whatever is run under test — tests/, or a notebook on its own (lessons 8 and 9 save measurements,
# lesson 13 the drill's progress) — writes into a scratch data folder, never into the learner's own
# (~/.local/share/roofline-lessons). Kernels started by nbval inherit it.
os.environ["ROOFLINE_LESSONS_DATA"] = tempfile.mkdtemp(prefix="roofline-lessons-test-data-")

ALT = re.compile(r'<img\b[^>]*\balt="([^"]+)"', re.IGNORECASE)


def images_without_alt(outputs) -> list[str]:
    """The images among a cell's outputs that a reader who cannot see them would miss."""
    missing = []
    for out in outputs or ():
        data = out.get("data", {}) if hasattr(out, "get") else {}
        if not any(key.startswith("image/") for key in data):
            continue
        html = data.get("text/html", "")
        html = "".join(html) if isinstance(html, list) else html
        if not ALT.search(html):
            missing.append(data.get("text/plain", "an image"))
    return missing


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    result = yield
    outputs = getattr(item, "test_outputs", None)  # set by nbval for each executed cell
    missing = images_without_alt(outputs)
    if missing:
        raise AssertionError(f"{item.name}: a chart without alt text: {missing}. Give the figure alt text "
                             "(roofline_lessons.viz.display.set_alt) and draw it with the package.")
    return result
