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
import sys
import tempfile

# Under pytest-xdist every worker is its own process on the same cores. A BLAS that starts one thread
# per core in each of them oversubscribes the machine (two workers × two threads on two cores), and
# its spinning threads then slow everything that shares the cores — the notebooks that measure most of
# all. So each worker, and every kernel it starts (they inherit the environment), gets its share of the
# cores. Set before numpy is first imported (matplotlib imports it below), which is when a BLAS reads it.
_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
_CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
if _WORKERS > 1:
    _share = str(max(1, _CORES // _WORKERS))
    for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_var, _share)
    if "numpy" in sys.modules:  # too late for this process's BLAS; kernels still get the share
        print("conftest: numpy was imported before the BLAS thread share could be set", file=sys.stderr)

import matplotlib  # noqa: E402
import pytest  # noqa: E402

matplotlib.use("Agg")  # this process; set before the variable below, which only kernels read
os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"

# Whatever is run under test — tests/, or a notebook on its own (lessons 8 and 9 save measurements,
# lesson 15 the drill's progress) — writes into a scratch data folder, never into the learner's own
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
