"""The 60-second cheat sheet, generated from the package and the deck: key formulas, the ridge of
the common parts and of their links (computed from the catalog), the levers per regime, the
questions to expect (one per lesson, with its memory aid and sources) and the red flags (one per
lesson, each with the card it comes from). Written as Markdown and as HTML, with the same content."""

from __future__ import annotations

import html
from pathlib import Path

from ..core.dtypes import DEFAULT_WEIGHT_GROUP, WEIGHT_SCALE_BYTES, weight_bytes_per_element
from ..core.files import atomic_write_text
from ..core.hardware import get_part
from ..core.memory import kv_cache_bytes_per_sequence, state_bytes_per_sequence, weight_bytes
from ..core.models import get_model
from ..core.parallel import Parallelism, interconnect_ridge_flop_per_byte
from ..core.placement import place
from .flashcards import Card, get_card

PARTS = ("a100-80gb", "h100-sxm", "h200", "b200", "mi300x", "tpu-v5e")
#: parts whose links the interconnect table lists (the L4 has PCIe only)
LINK_PARTS = PARTS + ("l4",)

FORMULAS = (
    ("Attainable performance", "P = min(P_peak, β · I)"),
    ("Ridge point", "I* = P_peak / β  (FLOP/byte)"),
    ("Time lower bound", "t ≥ max(FLOPs / P_peak, compulsory bytes / β, least bytes sent / link β): units "
                         "overlapped, no latency; no implementation of that split and those formats beats it"),
    ("Time estimate", "max(FLOPs / P_peak, unfused bytes / β) + collectives: every operator's activations "
                      "through HBM, dequant in series, ring collectives with an assumed latency per call, after the "
                      "compute; say which of the two you quote"),
    ("Forward FLOPs", "≈ 2 · parameters per token, plus attention"),
    ("KV cache per token", "2 · full-attention layers · KV heads · head_dim · bytes per element"),
    ("KV cache per token, MLA", "layers · (kv_lora_rank + qk_rope_head_dim) · bytes per element (one latent, "
                                "shared by every head)"),
    ("Sliding-window layer", "caches min(context, window) tokens; global layers cache them all"),
    ("Bytes per weight, 4-bit", "bits / 8 + scale bytes / group size  (int4: 0.5 + "
                                f"{WEIGHT_SCALE_BYTES['int4']:g}/{DEFAULT_WEIGHT_GROUP['int4']}; MXFP4: 0.5 + "
                                f"{WEIGHT_SCALE_BYTES['fp4']:g}/{DEFAULT_WEIGHT_GROUP['fp4']})"),
    ("Weight lens (weight-matmul FLOPs per weight byte), decode", "≈ batch × 2 / bytes per weight"),
    ("Experts touched by B tokens", "E · (1 − (1 − k/E)^B)"),
    ("FlashAttention HBM traffic", "Θ(N²·d²/M) vs Θ(N·d + N²) for standard attention (tiling wins when M ≫ d²)"),
    ("Units", "GB/s and FLOP/s are SI (1 TB/s = 10¹² B/s); a vendor's GB of device memory is GiB (80 GB = 80 · 2³⁰ B)"),
    ("Fits?", "weights + batch · (KV per sequence + state) ≤ capacity · memory utilisation (vLLM: 0.9 long-standing default, 0.92 in current releases); KV per "
              "sequence = Σ over caching layers of KV per token per layer · min(context, the layer's window), not KV "
              "per token · context where layers slide"),
    ("MBU", "bytes a token must move · tokens/s ÷ peak bandwidth (a tool's 'bandwidth achieved' from tokens/s is MBU again)"),
    ("Link bandwidth", "per direction = the vendor's bidirectional headline / 2; every collective is timed per direction"),
    ("Ring all-reduce", "each chip sends 2(n − 1)/n · message (all-gather: (n − 1)/n); tensor parallel: 2 per layer"),
    ("Collective time, estimate", "calls · latency per call (assumed) + bytes sent / per-direction bandwidth; "
                                  "not overlapped with compute unless you say so (the bound: least bytes, no "
                                  "latency, overlapped)"),
    ("Interconnect ridge", "I*_link = P_peak / per-direction link bandwidth  (FLOPs per byte a chip sends)"),
    ("Tensor parallel n, per chip", "weights / n; GQA KV cache / min(n, KV heads) (replicated past the KV heads); an "
                                    "MLA latent is shared by every head, so every chip keeps all of it (KV / 1)"),
    ("Pipeline p stages, m micro-batches", "one step still crosses all p stages; bubble = (p − 1)/(m + p − 1)"),
)

LEVERS = (
    ("Memory-bound (decode)", "fewer bytes per token: weight quantization (FP8/INT8/INT4 weights), a narrower KV "
                              "cache (FP8 KV; GQA and MLA are architecture, chosen at training), batching to "
                              "amortise weights, speculative decoding"),
    ("Compute-bound (prefill)", "faster math: FP8/FP4 tensor cores, better tiling and occupancy, fused kernels "
                                "(FlashAttention), fewer wasted FLOPs"),
    ("Interconnect-bound (many chips)", "fewer bytes over the link per FLOP: less tensor parallel (pipeline or "
                                        "expert parallel across the slow link), a faster link (NVLink, not PCIe), "
                                        "narrower activations in the collectives, overlap with compute; at batch 1, "
                                        "fewer collective calls"),
    ("Does not fit", "capacity first: quantize weights and KV, a paged KV cache (less fragmentation, so a larger "
                     "batch fits; the bytes per step stay), prefix sharing, shard across GPUs, shorter context"),
)


#: the rules of thumb of lesson 12 (shrinking the bytes)
SHRINKING_RULES = (
    "Weight-only 4-bit weights leave both roofs where they were (the matmuls still run at BF16's rate) and "
    "cut the bytes per weight, so decode's weight lens climbs faster with the batch and meets the same ridge "
    "at a smaller batch (by the lower bound: BF16's critical batch ÷ the weight-byte ratio; the estimate, "
    "with the dequantisation in series, sooner still); W4A4 (FP4 math, where the part has it) raises the "
    "compute roof too.",
    "Weight-only dequantisation runs on the vector units (the course prices it at the FP32 rate), once per "
    "weight read per step; it hides under memory at batch 1.",
    "A 4-bit model is not 4× smaller: group scales, and the embedding, lm_head and norms stay BF16.",
    "Which byte dominates picks the lever: weight formats and batching shrink weight bytes per token; KV "
    "formats, fewer KV heads, MLA and sliding windows shrink KV bytes; only its format shrinks a recurrent "
    "state.",
    "Allocate the KV cache per layer kind: full-context pages for sliding-window layers waste capacity.",
)
#: weight formats the cheat sheet lists: (name, dtype, group size or None for the format's default)
WEIGHT_FORMATS = (("BF16", "bf16", None), ("FP8", "fp8", None), ("int4, groups of {group} (BF16 scale)", "int4", 128),
                  ("MXFP4, blocks of {group} (8-bit scale)", "fp4", None))
#: models whose KV bytes per token the cheat sheet compares (one per attention kind)
KV_MODELS = ("llama-3.1-70b", "deepseek-v3", "gemma-3-27b")
KV_CONTEXT_TOKENS = 32768


def _weight_format_rows() -> list[list[str]]:
    """Bytes per stored weight (scale included) and Llama-3.1-70B's weights in each format (4-bit:
    the default recipe, embedding, lm_head and norms in BF16)."""
    rows = []
    for name, dtype, group in WEIGHT_FORMATS:
        per_weight = weight_bytes_per_element(dtype, group)
        size = weight_bytes("llama-3.1-70b", dtype, weight_group_size=group if dtype in DEFAULT_WEIGHT_GROUP else None)
        label = name.format(group=group or DEFAULT_WEIGHT_GROUP.get(dtype))
        rows.append([label, f"{per_weight:g}", f"{size / 2**30:,.1f} GiB"])
    return rows


def _kv_per_token_text(m) -> str:
    """KV KiB one token adds over every caching layer; for a model with sliding-window layers, said to hold
    before the window caps it, with what a token adds once every window is full (as ``roofline-lessons
    models`` prints it): per token × context is not a windowed model's cache."""
    per = f"{m.kv_bytes_per_token() / 1024:,.1f} KiB"
    if not m.num_sliding_attention_layers:
        return per
    w = int(m.sliding_window)
    past = float(kv_cache_bytes_per_sequence(m, w + 1)) - float(kv_cache_bytes_per_sequence(m, w))
    return f"{per} before the window caps it (past {w:,} tokens: {past / 1024:,.1f} KiB)"


def _kv_rows() -> list[list[str]]:
    """KV bytes per token (BF16, every caching layer; a windowed model's before the window caps it, and
    past it) and per sequence of ``KV_CONTEXT_TOKENS`` tokens (sliding windows applied) for ``KV_MODELS``."""
    rows = []
    for mid in KV_MODELS:
        m = get_model(mid)
        if m.is_mla:
            kind = f"MLA: latent of {m.mla_cache_elements_per_token:,} elements per layer"
        elif m.num_sliding_attention_layers:
            kind = (f"GQA, {m.num_sliding_attention_layers} local ({m.sliding_window:,}-token window) + "
                    f"{m.num_full_attention_layers} global layers")
        else:
            kind = f"GQA, {m.num_key_value_heads} KV heads"
        rows.append([m.name, kind, _kv_per_token_text(m),
                     f"{kv_cache_bytes_per_sequence(m, KV_CONTEXT_TOKENS) / 2**30:,.2f} GiB"])
    return rows


def _ridge_rows() -> list[list[str]]:
    rows = []
    for pid in PARTS:
        p = get_part(pid)
        cells = [p.id, f"{p.memory_bandwidth_bytes_per_s / 1e12:.2f} TB/s"]
        for dt in ("bf16", "fp8", "fp4"):
            cells.append(f"{p.ridge_point_flop_per_byte(dt):,.0f}" if dt in p.dense_flops_per_s else "—")
        rows.append(cells)
    return rows


def _link_rows() -> list[list[str]]:
    """One row per link of the parts in ``LINK_PARTS``: its per-direction rate (what the course computes
    with), the vendor's bidirectional headline beside it, the interconnect ridge in dense BF16, and the
    part's memory ridge (HBM, or the L4's GDDR6)."""
    rows = []
    for pid in LINK_PARTS:
        p = get_part(pid)
        for link in (p.scale_up_link, p.host_link):
            if link is None:
                continue
            rows.append([p.id, link.name, f"{link.per_direction_bytes_per_s / 1e9:,.0f} GB/s",
                         f"{link.bidirectional_bytes_per_s / 1e9:,.0f} GB/s",
                         f"{interconnect_ridge_flop_per_byte(p.peak_flops_per_s('bf16'), link):,.0f}",
                         f"{p.ridge_point_flop_per_byte('bf16'):,.0f}"])
    return rows


def _tp_decode_number() -> tuple[str, str]:
    """Llama-3.1-70B's batch-1 decode on two H100 SXMs: the step's lower bound, and its estimate with the
    communication that the estimate adds (latency assumed)."""
    pl = place("llama-3.1-70b", "h100-sxm", phase="decode", context_tokens=4096, parallelism=Parallelism(tensor=2))
    return ("Llama-3.1-70B decode, batch 1, 4,096 cached, tensor parallel 2 on H100 SXM (per chip)",
            f"lower bound {float(pl.time_lower_bound_s) * 1e3:,.1f} ms; estimate {float(pl.time_estimate_s) * 1e3:,.1f} "
            f"ms, of which {float(pl.comm_time_s) * 1e3:,.2f} ms are {pl.comm.calls:,.0f} collective calls at an "
            f"assumed {pl.link.latency_s * 1e6:,.0f} µs each")


def _numbers() -> list[tuple[str, str]]:
    q = get_model("qwen3.8-27b")
    return [
        ("Qwen3.8-27B KV cache per token (BF16)", f"{q.kv_bytes_per_token() / 1024:,.0f} KiB"),
        ("Qwen3.8-27B recurrent state per sequence (Gated DeltaNet fp32 + short-conv BF16)",
         f"{state_bytes_per_sequence(q) / 2**20:,.0f} MiB"),
        ("Llama-3.1-70B KV cache per token (BF16)", f"{get_model('llama-3.1-70b').kv_bytes_per_token() / 1024:,.0f} KiB"),
        ("Llama-3.1-70B weights (BF16)", f"{get_model('llama-3.1-70b').parameter_count() * 2 / 1e9:,.0f} GB = "
                                         f"{get_model('llama-3.1-70b').parameter_count() * 2 / 2**30:,.0f} GiB"),
        ("H100 / H200 / B200 device memory", " / ".join(f"{get_part(p).memory_capacity_bytes / 2**30:,.0f} GiB"
                                                         for p in ("h100-sxm", "h200", "b200"))),
        _tp_decode_number(),
    ]


INTRO = ("Generated from the Roofline Lessons package: numbers are computed from its catalogs (dense, datasheet "
         "figures). Each question and red flag names its card; the drill (lesson 15) and the printed deck give every "
         "card's sources, the catalog's datasheets and configs included.")
#: the questions to expect: one card per lesson, the question an interviewer is likeliest to open with
QUESTION_CARDS = (
    "concept-plain-language", "hedge-sparse-headline", "prefill-vs-decode-why", "batching-decode-more",
    "hybrid-two-dots", "flash-position", "fp8-knee", "measure-empirical", "reality-batch1-gap",
    "serving-tpot-definitions", "many-chips-pipeline-latency", "shrink-which-lever-which-byte",
    "engines-how-close", "serving-engine-continuous-batching",
)
#: the red flags: one per lesson, the classic mistake of that lesson, as (card id, index of the red flag)
RED_FLAG_CARDS = (
    ("concept-red-flag-flops", 0),  # ranking kernels by FLOP/s across intensities
    ("hedge-sparse-headline", 0),  # a ridge from a with-sparsity headline
    ("tpot-lower-bound", 0),  # decode time from FLOPs
    ("batching-decode-more", 0),  # batching prefill as if it were decode
    ("kv-per-token-llama70b", 0),  # query heads for KV heads
    ("flash-position", 0),  # "FlashAttention reduces FLOPs"
    ("fp8-knee", 0),  # "it doubles, so everything is 2x faster"
    ("measure-above-roof", 0),  # a point above the DRAM roof "breaks" the model
    ("reality-mbu-not-bandwidth", 0),  # bytes x tokens/s quoted as a measured bandwidth
    ("serving-tpot-definitions", 0),  # TPOTs of two tools compared blind
    ("many-chips-pipeline-latency", 0),  # pipeline parallel to cut one user's latency
    ("shrink-int4-batch1-speedup", 0),  # "4-bit weights, 4x faster decode"
    ("engines-beats-the-bound", 1),  # a speculative-decoding rate against a one-token-per-step bound
    ("serving-engine-paged-attention", 0),  # paging cuts the bytes a decode step reads
)


def _engine_rows() -> list[list[str]]:
    """Lesson 13: each regime's published runs as fractions of their bound (lowest, median, highest)."""
    from ..topics.real_engines import priced_runs, spread_by_regime
    return [["MoE" if s.regime == "moe" else s.regime, f"{s.runs}", f"{s.lowest:.2f}", f"{s.median:.2f}",
             f"{s.highest:.2f}"] for s in spread_by_regime(priced_runs())]


ENGINE_HEADERS = ("regime", "runs", "lowest", "median", "highest")


def _further_sources(card: Card) -> list[str]:
    """The papers and docs the card's prose rests on (its references). The sheet's numbers come from the
    catalogs, whose sources the drill and the printed deck list with every card."""
    return list(card.references)


def _questions() -> list[tuple[Card, str]]:
    """(card, question) for each of ``QUESTION_CARDS``."""
    return [(c, c.question) for c in map(get_card, QUESTION_CARDS)]


def _red_flags() -> list[tuple[Card, str]]:
    """(card, red flag) for each of ``RED_FLAG_CARDS``."""
    return [(c, c.red_flags[i]) for c, i in ((get_card(cid), i) for cid, i in RED_FLAG_CARDS)]


def _from(card: Card) -> str:
    return f"lesson {card.lesson}, card {card.id}"


def markdown() -> str:
    lines = ["# The roofline in 60 seconds", "", f"*{INTRO}*", "", "## Formulas", ""]
    lines += [f"- **{name}**: `{f}`" for name, f in FORMULAS]
    lines += ["", "## Ridge points (FLOP/byte, dense)", "", "| part | bandwidth | BF16 | FP8 | FP4 |", "|---|---|---|---|---|"]
    lines += ["| " + " | ".join(r) + " |" for r in _ridge_rows()]
    lines += ["", "## Interconnect ridges (BF16 FLOPs per byte sent)", "", "| part | link | per direction | "
              "bidirectional headline | link ridge | memory ridge |", "|---|---|---|---|---|---|"]
    lines += ["| " + " | ".join(r) + " |" for r in _link_rows()]
    lines += ["", "## Shrinking the bytes", ""] + [f"- {r}" for r in SHRINKING_RULES]
    lines += ["", "| weight format | bytes per weight | Llama-3.1-70B weights |", "|---|---|---|"]
    lines += ["| " + " | ".join(r) + " |" for r in _weight_format_rows()]
    lines += ["", f"| model | attention | KV per token (BF16) | KV per sequence at {KV_CONTEXT_TOKENS:,} tokens |",
              "|---|---|---|---|"]
    lines += ["| " + " | ".join(r) + " |" for r in _kv_rows()]
    lines += ["", "## How close real engines get (fraction of the bound, published runs)", "",
              "| " + " | ".join(ENGINE_HEADERS) + " |", "|" + "---|" * len(ENGINE_HEADERS)]
    lines += ["| " + " | ".join(r) + " |" for r in _engine_rows()]
    lines += ["", "## Numbers worth knowing", ""] + [f"- {k}: **{v}**" for k, v in _numbers()]
    lines += ["", "## Levers per regime", ""] + [f"- **{k}**: {v}" for k, v in LEVERS]
    lines += ["", "## Questions to expect", ""]
    for card, q in _questions():
        lines.append(f"- {q} *({_from(card)})*")
        if card.memory_aid:
            lines.append(f"  - Memory aid: {card.memory_aid_text()}")
        if _further_sources(card):
            lines.append(f"  - Sources: {'; '.join(_further_sources(card))}")
    lines += ["", "## Red flags (one per lesson)", ""] + [f"- {r} *({_from(c)})*" for c, r in _red_flags()]
    return "\n".join(lines) + "\n"


def _question_html(card: Card, question: str) -> str:
    e = html.escape
    extra = []
    if card.memory_aid:
        extra.append(f"<li>Memory aid: {e(card.memory_aid_text())}</li>")
    if _further_sources(card):
        extra.append(f"<li>Sources: {e('; '.join(_further_sources(card)))}</li>")
    nested = f"<ul>{''.join(extra)}</ul>" if extra else ""
    return f"<li>{e(question)} <i>({e(_from(card))})</i>{nested}</li>"


def html_page() -> str:
    e = html.escape
    ridge = "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in r) + "</tr>" for r in _ridge_rows())
    links = "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in r) + "</tr>" for r in _link_rows())
    formats = "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in r) + "</tr>" for r in _weight_format_rows())
    kv = "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in r) + "</tr>" for r in _kv_rows())
    body = [
        "<h1>The roofline in 60 seconds</h1>",
        f"<p><i>{e(INTRO)}</i></p>",
        "<h2>Formulas</h2><ul>" + "".join(f"<li><b>{e(n)}</b>: <code>{e(f)}</code></li>" for n, f in FORMULAS) + "</ul>",
        "<h2>Ridge points (FLOP/byte, dense)</h2><table><tr><th>part</th><th>bandwidth</th><th>BF16</th><th>FP8</th>"
        f"<th>FP4</th></tr>{ridge}</table>",
        "<h2>Interconnect ridges (BF16 FLOPs per byte sent)</h2><table><tr><th>part</th><th>link</th>"
        "<th>per direction</th><th>bidirectional headline</th><th>link ridge</th><th>memory ridge</th></tr>"
        f"{links}</table>",
        "<h2>Shrinking the bytes</h2><ul>" + "".join(f"<li>{e(r)}</li>" for r in SHRINKING_RULES) + "</ul>"
        "<table><tr><th>weight format</th><th>bytes per weight</th><th>Llama-3.1-70B weights</th></tr>"
        f"{formats}</table><table><tr><th>model</th><th>attention</th><th>KV per token (BF16)</th>"
        f"<th>KV per sequence at {KV_CONTEXT_TOKENS:,} tokens</th></tr>{kv}</table>",
        "<h2>How close real engines get (fraction of the bound, published runs)</h2><table><tr>"
        + "".join(f"<th>{e(h)}</th>" for h in ENGINE_HEADERS) + "</tr>"
        + "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in r) + "</tr>" for r in _engine_rows()) + "</table>",
        "<h2>Numbers worth knowing</h2><ul>" + "".join(f"<li>{e(k)}: <b>{e(v)}</b></li>" for k, v in _numbers()) + "</ul>",
        "<h2>Levers per regime</h2><ul>" + "".join(f"<li><b>{e(k)}</b>: {e(v)}</li>" for k, v in LEVERS) + "</ul>",
        "<h2>Questions to expect</h2><ul>" + "".join(_question_html(c, q) for c, q in _questions()) + "</ul>",
        "<h2>Red flags (one per lesson)</h2><ul>" + "".join(
            f"<li>{e(r)} <i>({e(_from(c))})</i></li>" for c, r in _red_flags()) + "</ul>",
    ]
    style = ("body{font-family:system-ui,sans-serif;max-width:52em;margin:2em auto;line-height:1.45;color:#222}"
             "table{border-collapse:collapse}td,th{border:1px solid #bbb;padding:.2em .6em;text-align:right}"
             "code{background:#f3f3f3;padding:0 .2em}")
    return (f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>The roofline in 60 seconds</title>"
            f"<style>{style}</style></head><body>{''.join(body)}</body></html>\n")


def write(directory: Path | str) -> list[Path]:
    """Write ``cheatsheet.md`` and ``cheatsheet.html`` into ``directory`` (atomically)."""
    d = Path(directory)
    md_path, html_path = d / "cheatsheet.md", d / "cheatsheet.html"
    atomic_write_text(md_path, markdown())
    atomic_write_text(html_path, html_page())
    return [md_path, html_path]
