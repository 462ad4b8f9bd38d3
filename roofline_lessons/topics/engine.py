"""Serving engines: an iteration-level simulation of a scheduler on the course's step costs.

Lesson 10 prices one request, or one static batch, on an idle server. A serving engine schedules
every **iteration**: requests arrive at random, wait in a queue, are admitted while the KV cache
has free blocks, have their prompts prefilled (whole or in chunks) inside the running batch's
decode steps, are preempted when the cache runs out, and leave when their last token is out.
:func:`simulate` plays that out request by request and step by step; each step's seconds come from
the same per-operator cost model as :func:`~roofline_lessons.core.placement.place`, at the step's
own mix of decode tokens and prefill chunks, by the **estimate**'s rules or the **lower bound**'s
(``cost=``).

**Everything this module prints is an estimate**, even with ``cost="lower_bound"``: the steps are
then priced at their lower bounds, but the queueing, the batching and the preemption follow this
scheduler's policy, and another policy can finish a given request sooner. The conventions
(:data:`CONVENTIONS`) are listed beside every figure the lesson and the CLI print.

Why a plain event loop and not a simulation library (SimPy, salabim): an engine's scheduler is
itself a loop — build a batch under a token budget, run one step, update every request — so the
code reads like the thing it simulates, one iteration per pass, with no processes, generators or
callbacks to follow; and it keeps the package's dependencies to numpy. Speed comes from the cost
tables (every step cost is a few table look-ups, :class:`StepCosts`) and from jumping over a run of
decode-only steps in one numpy pass when nothing can change the batch before it ends (no arrival,
no finish, no new KV block short).

Each step is priced from per-operator counts, not from one ``place()`` call per step: the counts
of a step are linear in its parts, so a step is

    weights(T) + Σ over decode tokens of their per-token work at their contexts
               + Σ over prefill chunks of their work over their cached history

with T the step's tokens, the weights (and, for an MoE, the experts T tokens touch under uniform
routing) read once for all of them — :func:`~roofline_lessons.topics.serving.mixed_step`'s rule —
and a chunk priced by :func:`~roofline_lessons.topics.serving.request_timeline`'s extension rule.
The tables hold those counts for every context and chunk length the run needs, so a one-request run
reproduces lesson 10's timeline step for step (a test checks it).

Disaggregation (DistServe, Zhong et al., OSDI 2024; Splitwise, Patel et al., ISCA 2024): a prefill
pool and a decode pool, each of instances of ``tensor_parallel`` chips. A request prefills on a
prefill instance (its first token is out when its prefill ends), its KV cache is then sent to a
decode instance over the link between them, and it decodes there. Requests go round-robin to the
instances of a pool in arrival order; with round-robin the instances do not interact, so each is
simulated alone (the prefill pool first, then the decode pool fed by its transfers).

Goodput follows DistServe: the highest request rate at which at least ``slo_attainment`` of the
requests meet both the TTFT and the TPOT objective (:func:`max_goodput_rate`); a run at one rate
reports its attainment and the rate of requests that met both (:attr:`Simulation.slo_met_requests_per_s`).
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections import deque
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..core.errors import RooflineInputError, whole_number
from ..core.hardware import Part, get_part
from ..core.memory import VLLM_DEFAULT_MEMORY_UTILIZATION, check_memory_utilization
from ..core.models import Model, get_model
from ..core.parallel import Parallelism
from ..core.placement import place
from .serving import DTYPE_FIELDS, _dtypes, _number, _op

#: vLLM's default KV-cache block size, tokens per block (``--block-size``, vllm/config/cache.py)
DEFAULT_BLOCK_TOKENS = 16
#: vLLM's ``SchedulerConfig.DEFAULT_MAX_NUM_BATCHED_TOKENS``: tokens one iteration may carry
#: (vllm/config/scheduler.py; ``EngineArgs`` raises it per GPU and usage context)
DEFAULT_TOKEN_BUDGET = 2048
#: vLLM's ``SchedulerConfig.DEFAULT_MAX_NUM_SEQS``: sequences one iteration may carry (same file)
DEFAULT_MAX_RUNNING = 128
#: which figure prices each step
COSTS = ("estimate", "lower_bound")
#: what a preemption does to the victim's KV cache
PREEMPTIONS = ("recompute", "swap")
#: how requests join the running batch
SCHEDULERS = ("continuous", "static")

#: the simulation's conventions: every figure it reports depends on them
CONVENTIONS = (
    "every figure is an estimate of this scheduler's policy on these step costs, not a bound",
    "first come, first served; decode tokens are scheduled before prefill chunks; a request is admitted only "
    "while its next chunk's KV blocks are free",
    "preemption picks the most recently admitted running request (vLLM's policy); recompute frees its blocks "
    "and prefills prompt + generated tokens again, swap copies its blocks to host memory over the host link "
    "and back, in series with the step, with unlimited host memory",
    "one shared prefix resident for the whole run (its full blocks only, no eviction); a hit skips its prefill",
    "no scheduler, sampling or kernel-launch time between steps; no speculative decoding",
    "with pools: round-robin routing, the KV cache sent over a dedicated link per chip when the prefill ends "
    "(the decode instance admits the request when the transfer is in and blocks are free)",
    "static batching admits a new batch only when the previous one has finished and prefills it in one step",
)


# ---- requests ----------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Requests:
    """A workload: each request's arrival time (seconds from the start), prompt and output tokens."""

    arrival_s: np.ndarray
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    source: str = "given"  #: "poisson at R requests/s (seed S)" or the trace file's name

    def __post_init__(self):
        a = np.asarray(self.arrival_s, dtype=float)
        p = np.asarray(self.prompt_tokens, dtype=np.int64)
        o = np.asarray(self.output_tokens, dtype=np.int64)
        if not (a.ndim == p.ndim == o.ndim == 1) or not (a.size == p.size == o.size) or a.size == 0:
            raise RooflineInputError(f"requests need equal, non-empty lists of arrivals, prompt and output tokens "
                                     f"(got {a.size}, {p.size}, {o.size})")
        if not np.all(np.isfinite(a)) or np.any(a < 0):
            raise RooflineInputError(f"arrival times must be finite seconds >= 0, got {a[~(np.isfinite(a) & (a >= 0))][0]!r}")
        if np.any(p < 1) or np.any(o < 1):
            raise RooflineInputError(f"every request needs prompt_tokens >= 1 and output_tokens >= 1 "
                                     f"(got prompt {int(p.min())}, output {int(o.min())})")
        order = np.argsort(a, kind="stable")
        for name, v in (("arrival_s", a[order]), ("prompt_tokens", p[order]), ("output_tokens", o[order])):
            v.setflags(write=False)
            object.__setattr__(self, name, v)

    @property
    def count(self) -> int:
        return int(self.arrival_s.size)


def poisson_requests(rate_per_s, count, prompt_tokens, output_tokens, *, seed=0) -> Requests:
    """``count`` requests arriving as a Poisson process at ``rate_per_s`` (exponential gaps, the
    first gap included), each of ``prompt_tokens`` in and ``output_tokens`` out; seeded."""
    rate = _positive("rate_per_s", rate_per_s)
    n = whole_number("requests", count, 1)
    p = whole_number("prompt_tokens", prompt_tokens, 1)
    o = whole_number("output_tokens", output_tokens, 1)
    s = whole_number("seed", seed, 0)
    gaps = np.random.default_rng(s).exponential(1.0 / rate, size=n)
    return Requests(np.cumsum(gaps), np.full(n, p), np.full(n, o), source=f"poisson at {rate:g} requests/s (seed {s})")


def read_trace(path) -> Requests:
    """A trace file of requests: CSV with a header ``arrival_s,prompt_tokens,output_tokens`` (extra
    columns ignored), or JSON lines with those keys. Arrival times are seconds from the start."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise RooflineInputError(f"cannot read trace {str(path)!r}: {exc.strerror or exc}") from None
    keys = ("arrival_s", "prompt_tokens", "output_tokens")
    rows = []
    try:
        if text.lstrip().startswith("{"):
            rows = [json.loads(line) for line in text.splitlines() if line.strip()]
        else:
            rows = list(csv.DictReader(io.StringIO(text)))
        cols = [[float(r[k]) for r in rows] for k in keys]
    except (KeyError, ValueError, TypeError, json.JSONDecodeError) as exc:
        raise RooflineInputError(f"trace {str(path)!r} must have the columns {', '.join(keys)} with numbers "
                                 f"in every row ({type(exc).__name__}: {exc})") from None
    if not rows:
        raise RooflineInputError(f"trace {str(path)!r} has no requests")
    for k, v in zip(keys[1:], cols[1:]):
        if any(x != math.floor(x) for x in v):
            raise RooflineInputError(f"trace {str(path)!r}: {k} must be whole numbers")
    return Requests(np.array(cols[0]), np.array(cols[1]), np.array(cols[2]), source=path.name)


def _one(name, value, allowed: str, ok) -> float:
    """One number that ``ok`` accepts (``allowed`` says which, for the error)."""
    v = _number(name, value, allowed, ok)
    if not isinstance(v, float):
        raise RooflineInputError(f"{name} must be a single number ({allowed}), got {value!r}")
    return v


def _positive(name, value) -> float:
    return _one(name, value, "a number > 0", lambda v: v > 0)


def _share(name, value, allowed: str, ok) -> float:
    return _one(name, value, f"a share in {allowed}", ok)


def _choice(name, value, allowed):
    if value not in allowed:
        raise RooflineInputError(f"{name} must be one of {', '.join(allowed)}; got {value!r}")
    return value


# ---- the engine's settings ------------------------------------------------------------------------


@dataclass(frozen=True)
class EngineConfig:
    """A serving engine's settings (the defaults are vLLM's, each named where it is defined)."""

    cost: str = "estimate"  #: :data:`COSTS`
    scheduler: str = "continuous"  #: :data:`SCHEDULERS`
    chunk_tokens: int | None = None  #: most prompt tokens of one request per step; None = a prompt in one step
    token_budget: int = DEFAULT_TOKEN_BUDGET  #: most tokens per step (decode tokens + prefill chunks)
    max_running: int = DEFAULT_MAX_RUNNING  #: most sequences per step
    block_tokens: int = DEFAULT_BLOCK_TOKENS  #: tokens per KV-cache block
    memory_utilization: float = VLLM_DEFAULT_MEMORY_UTILIZATION  #: share of each chip's memory the engine fills
    preemption: str = "recompute"  #: :data:`PREEMPTIONS`
    prefix_cached_tokens: int = 0  #: a shared prefix of this many prompt tokens (its full blocks are cached)
    prefix_hit_rate: float = 1.0  #: share of requests whose prompt starts with that prefix
    tensor_parallel: int = 1  #: chips per engine instance (one copy of the model, tensor parallel)
    chips: int = 1  #: colocated: chips in all (instances = chips ÷ tensor_parallel)
    prefill_chips: int | None = None  #: disaggregated: the prefill pool's chips (with ``decode_chips``)
    decode_chips: int | None = None  #: disaggregated: the decode pool's chips
    seed: int = 0  #: seeds the prefix hits

    def __post_init__(self):
        _choice("cost", self.cost, COSTS)
        _choice("scheduler", self.scheduler, SCHEDULERS)
        _choice("preemption", self.preemption, PREEMPTIONS)
        if self.chunk_tokens is not None:
            whole_number("chunk_tokens", self.chunk_tokens, 1)
        whole_number("token_budget", self.token_budget, 1)
        whole_number("max_running", self.max_running, 1)
        whole_number("block_tokens", self.block_tokens, 1)
        check_memory_utilization(self.memory_utilization)
        whole_number("prefix_cached_tokens", self.prefix_cached_tokens, 0)
        _share("prefix_hit_rate", self.prefix_hit_rate, "[0, 1]", lambda v: (v >= 0) & (v <= 1))
        t = whole_number("tensor_parallel", self.tensor_parallel, 1)
        whole_number("seed", self.seed, 0)
        if (self.prefill_chips is None) != (self.decode_chips is None):
            raise RooflineInputError("disaggregation needs both prefill_chips and decode_chips "
                                     f"(got {self.prefill_chips!r} and {self.decode_chips!r})")
        pools = (("chips", self.chips),) if self.prefill_chips is None else (
            ("prefill_chips", self.prefill_chips), ("decode_chips", self.decode_chips))
        for name, k in pools:
            k = whole_number(name, k, 1)
            if k % t:
                raise RooflineInputError(f"{name} ({k}) must be a multiple of tensor_parallel ({t}): "
                                         f"each instance holds one copy on {t} chip(s)")
        if self.prefill_chips is not None and self.scheduler == "static":
            raise RooflineInputError("static batching is simulated on colocated instances only; "
                                     "drop prefill_chips/decode_chips or use scheduler='continuous'")

    @property
    def disaggregated(self) -> bool:
        return self.prefill_chips is not None

    @property
    def total_chips(self) -> int:
        return self.chips if not self.disaggregated else self.prefill_chips + self.decode_chips


# ---- step costs --------------------------------------------------------------------------------


class StepCosts:
    """Per-chip step costs of one engine instance, as tables over context and chunk lengths.

    Built once per run (a handful of vectorised ``place()`` calls); :meth:`step_s` then prices a
    step of any mix from look-ups. Every figure is one chip's (the instance's ``tensor_parallel``
    chips share each step); with ``cost="estimate"`` a step takes max(tensor + dequantisation,
    unfused bytes ÷ bandwidth) + communication, with ``"lower_bound"`` max(tensor, dequantisation,
    compulsory bytes ÷ bandwidth, least communication).
    """

    def __init__(self, model: Model, part: Part, fields: dict, *, max_context: int, max_step_tokens: int,
                 cost: str, block_tokens: int):
        self.model, self.part, self.fields, self.cost = model, part, fields, cost
        L = int(max_context) + 2
        self.max_context = L - 2
        n = np.arange(1, L + 1, dtype=float)  # prefill lengths 1..L
        c = np.arange(0, L + 1, dtype=float)  # decode contexts 0..L
        dec = place(model, part, phase="decode", batch=1, context_tokens=c, **fields)
        if dec.parallelism.pipeline > 1:
            raise RooflineInputError("the simulation splits an instance by tensor parallelism only (no pipeline stages)")
        pre = place(model, part, phase="prefill", batch=1, prompt_tokens=n, **fields)
        self._ref = dec
        ts = dec.tensor_seconds
        # rows (tensor seconds, unfused bytes, compulsory bytes), one column per length:
        # a decode token at context c, without the weights: its FLOPs, its activations, its KV read and write
        z = np.zeros(1)
        dc = dec.cost
        dwb = np.asarray(dc.weight_bytes, dtype=float)
        self._dec_tab = np.stack(np.broadcast_arrays(
            ts(dc.weight_matmul_flops, dc.flops - dc.weight_matmul_flops, dc.unquantized_matmul_flops),
            np.asarray(dc.bytes, dtype=float) - dwb, np.asarray(dc.compulsory_bytes, dtype=float) - dwb)).astype(float)
        # a prefill of n tokens (column n), and the per-token work of a cached prefix of h tokens to take off
        pc = pre.cost
        lm = _op(pre, "lm_head")
        pad = lambda v: np.concatenate([z, np.broadcast_to(np.asarray(v, dtype=float), n.shape)])  # noqa: E731
        self._full_tab = np.stack([pad(ts(pc.weight_matmul_flops, pc.flops - pc.weight_matmul_flops,
                                          pc.unquantized_matmul_flops)), pad(pc.bytes), pad(pc.compulsory_bytes)])
        self._full_weights = pad(pc.weight_bytes)
        sub_wmf = pc.weight_matmul_flops - lm.weight_matmul_flops
        history_read = (dc.kv_read_bytes - dc.kv_scratch_bytes + dc.state_read_bytes)[1:]  # contexts 1..L
        self._sub_tab = np.stack([
            pad(ts(sub_wmf, (pc.flops - lm.flops) - sub_wmf, pc.unquantized_matmul_flops - lm.unquantized_matmul_flops)),
            pad(pc.activation_bytes - lm.activation_bytes + pc.kv_write_bytes),
            pad(pc.kv_write_bytes + pc.io_bytes - lm.io_bytes * lm.layers - history_read)])
        # the weights of a step of T tokens, its dequantisation and communication (a decode step at context 0)
        self._max_tokens = int(max_step_tokens)
        t = np.arange(1, self._max_tokens + 1, dtype=float)
        g = place(model, part, phase="decode", batch=t, context_tokens=0, **fields)
        self._weights = np.concatenate([z, np.broadcast_to(np.asarray(g.cost.weight_bytes, dtype=float), t.shape)])
        self._dequant = np.concatenate([z, np.broadcast_to(np.asarray(g.dequant_time_s, dtype=float), t.shape)])
        comm = g.comm is not None
        self._comm = np.concatenate([z, np.broadcast_to(np.asarray(g.comm_time_s if comm else 0.0, dtype=float), t.shape)])
        self._comm_lb = np.concatenate([z, np.broadcast_to(np.asarray(g.comm_lower_bound_s, dtype=float), t.shape)])
        self._has_comm = comm
        self.bandwidth_bytes_per_s = float(dec.bandwidth_bytes_per_s)
        # memory: one sequence's KV cache + state holding c tokens (index c), per chip
        foot = dec.footprint  # decode at context c holds c + 1 tokens
        per_seq = np.concatenate([z, np.asarray(foot.kv_cache_bytes, dtype=float) + np.asarray(foot.state_bytes, dtype=float)])
        self.sequence_bytes = per_seq[: L + 1]
        self.weight_bytes_per_chip = float(foot.weight_bytes)
        grow = (per_seq[L] - per_seq[max(L - 64, 1)]) / (L - max(L - 64, 1))
        per_token = grow if grow > 0 else max(per_seq[1], 1.0)
        self.block_tokens = int(block_tokens)
        self.block_bytes = float(per_token * block_tokens)
        self.blocks_for = np.ceil(self.sequence_bytes / self.block_bytes - 1e-9).astype(np.int64)
        self.blocks_for[0] = 0

    def _g(self, T: int):
        if T <= self._max_tokens:
            return self._weights[T], self._dequant[T], self._comm[T], self._comm_lb[T]
        g = place(self.model, self.part, phase="decode", batch=T, context_tokens=0, **self.fields)
        return (float(g.cost.weight_bytes), float(g.dequant_time_s),
                float(g.comm_time_s) if g.comm is not None else 0.0, float(g.comm_lower_bound_s))

    def chunk_parts(self, new, cached) -> np.ndarray:
        """Rows (tensor seconds, unfused bytes, compulsory bytes) of prefill chunks of ``new`` tokens over
        ``cached`` ones, without the weights (one column per chunk)."""
        new, cached = np.asarray(new, dtype=np.int64), np.asarray(cached, dtype=np.int64)
        whole = new + cached
        out = self._full_tab[:, whole] - np.where(cached > 0, self._sub_tab[:, cached], 0.0)
        out[1:] -= self._full_weights[whole]  # the weights leave; the step's own are added once
        return out

    def _time(self, T: int, tensor, nbytes, compulsory):
        w, dq, comm, comm_lb = self._g(T)
        if self.cost == "estimate":
            if self._has_comm:
                return self._ref.step_time_for_s(tensor + dq, (nbytes + w) / self.bandwidth_bytes_per_s, comm,
                                                 stage_only=True)
            return np.maximum(tensor + dq, (nbytes + w) / self.bandwidth_bytes_per_s)
        return np.maximum(np.maximum(np.maximum(tensor, dq), (compulsory + w) / self.bandwidth_bytes_per_s), comm_lb)

    def step_s(self, decode_contexts, chunk_new=(), chunk_cached=()) -> float:
        """Seconds of one step: decode tokens at ``decode_contexts`` (tokens cached before each) and
        prefill chunks of ``chunk_new`` tokens over ``chunk_cached`` (arrays of equal length)."""
        d = np.asarray(decode_contexts, dtype=np.int64)
        T = int(d.size + np.sum(chunk_new))
        if T == 0:
            return 0.0
        parts = self._dec_tab[:, d].sum(axis=1)
        if len(chunk_new):
            parts = parts + self.chunk_parts(chunk_new, chunk_cached).sum(axis=1)
        return float(self._time(T, parts[0], parts[1], parts[2]))

    def decode_run_s(self, contexts, steps: int) -> np.ndarray:
        """Seconds of ``steps`` decode-only steps of the sequences at ``contexts``, each step one token
        longer (an array of ``steps``)."""
        d = np.asarray(contexts, dtype=np.int64)
        grid = d[:, None] + np.arange(steps)[None, :]
        parts = self._dec_tab[:, grid].sum(axis=1)
        return np.asarray(self._time(int(d.size), parts[0], parts[1], parts[2]), dtype=float)

    def transfer_bytes(self, tokens) -> float:
        """Bytes of one sequence's KV cache (and state) holding ``tokens``, per chip."""
        return float(self.sequence_bytes[int(tokens)])


# ---- one instance ------------------------------------------------------------------------------


@dataclass
class _State:
    """Per-request bookkeeping shared by the instances of one run (arrays indexed by request)."""

    prompt: np.ndarray
    output: np.ndarray
    hit: np.ndarray  #: prompt tokens a prefix hit covers
    generated: np.ndarray
    ctx: np.ndarray  #: tokens whose KV is in this instance's cache
    prefill_left: np.ndarray
    held: np.ndarray  #: KV blocks held (beyond the shared prefix's)
    first_token_s: np.ndarray
    finish_s: np.ndarray
    first_scheduled_s: np.ndarray
    preemptions: np.ndarray


class _Log:
    """The step log of one instance: single steps as rows, jumped runs as arrays."""

    NAMES = ("start_s", "duration_s", "decode_tokens", "prefill_tokens", "running", "blocks")

    def __init__(self):
        self.rows: list[tuple] = []
        self.runs: list[tuple] = []

    def add(self, start, dur, dec, pre, run, blocks):
        self.rows.append((start, dur, dec, pre, run, blocks))

    def add_run(self, start, dur, size, blocks):
        """A run of decode-only steps of ``size`` sequences (arrays of start, duration, blocks)."""
        k = start.size
        self.runs.append((start, dur, np.full(k, float(size)), np.zeros(k), np.full(k, float(size)), blocks))

    def arrays(self, instance: int) -> dict:
        parts = [np.array(self.rows, dtype=float).reshape(-1, 6)] + [np.stack(r, axis=1) for r in self.runs]
        table = np.concatenate(parts)
        table = table[np.argsort(table[:, 0], kind="stable")]
        out = dict(zip(self.NAMES, table.T.copy()))
        out["instance"] = np.full(table.shape[0], instance)
        return out


class _Instance:
    """One engine instance's scheduler loop (``role`` "both", "prefill" or "decode")."""

    def __init__(self, costs: StepCosts, cfg: EngineConfig, st: _State, role: str, total_blocks: int,
                 prefix_blocks: int, swap_bytes_per_s: float):
        self.c, self.cfg, self.st, self.role = costs, cfg, st, role
        self.total_blocks, self.free = total_blocks, total_blocks - prefix_blocks
        self.prefix_blocks = prefix_blocks
        self.swap_bytes_per_s = swap_bytes_per_s
        self.log = _Log()
        self.handoffs: list[tuple[float, int]] = []  #: (prefill end, request) for a prefill instance
        self.preemptions = 0
        self._swapped: dict[int, int] = {}  #: request → blocks it holds in host memory
        self.swap_s = 0.0  #: seconds of swap transfers, out and back (in series with the steps)

    def _need(self, r, tokens) -> int:
        """Blocks request ``r`` must add to hold ``tokens`` tokens (its share beyond the shared prefix)."""
        return max(int(self.c.blocks_for[tokens] - (self.prefix_blocks if self.st.hit[r] else 0)) - int(self.st.held[r]), 0)

    def run(self, ids: np.ndarray, ready_s: np.ndarray) -> None:
        st, cfg, c = self.st, self.cfg, self.c
        order = np.argsort(ready_s, kind="stable")
        ids, ready_s = ids[order], ready_s[order]
        # a request too long for an empty instance can never run
        longest = int(np.argmax(st.prompt[ids] + st.output[ids])) if ids.size else 0
        if ids.size and self._need(int(ids[longest]), int(st.prompt[ids[longest]] + st.output[ids[longest]])) > self.free:
            r = int(ids[longest])
            raise RooflineInputError(
                f"a request of {int(st.prompt[r]):,} + {int(st.output[r]):,} tokens needs more KV-cache blocks than the "
                f"instance has ({self.free:,} of {c.block_tokens} tokens after the weights): it does not fit; shorten "
                "it, or raise memory_utilization or tensor_parallel")
        n = ids.size
        waiting: deque[int] = deque()
        swapped: deque[int] = deque()
        running: list[int] = []
        nxt, t = 0, 0.0
        chunk_cap = cfg.chunk_tokens
        static = cfg.scheduler == "static"
        # without chunking a whole prompt must fit one step: vLLM then requires max_num_batched_tokens to
        # cover the longest request, so the budget is raised to it
        step_budget = cfg.token_budget if chunk_cap is not None else max(
            cfg.token_budget, int(np.max(st.prompt[ids] + st.output[ids])) if ids.size else 0)
        while nxt < n or waiting or swapped or running:
            while nxt < n and ready_s[nxt] <= t:
                waiting.append(int(ids[nxt]))
                nxt += 1
            if not (waiting or swapped or running):
                t = float(ready_s[nxt])
                continue
            if running and not swapped and (static or not waiting) and not np.any(st.prefill_left[running]):
                done = self._decode_run(running, t, math.inf if static or nxt >= n else float(ready_s[nxt]))
                if done is not None:
                    t = done
                    running = [r for r in running if st.finish_s[r] != st.finish_s[r]]  # nan: still running
                    continue
            extra_s = 0.0
            budget = step_budget
            # 1. the running batch: decode tokens first (each may need a new block), then prefill chunks
            run = np.array(running, dtype=np.int64)
            decoding = run[st.prefill_left[run] == 0]
            needs = self._needs(decoding, st.ctx[decoding] + 1)
            dec: list[int] = []
            if decoding.size <= budget and int(needs.sum()) <= self.free:
                self._take_all(decoding, needs)
                dec = decoding.tolist()
                budget -= decoding.size
            else:  # short of blocks or budget: one by one, preempting the newest when blocks run out
                i = 0
                while i < len(running):
                    r = running[i]
                    if st.prefill_left[r] > 0:
                        i += 1
                        continue
                    need = self._need(r, st.ctx[r] + 1)
                    while need > self.free and running[-1] != r:
                        extra_s += self._preempt(running.pop(), waiting, swapped, dec)
                    if need > self.free:  # the request itself is the newest: preempt it
                        extra_s += self._preempt(running.pop(), waiting, swapped, dec)
                        break
                    if budget <= 0:
                        break
                    self._take(r, need)
                    dec.append(r)
                    budget -= 1
                    i += 1
            chunks: list[tuple[int, int, int]] = []  # (request, new tokens, cached tokens)
            for r in running:
                if st.prefill_left[r] > 0 and budget > 0:
                    size = self._chunk(r, budget, chunk_cap)
                    if size == 0:
                        continue
                    need = self._need(r, st.ctx[r] + size)
                    if need > self.free:
                        continue
                    self._take(r, need)
                    chunks.append((r, size, int(st.ctx[r])))
                    budget -= size
            # 2. swapped requests come back first, then new ones, while blocks, budget and seats last
            admit = not (static and running)
            while admit and swapped and len(running) < cfg.max_running:
                r = swapped[0]
                need = self._need(r, st.ctx[r] + (1 if st.prefill_left[r] == 0 else 0))
                if need > self.free:
                    break
                swapped.popleft()
                self._take(r, need)
                back_s = self._swapped.pop(r) * c.block_bytes / self.swap_bytes_per_s
                self.swap_s += back_s
                extra_s += back_s
                running.append(r)
                if st.prefill_left[r] == 0 and budget > 0:
                    dec.append(r)
                    budget -= 1
            while admit and waiting and len(running) < cfg.max_running and (budget > 0 or static):
                r = waiting[0]
                if st.prefill_left[r] == 0:  # a transferred request (decode pool): its KV arrives whole
                    need = self._need(r, st.ctx[r] + 1)
                    if need > self.free:
                        break
                    waiting.popleft()
                    self._take(r, need)
                    running.append(r)
                    dec.append(r)
                    budget -= 1
                    continue
                size = int(st.prefill_left[r]) if static else self._chunk(r, budget, chunk_cap)
                if size == 0:
                    break
                need = self._need(r, st.ctx[r] + size)
                if need > self.free:
                    break
                waiting.popleft()
                self._take(r, need)
                running.append(r)
                if st.first_scheduled_s[r] != st.first_scheduled_s[r]:
                    st.first_scheduled_s[r] = t
                chunks.append((r, size, int(st.ctx[r])))
                budget -= size
            if not dec and not chunks:
                if running:  # nothing fits: preempt the newest to make room
                    extra_s += self._preempt(running.pop(), waiting, swapped, dec)
                t += extra_s
                if running or extra_s > 0 or swapped:
                    continue
                raise RooflineInputError("the scheduler could not place any request: it does not fit the KV cache")
            # 3. price and run the step
            new = np.array([s for _, s, _ in chunks], dtype=np.int64)
            cached = np.array([h for _, _, h in chunks], dtype=np.int64)
            d = np.array(dec, dtype=np.int64)
            dur = c.step_s(st.ctx[d], new, cached) + extra_s
            end = t + dur
            self.log.add(t, dur, d.size, int(new.sum()), len(running), self.total_blocks - self.free)
            # 4. update: one token per decode; a finished prefill yields its first (next) token
            st.ctx[d] += 1
            st.generated[d] += 1
            for r, s, _ in chunks:
                st.ctx[r] += s
                st.prefill_left[r] -= s
                if st.prefill_left[r] == 0:
                    st.generated[r] += 1
                    if st.first_token_s[r] != st.first_token_s[r]:
                        st.first_token_s[r] = end
            t = end
            run = np.array(running, dtype=np.int64)
            done = st.generated[run] >= st.output[run]
            leave = done | ((st.prefill_left[run] == 0) if self.role == "prefill" else False)
            if np.any(leave):
                for r, fin in zip(run[leave].tolist(), done[leave].tolist()):
                    if fin:
                        st.finish_s[r] = t
                    else:
                        self.handoffs.append((t, r))
                    self._release(r)
                running = run[~leave].tolist()

    def _needs(self, rs: np.ndarray, tokens: np.ndarray) -> np.ndarray:
        pref = np.where(self.st.hit[rs] > 0, self.prefix_blocks, 0)
        return np.maximum(self.c.blocks_for[tokens] - pref - self.st.held[rs], 0)

    def _take_all(self, rs: np.ndarray, needs: np.ndarray) -> None:
        self.free -= int(needs.sum())
        self.st.held[rs] += needs

    def _chunk(self, r, budget, cap) -> int:
        """Prompt tokens of ``r`` this step: the rest of its prefill, or without chunking none until
        the budget left holds all of it."""
        left = int(self.st.prefill_left[r])
        if cap is None:
            return left if left <= budget else 0
        return min(left, cap, budget)

    def _take(self, r, blocks) -> None:
        if blocks > 0:
            self.free -= blocks
            self.st.held[r] += blocks

    def _release(self, r) -> None:
        self.free += int(self.st.held[r])
        self.st.held[r] = 0

    def _preempt(self, r, waiting, swapped, dec) -> float:
        """Preempt ``r``; returns the seconds its swap-out takes (0 for recompute)."""
        st = self.st
        self.preemptions += 1
        st.preemptions[r] += 1
        if r in dec:
            dec.remove(r)
        if self.cfg.preemption == "swap":
            blocks = int(st.held[r])
            self._swapped[r] = blocks  # its blocks go to host memory and come back on resumption
            self._release(r)
            swapped.append(r)
            out_s = blocks * self.c.block_bytes / self.swap_bytes_per_s
            self.swap_s += out_s
            return out_s
        self._release(r)
        # recompute: prefill prompt + generated tokens again (after a prefix hit, beyond the prefix)
        st.ctx[r] = st.hit[r]
        st.prefill_left[r] = st.prompt[r] + st.generated[r] - st.hit[r]
        waiting.appendleft(r)
        return 0.0

    def _decode_run(self, running, t, next_ready_s) -> float | None:
        """Jump over decode-only steps until one finishes a request, or would start at or after the next
        arrival, or would need more blocks than are free; None when not even one step can be jumped."""
        st, c = self.st, self.c
        r = np.array(running)
        left = st.output[r] - st.generated[r]
        ctx = st.ctx[r]
        steps = int(min(left.min(), 4096))
        if math.isfinite(next_ready_s):  # steps only lengthen: no more than this many start before the arrival
            first = c.step_s(ctx)
            steps = min(steps, int((next_ready_s - t) / first) + 1)
        # KV blocks: step k writes position ctx + k, holding ctx + k + 1 tokens
        grid = ctx[:, None] + np.arange(1, steps + 1)[None, :]
        pref = np.where(st.hit[r] > 0, self.prefix_blocks, 0)[:, None]
        need = np.maximum(c.blocks_for[grid] - pref - st.held[r][:, None], 0).sum(axis=0)
        fits = need <= self.free
        steps = int(np.argmin(fits)) if not np.all(fits) else steps
        if steps == 0:
            return None
        durs = c.decode_run_s(ctx, steps)
        starts = t + np.concatenate([[0.0], np.cumsum(durs[:-1])])
        steps = int(np.searchsorted(starts, next_ready_s, side="left"))  # steps starting before the arrival
        if steps == 0:
            return None
        durs, starts = durs[:steps], starts[:steps]
        used = self.total_blocks - self.free + need[:steps]
        self.log.add_run(starts, durs, r.size, used.astype(float))
        taken = c.blocks_for[ctx + steps] - pref[:, 0] - st.held[r]
        taken = np.maximum(taken, 0)
        self.free -= int(taken.sum())
        st.held[r] += taken
        st.ctx[r] += steps
        st.generated[r] += steps
        end = float(starts[-1] + durs[-1])
        for q in r[st.generated[r] >= st.output[r]]:
            st.finish_s[q] = end
            self._release(q)
        return end


# ---- a run ---------------------------------------------------------------------------------------


_STATS = ("mean", "p50", "p90", "p99")


def _stats(x: np.ndarray) -> dict:
    x = x[np.isfinite(x)]
    if x.size == 0:
        return {k: float("nan") for k in _STATS}
    return {"mean": float(np.mean(x)), "p50": float(np.percentile(x, 50)), "p90": float(np.percentile(x, 90)),
            "p99": float(np.percentile(x, 99))}


@dataclass(frozen=True, eq=False)
class Simulation:
    """One simulated run: every request's times and the step log (all seconds; figures are estimates,
    :data:`CONVENTIONS`). Throughputs are the whole deployment's; ``*_per_chip`` divides by its chips."""

    model_id: str
    part_id: str
    config: EngineConfig
    requests: Requests
    queue_s: np.ndarray  #: arrival → first scheduled (its first prefill chunk's step starts)
    ttft_s: np.ndarray  #: arrival → first output token
    tpot_s: np.ndarray  #: (last token − first token) ÷ (output − 1); nan for one-token outputs
    e2e_s: np.ndarray  #: arrival → last token
    preemptions_per_request: np.ndarray
    prefix_hit_tokens: np.ndarray  #: prompt tokens each request found in the prefix cache
    steps: dict  #: the step log: start_s, duration_s, decode_tokens, prefill_tokens, running, blocks, instance
    kv_blocks: int  #: KV-cache blocks per instance
    kv_block_bytes: float  #: bytes per block, per chip
    instances: int  #: colocated instances (or prefill instances with pools)
    decode_instances: int  #: decode instances with pools (0 colocated)
    kv_transfer_s: float  #: seconds one request's KV transfer takes with pools (0 colocated)
    swap_s: float = 0.0  #: seconds of preemption swaps, out and back, summed over the run
    kv_link_name: str = ""  #: the link the pools' KV transfers cross ("" colocated)
    ttft_slo_s: float | None = None
    tpot_slo_s: float | None = None
    slo_attainment_target: float = 0.9

    @property
    def chips(self) -> int:
        return self.config.total_chips

    @property
    def span_s(self) -> float:
        """First arrival to last token, seconds."""
        return float(np.max(self.requests.arrival_s + self.e2e_s) - self.requests.arrival_s[0])

    @property
    def output_tokens_per_s(self) -> float:
        return float(np.sum(self.requests.output_tokens) / self.span_s)

    @property
    def output_tokens_per_s_per_chip(self) -> float:
        return self.output_tokens_per_s / self.chips

    @property
    def completed_requests_per_s(self) -> float:
        return self.requests.count / self.span_s

    @property
    def mean_running_requests(self) -> float:
        """Time-average of the requests in running batches (all instances), from the step log."""
        s = self.steps
        return float(np.sum(s["running"] * s["duration_s"]) / self.span_s)

    @property
    def mean_requests_in_system(self) -> float:
        """Time-average of the requests arrived and not finished (Little's L), from the requests' times."""
        return float(np.sum(self.e2e_s) / self.span_s)

    @property
    def preemptions(self) -> int:
        return int(np.sum(self.preemptions_per_request))

    @property
    def recomputed_tokens(self) -> int:
        """Prompt and generated tokens prefilled again after recompute preemptions (all the prefill
        tokens the steps carried, less each request's own uncached prompt once)."""
        own = int(np.sum(self.requests.prompt_tokens)) - int(np.sum(self.prefix_hit_tokens))
        return int(np.sum(self.steps["prefill_tokens"])) - own

    @property
    def kv_blocks_used_share(self):
        """(step start times, share of the KV blocks in use) of each step, every instance's steps."""
        return self.steps["start_s"], self.steps["blocks"] / max(self.kv_blocks, 1)

    def meets_slo(self) -> np.ndarray:
        """Which requests met both objectives (all True where an objective is not set)."""
        ok = np.ones(self.requests.count, dtype=bool)
        if self.ttft_slo_s is not None:
            ok &= self.ttft_s <= self.ttft_slo_s
        if self.tpot_slo_s is not None:
            ok &= ~(self.tpot_s > self.tpot_slo_s)  # one-token outputs have no TPOT: they pass it
        return ok

    @property
    def slo_attainment(self) -> float:
        return float(np.mean(self.meets_slo()))

    @property
    def slo_met_requests_per_s(self) -> float:
        """Requests that met both objectives, per second of the run."""
        return float(np.sum(self.meets_slo()) / self.span_s)

    def summary(self) -> dict:
        d = {"model": self.model_id, "hardware": self.part_id, "requests": self.requests.count,
             "workload": self.requests.source, "cost": self.config.cost, "scheduler": self.config.scheduler,
             "chips": self.chips,
             "ttft_s": _stats(self.ttft_s), "tpot_s": _stats(self.tpot_s), "e2e_s": _stats(self.e2e_s),
             "queue_s": _stats(self.queue_s),
             "output_tokens_per_s": self.output_tokens_per_s,
             "output_tokens_per_s_per_chip": self.output_tokens_per_s_per_chip,
             "completed_requests_per_s": self.completed_requests_per_s,
             "mean_running_requests": self.mean_running_requests,
             "mean_requests_in_system": self.mean_requests_in_system,
             "preemptions": self.preemptions, "kv_blocks_per_instance": self.kv_blocks,
             "kv_block_bytes_per_chip": self.kv_block_bytes,
             "peak_kv_blocks_used_share": float(np.max(self.kv_blocks_used_share[1], initial=0.0)),
             "slo_attainment": self.slo_attainment, "slo_met_requests_per_s": self.slo_met_requests_per_s,
             "span_s": self.span_s, "conventions": list(CONVENTIONS)}
        if self.config.disaggregated:
            d.update(prefill_instances=self.instances, decode_instances=self.decode_instances,
                     kv_transfer_s=self.kv_transfer_s)
        else:
            d.update(instances=self.instances)
        return d


def _instance_costs(model, part, cfg: EngineConfig, fields: dict, requests: Requests) -> StepCosts:
    f = dict(fields)
    if cfg.tensor_parallel > 1:
        f["parallelism"] = Parallelism(tensor=cfg.tensor_parallel)
    longest = int(np.max(requests.prompt_tokens + requests.output_tokens))
    if longest > model.max_context_tokens:
        raise RooflineInputError(f"a request of {longest:,} tokens is past {model.id}'s context "
                                 f"({model.max_context_tokens:,} tokens)")
    biggest_step = cfg.token_budget + cfg.max_running + int(np.max(requests.prompt_tokens + requests.output_tokens))
    if cfg.scheduler == "static":
        biggest_step = cfg.max_running * longest
    # tables are kept per setting: a sweep over rates (goodput) builds them once
    need = (longest, min(biggest_step, 65536))
    key = (model.id, part.id, tuple(sorted(f.items(), key=lambda kv: kv[0])), cfg.cost, cfg.block_tokens)
    try:
        hash(key)
    except TypeError:
        key = None
    cached = _TABLES.get(key) if key is not None else None
    if cached is not None and cached.max_context >= need[0] and cached._max_tokens >= need[1]:
        return cached
    costs = StepCosts(model, part, f, max_context=need[0], max_step_tokens=need[1], cost=cfg.cost,
                      block_tokens=cfg.block_tokens)
    if key is not None:
        if len(_TABLES) >= 16:
            _TABLES.pop(next(iter(_TABLES)))
        _TABLES[key] = costs
    return costs


#: step-cost tables of recent settings (a model or part edited in place would need a new id)
_TABLES: dict = {}


def simulate(model: Model | str, part: Part | str, requests: Requests, config: EngineConfig | None = None, *,
             ttft_slo_s: float | None = None, tpot_slo_s: float | None = None, slo_attainment: float = 0.9,
             **workload_dtypes) -> Simulation:
    """Simulate ``requests`` served by an engine with ``config`` on ``part`` chips (module docstring).

    ``ttft_slo_s``/``tpot_slo_s`` set the objectives the run's attainment is measured against;
    ``workload_dtypes``: number formats, any of the serving module's ``DTYPE_FIELDS``.
    """
    m, p = get_model(model), get_part(part)
    cfg = config if config is not None else EngineConfig()
    if not isinstance(requests, Requests):
        raise RooflineInputError(f"requests must be a Requests (poisson_requests or read_trace), got {type(requests).__name__}")
    for name, v in (("ttft_slo_s", ttft_slo_s), ("tpot_slo_s", tpot_slo_s)):
        if v is not None:
            _positive(name, v)
    _share("slo_attainment", slo_attainment, "(0, 1]", lambda v: (v > 0) & (v <= 1))
    bad = [k for k in workload_dtypes if k not in DTYPE_FIELDS]
    if bad:
        raise RooflineInputError(f"unknown workload field {bad[0]!r}; allowed: {', '.join(DTYPE_FIELDS)}")
    fields = _dtypes(workload_dtypes)
    costs = _instance_costs(m, p, cfg, fields, requests)
    n = requests.count
    prefix = cfg.prefix_cached_tokens
    usable = prefix // costs.block_tokens * costs.block_tokens  # full blocks only
    if prefix and usable >= int(np.min(requests.prompt_tokens)):
        raise RooflineInputError(f"prefix_cached_tokens ({prefix:,}) must leave at least one prompt token of every "
                                 f"request to prefill (shortest prompt: {int(np.min(requests.prompt_tokens)):,})")
    hits = np.random.default_rng(cfg.seed + 1).random(n) < cfg.prefix_hit_rate if usable else np.zeros(n, bool)
    hit = np.where(hits, usable, 0).astype(np.int64)
    nan = np.full(n, np.nan)
    st = _State(prompt=requests.prompt_tokens.astype(np.int64), output=requests.output_tokens.astype(np.int64),
                hit=hit, generated=np.zeros(n, np.int64), ctx=hit.copy(),
                prefill_left=requests.prompt_tokens.astype(np.int64) - hit, held=np.zeros(n, np.int64),
                first_token_s=nan.copy(), finish_s=nan.copy(), first_scheduled_s=nan.copy(),
                preemptions=np.zeros(n, np.int64))
    free = p.memory_capacity_bytes * cfg.memory_utilization - costs.weight_bytes_per_chip
    blocks = int(free // costs.block_bytes) if free > 0 else 0
    prefix_blocks = int(costs.blocks_for[usable]) if usable else 0
    if blocks <= prefix_blocks:
        raise RooflineInputError(f"{m.id} does not fit {p.id} at memory_utilization {cfg.memory_utilization} with "
                                 f"tensor_parallel {cfg.tensor_parallel}: no KV-cache blocks left after the weights "
                                 f"({costs.weight_bytes_per_chip / 2**30:.1f} GiB per chip)")
    host = p.host_link
    swap_bw = host.per_direction_bytes_per_s if host is not None else math.inf
    if cfg.preemption == "swap" and host is None:
        raise RooflineInputError(f"{p.id} has no host link in the catalog: preemption='swap' cannot be priced")
    t = cfg.tensor_parallel
    logs = []
    ids = np.arange(n)
    transfer_s = swap_total = 0.0
    link_name = ""
    hit_tokens = hit.copy()  # (the decode pool clears its own copy of the hits)
    if not cfg.disaggregated:
        k = cfg.chips // t
        for i in range(k):
            mine = ids[i::k]
            inst = _Instance(costs, cfg, st, "both", blocks, prefix_blocks, swap_bw)
            inst.run(mine, requests.arrival_s[mine])
            logs.append(inst.log.arrays(i))
            swap_total += inst.swap_s
        n_inst, n_dec = k, 0
    else:
        kp, kd = cfg.prefill_chips // t, cfg.decode_chips // t
        handoffs = []
        for i in range(kp):
            mine = ids[i::kp]
            inst = _Instance(costs, cfg, st, "prefill", blocks, prefix_blocks, swap_bw)
            inst.run(mine, requests.arrival_s[mine])
            handoffs += inst.handoffs
            logs.append(inst.log.arrays(i))
            swap_total += inst.swap_s
        link = _kv_link(p, cfg.total_chips)
        link_name = link.name
        latency = link.latency_s if cfg.cost == "estimate" else 0.0
        per_token = np.array([costs.transfer_bytes(st.ctx[r]) for _, r in handoffs]) if handoffs else np.zeros(0)
        ready = np.array([e for e, _ in handoffs]) + per_token / link.per_direction_bytes_per_s + latency
        moved = np.array([r for _, r in handoffs], dtype=np.int64)
        transfer_s = float(np.mean(per_token / link.per_direction_bytes_per_s + latency)) if handoffs else 0.0
        # the decode instance rebuilds nothing: the request arrives with its KV (not its prefix block share)
        st.hit[moved] = 0
        order = np.argsort(ready, kind="stable")
        moved, ready = moved[order], ready[order]
        for j in range(kd):
            inst = _Instance(costs, cfg, st, "decode", blocks, 0, swap_bw)
            inst.run(moved[j::kd], ready[j::kd])
            logs.append(inst.log.arrays(kp + j))
            swap_total += inst.swap_s
        n_inst, n_dec = kp, kd
    arrival = requests.arrival_s
    tpot = np.where(st.output > 1, (st.finish_s - st.first_token_s) / np.maximum(st.output - 1, 1), np.nan)
    steps = {k: np.concatenate([g[k] for g in logs]) for k in logs[0]}
    return Simulation(model_id=m.id, part_id=p.id, config=cfg, requests=requests,
                      queue_s=st.first_scheduled_s - arrival, ttft_s=st.first_token_s - arrival, tpot_s=tpot,
                      e2e_s=st.finish_s - arrival, preemptions_per_request=st.preemptions.copy(), steps=steps,
                      prefix_hit_tokens=hit_tokens, swap_s=swap_total, kv_link_name=link_name,
                      kv_blocks=blocks, kv_block_bytes=costs.block_bytes, instances=n_inst, decode_instances=n_dec,
                      kv_transfer_s=transfer_s, ttft_slo_s=ttft_slo_s, tpot_slo_s=tpot_slo_s,
                      slo_attainment_target=float(slo_attainment))


def _kv_link(part: Part, chips: int):
    """The link a KV transfer between the pools crosses: the scale-up link when both pools fit in one
    of its domains, else the NIC (the PCIe host link on a part with neither)."""
    up = part.scale_up_link
    if up is not None and (up.max_chips is None or chips <= up.max_chips):
        return up
    if part.scale_out_link is not None:
        return part.scale_out_link
    if part.host_link is not None:
        return part.host_link
    raise RooflineInputError(f"{part.id} has no link in the catalog to send the KV cache between pools")


# ---- goodput (DistServe) -------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class GoodputCurve:
    """SLO attainment against request rate (same requests' lengths and seed at every rate), and
    DistServe's goodput: the highest rate whose attainment reaches the target. Estimates."""

    rates_per_s: np.ndarray
    attainment: np.ndarray  #: share of requests meeting both objectives at each rate
    ttft_p90_s: np.ndarray
    tpot_p90_s: np.ndarray
    target: float
    goodput_requests_per_s: float  #: the highest rate tried with attainment ≥ target (0 if none)
    chips: int

    @property
    def goodput_requests_per_s_per_chip(self) -> float:
        return self.goodput_requests_per_s / self.chips


def goodput_curve(model, part, *, rates_per_s, requests: int, prompt_tokens: int, output_tokens: int,
                  ttft_slo_s: float, tpot_slo_s: float, slo_attainment: float = 0.9,
                  config: EngineConfig | None = None, seed: int = 0, refine: int = 0, **workload_dtypes) -> GoodputCurve:
    """Simulate Poisson workloads at each of ``rates_per_s`` and measure SLO attainment.

    Goodput is the highest rate whose attainment is at least ``slo_attainment`` (DistServe's
    definition); ``refine`` > 0 bisects that many more times between the last rate that met the
    target and the first that did not (attainment falls with rate, so the boundary lies between).
    """
    rates = np.atleast_1d(np.asarray(rates_per_s, dtype=float))
    if rates.ndim != 1 or rates.size == 0 or not np.all(np.isfinite(rates)) or np.any(rates <= 0):
        raise RooflineInputError(f"rates_per_s must be request rates > 0, got {rates_per_s!r}")
    rates = np.sort(rates)
    whole_number("refine", refine, 0)

    def run(rate):
        s = simulate(model, part, poisson_requests(rate, requests, prompt_tokens, output_tokens, seed=seed), config,
                     ttft_slo_s=ttft_slo_s, tpot_slo_s=tpot_slo_s, slo_attainment=slo_attainment, **workload_dtypes)
        return s.slo_attainment, float(np.nanpercentile(s.ttft_s, 90)), float(np.nanpercentile(s.tpot_s, 90)) \
            if np.any(np.isfinite(s.tpot_s)) else float("nan"), s.chips

    rows = {float(r): run(r) for r in rates}
    for _ in range(int(refine)):
        ok = [r for r in sorted(rows) if rows[r][0] >= slo_attainment]
        bad = [r for r in sorted(rows) if rows[r][0] < slo_attainment and (not ok or r > ok[-1])]
        if not ok or not bad:
            break
        mid = 0.5 * (ok[-1] + bad[0])
        rows[mid] = run(mid)
    xs = np.array(sorted(rows))
    att = np.array([rows[r][0] for r in xs])
    met = [r for r in xs if rows[r][0] >= slo_attainment and all(rows[q][0] >= slo_attainment for q in xs if q <= r)]
    return GoodputCurve(rates_per_s=xs, attainment=att, ttft_p90_s=np.array([rows[r][1] for r in xs]),
                        tpot_p90_s=np.array([rows[r][2] for r in xs]), target=float(slo_attainment),
                        goodput_requests_per_s=float(met[-1]) if met else 0.0, chips=rows[xs[0]][3])
