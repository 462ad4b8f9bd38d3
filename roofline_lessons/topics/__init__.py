"""One module per idea a lesson teaches, built on :mod:`roofline_lessons.core` only.

- :mod:`.datasheets` — ridge tables, measured vs datasheet roofs, dense vs sparse (lesson 2).
- :mod:`.reports`    — operator tables (lesson 3).
- :mod:`.batching`   — decode sweeps over batch, critical batch, MoE experts touched (lesson 4).
- :mod:`.hybrid`     — per-step bytes by layer kind, the all-attention counterfactual (lesson 5).
- :mod:`.flash`      — tiled attention with an online softmax, HBM ↔ SRAM byte counts (lesson 6).
- :mod:`.levers`     — number-format recipes as levers; the FP8 gap hypotheses (lesson 7).
- :mod:`.serving`    — a request's timeline, continuous batching, speculation, cost (lesson 10).
- :mod:`.many_chips` — tensor / expert / pipeline splits compared, the all-reduce crossover (lesson 11).
"""
