"""The ``roofline-lessons`` command: the catalogs as tables, and one workload placed on a roofline.

Bad input is one line on stderr and exit status 2, never a traceback.

This module imports only the standard library when it loads: the package's own modules (numpy,
matplotlib, Jupyter behind them) are imported inside each command, so ``--help`` and ``doctor`` work
in an environment that lacks them, and any other command there says in one line what is missing
(exit status 1) instead of printing a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from types import SimpleNamespace

PROG = "roofline-lessons"
#: the prompt length of ``place --phase prefill`` when --prompt is not given
DEFAULT_PROMPT_TOKENS = 8192


class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, no usage block
        raise _UsageError(message)


def _count(name: str, minimum: int):
    def parse(text: str) -> int:
        try:
            value = int(text, 10)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be a whole number >= {minimum}, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{name} must be a whole number >= {minimum}, got {text!r}")
        return value

    parse.__name__ = name
    return parse


def _seconds(name: str):
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = float("nan")
        if not (value >= 0 and value != float("inf")):
            raise argparse.ArgumentTypeError(f"--{name} must be a number of seconds >= 0 (e.g. 5e-6), got {text!r}")
        return value
    return parse


def _dtype(text: str) -> str:
    from .core.dtypes import DTYPES

    if text not in DTYPES:
        raise argparse.ArgumentTypeError(f"unknown dtype {text!r} (allowed: {', '.join(DTYPES)})")
    return text


def _table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    return "\n".join([line(headers), line(["-" * w for w in widths])] + [line(r) for r in rows])


def _whole(value):
    """A count for JSON: a float that holds a whole number becomes an int (``1.0`` → ``1``)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


#: keys of ``place --json`` that are counts (tokens, sequences, layers), written as integers
COUNT_KEYS = ("batch", "prompt_tokens", "context_tokens", "max_context_tokens", "layers")


def _counts_as_ints(d: dict) -> dict:
    """``d`` with every :data:`COUNT_KEYS` value (also inside ``ops``) a whole int."""
    out = {k: (_whole(v) if k in COUNT_KEYS else v) for k, v in d.items()}
    if isinstance(out.get("ops"), list):
        out["ops"] = [_counts_as_ints(op) for op in out["ops"]]
    return out


def _print_json(data) -> None:
    print(json.dumps(data, indent=2, ensure_ascii=False))


def cmd_hardware(args) -> int:
    from .core.hardware import get_part, list_parts
    from .core.units import binary, num, si

    if args.json:
        _print_json([{"id": pid, "name": p.name, "vendor": p.vendor, "memory_type": p.memory_type,
                      "dense_flops_per_s": dict(p.dense_flops_per_s),
                      "memory_bandwidth_bytes_per_s": p.memory_bandwidth_bytes_per_s,
                      "memory_capacity_bytes": _whole(float(p.memory_capacity_bytes)),
                      "ridge_point_bf16": p.ridge_point_flop_per_byte("bf16"), "as_of": p.as_of, "source": p.source,
                      "scale_up_link": _link_json(p.scale_up_link), "host_link": _link_json(p.host_link),
                      "scale_out_link": _link_json(p.scale_out_link)}
                     for pid in list_parts() for p in [get_part(pid)]])
        return 0
    headers = ["id", "name", "bf16 dense", "fp8 dense", "bandwidth", "memory", "ridge bf16", "link per dir.", "as of"]
    rows = []
    for pid in list_parts():
        p = get_part(pid)
        rates = [si(p.dense_flops_per_s[dt], "FLOP/s") if dt in p.dense_flops_per_s else "—" for dt in ("bf16", "fp8")]
        rows.append([pid, p.name, *rates, si(p.memory_bandwidth_bytes_per_s, "B/s"),
                     binary(p.memory_capacity_bytes), f"{num(p.ridge_point_flop_per_byte('bf16'))} FLOP/B",
                     _link_text(p), p.as_of])
    print(_table(headers, rows))
    print("\nPeak rates are dense (no sparsity). Rates are SI (1 TB/s = 10^12 bytes/s); memory is binary (a vendor's "
          "'80 GB' of HBM is 80 GiB = 80 x 2^30 bytes). Links are per direction: half the vendor's bidirectional "
          "headline. Sources: roofline_lessons/data/hardware.toml.")
    return 0


def _link_json(link) -> dict | None:
    if link is None:
        return None
    return {"name": link.name, "per_direction_bytes_per_s": link.per_direction_bytes_per_s,
            "bidirectional_bytes_per_s": link.bidirectional_bytes_per_s, "max_chips": link.max_chips,
            "latency_s": link.latency_s, "latency_basis": link.latency_basis, "source": link.source,
            "as_of": link.as_of, "in_switch_reduction": link.in_switch_reduction}


def _link_text(p) -> str:
    from .core.units import si

    link = p.scale_up_link or p.host_link
    return f"{si(link.per_direction_bytes_per_s, 'B/s')} {link.name.split(' (')[0]}" if link else "—"


def _billions(n: float) -> str:
    from .core.units import num

    return f"{num(n / 1e9)} billion"


def cmd_models(args) -> int:
    from .core.models import get_model, list_models
    from .core.units import binary, count

    if args.json:
        _print_json([{"id": mid, "name": m.name, "layers": m.num_hidden_layers,
                      "full_attention_layers": m.num_full_attention_layers,
                      "deltanet_layers": m.num_deltanet_layers, "hidden_size": m.hidden_size,
                      "attention_heads": m.num_attention_heads, "kv_heads": m.num_key_value_heads,
                      "head_dim": m.head_dim, "parameters": int(m.parameter_count()),
                      "active_parameters": int(m.active_parameter_count()),
                      "max_context_tokens": m.max_context_tokens,
                      "kv_bytes_per_token_bf16": _whole(float(m.kv_bytes_per_token("bf16"))),
                      **_window_json(m)}
                     for mid in list_models() for m in [get_model(mid)]])
        return 0
    headers = ["id", "name", "layers", "hidden", "heads/kv", "head_dim", "parameters", "KV/token (bf16)"]
    rows = []
    for mid in list_models():
        m = get_model(mid)
        layers = count(m.num_hidden_layers)
        if m.is_hybrid:
            layers += f" ({count(m.num_full_attention_layers)} attn + {count(m.num_deltanet_layers)} GDN)"
        params = _billions(m.parameter_count())
        if m.is_moe:
            params += f" ({_billions(m.active_parameter_count())} active)"
        rows.append([mid, m.name, layers, count(m.hidden_size),
                     f"{count(m.num_attention_heads)}/{count(m.num_key_value_heads)}", count(m.head_dim), params,
                     _kv_per_token_text(m)])
    print(_table(headers, rows))
    print("\nParameters are derived from each config's shapes (1 billion = 10^9). KiB = 1024 bytes. KV/token: what "
          "one token adds over every layer that caches it. A sliding-window layer stops growing at its window, so "
          "for a windowed model that figure holds before the window caps it; past the window each token adds the "
          "figure in brackets (a sequence's KV cache is not KV/token × its length).")
    return 0


def _window_tokens(m) -> int | None:
    """The window of a model's windowed layers (the largest, where all its layers slide), else None."""
    if m.full_attention_window is not None:
        return int(m.full_attention_window)
    return int(m.sliding_window) if m.num_sliding_attention_layers else None


def _kv_past_window(m, kv_dtype: str = "bf16") -> float:
    """KV bytes one token adds once every window is full: what the sequence's cache grows by then."""
    w = _window_tokens(m)
    return float(m.kv_cache_bytes_per_sequence(w + 1, kv_dtype)) - float(m.kv_cache_bytes_per_sequence(w, kv_dtype))


def _kv_per_token_text(m) -> str:
    from .core.units import binary, count

    per, w = m.kv_bytes_per_token("bf16"), _window_tokens(m)
    if w is None:
        return binary(per)
    return f"{binary(per)} before the window caps it (past {count(w)} tokens: {binary(_kv_past_window(m))})"


def _window_json(m) -> dict:
    w = _window_tokens(m)
    return {"sliding_window_tokens": w,
            "kv_bytes_per_token_bf16_past_window": None if w is None else _whole(_kv_past_window(m))}


def _model(args):
    """The model of ``place``/``serve``: a catalog id (``--model``) or a Model read from
    ``--model-config`` (a Hugging Face config.json)."""
    if args.model_config is not None:
        from .core.model_config import model_config_notes, model_from_config

        model = model_from_config(args.model_config)
        if getattr(args, "weights", "bf16") == "bf16":
            for note in model_config_notes(args.model_config):
                print(f"{PROG}: note: {note}", file=sys.stderr)
        return model
    return args.model


def cmd_place(args) -> int:
    from .core.dtypes import kv_bytes_per_element, weight_bytes_per_element
    from .core.errors import RooflineInputError
    from .core.memory import check_memory_utilization
    from .core.placement import place
    from .core.units import binary, count, duration, num, percent, quantity, si

    fields = dict(phase=args.phase, batch=args.batch, weights_dtype=args.weights, activations_dtype=args.activations,
                  kv_dtype=args.kv, state_dtype=args.state, compute_dtype=args.compute,
                  flash_attention=not args.no_flash_attention, attention_compute_dtype=args.attention_compute,
                  **_format_fields(args))
    if args.phase == "prefill":
        if args.context is not None:
            raise RooflineInputError("--context is for decode; for prefill give the prompt length with --prompt")
        fields["prompt_tokens"] = args.prompt if args.prompt is not None else DEFAULT_PROMPT_TOKENS
    else:
        if args.prompt is not None:
            raise RooflineInputError("--prompt is for prefill; for decode give the cached history with --context")
        fields["context_tokens"] = args.context if args.context is not None else 0
    util = check_memory_utilization(args.memory_utilization)
    p = place(_model(args), args.hardware, parallelism=_parallelism(args), **fields)
    d = p.to_dict()
    d["memory_utilization"] = util
    d["usable_memory_bytes"] = p.part.memory_capacity_bytes * util
    d["fits_in_usable_memory"] = bool(d["memory_required_bytes"] <= d["usable_memory_bytes"])
    if p.workload.phase == "decode":
        held = int(p.workload.cached_tokens_after)
        written = held - int(p.workload.context_tokens)
        d["warnings"] = [_explain_context(wn, held, f"{count(p.workload.context_tokens)} cached + "
                                          f"{count(written)} this step writes") for wn in d["warnings"]]
    if not d["fits_in_memory"]:
        d["warnings"] = [*d["warnings"], _does_not_fit_warning(d["memory_required_bytes"], p.part,
                                                              "the step", p.per_chip)]
    for warning in d["warnings"]:
        print(f"{PROG}: warning: {warning}", file=sys.stderr)
    roof = _compute_roof(p, d)
    if args.json:
        _print_json(_counts_as_ints(_relabel_roofs(d, roof)))
        return 0
    w = p.workload
    what = (f"prefill of {count(w.prompt_tokens)} tokens" if w.phase == "prefill"
            else f"one decode step with {count(w.context_tokens)} tokens cached")
    attn = "" if w.other_compute_dtype == w.compute_dtype else f" (attention, softmax, norms {w.other_compute_dtype})"
    chips = f"{count(p.chips)} × {p.part.name} ({p.parallelism.label})" if p.per_chip else p.part.name
    per_copy = f" per copy (each of the {count(p.replicas)} copies its own)" if p.replicas > 1 else ""
    print(f"{p.model.name} on {chips}: {what}, batch {count(w.batch)}{per_copy}, weight matmuls in "
          f"{w.compute_dtype}{attn}")
    if p.per_chip:
        stage = " (the busiest pipeline stage)" if p.parallelism.pipeline > 1 else ""
        if p.comm is None:
            print(f"  every figure below is PER CHIP: each copy runs on one chip, and the copies do not talk")
        else:
            print(f"  every figure below is PER CHIP{stage}, over {p.link.name} at "
                  f"{si(p.interconnect_bandwidth_bytes_per_s, 'B/s')} per direction "
                  f"({si(p.link.bidirectional_bytes_per_s, 'B/s')} bidirectional headline)")
        if p.scale_out_link is not None:
            net = p.scale_out_link
            print(f"  {'past one server':<21}each copy spans {count(p.servers_per_replica)} servers of "
                  f"{count(p.server_chips)} chips ({p.link.name} inside each); between them {net.name} at "
                  f"{si(net.per_direction_bytes_per_s, 'B/s')} per direction (TP innermost, then EP, then PP)")
    if w.weights_dtype != "bf16" or w.kv_dtype != "bf16":
        per = weight_bytes_per_element(w.weights_dtype, w.weight_group_size)
        # a KV scale covers one head's head_dim elements, or an MLA layer's whole latent
        kv_group = p.model.mla_cache_elements_per_token if p.model.is_mla else p.model.head_dim
        kept = {"all": "", "linear": "; embedding, lm_head and norms stay bf16",
                "mlp": "; attention, embedding, lm_head and norms stay bf16",
                "experts": "; everything but the MoE experts stays bf16"}[w.weight_recipe]
        deq = (f"; dequantised on the fly: {si(d['dequant_flops'], 'FLOP')} on the vector units, "
               f"{duration(d['dequant_time_s'])}" if w.weight_only else "")
        print(f"  formats              weights {w.weights_dtype} at {quantity(per, 'byte')} each ({w.weight_recipe}{kept})"
              f"{deq}; KV {w.kv_dtype} at {quantity(kv_bytes_per_element(w.kv_dtype, kv_group), 'byte')} per element")
    print(f"  FLOPs                {si(d['flops'], 'FLOP')}")
    print(f"  bytes, compulsory    {si(d['compulsory_bytes'], 'B')}  (weights used, read once; KV history read and "
          f"new entries written; state; ids in, logits out)")
    print(f"  bytes, unfused       {si(d['bytes'], 'B')}  (weights {si(d['weight_bytes'], 'B')}, "
          f"activations {si(d['activation_bytes'], 'B')}, KV {si(d['kv_bytes'], 'B')}, "
          f"state {si(d['state_bytes'], 'B')}: each operator's activations through HBM)")
    print(f"  intensity            {num(d['compulsory_intensity'])} FLOP/byte of compulsory traffic, "
          f"{num(d['intensity'])} of unfused traffic; {num(d['intensity_per_weight_byte'])} FLOP per weight byte")
    if roof["blended"]:
        others = "".join(f"; {num(r)} for {dt} ({what})" for dt, r, what in roof["other_part_ridges"])
        print(f"  ridge point          {num(roof['part_ridge_point'])} FLOP/byte: the part's for {roof['part_dtype']} "
              f"({si(roof['part_peak'], 'FLOP/s')} dense / {si(roof['bandwidth'], 'B/s')}){others}")
        print(f"  this step's roof     {si(roof['step_roof'], 'FLOP/s')}, ridge {num(roof['step_ridge_point'])} "
              f"FLOP/byte: this step's FLOPs ÷ their compute time ({roof['rate_note']}): {roof['recipe']}")
        print(f"  attainable           {si(d['attainable_flops_per_s'], 'FLOP/s')} = "
              f"{percent(roof['fraction_of_step_roof'])} of this step's compute roof, "
              f"{percent(roof['fraction_of_part_peak'])} of the part's {roof['part_dtype']} dense peak, on unfused "
              f"traffic; the bound's binding roof on this chip: {d['lower_bound_roof']}")
    else:
        print(f"  ridge point          {num(roof['part_ridge_point'])} FLOP/byte: the part's "
              f"({si(roof['part_peak'], 'FLOP/s')} {roof['part_dtype']} dense / {si(roof['bandwidth'], 'B/s')})")
        print(f"  attainable           {si(d['attainable_flops_per_s'], 'FLOP/s')} = "
              f"{percent(roof['fraction_of_part_peak'])} of the part's {roof['part_dtype']} dense peak on unfused "
              f"traffic; the bound's binding roof on this chip: {d['lower_bound_roof']}")
    if p.comm is not None:
        overlap = ("overlapped with compute (best case)" if p.parallelism.overlap_comm
                   else "not overlapped with compute (added)")
        send = (f" (of it {si(d['pipeline_send_bytes'], 'B')} to the next pipeline stage, timed below)"
                if p.parallelism.pipeline > 1 else "")
        latency_s = d["collective_latency_s"]
        basis = p.link.latency_basis if p.parallelism.collective_latency_s is None else "--collective-latency"
        algo = _least_traffic_label(p)
        print(f"  communication        {si(d['comm_bytes'], 'B')} {_comm_bytes_label(p)}{send}; "
              f"{count(d['collective_calls'])} "
              f"collective calls -> {duration(d['comm_time_s'])} in the estimate, {overlap}; latency "
              f"{duration(latency_s)} per call ({basis})")
        if p.scale_out_link is not None:
            net_basis = (p.scale_out_link.latency_basis if p.parallelism.network_latency_s is None
                         else "--network-latency")
            crossing = (f"; {quantity(p.comm.pipeline_network_sends, 'send', whole=True)} between stages cross it"
                        if p.parallelism.pipeline > 1 else "")
            print(f"                       of it {si(d['network_bytes'], 'B')} in collectives over the network "
                  f"between servers, {duration(d['network_latency_s'])} per call there ({net_basis}){crossing}; "
                  "the estimate adds each link's time")
        sends_too = "; sends between pipeline stages overlap too" if p.parallelism.pipeline > 1 else ""
        at = ("at the link's bandwidth" if p.scale_out_link is None
              else "the two links at once: the network carries the cross-server bytes, both links share the rest")
        print(f"                       least collective traffic ({algo}): {si(d['comm_bound_bytes'], 'B')} -> "
              f"{duration(d['comm_lower_bound_s'])} {at}, no latency, overlapped (the bound{sends_too})")
        if p.parallelism.pipeline > 1:
            stages, sends = p.parallelism.pipeline, p.parallelism.pipeline - 1
            print(f"  pipeline             {count(stages)} stages one after another: the busiest "
                  f"stage (this chip, every figure above) {duration(d['stage_time_s'])} + the other stages "
                  f"{duration(p.other_stages_s)} + {quantity(sends, 'send', whole=True)} between stages of "
                  f"{duration(d['pipeline_send_s'])} = {duration(d['time_estimate_s'])}, the step's estimate")
            print(f"                       {_pipeline_bound_text(p, d)}")
        link_ridge = (f"{num(d['interconnect_ridge_point'])} FLOP/byte (the part's {roof['part_dtype']} peak ÷ the link)"
                      if not roof["blended"] else
                      f"{num(d['interconnect_ridge_point'])} FLOP/byte (this step's compute roof ÷ the link; the "
                      f"part's {roof['part_dtype']} peak ÷ the link: "
                      f"{num(roof['part_peak'] / p.interconnect_bandwidth_bytes_per_s)})")
        print(f"  interconnect         {num(d['interconnect_intensity'])} FLOP per byte over the link; ridge "
              f"{link_ridge}")
        if p.scale_out_link is not None and d["network_intensity"] is not None:
            print(f"                       over the network: {num(d['network_intensity'])} FLOP per byte; ridge "
                  f"{num(d['network_ridge_point'])} FLOP/byte ("
                  + ("this step's compute roof" if roof["blended"] else f"the part's {roof['part_dtype']} peak")
                  + " ÷ the network)")
    together = " for all chips together" if p.per_chip else ""
    if p.replicas > 1:
        together = (f" for one copy of {quantity(p.chips_per_replica, 'chip', whole=True)}; "
                    "× {r} copies = {total} tokens/s over all {chips} chips, the aggregate")
    unfit = "" if d["fits_in_memory"] else " (as if it fit: it does not, see memory below)"
    def scope(total):
        return together.format(r=count(p.replicas), total=num(total), chips=count(p.chips))

    print(f"  time lower bound     {duration(d['time_lower_bound_s'])} for the whole step{unfit}: compulsory traffic, "
          f"units and communication overlapped, no latency "
          f"(≤ {num(d['tokens_per_s_upper_bound'])} tokens/s{scope(d['aggregate_tokens_per_s_upper_bound'])}); no "
          f"implementation of this split, these formats and these kernels' FLOPs"
          f"{' and routing' if p.model.is_moe else ''} is faster{_bound_scope_text(p)}")
    print(f"  time estimate        {duration(d['time_estimate_s'])}{unfit} -> {d['bound']}-bound "
          f"({num(d['tokens_per_s_estimate'])} tokens/s{scope(d['aggregate_tokens_per_s_estimate'])}); conventions: "
          + "; ".join(d["estimate_conventions"]))
    print(f"                       {duration(d['time_estimate_per_op_sum_s'])} as a kernel per operator, "
          "one after another (an estimate)")
    fits = "fits" if d["fits_in_memory"] else "does NOT fit"
    fits_u = "fits" if d["fits_in_usable_memory"] else "does NOT fit"
    fullest = " (the fullest chip's: every pipeline stage must fit)" if p.parallelism.pipeline > 1 else ""
    print(f"  {'memory per chip' if p.per_chip else 'memory':<21}{binary(d['memory_required_bytes'])} of "
          f"{binary(d['memory_capacity_bytes'])}{fullest} "
          f"-> {fits}; in {percent(util, 0)} of it ({binary(d['usable_memory_bytes'])}) -> {fits_u}")
    print(f"\n  top operators, each as its own kernel (the unfused view){' (per chip)' if p.per_chip else ''}:")
    ops = sorted(d["ops"], key=lambda o: o["time_estimate_s"], reverse=True)[:8]
    rows = [[o["name"], o["block"], si(o["flops"], "FLOP"), si(o["bytes"], "B"),
             num(o["intensity"]) if o["intensity"] is not None else "—", duration(o["time_estimate_s"]),
             o["bound"]] for o in ops]
    print("  " + _table(["operator", "block", "FLOPs", "bytes", "FLOP/B", "kernel (est.)", "bound"], rows)
          .replace("\n", "\n  "))
    print(f"\n{UNITS_NOTE}")
    return 0


def _does_not_fit_warning(required_bytes, part, what: str, per_chip: bool) -> str:
    """The stderr line of a setup that does not fit its memory: every time printed is then a what-if."""
    from .core.units import binary

    chip = " per chip" if per_chip else ""
    return (f"{what} needs {binary(required_bytes)}{chip}, more than the {binary(part.memory_capacity_bytes)} of "
            f"{part.name}: it does not fit, so every time below is as if it fit (a what-if, not a setup that runs)")


def _least_traffic_label(p) -> str:
    """How the bound's least collective traffic is counted, one clause per kind of collective the split makes."""
    names = [c.name for c in p.comm.parts]
    out = []
    if any(n.startswith("tensor all-reduce") or n.startswith("embedding all-reduce") for n in names):
        out.append("all-reduces reduced in the switch (NVLS): each byte sent once"
                   if p.link.in_switch_reduction and p.parallelism.tensor > 2 else "all-reduces by the ring")
    if any(n.startswith("logits all-gather") for n in names):
        out.append("logits gathered by no chip (vocab-parallel sampling)")
    if any(n.startswith("expert all-to-all") for n in names):
        out.append("all-to-alls sending each token once per other expert group its experts live on, "
                   + _routing_text(p.model))
    net = p.scale_out_link
    if net is not None and any(n.endswith("across servers") and "all-reduce" in n for n in names):
        out.append("across servers, all-reduces " + ("reduced in the network (SHARP): each byte of the shard sent once"
                                                     if net.in_switch_reduction else "by the ring"))
    if net is not None and any(n.startswith("expert all-to-all") and n.endswith("across servers") for n in names):
        out.append("each token over the network once per other server its experts live on")
    return ", ".join(out) if out else "no collectives in this split"


def _routing_text(model) -> str:
    """Which routing the bound's expert-parallel figures assume (``place``'s and ``serve``'s text)."""
    if getattr(model, "group_limited_routing", False):
        return (f"the mean step under uniform routing (group-limited routing lowers the bound's all-to-all to at most "
                f"{model.topk_group} of {model.n_group} expert groups per token)")
    return "the mean step under uniform routing"


def _bound_scope_text(p) -> str:
    """What the bound assumes that the estimate does not, past the split's own traffic: the KV cache
    read once per tensor-parallel group, and for an MoE the routing it prices."""
    out = ""
    if p.kv_replication > 1:
        t = p.parallelism.tensor
        out += (f"; the bound shards the KV across the {t} chips (1/{t} per chip), as decode context parallel "
                f"does; the estimate and memory keep it replicated {p.kv_replication}×")
    if p.model.is_moe and p.comm is not None and any("all-to-all" in c.name for c in p.comm.parts):
        out += f"; expert parallel: {_routing_text(p.model)}"
    return out


def _comm_bytes_label(p) -> str:
    """What ``place``'s communication figure is: bytes each chip sends, except the expert all-to-all
    under TP × EP, counted on its receive side (every chip of a group receives each token routed to
    the group whole, and sends as much without multicast)."""
    par = p.parallelism
    tp_ep = (par.tensor > 1 and par.expert > 1 and not par.attention_data_parallel and p.model.is_moe
             and any("all-to-all" in c.name for c in p.comm.parts))
    if not tp_ep:
        return "sent"
    return (f"sent or received (the expert all-to-all counted on its receive side: with TP {par.tensor} in each "
            "group every chip receives each token routed to its group whole)")


def _pipeline_bound_text(p, d) -> str:
    """Which of the pipeline's two lower bounds binds, with both figures (``place``'s text)."""
    from .core.units import count, duration

    stages, decode = p.parallelism.pipeline, p.workload.phase == "decode"
    unit = "one sequence" if decode else "a one-token chunk"
    crossing_s, busiest_s = duration(d["pipeline_crossing_lower_bound_s"]), duration(d["busiest_stage_lower_bound_s"])
    if d["pipeline_lower_bound_basis"] == "crossing":
        why = ("each sequence's next token needs this one, so the step waits for one token's trip through every "
               "stage, each reading its weights" if decode else
               "the prompt's last chunk crosses every stage in turn, each reading its weights")
        if decode and int(p.workload.batch) < stages:
            why += f"; with fewer sequences ({count(p.workload.batch)}) than stages no micro-batch fills the idle ones"
        return (f"the bound is one token crossing the {count(stages)} stages one after another (their bounds for "
                f"{unit}, summed) {crossing_s}, above the busiest stage's bound for the whole step {busiest_s}: {why}")
    return (f"the bound is the busiest stage's for the whole step, {busiest_s}: every stage must do its share however "
            f"the step is cut into micro-batches ({'sequences' if decode else 'chunks of the prompt'}), enough here to "
            f"keep every stage busy; one token's crossing of the stages ({unit}) takes at least {crossing_s}")


def _explain_context(warning: str, held: int, parts: str) -> str:
    """A context warning with where its token count comes from: ``context of 300,001 tokens`` after
    ``--context 300000`` is the history plus the token the step writes, and says so."""
    from .core.units import count

    head = f"context of {count(held)} tokens "
    return f"{head}({parts}) {warning[len(head):]}" if warning.startswith(head) else warning


def _compute_roof(p, d) -> dict:
    """The part's ridge and this step's compute roof, kept apart (what ``place`` prints and its JSON keys).

    The part's peak is its dense rate in the weight matmuls' format (``--compute``); its ridge that ÷ the
    bandwidth. This step's compute roof is the placement's FLOPs ÷ compute time: where the step mixes
    formats (W8A8: FP8 matmuls, BF16 attention; weights a recipe keeps in BF16) or dequantises weights
    in series (weight-only), it is a blend, no rate of the part's, and it is named as this step's."""
    import math

    from .core.units import si

    w, part = p.workload, p.part
    bw, step = float(p.bandwidth_bytes_per_s), float(d["peak_flops_per_s"])
    part_dtype, part_peak = w.compute_dtype, float(p.matmul_peak_flops_per_s)
    dequant = float(d["dequant_time_s"]) > 0
    blended = w.other_compute_dtype != w.compute_dtype or dequant
    others: dict[str, list[str]] = {}
    if w.other_compute_dtype != w.compute_dtype:
        others.setdefault(w.other_compute_dtype, []).append("attention, softmax, norms")
    if float(p.cost.unquantized_matmul_flops) > 0 and w.compute_dtype != "bf16":
        others.setdefault("bf16", []).append("weights kept bf16")
    pieces = [f"the {part_dtype} matmuls at {si(part_peak, 'FLOP/s')}"]
    pieces += [f"{dt} at {si(part.peak_flops_per_s(dt), 'FLOP/s')} for {' and '.join(what)}"
               for dt, what in others.items()]
    recipe = ", ".join(pieces)
    if dequant:
        overlapped = float(d["flops"]) / float(d["compute_lower_bound_s"])
        recipe += (f", plus the dequantisation in series on the vector units at {si(p.vector_peak_flops_per_s, 'FLOP/s')}"
                   f" (the estimate's conservative case; the bound overlaps the two units: "
                   f"{si(overlapped, 'FLOP/s')})")
    same = [dt for dt, r in part.dense_flops_per_s.items() if math.isclose(r, step, rel_tol=1e-9)]
    rate_note = (f"equal to the part's {same[0]} dense rate" if same
                 else "a blend, not one of the part's rates")
    return dict(blended=blended, part_dtype=part_dtype, part_peak=part_peak, bandwidth=bw,
                part_ridge_point=part_peak / bw, step_roof=step, step_ridge_point=step / bw, recipe=recipe,
                rate_note=rate_note,
                other_part_ridges=[(dt, part.peak_flops_per_s(dt) / bw, " and ".join(what))
                                   for dt, what in others.items()],
                fraction_of_step_roof=float(d["fraction_of_peak"]),
                fraction_of_part_peak=float(d["attainable_flops_per_s"]) / part_peak)


#: ``Placement.to_dict()`` keys that hold this step's compute roof, renamed in ``place --json`` so no key
#: reads as the part's: the part's own figures come beside them (:func:`_relabel_roofs`)
STEP_ROOF_KEYS = {"ridge_point": "step_ridge_point", "peak_flops_per_s": "step_compute_roof_flops_per_s",
                  "fraction_of_peak": "fraction_of_step_compute_roof"}


def _relabel_roofs(d: dict, roof: dict) -> dict:
    """``d`` with this step's roof under step_* keys and the part's peak and ridge beside them."""
    out = {}
    for k, v in d.items():
        out[STEP_ROOF_KEYS.get(k, k)] = v
        if k == "ridge_point":
            out["part_ridge_point"] = roof["part_ridge_point"]
        elif k == "peak_flops_per_s":
            out["part_peak_flops_per_s"] = roof["part_peak"]
            out["part_peak_dtype"] = roof["part_dtype"]
            out["step_compute_roof_is_blended"] = roof["blended"]
        elif k == "fraction_of_peak":
            out["fraction_of_part_peak"] = roof["fraction_of_part_peak"]
    return out


#: the units of ``place``'s text: the project's convention (capacity binary, rates SI), and bytes moved in
#: SI so that they divide by an SI bandwidth
UNITS_NOTE = ("Units: bytes moved and rates are SI (1 kB = 1,000 bytes, 1 TB/s = 10^12 bytes/s), so bytes ÷ "
              "bandwidth is seconds; memory is binary (1 GiB = 2^30 bytes).")


def _format_fields(args) -> dict:
    out = dict(weight_group_size=args.group_size, quantized_weights=args.quantized_weights)
    if args.mla != "auto":
        out["mla_absorbed"] = args.mla == "absorbed"
    return out


def _format_flags(sp, names) -> None:
    sp.add_argument("--group-size", type=_count("group-size", 1), default=None,
                    help="elements per scale of 4-bit weights (default: int4 128, fp4 32 = MXFP4)")
    sp.add_argument("--quantized-weights", choices=names.QUANTIZED_WEIGHTS, default=None,
                    help="which weights take --weights (default: all for 8/16-bit, linear for 4-bit: embedding, "
                         "lm_head and norms stay BF16; experts = MoE experts only, as gpt-oss ships)")
    sp.add_argument("--mla", choices=("auto", "absorbed", "expanded"), default="auto",
                    help="MLA models: attention in the latent (absorbed) or expanded per head "
                         "(default auto: absorbed in decode, expanded in prefill)")


def _parallelism(args):
    """A :class:`~roofline_lessons.core.parallel.Parallelism` from the flags; None for one chip."""
    from .core.parallel import Parallelism

    par = Parallelism(tensor=args.tensor_parallel, expert=args.expert_parallel, pipeline=args.pipeline_parallel,
                      overlap_comm=args.overlap_comm, link=args.link,
                      collective_latency_s=args.collective_latency, network_latency_s=args.network_latency,
                      expert_slots=args.expert_slots, attention_data_parallel=args.attention_data_parallel,
                      replicas=args.replicas)
    return None if par == Parallelism() else par


def _parallel_flags(sp, names) -> None:
    sp.add_argument("--tensor-parallel", type=_count("tensor-parallel", 1), default=1,
                    help="chips splitting heads and MLP columns (default 1)")
    sp.add_argument("--expert-parallel", type=_count("expert-parallel", 1), default=1,
                    help="groups the experts (and the sequences) are spread over; MoE models only (default 1)")
    sp.add_argument("--pipeline-parallel", type=_count("pipeline-parallel", 1), default=1,
                    help="pipeline stages the layers are split into (default 1)")
    sp.add_argument("--overlap-comm", action="store_true",
                    help="best case: communication hidden under compute (default: added to it)")
    sp.add_argument("--collective-latency", type=_seconds("collective-latency"), default=None, metavar="SECONDS",
                    help="seconds per collective call in the estimate (default: the catalog's assumed figure, "
                         "10 µs); the lower bound never counts a per-call latency")
    sp.add_argument("--network-latency", type=_seconds("network-latency"), default=None, metavar="SECONDS",
                    help="seconds per call on the network between servers in the estimate (default: the catalog's "
                         "assumed figure, 10 µs, on top of the in-server link's where a collective uses both); the lower "
                         "bound never counts it")
    sp.add_argument("--expert-slots", type=_count("expert-slots", 1), default=None, metavar="N",
                    help="expert slots with redundant copies, as DeepSeek's EPLB (default: the model's experts); "
                         ">= the experts and divisible by the expert-parallel degree")
    sp.add_argument("--attention-data-parallel", action="store_true",
                    help="DeepSeek/SGLang decode layout: attention data parallel over the expert-parallel groups "
                         "(TP --tensor-parallel inside each), the MoE layers expert parallel over all tensor × "
                         "expert chips, whole experts per chip (MoE models only)")
    sp.add_argument("--replicas", type=_count("replicas", 1), default=1, metavar="N",
                    help="independent copies of the split (plain data parallel), each serving its own --batch; "
                         "figures stay per chip, aggregate throughput is N × one copy's (default 1)")
    sp.add_argument("--link", choices=names.LINK_CHOICES, default="auto",
                    help="link between chips inside a server (default auto: the scale-up link when the chips fit "
                         "its domain, else PCIe); past one server the part's scale-out network joins the servers")


#: width of the labels of ``serve``'s text ("time per output token" and a space)
SERVE_LABEL = 23


def cmd_serve(args) -> int:
    from dataclasses import replace

    from .core.errors import RooflineInputError
    from .core.parallel import Parallelism, check_parallelism
    from .core.hardware import get_part
    from .core.models import get_model
    from .core.memory import check_memory_utilization
    from .core.units import binary, count, duration, num, percent, quantity
    from .topics.serving import cost_per_million_output_tokens, request_timeline

    dtypes = dict(weights_dtype=args.weights, activations_dtype=args.activations, kv_dtype=args.kv,
                  state_dtype=args.state, compute_dtype=args.compute, flash_attention=not args.no_flash_attention,
                  attention_compute_dtype=args.attention_compute, **_format_fields(args))
    if args.price_per_hour is not None and not args.price_per_hour >= 0:
        raise RooflineInputError(f"--price-per-hour must be a price in US dollars >= 0, got {args.price_per_hour!r}")
    util = check_memory_utilization(args.memory_utilization)
    model = get_model(_model(args))
    par = _parallelism(args)
    # replicas are independent copies: one copy is timed (the figures per chip are its), the aggregate is r ×
    replicas = 1 if par is None else par.replicas
    copy = None if par is None or replace(par, replicas=1) == Parallelism() else replace(par, replicas=1)
    if par is not None and copy is None:  # one chip per copy: still refuse what the model cannot take
        check_parallelism(model, par)
    t = request_timeline(model, args.hardware, prompt_tokens=args.prompt, output_tokens=args.output,
                         batch=args.batch, prefix_cached_tokens=args.prefix_cached,
                         speculative_tokens=args.speculative_tokens, acceptance=args.acceptance,
                         draft_model=args.draft_model, chunk_tokens=args.chunk,
                         parallelism=copy, **dtypes)
    d = t.to_dict()
    all_chips = t.chips * replicas
    d.update(replicas=replicas, chips_per_replica=t.chips, chips=all_chips, per_chip=all_chips > 1,
             parallelism=t.parallelism_label if par is None else par.label,
             aggregate_output_tokens_per_s=replicas * t.output_tokens_per_s,
             aggregate_output_tokens_per_s_upper_bound=(None if d["output_tokens_per_s_upper_bound"] is None
                                                        else replicas * t.output_tokens_per_s_upper_bound))
    cost = (None if args.price_per_hour is None
            else float(cost_per_million_output_tokens(args.price_per_hour, t.output_tokens_per_s_per_chip)))
    d["price_per_hour_usd"] = args.price_per_hour
    d["cost_per_million_output_tokens"] = cost
    d["cost_per_million_output_tokens_lower_bound"] = (
        None if args.price_per_hour is None or d["output_tokens_per_s_upper_bound"] is None else
        float(cost_per_million_output_tokens(args.price_per_hour, t.output_tokens_per_s_upper_bound_per_chip)))
    d["memory_utilization"] = util
    d["usable_memory_bytes"] = t.memory_capacity_bytes * util
    d["fits_in_usable_memory"] = bool(t.memory_required_bytes <= d["usable_memory_bytes"])
    d["warnings"] = [_explain_context(wn, t.prompt_tokens + t.output_tokens,
                                      f"the {count(t.prompt_tokens)}-token prompt + {count(t.output_tokens)} output "
                                      "tokens") for wn in d["warnings"]]
    if not t.fits_in_memory:
        d["warnings"].append(_does_not_fit_warning(t.memory_required_bytes, get_part(t.part_id),
                                                   "the request at its final context", all_chips > 1))
    for warning in d["warnings"]:
        print(f"{PROG}: warning: {warning}", file=sys.stderr)
    if args.json:
        _print_json(d)
        return 0

    def line(label: str, text: str) -> None:
        print(f"  {label:<{SERVE_LABEL}}{text}")

    more = " " * (2 + SERVE_LABEL)
    m, p = model, get_part(t.part_id)
    on = f"{count(all_chips)} × {p.name} ({d['parallelism']})" if all_chips > 1 else p.name
    per_copy = f" per copy (each of the {count(replicas)} copies its own)" if replicas > 1 else ""
    print(f"{m.name} on {on}: batch {count(t.batch)}{per_copy}, prompt {quantity(t.prompt_tokens, 'token', whole=True)}"
          f"{f' ({count(t.prefix_cached_tokens)} cached)' if t.prefix_cached_tokens else ''}, "
          f"output {quantity(t.output_tokens, 'token', whole=True)}")
    if all_chips > 1:
        print(f"  per chip: every chip waits the same times; rates, cost and memory below are one chip's share")
    if t.speculative_tokens:
        draft = t.draft_model_id or "an MTP-style draft layer"
        line("speculation", f"{quantity(t.speculative_tokens, 'drafted token', whole=True)} by {draft}, acceptance "
                            f"{num(t.acceptance)} -> {quantity(t.tokens_per_verify_step, 'token')} per verify step")

    unfit = "" if t.fits_in_memory else "  (as if it fit: it does not, see memory below)"

    def pair(est, lb):
        return f"{duration(est):>10} estimate, {duration(lb):>10} lower bound"

    line("time to first token", pair(t.ttft_s, t.ttft_lower_bound_s) + unfit)
    if d["tpot_s"] is None:
        line("time per output token", "—  (one output token: no decode step)")
    else:
        line("time per output token", f"{pair(t.tpot_s, t.tpot_lower_bound_s)}  over "
                                      f"{quantity(t.decode_steps, 'decode step', whole=True)} "
                                      f"(mean step {duration(t.mean_step_s)}, estimate){unfit}")
    line("end to end", pair(t.e2e_s, t.e2e_lower_bound_s) + unfit)
    if replicas > 1:
        copy_chips = quantity(t.chips, "chip", whole=True)
        line("output tokens/s", f"{num(t.output_tokens_per_s_per_chip)} per chip, static batch (estimate; "
                                f"{num(t.output_tokens_per_s)} for one copy's batch over {copy_chips}, "
                                f"{num(d['aggregate_output_tokens_per_s'])} over all {count(all_chips)} chips, the "
                                f"aggregate), {num(t.output_tokens_per_s_per_sequence)} per sequence{unfit}")
        if d["output_tokens_per_s_upper_bound"] is not None:
            print(f"{more}{num(t.output_tokens_per_s_upper_bound_per_chip)} per chip, continuous batching (upper "
                  f"bound; {num(t.output_tokens_per_s_upper_bound)} for one copy over {copy_chips}, "
                  f"{num(d['aggregate_output_tokens_per_s_upper_bound'])} over all {count(all_chips)} chips, the "
                  f"aggregate){unfit}")
    elif t.chips > 1:
        line("output tokens/s", f"{num(t.output_tokens_per_s_per_chip)} per chip, static batch (estimate; "
                                f"{num(t.output_tokens_per_s)} for the batch over {count(t.chips)} chips), "
                                f"{num(t.output_tokens_per_s_per_sequence)} per sequence{unfit}")
        if d["output_tokens_per_s_upper_bound"] is not None:
            print(f"{more}{num(t.output_tokens_per_s_upper_bound_per_chip)} per chip, continuous "
                  f"batching (upper bound; {num(t.output_tokens_per_s_upper_bound)} over {count(t.chips)} chips)"
                  f"{unfit}")
    else:
        line("output tokens/s", f"{num(t.output_tokens_per_s)} for the batch, static batch (estimate), "
                                f"{num(t.output_tokens_per_s_per_sequence)} per sequence{unfit}")
        if d["output_tokens_per_s_upper_bound"] is not None:
            print(f"{more}{num(t.output_tokens_per_s_upper_bound)} for the batch, continuous batching "
                  f"(upper bound){unfit}")
    if cost is not None:
        low = d["cost_per_million_output_tokens_lower_bound"]
        line("cost", f"{num(cost)} US dollars per million output tokens (static batch, estimate)"
             + ("" if low is None else f", at least {num(low)} (continuous batching's upper bound)")
             + f", at {num(args.price_per_hour)} US dollars per chip-hour{unfit}")
    fits = "fits" if t.fits_in_memory else "does NOT fit"
    fits_u = "fits" if d["fits_in_usable_memory"] else "does NOT fit"
    line("memory per chip" if all_chips > 1 else "memory",
         f"{binary(t.memory_required_bytes)} of {binary(t.memory_capacity_bytes)} at the final context -> {fits}; "
         f"in {percent(util, 0)} of it ({binary(d['usable_memory_bytes'])}) -> {fits_u}")
    note = ("Estimates: each step by the conventions `place` names (operators unfused, dequantisation in series")
    note += ")" if t.chips == 1 else ", ring collectives at the assumed per-call latency, added unless --overlap-comm)"
    note += ", the batch served as one static batch (the whole batch prefills, then decodes)."
    tensor = 1 if copy is None else copy.tensor
    replicated = tensor > 1 and (model.is_mla or (model.num_key_value_heads < tensor
                                                  and model.kv_bytes_per_token("bf16") > 0))
    note += (" Lower bounds: an idle server's steps by compulsory traffic, units and the least communication "
             "overlapped, no per-call latency"
             + (f"; the bound shards the KV across the {tensor} tensor-parallel chips, as decode context parallel "
                "does (the estimate and memory keep it replicated)" if replicated else "")
             + (", for this chunking" if t.chunk_tokens else "")
             + (", given the assumed draft's cost" if t.speculative_tokens else "") + ".")
    if d["output_tokens_per_s_upper_bound"] is None:
        note += (" Continuous batching's upper bound is not computed with speculation or pipeline stages")
    else:
        note += (" Upper bound: continuous batching's steady state with this batch in flight, the next requests' "
                 "prefills riding in the decode steps; no engine on this split beats it without speculative decoding (one "
                 "token per sequence per step)"
                 + (" (the mean step under uniform expert routing"
                    + (f"; group-limited routing lowers the bound's all-to-all to at most {model.topk_group} of "
                       f"{model.n_group} expert groups per token" if copy is not None and
                       copy.expert_parallel_degree > 1 and model.group_limited_routing else "")
                    + ")" if model.is_moe else ""))
    if t.batch > 1 and all_chips == 1:
        note += f". Figures are per chip: all {count(t.batch)} sequences on a single chip"
    print(f"\n{note}.")
    return 0


def _positive(flag: str, what: str):
    """A parser of a finite number > 0 for ``--flag`` (``what`` names its unit in the error)."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = float("nan")
        if not (value > 0 and value != float("inf")):
            raise argparse.ArgumentTypeError(f"--{flag} must be {what} > 0, got {text!r}")
        return value
    return parse


def _share(name: str, low_open: bool = False):
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = float("nan")
        if not ((0 < value <= 1) if low_open else (0 <= value <= 1)):
            raise argparse.ArgumentTypeError(f"--{name} must be a share in {'(0, 1]' if low_open else '[0, 1]'}, "
                                             f"got {text!r}")
        return value
    return parse


def cmd_simulate(args) -> int:
    import numpy as np

    from .core.errors import RooflineInputError
    from .core.units import count, duration, percent
    from .topics.engine import (CONVENTIONS, EngineConfig, goodput_curve, poisson_requests, read_trace,
                                simulate)

    if (args.prefill_chips is None) != (args.decode_chips is None):
        raise RooflineInputError("--prefill-chips and --decode-chips go together (a prefill pool and a decode pool)")
    if args.trace is None and (args.rate is None or args.prompt is None or args.output is None):
        raise RooflineInputError("give --rate, --prompt and --output (a Poisson workload), or --trace FILE")
    if args.trace is not None and args.rate is not None:
        raise RooflineInputError("--trace gives the arrival times: drop --rate")
    cfg = EngineConfig(cost=args.cost, scheduler=args.scheduler, chunk_tokens=args.chunk,
                       token_budget=args.token_budget, max_running=args.max_running, block_tokens=args.block_size,
                       memory_utilization=args.memory_utilization, preemption=args.preempt,
                       prefix_cached_tokens=args.prefix_cached, prefix_hit_rate=args.prefix_hit_rate,
                       tensor_parallel=args.tensor_parallel, chips=args.chips if args.chips else args.tensor_parallel,
                       prefill_chips=args.prefill_chips, decode_chips=args.decode_chips, seed=args.seed)
    requests = (read_trace(args.trace) if args.trace is not None else
                poisson_requests(args.rate, args.requests, args.prompt, args.output, seed=args.seed))
    dtypes = dict(weights_dtype=args.weights, kv_dtype=args.kv)
    model = _model(args)
    sim = simulate(model, args.hardware, requests, cfg, ttft_slo_s=args.ttft_slo, tpot_slo_s=args.tpot_slo,
                   slo_attainment=args.slo_attainment, **dtypes)
    d = sim.summary()
    d["per_chip"] = sim.chips > 1
    goodput = None
    if args.ttft_slo is not None and args.tpot_slo is not None and args.trace is None:
        # DistServe's goodput: the highest Poisson rate (same lengths, seed and count) meeting the attainment
        for widest in (4.0, 32.0):  # widen once when every rate tried meets the target
            rates = args.rate * np.geomspace(0.125, widest, int(round(np.log2(widest / 0.125))) + 1)
            goodput = goodput_curve(model, args.hardware, rates_per_s=rates, requests=args.requests,
                                    prompt_tokens=args.prompt, output_tokens=args.output, ttft_slo_s=args.ttft_slo,
                                    tpot_slo_s=args.tpot_slo, slo_attainment=args.slo_attainment, config=cfg,
                                    seed=args.seed, refine=4, **dtypes)
            if np.any(goodput.attainment < args.slo_attainment):
                break
        d["goodput_requests_per_s"] = goodput.goodput_requests_per_s
        d["goodput_requests_per_s_per_chip"] = goodput.goodput_requests_per_s_per_chip
        d["goodput_rates_tried_per_s"] = goodput.rates_per_s.tolist()
        d["goodput_attainment"] = goodput.attainment.tolist()
        # every rate tried met the target: the goodput is at least the highest, not that rate
        d["goodput_is_lower_limit"] = bool(np.all(goodput.attainment >= args.slo_attainment))
    else:
        d["goodput_requests_per_s"] = None
        d["goodput_requests_per_s_per_chip"] = None
    d["ttft_slo_s"], d["tpot_slo_s"], d["slo_attainment_target"] = args.ttft_slo, args.tpot_slo, args.slo_attainment
    if args.json:
        _print_json(d)
        return 0
    pools = (f"{count(cfg.prefill_chips)} prefill + {count(cfg.decode_chips)} decode chips"
             if cfg.disaggregated else f"{count(cfg.chips)} chip{'s' if cfg.chips > 1 else ''}")
    print(f"{sim.model_id} on {sim.part_id} ({pools}, {count(cfg.tensor_parallel)} chip"
          f"{'s' if cfg.tensor_parallel > 1 else ''} per instance): "
          f"{count(requests.count)} requests, {requests.source}")
    print(f"  simulated with step costs at their {cfg.cost.replace('_', ' ')}; every figure below is an estimate "
          f"of this scheduler, not a bound")
    print(f"  {'':<8}{'mean':>10}{'p50':>10}{'p90':>10}{'p99':>10}")
    for key, label in (("queue_s", "queue"), ("ttft_s", "TTFT"), ("tpot_s", "TPOT"), ("e2e_s", "E2E")):
        print(f"  {label:<8}" + "".join(f"{duration(d[key][s]):>10}" for s in ("mean", "p50", "p90", "p99")))
    per = " (whole deployment; per chip: " + f"{d['output_tokens_per_s_per_chip']:,.0f})" if sim.chips > 1 else ""
    print(f"  output tokens/s   {d['output_tokens_per_s']:,.0f}{per}")
    print(f"  running requests  {d['mean_running_requests']:.1f} on average; KV cache {count(sim.kv_blocks)} blocks "
          f"per instance, peak use {percent(d['peak_kv_blocks_used_share'])}; preemptions {count(sim.preemptions)}")
    if args.ttft_slo is not None or args.tpot_slo is not None:
        print(f"  SLO attainment    {percent(d['slo_attainment'])} at this rate")
    if goodput is not None:
        at_least = "at least " if d["goodput_is_lower_limit"] else ""
        print(f"  goodput           {at_least}{goodput.goodput_requests_per_s:.2f} requests/s at "
              f"{percent(args.slo_attainment)} attainment ({goodput.goodput_requests_per_s_per_chip:.2f} per chip; "
              + ("every rate tried met it)" if at_least else "the highest rate tried before the first that missed)"))
    print("  conventions: " + "; ".join(CONVENTIONS[1:]))
    return 0


def cmd_exercises(args) -> int:
    from .core.errors import RooflineInputError
    from .course.exercisegen import ExerciseGenerationError, generate, stale_files

    root = Path(args.root)
    sol, ex = root / "solutions", root / "exercises"
    if args.check:
        stale = stale_files(sol, ex)
        for p in stale:
            print(f"stale: {p}")
        return 1 if stale else 0
    try:
        written = generate(sol, ex, force=args.force)
    except ExerciseGenerationError as exc:
        raise RooflineInputError(str(exc)) from None
    print(f"wrote {len(written)} file(s)" + "".join(f"\n  {p}" for p in written))
    return 0


def cmd_export(args) -> int:
    from .core.errors import RooflineInputError
    from .course.handouts import export

    try:
        written = export(args.root, args.out, only=args.lessons or None)
    except FileNotFoundError as exc:
        raise RooflineInputError(str(exc)) from None
    print(f"wrote {len(written)} file(s) to {args.out}" + "".join(f"\n  {p}" for p in written))
    return 0


def cmd_doctor(args) -> int:
    from .course.workshop import doctor_report, findings_json, run_doctor

    findings = run_doctor()
    print(findings_json(findings) if args.json else doctor_report(findings))
    return 0 if all(f.ok for f in findings) else 1


def cmd_cheatsheet(args) -> int:
    from .course import cheatsheet

    for p in cheatsheet.write(args.out):
        print(p)
    return 0


def _catalog_names() -> SimpleNamespace:
    """The choices and catalog ids the ``place`` and ``serve`` flags offer. Raises ImportError where
    a dependency of the core (numpy) is missing."""
    from .core.costs import PHASES, QUANTIZED_WEIGHTS
    from .core.dtypes import DTYPES
    from .core.hardware import list_parts
    from .core.memory import VLLM_DEFAULT_MEMORY_UTILIZATION
    from .core.models import list_models
    from .core.parallel import LINK_CHOICES
    from .core.units import count
    from .topics.engine import DEFAULT_BLOCK_TOKENS, DEFAULT_MAX_RUNNING, DEFAULT_TOKEN_BUDGET

    return SimpleNamespace(PHASES=PHASES, QUANTIZED_WEIGHTS=QUANTIZED_WEIGHTS, DTYPES=DTYPES, parts=list_parts(),
                           models=list_models(), VLLM_DEFAULT_MEMORY_UTILIZATION=VLLM_DEFAULT_MEMORY_UTILIZATION,
                           LINK_CHOICES=LINK_CHOICES, count=count, DEFAULT_BLOCK_TOKENS=DEFAULT_BLOCK_TOKENS,
                           DEFAULT_MAX_RUNNING=DEFAULT_MAX_RUNNING, DEFAULT_TOKEN_BUDGET=DEFAULT_TOKEN_BUDGET)


class _MissingDependency(Exception):
    """A command needs a package that does not import in this environment."""


def _missing_dependency(exc: ImportError) -> _MissingDependency:
    what = exc.name or str(exc)
    return _MissingDependency(f"this command needs {what!s}, which does not import in this environment "
                              f"({' '.join(str(exc).split())}); run `{PROG} doctor` to see every missing "
                              f"dependency and its fix")


def _model_flags(sp, names) -> None:
    """--model (a catalog id) or --model-config (a Hugging Face config.json): exactly one."""
    which = sp.add_mutually_exclusive_group(required=True)
    which.add_argument("--model", help=f"model id ({', '.join(names.models)})")
    which.add_argument("--model-config", metavar="CONFIG_JSON",
                       help="your own model: the path of its Hugging Face config.json (Llama, Mistral, Qwen2/3, "
                            "Qwen3-MoE, the Qwen3.8 hybrid, Gemma 3, gpt-oss, DeepSeek-V3), instead of --model")


def _place_flags(pl, names) -> None:
    pl.add_argument("--hardware", required=True, help=f"part id ({', '.join(names.parts)})")
    _model_flags(pl, names)
    pl.add_argument("--phase", required=True, choices=names.PHASES,
                    help="prefill (a whole prompt in one step) or decode (one new token per sequence)")
    pl.add_argument("--batch", type=_count("batch", 1), default=1, help="sequences in the step (default 1)")
    pl.add_argument("--prompt", type=_count("prompt", 1), default=None,
                    help=f"prefill: prompt length in tokens (default {names.count(DEFAULT_PROMPT_TOKENS)})")
    pl.add_argument("--context", type=_count("context", 0), default=None,
                    help="decode: tokens already in the KV cache (default 0)")
    for flag, default in (("weights", "bf16"), ("activations", "bf16"), ("kv", "bf16"), ("compute", "bf16")):
        pl.add_argument(f"--{flag}", type=_dtype, default=default, help=f"dtype ({', '.join(names.DTYPES)})")
    pl.add_argument("--state", type=_dtype, default=None, help="recurrent-state dtype (default: the model's)")
    pl.add_argument("--attention-compute", type=_dtype, default=None,
                    help="rate for attention, softmax and norms (default: --compute, but bf16 when --compute is "
                         "fp8/fp4/int8)")
    _memory_utilization_flag(pl, names)
    pl.add_argument("--no-flash-attention", action="store_true",
                    help="price attention as an eager kernel: the score matrix written to HBM and read back, and "
                         "in prefill the whole score square computed, masked half included (default: FlashAttention, "
                         "fused, the causal half only)")
    _format_flags(pl, names)
    _parallel_flags(pl, names)
    pl.add_argument("--json", action="store_true", help="print one JSON object")


def _memory_utilization_flag(sp, names) -> None:
    util = names.VLLM_DEFAULT_MEMORY_UTILIZATION
    sp.add_argument("--memory-utilization", type=float, default=util,
                    help="share of device memory a serving engine may use, for the second fit check "
                         f"(default {util}, vLLM's gpu_memory_utilization)")


def _serve_flags(sv, names) -> None:
    sv.add_argument("--hardware", required=True, help=f"part id ({', '.join(names.parts)})")
    _model_flags(sv, names)
    sv.add_argument("--prompt", type=_count("prompt", 1), required=True, help="prompt length in tokens")
    sv.add_argument("--output", type=_count("output", 1), required=True, help="output tokens per sequence")
    sv.add_argument("--batch", type=_count("batch", 1), default=1, help="sequences served together (default 1)")
    sv.add_argument("--speculative-tokens", type=_count("speculative-tokens", 0), default=0,
                    help="tokens drafted per verify step (default 0: no speculation)")
    sv.add_argument("--acceptance", type=float, default=0.0, help="chance a drafted token is accepted, in [0, 1)")
    sv.add_argument("--draft-model", default=None,
                    help="draft model id (smaller than --model); default: an MTP-style draft layer")
    sv.add_argument("--prefix-cached", type=_count("prefix-cached", 0), default=0,
                    help="prompt tokens whose KV is already cached (default 0)")
    sv.add_argument("--chunk", type=_count("chunk", 1), default=None, help="prefill chunk length in tokens")
    sv.add_argument("--price-per-hour", type=float, default=None, help="US dollars per chip-hour, for the cost")
    for flag, default in (("weights", "bf16"), ("activations", "bf16"), ("kv", "bf16"), ("compute", "bf16")):
        sv.add_argument(f"--{flag}", type=_dtype, default=default, help=f"dtype ({', '.join(names.DTYPES)})")
    sv.add_argument("--state", type=_dtype, default=None, help="recurrent-state dtype (default: the model's)")
    sv.add_argument("--attention-compute", type=_dtype, default=None,
                    help="rate for attention, softmax and norms (default: as place)")
    _memory_utilization_flag(sv, names)
    sv.add_argument("--no-flash-attention", action="store_true",
                    help="price attention as an eager kernel, as `place --no-flash-attention` does (default: "
                         "FlashAttention)")
    _format_flags(sv, names)
    _parallel_flags(sv, names)
    sv.add_argument("--json", action="store_true", help="print one JSON object")


def _simulate_flags(sm, names) -> None:
    sm.add_argument("--hardware", required=True, help=f"part id ({', '.join(names.parts)})")
    _model_flags(sm, names)
    sm.add_argument("--rate", type=_positive("rate", "requests per second"), default=None,
                    help="Poisson arrivals, requests per second")
    sm.add_argument("--requests", type=_count("requests", 1), default=1000, help="requests to simulate (default 1000)")
    sm.add_argument("--prompt", type=_count("prompt", 1), default=None, help="prompt tokens per request")
    sm.add_argument("--output", type=_count("output", 1), default=None, help="output tokens per request")
    sm.add_argument("--trace", default=None, metavar="FILE",
                    help="requests from a file instead: CSV (arrival_s,prompt_tokens,output_tokens) or JSON lines")
    sm.add_argument("--cost", choices=("estimate", "lower_bound"), default="estimate",
                    help="price each step by the estimate or at its lower bound (default estimate)")
    sm.add_argument("--scheduler", choices=("continuous", "static"), default="continuous",
                    help="continuous batching (default) or static batches")
    sm.add_argument("--chunk", type=_count("chunk", 1), default=None,
                    help="chunked prefill: most prompt tokens of one request per step (default: no chunking)")
    sm.add_argument("--token-budget", type=_count("token-budget", 1), default=names.DEFAULT_TOKEN_BUDGET,
                    help=f"most tokens per step (default {names.DEFAULT_TOKEN_BUDGET}, vLLM's max_num_batched_tokens; "
                         "without --chunk it is raised to the longest request, as vLLM requires)")
    sm.add_argument("--max-running", type=_count("max-running", 1), default=names.DEFAULT_MAX_RUNNING,
                    help=f"most sequences per step (default {names.DEFAULT_MAX_RUNNING}, vLLM's max_num_seqs)")
    sm.add_argument("--block-size", type=_count("block-size", 1), default=names.DEFAULT_BLOCK_TOKENS,
                    help=f"tokens per KV-cache block (default {names.DEFAULT_BLOCK_TOKENS})")
    sm.add_argument("--preempt", choices=("recompute", "swap"), default="recompute",
                    help="when KV blocks run out: recompute (default) or swap over the host link")
    sm.add_argument("--prefix-cached", type=_count("prefix-cached", 0), default=0,
                    help="a shared prompt prefix of this many tokens is cached (default 0)")
    sm.add_argument("--prefix-hit-rate", type=_share("prefix-hit-rate"), default=1.0,
                    help="share of requests that start with that prefix (default 1)")
    sm.add_argument("--tensor-parallel", type=_count("tensor-parallel", 1), default=1,
                    help="chips per engine instance (default 1)")
    sm.add_argument("--chips", type=_count("chips", 1), default=None,
                    help="colocated: chips in all, instances of --tensor-parallel chips (default one instance)")
    sm.add_argument("--prefill-chips", type=_count("prefill-chips", 1), default=None,
                    help="disaggregated: chips in the prefill pool (with --decode-chips)")
    sm.add_argument("--decode-chips", type=_count("decode-chips", 1), default=None,
                    help="disaggregated: chips in the decode pool")
    for flag, name in (("ttft-slo", "TTFT"), ("tpot-slo", "TPOT")):
        sm.add_argument(f"--{flag}", type=_positive(flag, "a number of seconds"), default=None,
                        help=f"{name} objective, seconds")
    sm.add_argument("--slo-attainment", type=_share("slo-attainment", low_open=True), default=0.9,
                    help="share of requests that must meet both objectives for goodput (default 0.9)")
    for flag in ("weights", "kv"):
        sm.add_argument(f"--{flag}", type=_dtype, default="bf16", help=f"dtype ({', '.join(names.DTYPES)})")
    _memory_utilization_flag(sm, names)
    sm.add_argument("--seed", type=_count("seed", 0), default=0, help="random seed (default 0)")
    sm.add_argument("--json", action="store_true", help="print one JSON object")


def build_parser() -> argparse.ArgumentParser:
    """The command line. Where the core cannot be imported (numpy missing), ``place`` and ``serve``
    are still listed, and running them says in one line what is missing."""
    try:
        names, missing = _catalog_names(), None
    except ImportError as exc:
        names, missing = None, exc
    parser = _Parser(prog=PROG, description="The roofline model for LLM inference: catalogs and placements.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    hw = sub.add_parser("hardware", help="the hardware catalog as a table")
    hw.add_argument("--json", action="store_true", help="print the catalog as JSON (raw numbers, SI units)")
    hw.set_defaults(func=cmd_hardware)
    mo = sub.add_parser("models", help="the model catalog as a table")
    mo.add_argument("--json", action="store_true", help="print the catalog as JSON (counts as integers)")
    mo.set_defaults(func=cmd_models)
    for name, helptext, flags, func in (
            ("place", "place one prefill or decode step on a part's roofline", _place_flags, cmd_place),
            ("serve", "one batch of requests: TTFT, TPOT, end to end, tokens/s, cost", _serve_flags, cmd_serve),
            ("simulate", "a serving engine's scheduler over many requests: queueing, TTFT/TPOT percentiles, goodput",
             _simulate_flags, cmd_simulate)):
        if names is None:  # any arguments are accepted and the command reports what is missing
            stub = sub.add_parser(name, help=f"{helptext} (needs the course's dependencies: run `{PROG} doctor`)",
                                  add_help=False)
            stub.set_defaults(func=_raiser(missing), accepts_any_arguments=True)
        else:
            sp = sub.add_parser(name, help=helptext)
            flags(sp, names)
            sp.set_defaults(func=func)
    ex = sub.add_parser("exercises", help="generate exercises/ from solutions/ (or --check that it is current)")
    ex.add_argument("--root", default=".", help="the course checkout (default: .)")
    ex.add_argument("--check", action="store_true", help="only list stale exercise files; exit 1 if any")
    ex.add_argument("--force", action="store_true", help="overwrite edited exercise files (keeping .bak copies)")
    ex.set_defaults(func=cmd_exercises)
    exp = sub.add_parser("export", help="run every lesson and write HTML handouts and the cheat sheet")
    exp.add_argument("--out", default="handouts", help="folder for the handouts (default: handouts)")
    exp.add_argument("--root", default=".", help="the course checkout (default: .)")
    exp.add_argument("--lessons", nargs="*", help="only these lessons, by number prefix: --lessons 01 02")
    exp.set_defaults(func=cmd_export)
    doc = sub.add_parser("doctor", help="check this set-up before a workshop (works even with dependencies "
                                        "missing); exit status 1 if something is wrong")
    doc.add_argument("--json", action="store_true",
                     help="print the findings as a JSON list, one object per check (ok, what, fix, check)")
    doc.set_defaults(func=cmd_doctor)
    cs = sub.add_parser("cheatsheet", help="write the 60-second cheat sheet (Markdown and HTML)")
    cs.add_argument("--out", default=".", help="folder (default: .)")
    cs.set_defaults(func=cmd_cheatsheet)
    return parser


def _raiser(exc: ImportError):
    def func(args) -> int:
        raise _missing_dependency(exc)

    return func


def main(argv: list[str] | None = None) -> int:
    from .core.errors import RooflineInputError  # (standard library only, like this module)

    try:
        parser = build_parser()
        args, extra = parser.parse_known_args(argv)
        if extra and not getattr(args, "accepts_any_arguments", False):
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        return args.func(args)
    except _UsageError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except RooflineInputError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except _MissingDependency as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 1
    except ImportError as exc:  # a command's own import (hardware, models, export …) in a broken environment
        print(f"{PROG}: error: {_missing_dependency(exc)}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
