"""Benchmark: the workshop JupyterHub (workshop/jupyterhub_config.py) under a room's load.

Starts the hub on free loopback ports, then N simulated learners at once (threads), each through the
hub's REST API as a browser would: log in with their own password (random per run; the first login
sets it), start a server as their own system account, pull the course
with nbgitpuller, start a kernel on lesson 1, run every code cell of notebooks/01_the_concept.ipynb
over the kernel's websocket, then one dashboard update (a slider move on lesson 1's dashboard: the
kernel recomputes the view, redraws the chart and replaces the panel). Measures, per learner: spawn
time (request to server ready), pull time, lesson-1 time, the dashboard update, the memory of the
learner's server and kernel process trees (RSS; USS too, the pages only that learner holds) and the
CPU time they used. Then stops everything. Loopback only; every wait is bounded.

Prints p50/p95 per phase, memory per learner, the hub's own memory, and LAST the line
``hub: N learners, F failures, spawn p95 S s, memory per learner M MiB`` (M: median RSS per learner).
docs/instructor-guide.md turns these figures into a sizing rule.

Run: .venv/bin/python benchmarks/hub_load.py [--learners 20]   (or `make bench`; needs `make hub`)
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workshop"))
import hubctl  # noqa: E402

from roofline_lessons.core.units import binary, num  # noqa: E402

#: random per run, the hub lives on loopback for the length of the run and allows only the simulated names
ADMIN_PASSWORD = f"bench-admin-{os.urandom(9).hex()}"
MIB = 2**20
# One dashboard update in lesson 1, as a slider move makes it: the kernel's observer recomputes the
# view, redraws the chart and replaces the panel's HTML (the `dashboard` the notebook's last cell made).
DASHBOARD_UPDATE = """
_w = dashboard.controls["batch"]
_before = dashboard.panel.value
_w.index = (_w.index + 1) % len(_w.options)
assert dashboard.panel.value != _before, "the panel did not change"
assert 'alt="' in dashboard.panel.value
"""


@dataclass
class Result:
    name: str
    spawn_s: float = math.nan
    pull_s: float = math.nan
    lesson_s: float = math.nan
    update_s: float = math.nan
    error: str = ""


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile ``q`` (0–100) of ``values``."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


def learner_run(hub: hubctl.Hub, name: str, password: str, repo: str, branch: str, start: threading.Barrier,
                timeout_s: float) -> Result:
    result = Result(name)
    try:
        learner = hubctl.Learner(hub.url, name, timeout_s=timeout_s)
        start.wait(timeout=timeout_s)
        if not learner.login(password):
            raise hubctl.HubError(f"{name}: login refused")
        result.spawn_s = learner.spawn(timeout_s=timeout_s)
        t0 = time.perf_counter()
        learner.pull(repo, branch, timeout_s=timeout_s)
        result.pull_s = time.perf_counter() - t0
        path = f"{hubctl.TARGET_DIR}/{hubctl.LESSON1}"
        cells = hubctl.notebook_code_cells(learner.contents(path)["content"])
        kernel = learner.start_kernel(path)
        result.lesson_s = learner.execute(kernel, cells, timeout_s=timeout_s)
        result.update_s = learner.execute(kernel, [DASHBOARD_UPDATE], timeout_s=timeout_s)
    except Exception as err:  # noqa: BLE001 — a learner's failure is counted and reported, not fatal
        result.error = f"{type(err).__name__}: {err}"
    return result


def summary(label: str, values: list[float]) -> str:
    if not values:
        return f"{label:<28} no learner got this far"
    return f"{label:<28} p50 {num(percentile(values, 50))} s, p95 {num(percentile(values, 95))} s, " \
           f"max {num(max(values))} s"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--learners", type=int, default=20, help="simulated learners, at once (default 20)")
    parser.add_argument("--timeout-s", type=float, default=600, help="bound on each learner's every step (s)")
    args = parser.parse_args(argv)
    if args.learners < 1:
        parser.error(f"--learners must be at least 1, got {args.learners}")
    gaps = hubctl.missing()
    if gaps:
        print("hub_load: cannot run; missing: " + "; ".join(gaps) + ". Run `make hub`.", file=sys.stderr)
        return 2
    import psutil

    n = args.learners
    names = [f"bench{os.urandom(2).hex()}{i:03d}" for i in range(1, n + 1)]
    passwords = {name: f"{name}-{os.urandom(9).hex()}" for name in names}
    with tempfile.TemporaryDirectory(prefix="hub-load-", dir="/tmp") as scratch:
        os.chmod(scratch, 0o755)  # the learners' accounts traverse it to their homes and the course copy
        homes = Path(scratch) / "h"
        homes.mkdir(mode=0o755)
        os.chmod(homes, 0o755)
        repo, branch = hubctl.course_source(Path(scratch), copy=True)
        print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
              f"{binary(psutil.virtual_memory().total)} memory; Python {platform.python_version()}")
        print(f"course: {repo} ({branch}); {n} learners at once")
        wall0 = time.perf_counter()
        hub = hubctl.Hub(Path(scratch) / "hub", tuple(names), {"admin_password": ADMIN_PASSWORD}, homes_dir=homes,
                         spawn_timeout_s=int(args.timeout_s),
                         extra_env={"WORKSHOP_COURSE_REPO": repo, "WORKSHOP_COURSE_BRANCH": branch,
                                    # n first logins from one address: the per-address throttle counts
                                    # only failures, but keep a wrong one from locking the whole run out
                                    "WORKSHOP_LOGIN_MAX_FAILURES": str(max(5, n))})
        try:
            with hub:
                print(f"hub up in {num(time.perf_counter() - wall0)} s at {hub.url}")
                barrier = threading.Barrier(n)
                with ThreadPoolExecutor(max_workers=n) as pool:
                    results = list(pool.map(lambda name: learner_run(hub, name, passwords[name], repo, branch, barrier,
                                                                    args.timeout_s),
                                            names))
                busy_s = time.perf_counter() - wall0
                trees = hub.learner_processes()
                memory = {name: hubctl.tree_memory_bytes(procs) for name, procs in trees.items()}
                cpu = {name: hubctl.tree_cpu_seconds(procs) for name, procs in trees.items()}
                own = [psutil.Process(hub.proc.pid)] + [p for p in hub.descendants()
                                                       if not any(p in procs for procs in trees.values())]
                hub_rss, _ = hubctl.tree_memory_bytes(own)
                hub_cpu_s = hubctl.tree_cpu_seconds(own)
                used = psutil.virtual_memory()
                load_1min = os.getloadavg()[0]
        finally:
            hubctl.remove_accounts(names, homes)
        stop_s = time.perf_counter() - wall0 - busy_s

    ok = [r for r in results if not r.error]
    failures = [r for r in results if r.error]
    print(summary("spawn (request -> ready)", [r.spawn_s for r in results if not math.isnan(r.spawn_s)]))
    print(summary("nbgitpuller pull", [r.pull_s for r in results if not math.isnan(r.pull_s)]))
    print(summary("lesson 1, all code cells", [r.lesson_s for r in results if not math.isnan(r.lesson_s)]))
    print(summary("dashboard update", [r.update_s for r in ok]))
    print(summary("execution (lesson + update)", [r.lesson_s + r.update_s for r in ok]))
    rss = [memory[r.name][0] for r in ok if r.name in memory]
    uss = [memory[r.name][1] for r in ok if r.name in memory]
    if rss:
        print(f"memory per learner (server + kernel) RSS p50 {num(statistics.median(rss) / MIB)} MiB, "
              f"max {num(max(rss) / MIB)} MiB; USS p50 {num(statistics.median(uss) / MIB)} MiB")
    cpu_s = [cpu[r.name] for r in ok if r.name in cpu]
    if cpu_s:
        print(f"CPU per learner (server + kernel, start to dashboard update) p50 {num(statistics.median(cpu_s))} s, "
              f"max {num(max(cpu_s))} s; the hub, proxy and culler used {num(hub_cpu_s)} s in all")
    print(f"hub + proxy + idle culler RSS {num(hub_rss / MIB)} MiB; machine memory in use at the end "
          f"{binary(used.total - used.available)}; 1-minute load {num(load_1min)}")
    print(f"wall time: {num(busy_s)} s for all {n} learners, {num(stop_s)} s to stop everything")
    for r in failures:
        print(f"FAILED {r.name}: {r.error}")
    memory_mib = statistics.median(rss) / MIB if rss else math.nan
    spawns = [r.spawn_s for r in results if not math.isnan(r.spawn_s)]
    spawn_p95 = percentile(spawns, 95) if spawns else math.nan
    print(f"hub: {n} learners, {len(failures)} failures, spawn p95 {num(spawn_p95)} s, "
          f"memory per learner {num(memory_mib)} MiB")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
