"""How long the serving-engine simulation takes: 10,000 requests (the issue's target: a few seconds
on the course's 2-core machines). Prints figures; asserts nothing (benchmarks, not timed tests).

    .venv/bin/python benchmarks/simulate_speed.py
"""

import time

from roofline_lessons.topics.engine import EngineConfig, poisson_requests, simulate

CASES = (  # (label, rate requests/s, prompt, output, config)
    ("light load, chunked prefill 512", 10, 1024, 256, EngineConfig(chunk_tokens=512)),
    ("near saturation, chunked prefill 512", 25, 1024, 256, EngineConfig(chunk_tokens=512)),
    ("overloaded, no chunking", 60, 1024, 256, EngineConfig()),
    ("KV cache short: preemption by recompute", 60, 4096, 512, EngineConfig(max_running=512, memory_utilization=0.5)),
    ("disaggregated 1 prefill + 1 decode chip", 10, 1024, 256, EngineConfig(prefill_chips=1, decode_chips=1)),
)


def main() -> None:
    simulate("llama-3.1-8b", "h100-sxm", poisson_requests(5, 10, 128, 16))  # load the catalogs once
    print("10,000 requests of Llama-3.1-8B on one H100 SXM (estimate step costs)")
    for label, rate, prompt, output, cfg in CASES:
        t = time.perf_counter()
        s = simulate("llama-3.1-8b", "h100-sxm", poisson_requests(rate, 10_000, prompt, output, seed=1), cfg)
        wall = time.perf_counter() - t
        print(f"  {label:<42} {wall:6.2f} s wall   {s.steps['start_s'].size:>8,} steps   "
              f"{s.preemptions:>6,} preemptions")


if __name__ == "__main__":
    main()
