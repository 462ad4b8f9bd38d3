"""Many chips: one step split by tensor, expert and pipeline parallelism, and what the links cost.

Conventions (what a lesson can quote):

- **Tensor parallel** over ``tensor`` = t chips (Megatron style): attention heads, Gated DeltaNet
  heads and MLP/expert columns are split t ways, so each chip holds and reads 1/t of those weights
  and does 1/t of their FLOPs. The KV cache is split by KV head: 1/min(t, KV heads) per chip;
  when t exceeds the KV heads each KV head is stored on t / KV-heads chips (replicated, and said
  so). Norms, residual adds and the MoE router run whole on every chip. The embedding and the
  lm_head are split over the vocabulary. Activations of a split operator are split like its FLOPs
  (an approximation: a column-parallel matmul reads its whole input).
  Communication: two all-reduces per layer of the step's activations (tokens × hidden), one after
  the attention (or DeltaNet) block and one after the MLP/MoE block, one after the vocab-parallel
  embedding, and an all-gather of the logits after the lm_head. A ring all-reduce makes every chip
  send 2(t−1)/t of the message; an all-gather (t−1)/t.
- **Expert parallel** over ``expert`` = e groups (MoE models only): the routed experts are spread
  over the e groups (E/e experts each), and the sequences too (attention is data-parallel across
  the groups: each group runs ⌈batch/e⌉ sequences). A group's chips receive the tokens routed to
  their experts from every group: 1/e of all routed tokens and the experts touched among their
  E/e. Two all-to-alls per MoE layer (dispatch and combine). The estimate sends one copy per chosen
  expert: a group's tokens × k × hidden, the (e−1)/e of it bound for other groups. Under TP t > 1 inside
  a group, every chip of the receiving group needs the whole vector of each token routed to it (its
  expert slices are split by columns), so each chip *receives* all the copies bound for its group —
  (e−1)/e of tokens × k × hidden, not 1/t of it — and, with no multicast, the group's chips send as
  much as they receive: the per-chip figure is that receive side, whatever t.
- **Pipeline parallel** over ``pipeline`` = p stages: the layers are split into p stages of
  ⌈layers/p⌉ or ⌊layers/p⌋ layers; the embedding sits on the first stage, the lm_head on the last.
  Between stages the activations (tokens × hidden) are sent once. One step of one batch passes
  through the stages one after another, so pipelining does **not** cut its latency: the step takes
  the sum of the stages' times + the p − 1 sends, about one chip's time. Throughput needs work for
  every stage: with one batch split into m micro-batches that must all finish before the next
  step starts (a flush, as in GPipe training or one prefill), the idle share is the bubble
  (p − 1)/(m + p − 1) (:func:`bubble_fraction`); a server that keeps m independent batches
  circulating through the stages in steady decode idles max(0, 1 − m/p)
  (:func:`steady_state_idle_fraction`): none once m ≥ p.
- **Per chip.** Chips = t × e × p. Every FLOP, byte and second of a multi-chip placement is per
  chip, for the busiest stage (the one with the longest stage time; with arrays of batch or
  tokens, element by element). Memory is the fullest chip's, since every chip must fit: with
  stages of unequal size that is the first stage (most layers, and the embedding), which need not
  be the busiest. Communication bytes are what each chip *sends* in the step — for the expert
  all-to-all under TP × EP, what it must receive, the larger side (multicast could cut the sends).
- **Time.** A collective costs latency_s per call + bytes / the link's per-direction bandwidth.
  The per-call latency is ONE fixed cost whatever the number of chips (the catalog's figure is an
  assumption, ``latency_basis = "assumed"``: about 10 µs, the order of one NCCL call in an 8-GPU
  node). That is a one-shot, switch-style model: a textbook ring pays 2(n − 1) hop latencies
  (NCCL's LL and LL128 protocols make each hop cheaper, not fewer); NCCL's tree is a chain inside a
  node, so its latency is linear in the GPUs per node, logarithmic only in the number of nodes (NCCL's
  cost model, ``ncclTopoTuneModel`` in src/graph/tuning.cc, charges a tree all-reduce
  2 × ((GPUs per node − 1) × intra-node hop + log2(nodes) × inter-node hop)); NVLS (the reduction
  in the switch) and custom one-shot kernels stay roughly flat in n, the latter a few µs. Every
  time that includes it is an estimate at the assumed latency, not a lower bound
  (``collective_latency_s`` sets another figure for the estimate). In the estimate communication is by
  default *not* overlapped with compute: a stage takes max(compute, memory) + communication;
  ``overlap_comm=True`` makes it max(compute, memory, communication).
- **The lower bound** (:attr:`~roofline_lessons.core.placement.Placement.time_lower_bound_s`) counts
  no per-call latency, overlaps communication with compute and memory, and takes the least bytes
  any algorithm the link supports sends: where the switch reduces in the switch (NVLink SHARP on
  NVLink 4 NVSwitch and later, ``Link.in_switch_reduction``) an all-reduce sends each byte once
  instead of the ring's 2(t−1)/t (the same for t = 2); elsewhere the ring's bytes. The logits
  all-gather counts 0 (vocab-parallel sampling exchanges each chip's top candidates, not its
  logits); an all-to-all moves each token once per other expert group its k experts live on
  (:func:`remote_groups_per_token`), not once per chosen expert, and counts per chip the larger of
  what it sends and what it receives: every chip of a group receives each such token whole (with
  TP t inside the group, t copies enter the group, one per chip, so the bound does not divide by t).
  The combine is priced like the dispatch: each chip of the token's group receives one partial
  result per token and remote group (from its counterpart chip there), and the tensor all-reduce
  after the MoE block, counted already, sums the t partial results. The expert-parallel figures,
  bound and estimate alike, assume uniform routing (the mean experts touched, the mean groups
  reached): they price the MEAN step under random uniform routing, not every step — one step's
  draw sends more or less than the mean (a few per cent at batch 1), a routing that keeps tokens
  near their experts sends less, a skewed one loads one chip more. So for expert parallel the
  bound is a bound *on the mean step under uniform routing*. With pipeline stages the bound is the
  larger of two: the busiest stage's bound (every stage does its share of the whole step, however
  it is cut into micro-batches), and one token's crossing — the sum of the stages' bounds for one
  sequence (decode: its next token needs this one, so it crosses every stage in turn, each
  reading its weights) or a one-token chunk (prefill). With fewer micro-batches than stages (batch
  1 decode) the crossing binds, about one chip's bound; with enough to keep every stage busy (a
  long prompt in chunks, a large batch) the busiest stage can. The sends between stages overlap in
  both (no latency).
- **Which link.** ``link="auto"`` uses the scale-up link (NVLink, Infinity Fabric, ICI) when the
  chips fit its domain, else PCIe (a part with no scale-up link, or the H100 PCIe's bridge past 2
  chips), and says so. More chips than the link's domain is refused: that traffic would cross a
  network between servers, which this course does not model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from .costs import ModelCost, OpCost, Workload, model_cost
from .dtypes import bytes_per_element
from .errors import RooflineInputError
from .hardware import LINK_KINDS, Link, Part, get_part
from .memory import Footprint, check_memory_utilization, kv_cache_bytes_per_sequence, state_bytes_per_sequence
from .models import Model, get_model

LINK_CHOICES = ("auto",) + LINK_KINDS

#: operators every tensor-parallel chip runs whole
_REPLICATED = ("input_norm", "post_attention_norm", "residual", "final_norm", "router", "expert_combine",
               # MLA: the query bottleneck and the latent are computed whole on every chip (every head
               # needs the whole latent), as serving engines replicate them
               "q_a_proj", "q_a_norm", "kv_a_proj", "kv_a_norm")
#: operators whose work follows the KV heads
_KV_OPS = ("k_proj", "v_proj", "kv_cache_write")
_EXPERT_OPS = ("experts_gate_up", "experts_silu_mul", "experts_down")


@dataclass(frozen=True)
class Parallelism:
    """How one step is split: ``tensor`` × ``expert`` × ``pipeline`` chips (see the module docstring)."""

    tensor: int = 1
    expert: int = 1
    pipeline: int = 1
    overlap_comm: bool = False
    link: str = "auto"
    #: seconds per collective call in the estimate (None: the link's catalogued, assumed figure);
    #: the lower bound never counts a per-call latency
    collective_latency_s: float | None = None

    def __post_init__(self) -> None:
        for name in ("tensor", "expert", "pipeline"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise RooflineInputError(f"{name} parallel must be a whole number of chips >= 1, got {v!r}")
        if self.link not in LINK_CHOICES:
            raise RooflineInputError(f"unknown link {self.link!r}; links are: {', '.join(LINK_CHOICES)}")
        if not isinstance(self.overlap_comm, (bool, np.bool_)):
            raise RooflineInputError(f"overlap_comm must be True or False, got {self.overlap_comm!r}")
        lat = self.collective_latency_s
        if lat is not None and (isinstance(lat, bool) or not isinstance(lat, (int, float, np.floating, np.integer))
                                or not math.isfinite(lat) or lat < 0):
            raise RooflineInputError(f"collective_latency_s must be a number of seconds >= 0 (or None for the "
                                     f"catalog's assumed figure), got {lat!r}")

    @property
    def chips(self) -> int:
        return int(self.tensor * self.expert * self.pipeline)

    @property
    def label(self) -> str:
        """``TP 2``, ``TP 4 × EP 2``, … or ``1 chip``."""
        parts = [f"{k} {v}" for k, v in (("TP", self.tensor), ("EP", self.expert), ("PP", self.pipeline)) if v > 1]
        return " × ".join(parts) if parts else "1 chip"


SINGLE_CHIP = Parallelism()


def check_parallelism(model: Model | str, par: Parallelism) -> tuple[str, ...]:
    """Refuse a split the model cannot take (one line naming the numbers); return the warnings."""
    _check_par(par)
    t, e, p = par.tensor, par.expert, par.pipeline
    m = get_model(model)
    warnings: list[str] = []
    if m.num_attention_heads % t:
        raise RooflineInputError(
            f"tensor parallel {t} does not divide {m.id}'s {m.num_attention_heads} attention heads; "
            f"choose one of {', '.join(str(d) for d in _divisors(m.num_attention_heads))}")
    kv = m.num_key_value_heads
    attention = (m.num_full_attention_layers + m.num_sliding_attention_layers) and not m.is_mla
    if attention and (kv % t if t <= kv else t % kv):
        raise RooflineInputError(
            f"tensor parallel {t} and {m.id}'s {kv} KV heads: one must divide the other")
    if m.is_hybrid and (m.linear_num_value_heads % t or m.linear_num_key_heads % t):
        raise RooflineInputError(
            f"tensor parallel {t} does not divide {m.id}'s Gated DeltaNet heads "
            f"({m.linear_num_key_heads} key, {m.linear_num_value_heads} value)")
    if t > 1 and m.is_mla:
        warnings.append(f"{m.id} caches one MLA latent per token shared by all heads: each of the {t} tensor-parallel "
                        f"chips keeps the whole latent cache (replicated {t}×)")
    if t > kv and attention:
        warnings.append(f"tensor parallel {t} exceeds {m.id}'s {kv} KV heads: each KV head is stored on {t // kv} "
                        f"chips (the KV cache is replicated {t // kv}×, 1/{kv} of it per chip)")
    if e > 1:
        if not m.is_moe:
            raise RooflineInputError(f"expert parallel {e} needs a mixture-of-experts model; {m.id} is dense "
                                     "(use tensor or pipeline parallel)")
        if m.num_experts % e:
            raise RooflineInputError(f"expert parallel {e} does not divide {m.id}'s {m.num_experts} experts")
    if p > m.num_hidden_layers:
        raise RooflineInputError(f"pipeline parallel {p} is more stages than {m.id}'s {m.num_hidden_layers} layers")
    return tuple(warnings)


def _check_par(par) -> None:
    if not isinstance(par, Parallelism):
        raise RooflineInputError(f"parallelism must be a Parallelism(tensor=…, expert=…, pipeline=…), got {par!r}")


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def choose_link(part: Part | str, par: Parallelism) -> tuple[Link | None, tuple[str, ...]]:
    """The link the split's traffic uses, and what the reader should know about the choice."""
    _check_par(par)
    part = get_part(part)
    if par.chips == 1:
        return None, ()
    n = par.chips
    if par.link != "auto":
        link = part.link(par.link)
        if n > link.max_chips:
            raise RooflineInputError(f"{n} chips exceed {part.id}'s {link.name} domain of {link.max_chips}; past it "
                                     "the traffic crosses a network between servers, which this course does not model")
        return link, ()
    up = part.scale_up_link
    if up is not None and n <= up.max_chips:
        return up, ()
    host = part.host_link
    if host is not None and n <= host.max_chips:
        why = (f"{part.id} has no scale-up link" if up is None
               else f"{n} chips exceed the {up.name}'s domain of {up.max_chips}")
        return host, (f"{why}: the chips talk over {host.name} "
                      f"({host.per_direction_bytes_per_s / 1e9:,.0f} GB/s per direction)",)
    biggest = max((lk.max_chips for lk in (up, host) if lk is not None), default=1)
    raise RooflineInputError(f"{n} chips exceed the largest domain {part.id}'s links join ({biggest}); past it the "
                             "traffic crosses a network between servers, which this course does not model")


# ---- per-chip cost ---------------------------------------------------------------------------

_FIELDS = ("flops", "weight_matmul_flops", "dequant_flops", "weight_bytes", "activation_bytes", "kv_read_bytes", "kv_write_bytes",
           "state_read_bytes", "state_write_bytes", "weight_params", "active_weight_params",
           "unquantized_matmul_flops", "kv_scratch_bytes", "state_scratch_bytes", "io_bytes")


def _scaled(op: OpCost, factor: float, *, kv_factor: float | None = None, note: str = "") -> OpCost:
    kvf = factor if kv_factor is None else kv_factor
    changes = {f: getattr(op, f) * (kvf if f.startswith("kv_") else factor) for f in _FIELDS}
    if note:
        changes["note"] = f"{op.note}; {note}" if op.note else note
    return replace(op, **changes)


def _tp_op(op: OpCost, model: Model, t: int) -> OpCost:
    """One operator's share on one of t tensor-parallel chips."""
    if t == 1 or op.name in _REPLICATED:
        return op
    kv_share = 1.0 / kv_split(model, t)
    if op.name in _KV_OPS:
        return _scaled(op, kv_share)
    if op.block in ("full_attention", "sliding_attention", "mla") and op.kv_read_bytes is not None and np.any(np.asarray(op.kv_read_bytes) > 0):
        return _scaled(op, 1.0 / t, kv_factor=kv_share)
    return _scaled(op, 1.0 / t)


def kv_split(model: Model, t: int) -> int:
    """Ways t tensor-parallel chips split the KV cache: by KV head, at most the KV heads; an MLA
    latent is shared by every head, so each chip keeps all of it (1)."""
    return 1 if model.is_mla else min(t, model.num_key_value_heads)


def _stage_layers(layers: int, p: int) -> list[int]:
    base, extra = divmod(layers, p)
    return [base + (1 if i < extra else 0) for i in range(p)]


@dataclass(frozen=True)
class CommPart:
    """One kind of collective in a chip's stage: calls, bytes this chip sends and seconds by the
    estimate's algorithm (ring, per-call latency), and the least bytes any algorithm the link
    supports sends (``bound_bytes``: in-switch reduction where the switch does it)."""

    name: str
    calls: float
    bytes: object
    time_s: object
    bound_bytes: object = None  #: None: the same as ``bytes``

    @property
    def least_bytes(self):
        return self.bytes if self.bound_bytes is None else self.bound_bytes


@dataclass(frozen=True)
class Comm:
    """A chip's communication in one step of its stage (sends between stages kept apart)."""

    link: Link | None
    parts: tuple[CommPart, ...]
    pipeline_send_bytes: object = 0.0  #: bytes one chip sends to the next stage
    pipeline_send_s: object = 0.0  #: seconds of one send between stages

    @property
    def bytes(self):
        """Bytes this chip sends within its stage's step (collectives), summed."""
        return sum((c.bytes for c in self.parts), 0.0)

    @property
    def time_s(self):
        """Seconds of this chip's collectives in the step, summed (sends between stages excluded)."""
        return sum((c.time_s for c in self.parts), 0.0)

    @property
    def calls(self):
        """Collective calls this chip makes in the step (sends between stages excluded), summed."""
        return _plain(sum((c.calls for c in self.parts), 0.0))

    @property
    def bound_bytes(self):
        """The least bytes this chip must send in its stage's collectives (any algorithm the link supports)."""
        return sum((c.least_bytes for c in self.parts), 0.0)

    @property
    def bound_time_s(self):
        """Seconds those least bytes need at the link's per-direction bandwidth, no per-call latency."""
        if self.link is None:
            return 0.0
        return np.divide(self.bound_bytes, self.link.per_direction_bytes_per_s)


def _collective(link: Link, name: str, calls: float, nbytes, latency_s: float, bound_bytes=None) -> CommPart:
    return CommPart(name=name, calls=calls, bytes=nbytes, bound_bytes=bound_bytes,
                    time_s=calls * latency_s + np.divide(nbytes, link.per_direction_bytes_per_s))


def remote_groups_per_token(experts: int, chosen: int, groups: int) -> float:
    """Expected number of OTHER expert groups a token's ``chosen`` experts live on, when the
    ``experts`` are spread evenly over ``groups`` groups and routing is uniform (each token's k
    experts a uniform draw without replacement): (e − 1)·(1 − C(E − E/e, k)/C(E, k)).

    The least an all-to-all must move per token: one copy per destination group, whatever the
    number of experts chosen there, as DeepEP's high-throughput (normal) kernels do; its
    low-latency decode kernels send one copy per chosen expert (the estimate's convention). At
    most k·(e − 1)/e, the copies one per chosen expert that the estimate sends; equal to it when
    each group holds one expert. A mean over uniform routing: one step's draw can reach more
    groups, so a bound built on it bounds the mean step, not every step.
    """
    E, k, e = int(experts), int(chosen), int(groups)
    if e <= 1:
        return 0.0
    miss = math.comb(E - E // e, k) / math.comb(E, k)  # a given group holds none of the k
    return (e - 1) * (1.0 - miss)


def communication(model: Model, workload: Workload, par: Parallelism, link: Link | None, *, layers: int,
                  first: bool, last: bool) -> Comm:
    """What one chip sends in one step of a stage holding ``layers`` layers (arrays of batch or tokens ok).

    ``workload`` is the whole step (all sequences); the expert groups split its sequences.
    """
    if link is None or par.chips == 1:
        return Comm(link=None, parts=())
    t, e, p = par.tensor, par.expert, par.pipeline
    ab = bytes_per_element(workload.activations_dtype)
    h = model.hidden_size
    b_local = np.ceil(np.asarray(workload.batch, dtype=float) / e)
    tokens_local = b_local * workload.new_tokens_per_sequence
    message = tokens_local * h * ab
    lat = link.latency_s if par.collective_latency_s is None else float(par.collective_latency_s)
    parts = []
    if t > 1:
        ring = 2.0 * (t - 1) / t
        # in-switch reduction (NVLS): each byte of the message is sent once, whatever t
        least = 1.0 if link.in_switch_reduction else ring
        parts.append(_collective(link, "tensor all-reduce (2 per layer)", 2.0 * layers, 2.0 * layers * ring * message,
                                 lat, 2.0 * layers * least * message))
        if first:
            parts.append(_collective(link, "embedding all-reduce", 1.0, ring * message, lat, least * message))
        if last:
            logits = b_local * model.vocab_size * ab
            # least 0: vocab-parallel sampling exchanges each chip's top candidates, not its logits
            parts.append(_collective(link, "logits all-gather", 1.0, (t - 1) / t * logits, lat, 0.0))
    if e > 1 and model.is_moe:
        # per chip, the receive side: under uniform routing a group receives, from the other groups, as
        # many token copies as it sends (tokens_local × k × (e−1)/e, or one per remote group in the
        # bound), and each of its t chips needs every one of them whole (column-split expert slices),
        # so no /t; without multicast the group's sends match its chips' receives
        routed = tokens_local * model.num_experts_per_tok * h * ab * (e - 1) / e
        least = tokens_local * remote_groups_per_token(model.num_experts, model.num_experts_per_tok, e) * h * ab
        moe_layers = layers * model.num_moe_layers / model.num_hidden_layers
        parts.append(_collective(link, "expert all-to-all (2 per MoE layer)", 2.0 * moe_layers,
                                 2.0 * moe_layers * routed, lat, 2.0 * moe_layers * least))
    send_bytes, send_s = 0.0, 0.0
    if p > 1:
        send_bytes = message / t
        send_s = lat + np.divide(send_bytes, link.per_direction_bytes_per_s)
    return Comm(link=link, parts=tuple(parts), pipeline_send_bytes=send_bytes, pipeline_send_s=send_s)


@dataclass(frozen=True)
class ChipShare:
    """One chip's share of a step: its stage's per-chip cost, footprint and communication."""

    cost: ModelCost  #: per chip (workload fields stay the whole step's)
    footprint: Footprint  #: per chip
    comm: Comm
    layers: int  #: layers on this chip's stage
    first: bool
    last: bool
    stages: int = 1  #: how many pipeline stages look like this one


def chip_shares(model: Model, workload: Workload, par: Parallelism, link: Link | None) -> tuple[ChipShare, ...]:
    """Each distinct pipeline stage's per-chip share (one entry per distinct stage, busiest not chosen)."""
    t, e, p = par.tensor, par.expert, par.pipeline
    L = model.num_hidden_layers
    b_local = np.ceil(np.asarray(workload.batch, dtype=float) / e)
    local = model_cost(model, replace(workload, batch=b_local if np.ndim(b_local) else float(b_local)))
    whole = model_cost(model, workload) if e > 1 else local
    layer_counts = _stage_layers(L, p)
    seen: dict[tuple, ChipShare] = {}
    for i, n_layers in enumerate(layer_counts):
        first, last = i == 0, i == p - 1
        key = (n_layers, first, last)
        if key in seen:
            seen[key] = replace(seen[key], stages=seen[key].stages + 1)
            continue
        share = n_layers / L
        ops = []
        for op in local.ops:
            if op.block == "embedding":
                if not first:
                    continue
                ops.append(_tp_op(op, model, t))
            elif op.block == "head":
                if not last:
                    continue
                ops.append(_tp_op(op, model, t))
            elif op.name in _EXPERT_OPS and e > 1:
                g = next(o for o in whole.ops if o.name == op.name)
                ops.append(_scaled(g, share / (e * t),
                                   note=f"expert parallel {e}: {model.num_experts // e} experts per group, "
                                        "tokens from every group"))
            else:
                ops.append(_scaled(_tp_op(op, model, t), share) if share != 1 else _tp_op(op, model, t))
        if p > 1:
            ops = [replace(o, note=(o.note + "; " if o.note else "") + f"pipeline stage {i + 1}: {n_layers} of {L} "
                                  "layers") if o.block not in ("embedding", "head") else o for o in ops]
        cost = ModelCost(model=model, workload=workload, ops=tuple(ops))
        fp = _footprint(model, workload, par, cost, share, first, last, b_local)
        comm = communication(model, workload, par, link, layers=n_layers, first=first, last=last)
        seen[key] = ChipShare(cost=cost, footprint=fp, comm=comm, layers=n_layers, first=first, last=last)
    return tuple(seen.values())


def _footprint(model: Model, w: Workload, par: Parallelism, cost: ModelCost, share: float, first: bool,
               last: bool, b_local) -> Footprint:
    """Resident bytes on one chip: its weights (all its experts), its KV heads' cache, its state."""
    t = par.tensor
    weights = sum(op.weight_params * op.layers * op.bytes_per_weight for op in cost.ops)
    if last and not first and model.tie_word_embeddings:  # the lm_head reads the embedding matrix
        head = next(op for op in cost.ops if op.name == "lm_head")
        weights += model.vocab_size * model.hidden_size / t * head.bytes_per_weight
    kv_seq = kv_cache_bytes_per_sequence(model, w.cached_tokens_after, w.kv_dtype)
    state_seq = state_bytes_per_sequence(model, w.state_dtype, w.activations_dtype)
    kv = b_local * kv_seq * share / kv_split(model, t)
    state = b_local * state_seq * share / t
    return Footprint(weight_bytes=float(weights), kv_cache_bytes=_plain(kv), state_bytes=_plain(state))


def _plain(x):
    a = np.asarray(x, dtype=float)
    return float(a) if a.ndim == 0 else a


def _stages_and_micro(pipeline, micro_batches) -> tuple[int, int]:
    ok = all(not isinstance(v, bool) and isinstance(v, (int, np.integer)) and v >= 1 for v in (pipeline, micro_batches))
    if not ok:
        raise RooflineInputError(f"pipeline stages and micro-batches must be whole numbers >= 1, got {pipeline!r}, "
                                 f"{micro_batches!r}")
    return int(pipeline), int(micro_batches)


def bubble_fraction(pipeline: int, micro_batches: int = 1) -> float:
    """Idle share of a flushed pipeline: one batch split into ``micro_batches`` m that must all leave
    the ``pipeline`` p stages before the next step starts (GPipe-style training, one prefill):
    (p − 1)/(m + p − 1)."""
    p, m = _stages_and_micro(pipeline, micro_batches)
    return (p - 1) / (m + p - 1)


def steady_state_idle_fraction(pipeline: int, micro_batches: int) -> float:
    """Idle share of a pipeline that keeps ``micro_batches`` m independent batches circulating through
    its ``pipeline`` p stages (steady serving decode, as vLLM's pipeline parallelism runs):
    max(0, 1 − m/p) — no bubble once there are at least as many batches as stages."""
    p, m = _stages_and_micro(pipeline, micro_batches)
    return max(0.0, 1.0 - m / p)


def interconnect_ridge_flop_per_byte(peak_flops_per_s: float, link: Link) -> float:
    """The third ridge: FLOPs a chip must do per byte it sends for the link not to be the limit."""
    return peak_flops_per_s / link.per_direction_bytes_per_s


def ceil_div(a: int, b: int) -> int:
    return int(math.ceil(a / b))


def max_batch_that_fits_on_chips(model: Model | str, part: Part | str, cached_tokens, parallelism: Parallelism, *,
                                 weights_dtype: str = "bf16", kv_dtype: str = "bf16", state_dtype: str | None = None,
                                 activations_dtype: str = "bf16", memory_utilization: float = 1.0,
                                 weight_group_size: int | None = None, quantized_weights: str | None = None):
    """Largest batch (all sequences, every expert group) whose per-chip weights + KV + state fit every chip.

    Each chip holds its stage's weights (1/t of the split ones, its E/e experts) and, for the
    sequences of its expert group, 1/min(t, KV heads) of its stage's KV cache and 1/t of its state.
    """
    util = check_memory_utilization(memory_utilization)
    model, part = get_model(model), get_part(part)
    check_parallelism(model, parallelism)
    usable = part.memory_capacity_bytes * util
    w = Workload(phase="decode", batch=1, context_tokens=0, weights_dtype=weights_dtype, kv_dtype=kv_dtype,
                 weight_group_size=weight_group_size, quantized_weights=quantized_weights,
                 state_dtype=state_dtype, activations_dtype=activations_dtype)
    kv_seq = kv_cache_bytes_per_sequence(model, cached_tokens, kv_dtype)
    state_seq = state_bytes_per_sequence(model, state_dtype, activations_dtype)
    t, e = parallelism.tensor, parallelism.expert
    L = model.num_hidden_layers
    best = None
    for share in chip_shares(model, w, parallelism, None):
        frac = share.layers / L
        per_seq = kv_seq * frac / kv_split(model, t) + state_seq * frac / t
        free = usable - share.footprint.weight_bytes
        with np.errstate(divide="ignore"):
            n = np.floor(np.where(free > 0, free / np.maximum(per_seq, 1e-300), 0.0))
        best = n if best is None else np.minimum(best, n)
    out = (np.maximum(best, 0) * e).astype(np.int64)
    return int(out) if out.ndim == 0 else out
