"""Checkers for the lesson-5 exercises (KV growth in a hybrid model)."""

from __future__ import annotations

from ..checkers import CheckResult, check_choice, check_number
from ..hybrid import all_full_attention, kv_overtakes_weights_context, layer_kind_points
from ..memory import max_batch_that_fits
from ..models import FULL_ATTENTION, GATED_DELTANET, get_model
from ..placement import place
from ..units import KiB, MiB

MODEL = "qwen3.8-27b"


def kv_kib_per_token(answer) -> CheckResult:
    """5.1 — by hand: Qwen3.8-27B's BF16 KV cache per token, all layers, in KiB."""
    return check_number("5.1", answer, get_model(MODEL).kv_bytes_per_token("bf16") / KiB, rel_tol=0.01, unit="KiB",
                        hint="2 (K and V) × full-attention layers × KV heads × head_dim × 2 bytes; only 16 layers "
                             "keep a KV cache.")


def state_mib_total(answer) -> CheckResult:
    """5.2 — by hand: float32 Gated DeltaNet state of one sequence, all layers, in MiB."""
    return check_number("5.2", answer, get_model(MODEL).deltanet_state_bytes() / MiB, rel_tol=0.01, unit="MiB",
                        hint="value heads × value head dim × key head dim × 4 bytes, per layer, times 48 layers.")


def crossing_at_batch16(answer) -> CheckResult:
    """5.3 — tokens cached at which KV reads equal weight reads, batch 16 decode."""
    return check_number("5.3", answer, kv_overtakes_weights_context(MODEL, 16), rel_tol=0.03, unit="tokens",
                        hint="weight bytes ÷ (16 × KV bytes per token); the embedding table is not read in full.")


def all_attention_batch_on_h200(answer) -> CheckResult:
    """5.4 — largest batch at 131,072 tokens on an H200 if all 64 layers were full attention."""
    expected = max_batch_that_fits(all_full_attention(MODEL), "h200", 131072)
    return check_number("5.4", answer, expected, abs_tol=0.5, unit="sequences",
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
