"""Benchmark: wall time to execute each notebook in a fresh kernel (what nbval and a learner's
"Run All" pay). Target: each lesson notebook <= 5 s, kernel start-up excluded.

Run: .venv/bin/python benchmarks/notebook_times.py  (or `make bench`)
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
TARGET_S = 5.0


def time_notebook(path: Path) -> tuple[float, float]:
    nb = nbformat.read(str(path), as_version=4)
    client = NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}})
    t0 = time.perf_counter()
    with client.setup_kernel():
        started = time.perf_counter()
        for index, cell in enumerate(nb.cells):
            client.execute_cell(cell, index)
        done = time.perf_counter()
    return started - t0, done - started


def main() -> None:
    os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    paths = sorted(p for d in ("notebooks", "exercises", "solutions") for p in (ROOT / d).glob("[0-9]*.ipynb"))
    print(f"{'notebook':40} {'kernel start':>12} {'cells':>8}  target")
    worst = 0.0
    for p in paths:
        start, run = time_notebook(p)
        worst = max(worst, run)
        ok = "ok" if run <= TARGET_S else "SLOW"
        print(f"{str(p.relative_to(ROOT)):40} {start:10.2f} s {run:6.2f} s  {ok} (<= {TARGET_S:.0f} s)")
    print(f"slowest notebook: {worst:.2f} s of cell execution")
    sys.exit(0)


if __name__ == "__main__":
    main()
