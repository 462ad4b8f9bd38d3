from pathlib import Path

import matplotlib
import pytest

matplotlib.use("Agg")  # kernels draw inline: see the conftest.py at the root

ROOT = Path(__file__).resolve().parents[1]

# The scratch data folder every test and notebook writes into is set by the conftest.py at the root.


@pytest.fixture
def root() -> Path:
    return ROOT
