import os
import tempfile
from pathlib import Path

import matplotlib
import pytest

matplotlib.use("Agg")  # kernels draw inline: see the conftest.py at the root

ROOT = Path(__file__).resolve().parents[1]

# Notebooks run under test (lesson 8 saves a measurement) write into a scratch data folder, never
# into the learner's own (~/.local/share/roofline-lessons). Kernels started by nbval inherit this.
os.environ["ROOFLINE_LESSONS_DATA"] = tempfile.mkdtemp(prefix="roofline-lessons-test-data-")


@pytest.fixture
def root() -> Path:
    return ROOT
