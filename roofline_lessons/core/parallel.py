"""Many chips: one step split by tensor, expert and pipeline parallelism, within a server and past it.

Conventions (what a lesson can quote):

- **Tensor parallel** over ``tensor`` = t chips (Megatron style): attention heads, Gated DeltaNet
  heads and MLP/expert columns are split t ways, so each chip holds and reads 1/t of those weights
  and does 1/t of their FLOPs. The KV cache is split by KV head: 1/min(t, KV heads) per chip;
  when t exceeds the KV heads each KV head is stored on t / KV-heads chips (replicated, and said
  so), and an MLA latent (one per token, shared by every head) on all t. The estimate and the
  memory keep that replication (what engines without decode context parallel do: each chip reads
  its whole copy); the lower bound does not: it shards the KV across the t chips, as decode context
  parallel does (see the lower bound below). Norms, residual adds and the MoE router run whole on
  every chip. The embedding and the
  lm_head are split over the vocabulary. Activations of a split operator are split like its FLOPs
  (an approximation: a column-parallel matmul reads its whole input).
  Communication: two all-reduces per layer of the step's activations (tokens × hidden), one after
  the attention (or DeltaNet) block and one after the MLP/MoE block, one after the vocab-parallel
  embedding, and an all-gather of the logits after the lm_head. A ring all-reduce makes every chip
  send 2(t−1)/t of the message; an all-gather (t−1)/t.
- **Expert parallel** over ``expert`` = e groups (MoE models only): the routed experts are spread
  over the e groups (slots/e each, see expert slots below), and the sequences too (attention is
  data-parallel across the groups: each group runs ⌈batch/e⌉ sequences, with TP t inside the group,
  and the group's experts are TP-split t ways). A group's chips receive the tokens routed to
  their experts from every group: 1/e of all routed tokens and the experts touched among theirs.
  Two all-to-alls per MoE layer (dispatch and combine). The estimate sends one copy per chosen
  expert: a group's tokens × k × hidden, the (e−1)/e of it bound for other groups. Under TP t > 1 inside
  a group, every chip of the receiving group needs the whole vector of each token routed to it (its
  expert slices are split by columns), so each chip *receives* all the copies bound for its group —
  (e−1)/e of tokens × k × hidden, not 1/t of it — and, with no multicast, the group's chips send as
  much as they receive: the per-chip figure is that receive side, whatever t.
- **Attention data parallel** (``attention_data_parallel=True``, DeepSeek's and SGLang's decode
  layout; MoE models only): attention (and the dense layers) as above — e data-parallel groups of t
  chips, TP t inside each — but the MoE layers run expert parallel over ALL t × e chips of the stage,
  each chip holding whole experts (slots/(t·e) of them) and no TP split of the experts. After the
  attention a reduce-scatter leaves each chip of a group 1/t of the group's tokens (fully reduced);
  each chip routes those (the router, the MoE norm and residual, the shared experts — whole on every
  chip — all on 1/t of the group's tokens); one all-to-all dispatches them to the t·e chips and one
  combines them back; an all-gather inside the group restores every token before the next attention.
  The reduce-scatter + all-gather move the bytes of the one all-reduce they replace (2 calls), and
  the MoE block needs no all-reduce of its own (whole experts leave no partial sums). With t = 1 it
  is the expert-parallel layout above (each chip its own group).
- **Expert slots** (``expert_slots``, None: the model's expert count E): redundant slots as
  DeepSeek's EPLB places them (hot experts replicated). The slots must be ≥ E and divisible by the
  expert-parallel degree (e, or t × e under attention data parallel), which need no longer divide E.
  Each group (chip, under attention data parallel) holds slots/degree experts' weights, so the weights
  per chip and the memory grow by slots/E for the experts. Routing is assumed uniform over the SLOTS:
  a token chooses k of the slots, each slot equally likely, so every slot, replica or not, serves an
  equal share of the tokens (what a balancer that replicates hot experts aims for). That is not "k
  experts uniformly, then one of each one's replicas at random", which is uniform over the slots only
  when every expert has equally many replicas. The weights read per chip are the slots touched,
  slots·(1 − (1 − k/slots)^tokens) ÷ degree (more than E's, every replica reads its own copy); the
  FLOPs per chip do not change.
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
- **Replicas** (``replicas`` = r, plain data parallel): r independent copies of the whole split, each
  serving its own batch (``batch`` is ONE copy's); they never talk. Every per-chip figure is one
  copy's (unchanged by r); chips = t × e × p × r, and the aggregate throughput is r × one copy's
  (:attr:`~roofline_lessons.core.placement.Placement.aggregate_tokens_per_s_estimate`).
- **Per chip.** Chips = t × e × p (× r). Every FLOP, byte and second of a multi-chip placement is per
  chip, for the busiest stage (the one with the longest stage time; with arrays of batch or
  tokens, element by element). Memory is the fullest chip's, since every chip must fit: with
  stages of unequal size that is the first stage (most layers, and the embedding), which need not
  be the busiest. Communication bytes are what each chip *sends* in the step — for the expert
  all-to-all under TP × EP, what it must receive, the larger side (multicast could cut the sends).
- **Past one server.** A server is the in-server link's domain (``max_chips`` of the scale-up link:
  8 on an HGX board, 72 in a GB200 NVL72 rack; of PCIe for a part without one). Chips are placed TP
  innermost, then EP, then PP, then replicas: a copy of more chips than one server holds spans
  servers, and t, t × e and t × e × p must each divide the server or be whole multiples of it (no
  group straddles two servers). Between servers the chips talk over the part's scale-out link (one
  reference NIC per chip, ``Part.scale_out_link``); a part with none is refused, and says so.
  TP within a server uses the scale-up link. TP across servers (t = t_in × t_out, t_in = the server's
  chips) is hierarchical: a reduce-scatter inside the server (ring: (t_in − 1)/t_in of the message
  per chip), an all-reduce of 1/t_in of the message among the t_out chips of the same rank across
  servers over the NIC (ring: 2(t_out − 1)/t_out of it), an all-gather inside the server; the logits
  all-gather likewise (across, then inside). Expert parallel beyond a server: of the expert groups a
  token's copies go to, those on the chip's own server are reached over the scale-up link, the others
  over the NIC (with uniform routing, (u_on − 1)/units and (units − u_on)/units of the copies, units
  the expert groups — chips under attention data parallel — and u_on those on one server). A send
  between pipeline stages on different servers crosses the NIC.
- **Group-limited routing** (DeepSeek-V2/V3: ``Model.n_group`` routing groups of E/n_group
  contiguous experts, a token's k experts from at most ``Model.topk_group`` of them; DeepSeek places
  the groups on nodes so that a token reaches at most topk_group nodes). The estimate keeps uniform
  routing over all the experts, the conservative count (DeepSeek-V3's 8 experts per token reach about
  5.3 of 8 servers, more than the 4 groups its router allows). The lower bound takes the model's own
  limit: routing uniform within it (topk_group of the n_group groups drawn uniformly, the k experts
  uniformly among theirs), each destination's chance of being reached the smaller of that and the
  uniform one, so a token reaches at most topk_group servers (expert groups) where the routing groups
  align with them. It applies where the n_group groups tile the expert slots (each group's redundant
  copies beside it, as DeepSeek's hierarchical EPLB keeps them on the group's node); elsewhere the
  bound keeps uniform routing.
- **Time.** A collective costs latency_s per call + bytes / the link's per-direction bandwidth.
  The per-call latency is ONE fixed cost whatever the number of chips (the catalog's figure is an
  assumption, ``latency_basis = "assumed"``: about 10 µs, the order of one NCCL call in an 8-GPU
  node; on the scale-out network a further 10 µs per call, so a collective over both links pays 20 µs
  in all). That is a one-shot, switch-style model: a textbook
  ring pays 2(n − 1) hop latencies
  (NCCL's LL and LL128 protocols make each hop cheaper, not fewer); NCCL's tree is a chain inside a
  node, so its latency is linear in the GPUs per node, logarithmic only in the number of nodes (NCCL's
  cost model, ``ncclTopoTuneModel`` in src/graph/tuning.cc, charges a tree all-reduce
  2 × ((GPUs per node − 1) × intra-node hop + log2(nodes) × inter-node hop)); NVLS (the reduction
  in the switch) and custom one-shot kernels stay roughly flat in n, the latter a few µs. Every
  time that includes it is an estimate at the assumed latency, not a lower bound
  (``collective_latency_s`` sets another figure for the in-server link, ``network_latency_s`` for the
  scale-out link). A collective that uses both links pays each link's latency once per call, and the
  estimate ADDS the two links' times (the hierarchical phases one after another; an all-to-all's
  on-server and off-server shares one after the other, the conservative convention). In the estimate
  communication is by default *not* overlapped with compute: a stage takes max(compute, memory) +
  communication; ``overlap_comm=True`` makes it max(compute, memory, communication).
- **The lower bound** (:attr:`~roofline_lessons.core.placement.Placement.time_lower_bound_s`) counts
  no per-call latency, overlaps communication with compute and memory — and, past one server, the
  scale-up link and the NIC with each other: the NIC must carry the N bytes bound for other servers,
  and the U in-server bytes may take either link (through the network switch as well as the scale-up
  link), so its communication time is max(N ÷ NIC, (N + U) ÷ (NIC + scale-up)) at the per-direction
  bandwidths, never more than the larger of the two links' own times. It reads the KV cache once per
  tensor-parallel group: where the estimate replicates it (t above the KV heads, or an MLA latent),
  each chip's compulsory KV read and write is 1/t of its group's, as decode context parallel (vLLM's
  and SGLang's DCP: the KV sharded along the sequence inside the TP group, no duplicated storage)
  achieves; the estimate and the memory keep the replication. It takes the least bytes any
  algorithm the link supports sends:
  where the switch reduces in the switch (NVLink SHARP on NVLink 4 NVSwitch and later, InfiniBand
  SHARP in the network, ``Link.in_switch_reduction``) an all-reduce sends each byte once
  instead of the ring's 2(t−1)/t (the same for t = 2); elsewhere the ring's bytes. The logits
  all-gather counts 0 (vocab-parallel sampling exchanges each chip's top candidates, not its
  logits); an all-to-all moves each token once per other expert group its k experts live on
  (:func:`remote_groups_per_token`), not once per chosen expert, and counts per chip the larger of
  what it sends and what it receives: every chip of a group receives each such token whole (with
  TP t inside the group, t copies enter the group, one per chip, so the bound does not divide by t).
  Across servers it takes on each link its least: over the NIC each token crosses once per other
  SERVER its experts live on (shared by the server's NICs), over the scale-up link once per other
  on-server group. The combine is priced like the dispatch: each chip of the token's group receives one partial
  result per token and remote group (from its counterpart chip there), and the tensor all-reduce
  after the MoE block, counted already, sums the t partial results. The expert-parallel figures,
  bound and estimate alike, assume uniform routing (the mean experts touched, the mean groups
  reached): they price the MEAN step under random uniform routing, not every step — one step's
  draw sends more or less than the mean (a few per cent at batch 1), a routing that keeps tokens
  near their experts sends less, a skewed one loads one chip more. So for expert parallel the
  bound is a bound *on the mean step under uniform routing* (group-limited routing lowers the
  bound's all-to-all to at most topk_group groups per token: see group-limited routing above). With pipeline stages the bound is the
  larger of two: the busiest stage's bound (every stage does its share of the whole step, however
  it is cut into micro-batches), and one token's crossing — the sum of the stages' bounds for one
  sequence (decode: its next token needs this one, so it crosses every stage in turn, each
  reading its weights) or a one-token chunk (prefill). With fewer micro-batches than stages (batch
  1 decode) the crossing binds, about one chip's bound; with enough to keep every stage busy (a
  long prompt in chunks, a large batch) the busiest stage can. The sends between stages overlap in
  both (no latency).
- **Which link.** ``link="auto"`` uses the scale-up link (NVLink, Infinity Fabric, ICI) when the
  chips of a copy fit its domain, else PCIe (a part with no scale-up link, or the H100 PCIe's bridge
  past 2 chips), and says so; past the largest in-server domain, the in-server link with it and the
  scale-out link between servers. ``link="scale-up"`` or ``"pcie"`` forces the in-server link (past
  its domain, the scale-out link joins the servers).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from .costs import ModelCost, OpCost, Workload, expected_experts_touched, model_cost
from .dtypes import bytes_per_element
from .errors import RooflineInputError
from .hardware import Link, Part, get_part
from .memory import Footprint, check_memory_utilization, kv_cache_bytes_per_sequence, state_bytes_per_sequence
from .models import Model, get_model

#: the link a split may ask for inside a server ("auto": the scale-up link when the chips fit it, else PCIe);
#: past one server the part's scale-out link joins the servers, whichever is chosen
LINK_CHOICES = ("auto", "scale-up", "pcie")

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
    """How one step is split: ``tensor`` × ``expert`` × ``pipeline`` chips per copy, × ``replicas``
    copies (see the module docstring)."""

    tensor: int = 1
    expert: int = 1
    pipeline: int = 1
    overlap_comm: bool = False
    link: str = "auto"
    #: seconds per collective call on the in-server link in the estimate (None: the link's catalogued,
    #: assumed figure); the lower bound never counts a per-call latency
    collective_latency_s: float | None = None
    #: seconds per call on the scale-out network in the estimate (None: its catalogued, assumed figure)
    network_latency_s: float | None = None
    #: expert slots, redundant copies included (None: the model's expert count); >= the experts and
    #: divisible by the expert-parallel degree
    expert_slots: int | None = None
    #: attention data-parallel over e groups of ``tensor`` chips, MoE expert parallel over all t × e chips
    attention_data_parallel: bool = False
    replicas: int = 1  #: independent copies (plain data parallel), each with its own batch

    def __post_init__(self) -> None:
        for name in ("tensor", "expert", "pipeline"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise RooflineInputError(f"{name} parallel must be a whole number of chips >= 1, got {v!r}")
        r = self.replicas
        if isinstance(r, bool) or not isinstance(r, (int, np.integer)) or r < 1:
            raise RooflineInputError(f"replicas must be a whole number of copies >= 1, got {r!r}")
        slots = self.expert_slots
        if slots is not None and (isinstance(slots, bool) or not isinstance(slots, (int, np.integer)) or slots < 1):
            raise RooflineInputError(f"expert_slots must be a whole number >= 1 (or None for the model's experts), "
                                     f"got {slots!r}")
        if self.link not in LINK_CHOICES:
            raise RooflineInputError(f"unknown link {self.link!r}; links are: {', '.join(LINK_CHOICES)}")
        for name in ("overlap_comm", "attention_data_parallel"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise RooflineInputError(f"{name} must be True or False, got {getattr(self, name)!r}")
        for name, what in (("collective_latency_s", "catalog's assumed figure"),
                           ("network_latency_s", "catalog's assumed figure for the scale-out link")):
            lat = getattr(self, name)
            if lat is not None and (isinstance(lat, bool) or not isinstance(lat, (int, float, np.floating, np.integer))
                                    or not math.isfinite(lat) or lat < 0):
                raise RooflineInputError(f"{name} must be a number of seconds >= 0 (or None for the {what}), "
                                         f"got {lat!r}")

    @property
    def chips(self) -> int:
        """Every chip: tensor × expert × pipeline × replicas."""
        return int(self.tensor * self.expert * self.pipeline * self.replicas)

    @property
    def chips_per_replica(self) -> int:
        """The chips of one copy: tensor × expert × pipeline."""
        return int(self.tensor * self.expert * self.pipeline)

    @property
    def stage_chips(self) -> int:
        """The chips of one pipeline stage of one copy: tensor × expert."""
        return int(self.tensor * self.expert)

    @property
    def expert_parallel_degree(self) -> int:
        """Ways the MoE experts are spread: ``expert``, or tensor × expert under attention data parallel."""
        return self.stage_chips if self.attention_data_parallel else int(self.expert)

    @property
    def label(self) -> str:
        """``TP 2``, ``TP 4 × EP 2``, ``TP 8 × DP 2`` (replicas), ``TP 4 × attention DP 80, MoE EP 320``,
        ``EP 16, 160 expert slots`` … or ``1 chip``."""
        t, e, p, r = self.tensor, self.expert, self.pipeline, self.replicas
        if self.attention_data_parallel:
            parts = [f"TP {t}"] if t > 1 else []
            parts.append(f"attention DP {e}")
        else:
            parts = [f"{k} {v}" for k, v in (("TP", t), ("EP", e)) if v > 1]
        parts += [f"{k} {v}" for k, v in (("PP", p), ("DP", r)) if v > 1]
        text = " × ".join(parts) if parts else "1 chip"
        if self.attention_data_parallel:
            text += f", MoE EP {t * e}"
        if self.expert_slots is not None:
            text += f", {self.expert_slots} expert slots"
        return text


SINGLE_CHIP = Parallelism()


def expert_slots(model: Model, par: Parallelism) -> int:
    """The expert slots of ``par`` on ``model`` (its experts when ``par.expert_slots`` is None)."""
    return int(model.num_experts if par.expert_slots is None else par.expert_slots)


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
                        f"chips keeps the whole latent cache (replicated {t}×) in the estimate and the memory; the "
                        f"lower bound shards it across the {t} chips, as decode context parallel does")
    if t > kv and attention:
        warnings.append(f"tensor parallel {t} exceeds {m.id}'s {kv} KV heads: each KV head is stored on {t // kv} "
                        f"chips (the KV cache is replicated {t // kv}×, 1/{kv} of it per chip) in the estimate and the "
                        f"memory; the lower bound shards it 1/{t} per chip, as decode context parallel does")
    if par.attention_data_parallel:
        if not m.is_moe:
            raise RooflineInputError(f"attention data parallel runs the MoE layers expert parallel over every chip; "
                                     f"{m.id} is dense (for plain data parallel give replicas)")
        if t * e == 1:
            raise RooflineInputError("attention data parallel needs more than one chip per pipeline stage "
                                     "(tensor × expert > 1)")
    if e > 1 and not m.is_moe:
        raise RooflineInputError(f"expert parallel {e} needs a mixture-of-experts model; {m.id} is dense "
                                 "(use tensor or pipeline parallel)")
    if par.expert_slots is not None and not m.is_moe:
        raise RooflineInputError(f"expert_slots {par.expert_slots} needs a mixture-of-experts model; {m.id} is dense")
    if m.is_moe:
        E, slots, degree = m.num_experts, expert_slots(m, par), par.expert_parallel_degree
        what = (f"MoE expert parallel {degree} (tensor {t} × expert {e}, attention data parallel)"
                if par.attention_data_parallel else f"expert parallel {degree}")
        if slots < E:
            raise RooflineInputError(f"expert_slots {slots} is fewer than {m.id}'s {E} experts; slots hold every "
                                     f"expert at least once (allowed: {E} or more, divisible by {degree})")
        if slots % degree:
            fit = -(-E // degree) * degree
            if par.expert_slots is None:
                raise RooflineInputError(f"{what} does not divide {m.id}'s {E} experts; divisors of {E}: "
                                         f"{', '.join(str(d) for d in _divisors(E))}, or give expert slots "
                                         f"(redundant copies, e.g. {fit})")
            raise RooflineInputError(f"{what} does not divide {slots} expert slots; allowed: a multiple of "
                                     f"{degree} >= {E} (e.g. {fit})")
        if slots != E and degree == 1:
            raise RooflineInputError(f"expert_slots {slots}: redundant expert slots need expert parallel "
                                     f"(expert > 1, or attention data parallel with tensor > 1)")
        if slots > E:
            warnings.append(f"{slots} expert slots for {m.id}'s {E} experts: {slots - E} redundant copies, "
                            f"{slots // degree} slots per {'chip' if par.attention_data_parallel else 'expert group'}"
                            f"; routing assumed uniform over the slots (a token chooses k of the slots, each slot "
                            f"an equal share)")
    if p > m.num_hidden_layers:
        raise RooflineInputError(f"pipeline parallel {p} is more stages than {m.id}'s {m.num_hidden_layers} layers")
    return tuple(warnings)


def _check_par(par) -> None:
    if not isinstance(par, Parallelism):
        raise RooflineInputError(f"parallelism must be a Parallelism(tensor=…, expert=…, pipeline=…), got {par!r}")


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


# ---- which links, and where the server ends ---------------------------------------------------


@dataclass(frozen=True)
class Topology:
    """Where one copy of a split sits: the link inside a server, the chips one server joins over it,
    and the scale-out link between servers (None while the copy fits one server)."""

    link: Link | None  #: the in-server link (None: one chip per copy)
    server_chips: int  #: chips one server joins over ``link`` (its domain)
    scale_out: Link | None = None  #: the network between servers, when the copy spans them
    notes: tuple[str, ...] = ()  #: what the reader should know about the choice

    def servers(self, chips: int) -> int:
        """Servers ``chips`` chips of a copy span (1 while they fit one)."""
        return 1 if self.scale_out is None else int(chips // self.server_chips)


def split_topology(part: Part | str, par: Parallelism) -> Topology:
    """The links one copy of ``par`` uses on ``part``: the in-server link, and past its domain the
    part's scale-out link (refused, with the reason, when the part has none or a group would
    straddle two servers)."""
    _check_par(par)
    part = get_part(part)
    n = par.chips_per_replica
    if n == 1:
        return Topology(link=None, server_chips=1)
    if par.link != "auto":
        inner = part.link(par.link)
        if n <= inner.max_chips:
            return Topology(link=inner, server_chips=inner.max_chips)
        return _across_servers(part, par, inner, ())
    up, host = part.scale_up_link, part.host_link
    if up is not None and n <= up.max_chips:
        return Topology(link=up, server_chips=up.max_chips)
    if host is not None and n <= host.max_chips:
        why = (f"{part.id} has no scale-up link" if up is None
               else f"{n} chips exceed the {up.name}'s domain of {up.max_chips}")
        return Topology(link=host, server_chips=host.max_chips,
                        notes=(f"{why}: the chips talk over {host.name} "
                               f"({host.per_direction_bytes_per_s / 1e9:,.0f} GB/s per direction)",))
    inner = max((lk for lk in (up, host) if lk is not None), key=lambda lk: lk.max_chips)
    return _across_servers(part, par, inner, ())


def _across_servers(part: Part, par: Parallelism, inner: Link, notes: tuple[str, ...]) -> Topology:
    n, S = par.chips_per_replica, inner.max_chips
    net = part.scale_out_link
    if net is None:
        raise RooflineInputError(
            f"{n} chips per copy exceed {part.id}'s {inner.name} domain of {S}, and {part.id} has no scale-out link "
            f"in the catalog (no published reference NIC per chip) to join servers; use at most {S} chips per copy "
            "(tensor × expert × pipeline), or replicas for more copies")
    t, e = par.tensor, par.expert
    for what, b in (("tensor parallel", t), ("tensor × expert (one pipeline stage)", t * e),
                    ("tensor × expert × pipeline (one copy)", n)):
        if S % b and b % S:
            raise RooflineInputError(
                f"{what} = {b} chips straddles {part.id}'s {S}-chip {inner.name} domain: past one server, tensor, "
                f"tensor × expert and tensor × expert × pipeline must each divide {S} or be a whole multiple of it "
                "(chips are placed TP innermost, then EP, then PP)")
    return Topology(link=inner, server_chips=S, scale_out=net, notes=notes)


def choose_link(part: Part | str, par: Parallelism) -> tuple[Link | None, tuple[str, ...]]:
    """The link the split's traffic uses inside a server, and what the reader should know about the
    choice (:func:`split_topology` has the scale-out link past one server)."""
    topo = split_topology(part, par)
    return topo.link, topo.notes


# ---- per-chip cost ---------------------------------------------------------------------------

_FIELDS = ("flops", "weight_matmul_flops", "dequant_flops", "weight_bytes", "activation_bytes", "kv_read_bytes", "kv_write_bytes",
           "state_read_bytes", "state_write_bytes", "weight_params", "active_weight_params",
           "unquantized_matmul_flops", "kv_scratch_bytes", "state_scratch_bytes", "io_bytes")
#: fields that follow the weights an operator holds and reads, not the tokens it processes
_WEIGHT_FIELDS = ("weight_bytes", "weight_params", "dequant_flops", "active_weight_params")


def _scaled(op: OpCost, factor: float, *, kv_factor: float | None = None, note: str = "") -> OpCost:
    kvf = factor if kv_factor is None else kv_factor
    changes = {f: getattr(op, f) * (kvf if f.startswith("kv_") else factor) for f in _FIELDS}
    if note:
        changes["note"] = f"{op.note}; {note}" if op.note else note
    return replace(op, **changes)


def _token_split(op: OpCost, factor: float, note: str) -> OpCost:
    """``op`` on ``factor`` of its tokens with its weights whole (held and read whole)."""
    changes = {f: getattr(op, f) * (1.0 if f in _WEIGHT_FIELDS else factor) for f in _FIELDS}
    changes["note"] = f"{op.note}; {note}" if op.note else note
    return replace(op, **changes)


def _expert_share(op: OpCost, factor: float, model: Model, slots: int, tokens, note: str) -> OpCost:
    """One chip's share (``factor`` of the whole step's) of a routed-expert operator over ``slots``
    expert slots: the FLOPs and activations of ``factor`` of the routed tokens; the weights held grow
    by slots/E, the weights read to the slots touched under uniform routing over the slots."""
    E, k = model.num_experts, model.num_experts_per_tok
    held = slots / E
    touched = (np.divide(expected_experts_touched(slots, k, tokens), expected_experts_touched(E, k, tokens))
               if slots != E else 1.0)
    changes = {f: getattr(op, f) * factor for f in _FIELDS}
    changes["weight_params"] = op.weight_params * factor * held
    changes["weight_bytes"] = op.weight_bytes * factor * touched
    changes["dequant_flops"] = op.dequant_flops * factor * touched
    changes["note"] = f"{op.note}; {note}" if op.note else note
    return replace(op, **changes)


def _tp_op(op: OpCost, model: Model, t: int) -> OpCost:
    """One operator's share on one of t tensor-parallel chips."""
    if t == 1 or op.name in _REPLICATED:
        return op
    kv_share = 1.0 / kv_split(model, t)
    if op.name in _KV_OPS:
        return _kv_sharded_in_bound(_scaled(op, kv_share), kv_share, t)
    if op.block in ("full_attention", "sliding_attention", "chunked_attention", "mla") and op.kv_read_bytes is not None and np.any(np.asarray(op.kv_read_bytes) > 0):
        return _kv_sharded_in_bound(_scaled(op, 1.0 / t, kv_factor=kv_share), kv_share, t)
    return _scaled(op, 1.0 / t)


def _kv_sharded_in_bound(op: OpCost, kv_share: float, t: int) -> OpCost:
    """``op`` on one of t chips that each hold ``kv_share`` of the KV cache (1/min(t, KV heads); 1 for
    an MLA latent), with only 1/t of it compulsory: decode context parallel shards a replicated KV
    head (an MLA latent) along the sequence across the t chips, so each KV byte is read and written once
    per tensor-parallel group. The replicated rest stays in the estimate's traffic: the extra read as
    ``kv_scratch_bytes`` (read, not compulsory), the extra write with the activations (written in the
    unfused view, not compulsory, as a sliding window's scratch K and V). The footprint keeps the
    replication (:func:`_footprint`)."""
    keep = 1.0 / (t * kv_share)  # the compulsory share of this chip's KV traffic
    if keep >= 1.0 or not (np.any(np.asarray(op.kv_read_bytes) > 0) or np.any(np.asarray(op.kv_write_bytes) > 0)):
        return op
    compulsory_read = (op.kv_read_bytes - op.kv_scratch_bytes) * keep
    extra_write = op.kv_write_bytes * (1.0 - keep)
    note = (f"KV replicated {round(t * kv_share)}× on the chips (estimate, memory); the bound shards it 1/{t} per "
            "chip, as decode context parallel does")
    return replace(op, kv_scratch_bytes=op.kv_read_bytes - compulsory_read, kv_write_bytes=op.kv_write_bytes - extra_write,
                   activation_bytes=op.activation_bytes + extra_write,
                   note=f"{op.note}; {note}" if op.note else note)


def kv_split(model: Model, t: int) -> int:
    """Ways t tensor-parallel chips split the KV cache: by KV head, at most the KV heads; an MLA
    latent is shared by every head, so each chip keeps all of it (1)."""
    return 1 if model.is_mla else min(t, model.num_key_value_heads)


def _stage_layers(layers: int, p: int) -> list[int]:
    base, extra = divmod(layers, p)
    return [base + (1 if i < extra else 0) for i in range(p)]


@dataclass(frozen=True)
class CommPart:
    """One kind of collective in a chip's stage, on one link: calls, bytes this chip sends and seconds
    by the estimate's algorithm (ring, per-call latency), and the least bytes any algorithm the link
    supports sends (``bound_bytes``: in-switch reduction where the switch does it). A collective that
    crosses servers comes as two parts, one per link (the second named "… across servers")."""

    name: str
    calls: float
    bytes: object
    time_s: object
    bound_bytes: object = None  #: None: the same as ``bytes``
    link: Link | None = None  #: the link these bytes use (None: the Comm's in-server link)

    @property
    def least_bytes(self):
        return self.bytes if self.bound_bytes is None else self.bound_bytes


@dataclass(frozen=True)
class Comm:
    """A chip's communication in one step of its stage (sends between stages kept apart)."""

    link: Link | None  #: the in-server link
    parts: tuple[CommPart, ...]
    pipeline_send_bytes: object = 0.0  #: bytes one chip sends to the next stage
    #: seconds of one send between stages, the mean over the p − 1 sends (a send between servers crosses
    #: the scale-out link, with its latency and bandwidth)
    pipeline_send_s: object = 0.0
    scale_out_link: Link | None = None  #: the network between servers (None: the copy fits one server)
    server_chips: int | None = None  #: chips one server joins over ``link``
    pipeline_network_sends: int = 0  #: of the p − 1 sends between stages, those between servers

    def _link_of(self, part: CommPart) -> Link | None:
        return self.link if part.link is None else part.link

    @property
    def bytes(self):
        """Bytes this chip sends within its stage's step (collectives, every link), summed; the expert
        all-to-all under TP × EP counts its receive side (the larger: every chip of a group receives each
        token routed to the group whole)."""
        return sum((c.bytes for c in self.parts), 0.0)

    @property
    def network_bytes(self):
        """Bytes this chip sends over the scale-out link in its stage's collectives (0 in one server)."""
        if self.scale_out_link is None:
            return 0.0
        return sum((c.bytes for c in self.parts if c.link is self.scale_out_link), 0.0)

    @property
    def time_s(self):
        """Seconds of this chip's collectives in the step, summed over the links (sends between stages
        excluded): the estimate's."""
        return sum((c.time_s for c in self.parts), 0.0)

    @property
    def calls(self):
        """Collective calls this chip makes in the step (sends between stages excluded), summed; a
        collective over both links counts once."""
        names = {c.name for c in self.parts}
        return _plain(sum((c.calls for c in self.parts
                           if not c.name.endswith(_ACROSS) or c.name[:-len(_ACROSS)] not in names), 0.0))

    @property
    def bound_bytes(self):
        """The least bytes this chip must send in its stage's collectives (any algorithm the links
        support), summed over the links."""
        return sum((c.least_bytes for c in self.parts), 0.0)

    @property
    def network_bound_bytes(self):
        """The least bytes this chip must send over the scale-out link (0 in one server)."""
        if self.scale_out_link is None:
            return 0.0
        return sum((c.least_bytes for c in self.parts if self._link_of(c) is self.scale_out_link), 0.0)

    @property
    def bound_time_s(self):
        """Seconds those least bytes need at the links' per-direction bandwidths, no per-call latency.

        In one server: the in-server link's least bytes ÷ its bandwidth. Past one server the two links
        run at once and share the work: the NIC must carry the cross-server bytes N, and the in-server
        bytes U may take either link, so the least time is max(N ÷ NIC, (N + U) ÷ (NIC + in-server)) —
        never more than the larger of the two links' own times."""
        if self.link is None or not self.parts:
            return 0.0
        total = self.bound_bytes
        if self.scale_out_link is None:
            return np.divide(total, self.link.per_direction_bytes_per_s)
        net_bw, up_bw = self.scale_out_link.per_direction_bytes_per_s, self.link.per_direction_bytes_per_s
        return np.maximum(np.divide(self.network_bound_bytes, net_bw), np.divide(total, net_bw + up_bw))


_ACROSS = " across servers"  #: the name suffix of a collective's part on the scale-out link


def _collective(link: Link, name: str, calls: float, nbytes, latency_s: float, bound_bytes=None) -> CommPart:
    return CommPart(name=name, calls=calls, bytes=nbytes, bound_bytes=bound_bytes, link=link,
                    time_s=calls * latency_s + np.divide(nbytes, link.per_direction_bytes_per_s))


def remote_groups_per_token(experts: int, chosen: int, groups: int, n_group: int = 0, topk_group: int = 0) -> float:
    """Expected number of OTHER expert groups a token's ``chosen`` experts live on, when the
    ``experts`` are spread evenly over ``groups`` groups and routing is uniform (each token's k
    experts a uniform draw without replacement): (e − 1)·(1 − C(E − E/e, k)/C(E, k)).

    With group-limited routing (``n_group`` routing groups of E/n_group contiguous experts, a token's
    experts from at most ``topk_group`` of them: DeepSeek-V2/V3) the routing is uniform within the
    limit (topk_group of the n_group routing groups drawn uniformly, the k experts uniformly among
    theirs), and the count is the smaller of that and the unlimited one (:func:`_route_hit`); a token
    then reaches at most topk_group groups when the routing groups align with the expert groups.

    The least an all-to-all must move per token: one copy per destination group, whatever the
    number of experts chosen there, as DeepEP's high-throughput (normal) kernels do; its
    low-latency decode kernels send one copy per chosen expert (the estimate's convention). At
    most k·(e − 1)/e, the copies one per chosen expert that the estimate sends; equal to it when
    each group holds one expert. A mean over uniform routing: one step's draw can reach more
    groups, so a bound built on it bounds the mean step, not every step. With expert slots, pass the
    slots as ``experts`` (routing uniform over the slots).
    """
    E, k, e = int(experts), int(chosen), int(groups)
    if e <= 1:
        return 0.0
    return (e - 1) * _route_hit(E, k, e, int(n_group), int(topk_group))


def _hit(slots: int, k: int, groups: int) -> float:
    """Chance that one given group of ``groups`` (holding slots/groups of the ``slots``) holds at least
    one of a token's k choices, under uniform routing over the slots."""
    return 1.0 - math.comb(slots - slots // groups, k) / math.comb(slots, k)


def _route_hit(slots: int, k: int, dests: int, n_group: int = 0, topk_group: int = 0) -> float:
    """Chance that a token's k choices reach one given destination of ``dests`` (each holding
    slots/dests contiguous slots), the mean over the destinations: :func:`_hit` under uniform
    routing, and with group-limited routing the smaller of that and the chance under uniform
    routing within the limit (:func:`_group_limited_hit`). The limit applies where the n_group
    routing groups tile the slots (n_group divides them: each group's replicas beside it, as
    DeepSeek's hierarchical EPLB keeps them on its node); elsewhere routing stays uniform."""
    uniform = _hit(slots, k, dests)
    if n_group <= 1 or topk_group >= n_group or slots % n_group or k > topk_group * (slots // n_group):
        return uniform
    return min(uniform, _group_limited_hit(slots, k, dests, n_group, topk_group))


def _group_limited_hit(slots: int, k: int, dests: int, n_group: int, topk_group: int) -> float:
    """Mean over the ``dests`` destinations (slots/dests contiguous slots each) of the chance that a
    token reaches it when it draws ``topk_group`` of the ``n_group`` routing groups (slots/n_group
    contiguous slots each) uniformly, then its k slots uniformly among those groups' slots.
    Exact: for a destination overlapping the groups by o_i slots, the chance it is missed is
    Σ over the chosen groups' overlap x of P(x) · C(W − x, k)/C(W, k), W = topk_group·slots/n_group."""
    s, d = slots // n_group, slots // dests
    pool = topk_group * s
    ways_all = math.comb(n_group, topk_group)
    total = 0.0
    for u in range(dests):
        lo, hi = u * d, (u + 1) * d
        overlaps = [min(hi, (i + 1) * s) - max(lo, i * s) for i in range(n_group)]
        overlaps = [o for o in overlaps if o > 0]
        m = len(overlaps)
        # ways[j][x]: ways to choose j of the overlapping groups whose overlaps sum to x
        ways = [dict() for _ in range(m + 1)]
        ways[0][0] = 1
        for o in overlaps:
            for j in range(m - 1, -1, -1):
                for x, w in ways[j].items():
                    ways[j + 1][x + o] = ways[j + 1].get(x + o, 0) + w
        miss = 0
        for j in range(min(m, topk_group) + 1):
            rest = math.comb(n_group - m, topk_group - j)
            if rest == 0:
                continue
            for x, w in ways[j].items():
                miss += w * rest * math.comb(pool - x, k)
        total += 1.0 - miss / (ways_all * math.comb(pool, k))
    return total / dests


def _all_reduce(name: str, calls: float, count: float, message, t: int, server: int, up: Link, net: Link | None,
                lat_up: float, lat_net: float) -> list[CommPart]:
    """``count`` all-reduces of ``message`` bytes over t chips in ``calls`` calls: in one server the
    ring (least: once, in the switch); across servers hierarchical: reduce-scatter and all-gather
    inside the server (the ring's 2(t_in − 1)/t_in), all-reduce of message/t_in over the t_out
    servers on the network (the ring's 2(t_out − 1)/t_out of it; least once with in-network reduction)."""
    if net is None or t <= server:
        ring = 2.0 * (t - 1) / t
        least = 1.0 if up.in_switch_reduction else ring
        return [_collective(up, name, calls, count * ring * message, lat_up, count * least * message)]
    t_in, t_out = server, t // server
    ring_in, ring_out = 2.0 * (t_in - 1) / t_in, 2.0 * (t_out - 1) / t_out
    least_in = 1.0 if up.in_switch_reduction else ring_in
    least_out = 1.0 if net.in_switch_reduction else ring_out
    shard = message / t_in
    return [_collective(up, name, calls, count * ring_in * message, lat_up, count * least_in * message),
            _collective(net, f"{name}{_ACROSS}", calls, count * ring_out * shard, lat_net,
                        count * least_out * shard)]


def _all_gather(name: str, total, t: int, server: int, up: Link, net: Link | None, lat_up: float,
                lat_net: float) -> list[CommPart]:
    """One all-gather of ``total`` bytes (1/t on each chip) over t chips; least 0 (vocab-parallel
    sampling exchanges each chip's top candidates, not its logits). Across servers: first across
    (t_out − 1)/t_out of total/t_in on the network, then inside the server (t_in − 1)/t_in of total."""
    if net is None or t <= server:
        return [_collective(up, name, 1.0, (t - 1) / t * total, lat_up, 0.0)]
    t_in, t_out = server, t // server
    return [_collective(up, name, 1.0, (t_in - 1) / t_in * total, lat_up, 0.0),
            _collective(net, f"{name}{_ACROSS}", 1.0, (t_out - 1) / t_out * total / t_in, lat_net, 0.0)]


def _all_to_all(model: Model, par: Parallelism, tokens_local, moe_layers: float, server: int, up: Link,
                net: Link | None, lat_up: float, lat_net: float, ab: float) -> list[CommPart]:
    """The expert all-to-alls (dispatch + combine) of one chip's stage, per link (module docstring)."""
    t, e = par.tensor, par.expert
    h, k = model.hidden_size, model.num_experts_per_tok
    slots = expert_slots(model, par)
    if par.attention_data_parallel:
        units, unit_chips, tok = t * e, 1, tokens_local / t  # every chip routes 1/t of its group's tokens
    else:
        units, unit_chips, tok = e, t, tokens_local  # per chip, the receive side of its group
    stage = t * e
    if net is None or stage <= server:
        on = units  # every unit of the stage in this server
    else:
        on = server // unit_chips if unit_chips <= server else 1
    calls, name = 2.0 * moe_layers, "expert all-to-all (2 per MoE layer)"
    vec = h * ab
    g, tg = model.n_group, model.topk_group  # group-limited routing: the bound's counts only
    p_unit = _route_hit(slots, k, units, g, tg)
    est_up = tok * k * (on - 1) / units * vec
    least_up = tok * (on - 1) * p_unit * vec
    # a group of a whole server (or more) reaches every other group over the network only: no in-server part
    parts = [] if on == 1 and net is not None and units > 1 else [
        _collective(up, name, calls, calls * est_up, lat_up, calls * least_up)]
    if on < units:
        est_net = tok * k * (units - on) / units * vec
        if unit_chips <= server:
            srv = units // on  # servers the stage spans
            # each token crosses once per other server its experts live on, spread over the server's NICs
            least_net = (srv - 1) * _route_hit(slots, k, srv, g, tg) * tok / unit_chips * vec
        else:  # a group spans servers: each of its servers takes each token routed to it once
            least_net = (units - 1) * p_unit * tok / server * vec
        parts.append(_collective(net, f"{name}{_ACROSS}", calls, calls * est_net, lat_net, calls * least_net))
    return parts


def communication(model: Model, workload: Workload, par: Parallelism, link: Link | None, *, layers: int,
                  first: bool, last: bool, topology: Topology | None = None) -> Comm:
    """What one chip sends in one step of a stage holding ``layers`` layers (arrays of batch or tokens ok).

    ``workload`` is one copy's whole step (all its sequences); the expert (data-parallel) groups split
    its sequences. ``topology`` places the copy past one server (None: it fits ``link``'s domain).
    """
    n = par.chips_per_replica
    if link is None or n == 1:
        return Comm(link=None, parts=())
    topo = topology if topology is not None else Topology(link=link, server_chips=max(n, link.max_chips or n))
    S = topo.server_chips
    net = topo.scale_out if n > S else None
    t, e, p = par.tensor, par.expert, par.pipeline
    ab = bytes_per_element(workload.activations_dtype)
    h = model.hidden_size
    b_local = np.ceil(np.asarray(workload.batch, dtype=float) / e)
    tokens_local = b_local * workload.new_tokens_per_sequence
    message = tokens_local * h * ab
    lat = link.latency_s if par.collective_latency_s is None else float(par.collective_latency_s)
    lat_net = 0.0 if net is None else (net.latency_s if par.network_latency_s is None else float(par.network_latency_s))
    moe_layers = layers * model.num_moe_layers / model.num_hidden_layers
    parts: list[CommPart] = []
    if t > 1:
        if par.attention_data_parallel:
            # attention's all-reduce (in MoE layers a reduce-scatter + all-gather around the MoE), the dense
            # MLPs' all-reduce; the MoE block none: 2 calls per layer, 1 + (dense) all-reduces' bytes
            count = layers + (layers - moe_layers)
            name = "tensor all-reduce (attention and dense MLP; MoE layers: reduce-scatter + all-gather)"
        else:
            count, name = 2.0 * layers, "tensor all-reduce (2 per layer)"
        parts += _all_reduce(name, 2.0 * layers, count, message, t, S, link, net, lat, lat_net)
        if first:
            parts += _all_reduce("embedding all-reduce", 1.0, 1.0, message, t, S, link, net, lat, lat_net)
        if last:
            parts += _all_gather("logits all-gather", b_local * model.vocab_size * ab, t, S, link, net, lat, lat_net)
    if par.expert_parallel_degree > 1 and model.is_moe:
        parts += _all_to_all(model, par, tokens_local, moe_layers, S, link, net, lat, lat_net, ab)
    send_bytes, send_s, crossing = 0.0, 0.0, 0
    if p > 1:
        send_bytes = message / t
        up_s = lat + np.divide(send_bytes, link.per_direction_bytes_per_s)
        if net is not None:
            stage = t * e
            crossing = p - 1 if stage >= S else n // S - 1
            net_s = lat_net + np.divide(send_bytes, net.per_direction_bytes_per_s)
            send_s = (crossing * net_s + (p - 1 - crossing) * up_s) / (p - 1)
        else:
            send_s = up_s
    return Comm(link=link, parts=tuple(parts), pipeline_send_bytes=send_bytes, pipeline_send_s=send_s,
                scale_out_link=net, server_chips=S, pipeline_network_sends=int(crossing))


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


def chip_shares(model: Model, workload: Workload, par: Parallelism, link: Link | None, *,
                topology: Topology | None = None) -> tuple[ChipShare, ...]:
    """Each distinct pipeline stage's per-chip share (one entry per distinct stage, busiest not chosen)."""
    t, e, p = par.tensor, par.expert, par.pipeline
    L = model.num_hidden_layers
    b_local = np.ceil(np.asarray(workload.batch, dtype=float) / e)
    local = model_cost(model, replace(workload, batch=b_local if np.ndim(b_local) else float(b_local)))
    degree = par.expert_parallel_degree
    ep = degree > 1 and model.is_moe
    whole = model_cost(model, workload) if ep and e > 1 else local
    adp = par.attention_data_parallel and t > 1
    slots = expert_slots(model, par) if model.is_moe else 0
    tokens = np.asarray(workload.batch, dtype=float) * workload.new_tokens_per_sequence
    if par.attention_data_parallel:
        held = f"{slots // degree} whole experts per chip (MoE expert parallel {degree} over every chip)"
    else:
        held = (f"{slots // max(e, 1)} experts per group" + (f", each split {t} ways" if t > 1 else "")
                + ", tokens from every group")
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
            elif op.name in _EXPERT_OPS and ep:
                g = next(o for o in whole.ops if o.name == op.name)
                what = "expert parallel" if not par.attention_data_parallel else "attention data parallel"
                ops.append(_expert_share(g, share / (e * t), model, slots, tokens, note=f"{what}: {held}"))
            elif adp and op.block == "moe" and (op.name in _REPLICATED or op.name.startswith("shared_expert")):
                ops.append(_token_split(op, share / t, note=f"attention data parallel: 1/{t} of the group's "
                                                             "tokens on each chip, weights whole"))
            else:
                ops.append(_scaled(_tp_op(op, model, t), share) if share != 1 else _tp_op(op, model, t))
        if p > 1:
            ops = [replace(o, note=(o.note + "; " if o.note else "") + f"pipeline stage {i + 1}: {n_layers} of {L} "
                                  "layers") if o.block not in ("embedding", "head") else o for o in ops]
        cost = ModelCost(model=model, workload=workload, ops=tuple(ops))
        fp = _footprint(model, workload, par, cost, share, first, last, b_local)
        comm = communication(model, workload, par, link, layers=n_layers, first=first, last=last, topology=topology)
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
    """Largest batch of ONE copy (all its sequences, every expert group; each replica holds its own)
    whose per-chip weights + KV + state fit every chip.

    Each chip holds its stage's weights (1/t of the split ones, its slots/e experts — slots/(t·e) whole
    ones under attention data parallel) and, for the sequences of its group, 1/min(t, KV heads) of its
    stage's KV cache and 1/t of its state.
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
