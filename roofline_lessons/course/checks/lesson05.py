"""Checkers for the lesson-5 exercises (KV growth in a hybrid model)."""

from __future__ import annotations

from ...core.memory import max_batch_that_fits, weight_bytes
from ...core.models import FULL_ATTENTION, GATED_DELTANET, get_model
from ...core.placement import place
from ...core.units import KiB, MiB
from ...topics.hybrid import all_full_attention, kv_overtakes_weights_context, layer_kind_points
from ..checkers import CheckResult, Mistake, check_choice, check_number

MODEL = "qwen3.8-27b"


def _kv_mistakes() -> tuple[Mistake, ...]:
    kib = get_model(MODEL).kv_bytes_per_token("bf16") / KiB
    return (
        Mistake("give every one of the 64 layers a KV cache (only the 16 full-attention layers keep one)", 4 * kib),
        Mistake("count K or V but not both", kib / 2),
    )


def _state_mistakes() -> tuple[Mistake, ...]:
    mib = get_model(MODEL).deltanet_state_bytes() / MiB
    return (
        Mistake("give the state of one layer, not all 48", mib / 48),
        Mistake("use the 16 key heads instead of the 48 value heads", mib / 3),
        Mistake("store the state in BF16 (the model keeps it in float32)", mib / 2),
    )


def _crossing_mistakes() -> tuple[Mistake, ...]:
    m = get_model(MODEL)
    per_token = m.kv_bytes_per_token("bf16")
    return (
        Mistake("count the whole embedding table as read (decode looks up 16 rows)",
                weight_bytes(m) / (16 * per_token)),
        Mistake("leave out the batch (16 sequences each read their own cache)", kv_overtakes_weights_context(MODEL, 16) * 16),
    )


def _all_attention_mistakes() -> tuple[Mistake, ...]:
    # (Reading "141 GB" as SI gives the same whole number here, so it is not listed as a mistake.)
    return (
        Mistake("keep the hybrid's KV cache (the counterfactual has four times as much)",
                float(max_batch_that_fits(MODEL, "h200", 131072))),
    )


def kv_kib_per_token(answer) -> CheckResult:
    """5.1 — by hand: Qwen3.8-27B's BF16 KV cache per token, all layers, in KiB."""
    return check_number("5.1", answer, get_model(MODEL).kv_bytes_per_token("bf16") / KiB, rel_tol=0.01, unit="KiB",
                        mistakes=_kv_mistakes(),
                        hint="2 (K and V) × full-attention layers × KV heads × head_dim × 2 bytes; only 16 layers "
                             "keep a KV cache.")


def state_mib_total(answer) -> CheckResult:
    """5.2 — by hand: float32 Gated DeltaNet state of one sequence, all layers, in MiB."""
    return check_number("5.2", answer, get_model(MODEL).deltanet_state_bytes() / MiB, rel_tol=0.01, unit="MiB",
                        mistakes=_state_mistakes(),
                        hint="value heads × value head dim × key head dim × 4 bytes, per layer, times 48 layers.")


def crossing_at_batch16(answer) -> CheckResult:
    """5.3 — tokens cached at which KV reads equal weight reads, batch 16 decode."""
    return check_number("5.3", answer, kv_overtakes_weights_context(MODEL, 16), rel_tol=0.03, unit="tokens",
                        mistakes=_crossing_mistakes(),
                        hint="weight bytes ÷ (16 × KV bytes per token); the embedding table is not read in full.")


def all_attention_batch_on_h200(answer) -> CheckResult:
    """5.4 — largest batch at 131,072 tokens on an H200 if all 64 layers were full attention."""
    expected = max_batch_that_fits(all_full_attention(MODEL), "h200", 131072)
    return check_number("5.4", answer, expected, abs_tol=0.5, unit="sequences", whole=True,
                        mistakes=_all_attention_mistakes(),
                        hint="four times the KV cache per token; the weights barely change.")


def which_dot_moves(answer) -> CheckResult:
    """5.5 — which layer kind's dot moves as the context grows: 'full attention' or 'gated deltanet'?"""
    a = layer_kind_points(place(MODEL, "h100-sxm", phase="decode", batch=16, context_tokens=1024).cost)
    b = layer_kind_points(place(MODEL, "h100-sxm", phase="decode", batch=16, context_tokens=131072).cost)
    moved = {kind: abs(float(b[kind].intensity) / float(a[kind].intensity) - 1) > 0.01 for kind in a}
    expected = "full attention" if moved[FULL_ATTENTION] and not moved[GATED_DELTANET] else "gated deltanet"
    return check_choice("5.5", answer, expected, ("full attention", "gated deltanet"),
                        hint="which layers' bytes depend on how many tokens are cached?")


EXERCISES = {
    "5.1": kv_kib_per_token,
    "5.2": state_mib_total,
    "5.3": crossing_at_batch16,
    "5.4": all_attention_batch_on_h200,
    "5.5": which_dot_moves,
}

#: classic wrong answers per numeric exercise (the tests prove each is rejected by name)
MISTAKES = {
    "5.1": _kv_mistakes,
    "5.2": _state_mistakes,
    "5.3": _crossing_mistakes,
    "5.4": _all_attention_mistakes,
}

#: exercises without a numeric classic mistake, and why
NO_NUMERIC_MISTAKES = {
    "5.5": "a choice between the two layer kinds: the wrong one is rejected with the hint",
}
