"""The flake check: run a command (the whole suite: `make test`) several times in a row while one
busy process per core competes for the CPU, and stop at the first failure.

A test whose outcome depends on how fast this machine happens to be fails here sooner or later; a
suite that passes every run under this load asserts nothing about speed. Speed lives in benchmarks/.

    make test-under-load            # 5 runs
    make test-under-load RUNS=10

Prints one line per run (its exit status and wall time) and a summary; exit status 1 if a run
failed. The load processes are stopped however the runs end (including Ctrl-C).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

BUSY = "while True:\n    pass\n"


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity, which a container's limit narrows)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def start_load(processes: int) -> list[subprocess.Popen]:
    """``processes`` busy loops at normal priority: they compete with the suite for the cores as
    another program's work would."""
    return [subprocess.Popen([sys.executable, "-c", BUSY], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for _ in range(processes)]


def stop_load(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        p.kill()
    for p in procs:
        p.wait(timeout=10)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="how many times to run the command (default 5)")
    parser.add_argument("--load", type=int, default=usable_cores(),
                        help="busy processes competing for the CPU (default: one per core this process may use)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command to run, after --")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command to run after --, e.g. -- make test")
    if args.runs < 1 or args.load < 0:
        parser.error(f"--runs must be ≥ 1 and --load ≥ 0, got {args.runs} and {args.load}")
    load = start_load(args.load)
    print(f"under load: {args.load} busy process(es) on {usable_cores()} core(s); running {' '.join(command)} "
          f"{args.runs} time(s)", flush=True)
    passed = failed = 0
    try:
        for run in range(1, args.runs + 1):
            t0 = time.monotonic()
            status = subprocess.call(command)
            wall = time.monotonic() - t0
            print(f"under load: run {run}/{args.runs}: exit status {status}, {wall / 60:.0f} min {wall % 60:02.0f} s",
                  flush=True)
            if status == 0:
                passed += 1
            else:
                failed += 1
                break
    finally:
        stop_load(load)
    print(f"under load: {passed} passed, {failed} failed", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
