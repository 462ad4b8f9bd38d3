"""Guards on the interview deck (issue 25): every red flag of a numeric card that has a number is
rejected by the card's checker, with a hint naming it; every figure a card prices for a setup that does
not fit its memory, or lies past the model's context, is marked so in the deck and says so in the card;
the qualitative words around the deck's numbers hold for those numbers."""

from __future__ import annotations

import math
import re

import pytest

from roofline_lessons.course import flashcards
from roofline_lessons.course.flashcards import NO_SETUP, NUMERIC_FUNCTIONS, SETUP_FUNCTIONS

NUMERIC_CARDS = [c for c in flashcards.deck() if c.numeric is not None]
NOT_FIT = re.compile(r"\bnot (?:even )?(?:fit|hold)|\bcannot hold")
PAST_CONTEXT = re.compile(r"past its context")


def _texts(card):
    return [card.question, card.short, card.detailed] + [f.question + " " + f.answer for f in card.follow_ups]


# ---- red flags: each numeric card's checker rejects the number each of its red flags leads to --------

@pytest.mark.parametrize("card", NUMERIC_CARDS, ids=lambda c: c.id)
def test_every_red_flag_of_a_numeric_card_is_classified(card):
    """Each red flag has its number (computed by the package) or a stated reason why it has none: a new
    red flag on a numeric card fails here until someone decides which."""
    flags = [m.flag for m in card.mistakes]
    assert set(flags) == set(range(len(card.red_flags))), (card.id, flags, card.red_flags)
    for i in set(flags):
        kinds = {m.numeric is None for m in card.mistakes if m.flag == i}
        assert len(kinds) == 1, f"{card.id}: red flag {i} has both a number and a reason for having none"


@pytest.mark.parametrize("card", [c for c in NUMERIC_CARDS if any(m.numeric for m in c.mistakes)],
                         ids=lambda c: c.id)
def test_each_red_flag_number_is_rejected_with_a_hint_naming_it(card):
    right = card.answer_value()
    values = flashcards.mistake_values(card)
    assert len(values) == sum(m.numeric is not None for m in card.mistakes), card.id  # none failed to compute
    for flag, wrong in values:
        verdict = flashcards.check_numeric(card, wrong)
        assert not verdict.correct, (card.id, flag, wrong, right)
        assert flag in verdict.message, verdict.message
        assert not flashcards.check_numeric(card, f"{wrong:.6g}").correct  # typed as text too
    # and the right answer is not mistaken for one
    assert "classic mistake" not in flashcards.check_numeric(card, right).message


def test_only_numeric_cards_carry_red_flag_numbers():
    assert all(not c.mistakes for c in flashcards.deck() if c.numeric is None)


def test_the_two_checkers_issue_25_found_accepting_their_red_flags_now_reject_them():
    """many-chips-tp-batch1-decode accepted half the one-chip time; tpot-lower-bound (then named tpot-estimate) accepted 2·P ÷ β."""
    tp = flashcards.get_card("many-chips-tp-batch1-decode")
    half = NUMERIC_FUNCTIONS["parallel"]("llama-3.1-70b", "h100-sxm", "time_estimate_s", scale=1000) / 2
    assert not flashcards.check_numeric(tp, half).correct
    tpot = flashcards.get_card("tpot-lower-bound")
    two_p = NUMERIC_FUNCTIONS["params_time_ms"]("llama-3.1-8b", "h100-sxm")
    verdict = flashcards.check_numeric(tpot, two_p)
    assert not verdict.correct and "Forgetting the KV cache" in verdict.message
    # the card's "at 8K tokens cached that shortcut lands on the answer by luck"
    at_8k = NUMERIC_FUNCTIONS["time_ms"]("llama-3.1-8b", "h100-sxm", "decode", 8192)
    assert two_p == pytest.approx(at_8k, rel=0.01)


# ---- fit and context: every figure for a setup that does not fit, or lies past the context, says so ----

def test_every_numeric_function_says_which_setups_it_prices():
    assert set(SETUP_FUNCTIONS) | NO_SETUP == set(NUMERIC_FUNCTIONS)
    assert not set(SETUP_FUNCTIONS) & NO_SETUP


def _specs(card):
    out = [("value", card.numeric)] if card.numeric is not None else []
    return out + list(card.values)


@pytest.mark.parametrize("card", flashcards.deck(), ids=lambda c: c.id)
def test_figures_for_setups_that_do_not_fit_or_lie_past_the_context_say_so(card):
    for name, spec in _specs(card) + [(f"mistake {m.flag}", m.numeric) for m in card.mistakes if m.numeric]:
        setups = spec.setups()
        unfit = [s.what for s in setups if not s.fits]
        past = [s.what for s in setups if not s.within_context]
        assert spec.does_not_fit == bool(unfit), (card.id, name, unfit or "it fits: drop fits = false")
        assert spec.past_context == bool(past), (card.id, name, past or "it is within: drop past_context")
        if name.startswith("mistake"):
            continue  # a wrong answer: the card does not quote it
        quoting = [t for t in _texts(card) if "{" + name in t] + ([card.question] if name == "value" else [])
        assert quoting, (card.id, name, "a figure no text quotes")
        if spec.does_not_fit:
            assert any(NOT_FIT.search(t) for t in quoting), (card.id, name, "does not say it does not fit")
        if spec.past_context:
            assert any(PAST_CONTEXT.search(t) for t in quoting), (card.id, name, "does not say it is past the context")


def test_the_setups_found_are_the_ones_issue_25_named():
    """The guard sees what the strict reader saw: the 70B + 8B draft pair does not fit an H200 (the card
    now runs it on a B200), Llama-3.1-70B's batch 32 × 32K fits no H200, and BF16 70B no H100."""
    spec = flashcards.Numeric("spec_speedup", tuple(sorted(dict(
        model="llama-3.1-70b", part="h200", prompt=2048, output=256, k=4, alpha=0.7, draft="llama-3.1-8b").items())),
        "", 0.0)
    assert any(not s.fits for s in spec.setups())
    draft = dict(flashcards.get_card("serving-draft-cost").values)["draft"]
    assert dict(draft.args)["part"] == "b200" and all(s.fits for s in draft.setups())
    lever = dict(flashcards.get_card("shrink-which-lever-which-byte").values)
    assert all(s.fits for s in lever["w_speed"].setups()) and lever["one"].does_not_fit


# ---- the words around the numbers (items 11, 13, 24, 26 and the deck's nits) ------------------------

def _v(card_id, name):
    card = flashcards.get_card(card_id)
    return card.answer_value() if name == "value" else dict(card.values)[name].value()


def test_batching_cards_words_follow_their_numbers():
    # batching-decode-more: "nearly in proportion to the batch at first, less so as ... KV bytes add up"
    assert _v("batching-decode-more", "gain2") > 1.9
    assert _v("batching-decode-more", "gain32") < 0.9 * 32
    grow = _v("batching-decode-more", "grow")
    assert grow == pytest.approx(100 * (_v("batching-decode-more", "step32") / _v("batching-decode-more", "step1") - 1))
    text = flashcards.get_card("batching-decode-more").detailed_answer()
    assert "barely" not in text and "only from" not in text and f"grows {grow:.0f} %" in text
    # tpot-lower-bound's follow-up at batch 8, 32K: "more than a quarter of the weights", "only ... -fold"
    kv, w = _v("tpot-lower-bound", "kvgb"), _v("tpot-lower-bound", "wgb")
    assert kv > w / 4
    assert _v("tpot-lower-bound", "tps8") < 8 / 2 < 0.85 * 8 < _v("tpot-lower-bound", "tps2k")
    assert _v("tpot-lower-bound", "step8") == pytest.approx(_v("tpot-lower-bound", "ms8") / _v("tpot-lower-bound", "value"))
    answer = flashcards.get_card("tpot-lower-bound").follow_up_answer(0)
    assert "almost 32-fold" not in answer and "only a little" not in answer


def test_capacity_cards_say_outright_that_70b_does_not_fit_at_0_9():
    from roofline_lessons.core.memory import usable_capacity_bytes, weight_bytes

    assert usable_capacity_bytes("h200", 0.9) < weight_bytes("llama-3.1-70b", "bf16") <= usable_capacity_bytes("h200")
    for cid in ("capacity-third-number", "capacity-70b-h100"):
        assert "does not fit one H200" in flashcards.get_card(cid).detailed_answer(), cid


def test_two_h100_card_says_what_the_133_gib_holds():
    card = flashcards.get_card("many-chips-70b-two-h100-vs-h200")
    need, w = _v(card.id, "need"), _v(card.id, "wgib")
    assert need > w and f"{need:,.0f} GiB the step needs ({w:,.1f} GiB of weights" in card.detailed_answer()


def test_a100_624_is_int8_dense_and_bf16_sparse():
    from roofline_lessons.core.hardware import get_part

    a100 = get_part("a100-80gb")
    assert a100.dense_flops_per_s["int8"] == pytest.approx(2 * a100.dense_flops_per_s["bf16"])  # "twice the dense"
    assert "fp8" not in a100.dense_flops_per_s  # "which the A100 does not have"
    text = flashcards.get_card("hedge-sparse-headline").detailed_answer()
    assert f"'{a100.dense_flops_per_s['int8'] / 1e12:,.0f}' is its dense INT8 rate, and also its BF16 rate with sparsity" \
        in text


def test_mla_fp8_layouts():
    from roofline_lessons.core.models import get_model

    m = get_model("deepseek-v3")
    dense = NUMERIC_FUNCTIONS["mla_fp8_vllm_bytes"]("deepseek-v3", per_layer=True, layout="fp8")
    assert dense == m.kv_lora_rank + m.qk_rope_head_dim == m.kv_bytes_per_token_per_layer("fp8") == 576
    assert NUMERIC_FUNCTIONS["mla_fp8_vllm_bytes"]("deepseek-v3", per_layer=True) == 656
    answer = flashcards.get_card("shrink-mla-latent-per-token").follow_up_answer(0)
    assert "dense MLA stores 576 bytes" in answer and "fp8_ds_mla" in answer and "sparse FlashMLA" in answer


def test_online_softmax_time_is_not_called_negligible():
    """FA3 §3.1: 3.9 TFLOPS of special functions against 989 of matmul; at head dim 128, 512× more matmul
    FLOPs than exponentials, so the exponentials take about half the matmuls' time."""
    share = NUMERIC_FUNCTIONS["exp_time_share"](128)
    assert share == pytest.approx(989.4 / 3.9 / 512, rel=0.01) and 0.4 < share < 0.6
    answer = flashcards.get_card("flash-online-softmax").follow_up_answer(0)
    assert "negligible in time" in answer and f"{share:.0%}" in answer
    assert "not compute-bound" not in flashcards.get_card("flash-position").detailed


def test_deck_nits():
    deck = flashcards.deck()
    text = " ".join(" ".join(_texts(c)) for c in deck)
    assert "clocks not locked" not in text  # the source gives neither power cap nor clocks
    assert "forgets what lies beyond" not in text and "attends directly" in text
    assert "fp8" not in flashcards.get_card("ridge-b200-fp4").tags and "fp4" in flashcards.get_card("ridge-b200-fp4").tags
    assert [c.lesson for c in deck] == sorted(c.lesson for c in deck)  # lesson order
    assert "exactly on its roof" not in text


def test_the_drill_lesson_does_not_type_the_card_count():
    """The drill (lesson 14, then 15 once lesson 14 became the serving engines): wherever it sits."""
    from pathlib import Path

    found = sorted((Path(__file__).resolve().parents[1] / "py" / "notebooks").glob("*_interview_drill.py"))
    assert len(found) == 1, found
    lesson = found[0].read_text("utf-8")
    assert "Forty-odd" not in lesson and "len(deck)" in lesson
    # N11: the bound assumes full overlap and no latency, so not "nothing assumed"
    flat = lesson.replace('"\n   "', "")
    assert "nothing assumed" not in flat and "nothing pessimistic assumed" in flat


def test_capacity_long_context_red_flags():
    """Counting every layer's KV or reading 141 GB as 10⁹ bytes changes the answer; forgetting the state
    does not at 128K ("less than a sequence"), though at short context the state is most of a sequence."""
    from roofline_lessons.core.memory import (kv_cache_bytes_per_sequence, state_bytes_per_sequence,
                                              usable_capacity_bytes, weight_bytes)

    card = flashcards.get_card("capacity-long-context")
    assert "utilisation of 0.9" in card.question  # the question states the share of memory it allows
    free = usable_capacity_bytes("h200", 0.9) - weight_bytes("qwen3.8-27b", "bf16")
    no_state = math.floor(free / kv_cache_bytes_per_sequence("qwen3.8-27b", 131072))
    assert no_state == card.answer_value()
    assert state_bytes_per_sequence("qwen3.8-27b") > kv_cache_bytes_per_sequence("qwen3.8-27b", 1024)
    assert "less than a sequence" in card.red_flags[2]
    # the 10⁹-byte reading gives one sequence fewer, which a whole-number tolerance rejects
    si = dict((flag, v) for flag, v in flashcards.mistake_values(card))[card.red_flags[1]]
    assert si == card.answer_value() - 1 and card.numeric.tolerance < 1 / card.answer_value()


# ---- M1 (second strict reader): a red flag's number must not be another right answer the card gives ----

def _readings(card):
    """The card's own right answers to its question under other stated assumptions: the figures it quotes
    that the same function computes as its answer (the same quantity, other settings: utilisation, bound or
    estimate, …), leaving out a figure that IS one of its red flags' numbers (the card quoting the mistake)."""
    def key(n):
        return n.fn, n.args, n.times

    mistakes = {key(m.numeric) for m in card.mistakes if m.numeric is not None}
    quantity = dict(card.numeric.args).get("quantity")
    return [(name, n.value()) for name, n in card.values
            if n.fn == card.numeric.fn and dict(n.args).get("quantity") == quantity and key(n) not in mistakes]


@pytest.mark.parametrize("card", NUMERIC_CARDS, ids=lambda c: c.id)
def test_no_red_flag_number_is_another_reading_the_card_gives(card):
    """capacity-long-context named its 90 % answer (9) as the 10⁹-byte mistake (also 9): a learner who typed
    a right answer to a variant the card itself gives was told it was a classic mistake. A red flag's number
    must differ from every such reading, by more than the checker's hint tolerance."""
    tol = max(card.numeric.tolerance, 0.01)
    for flag, wrong in flashcards.mistake_values(card):
        for name, right in _readings(card):
            assert not math.isclose(wrong, right, rel_tol=tol), (card.id, flag, wrong, name, right)


def test_the_guard_catches_the_collision_it_was_written_for():
    """The old card: the answer at utilisation 1.0, the 90 % figure quoted beside it, the 10⁹-byte mistake."""
    import dataclasses

    card = flashcards.get_card("capacity-long-context")
    args = dict(model="qwen3.8-27b", part="h200", context=131072)
    old_numeric = flashcards.Numeric("max_batch", tuple(sorted(args.items())), "sequences", 0.12)
    b90 = flashcards.Numeric("max_batch", tuple(sorted({**args, "memory_utilization": 0.9}.items())), "", 0.0)
    si = flashcards.Numeric("max_batch", tuple(sorted({**args, "capacity": "si"}.items())), "", 0.0)
    old = dataclasses.replace(card, numeric=old_numeric, values=(("b90", b90),),
                              mistakes=(flashcards.Mistake(1, numeric=si),))
    collisions = [(flag, w, r) for flag, w in flashcards.mistake_values(old) for _, r in _readings(old)
                  if math.isclose(w, r, rel_tol=max(old.numeric.tolerance, 0.01))]
    assert collisions  # 9 = 9: what the test above now refuses


# ---- the second strict reader's findings on the deck -------------------------------------------------

def test_ttft_red_flag_is_the_compulsory_bytes_over_bandwidth_and_the_two_estimates_are_told_apart():
    from roofline_lessons.core.placement import place

    card = flashcards.get_card("ttft-lower-bound")
    p = place("llama-3.1-8b", "h100-sxm", phase="prefill", prompt_tokens=8192)
    wrong = dict(flashcards.mistake_values(card))[card.red_flags[0]]
    assert wrong == pytest.approx(float(p.memory_lower_bound_s) * 1e3)  # what a learner divides: 16 GB ÷ β
    verdict = flashcards.check_numeric(card, wrong)
    assert not verdict.correct and "too low" in verdict.message and card.red_flags[0] in verdict.message
    text = card.detailed_answer()
    assert f"{float(p.time_estimate_s) * 1e3:,.0f} ms" in text and "totals" in text
    assert f"{float(p.time_estimate_per_op_sum_s) * 1e3:,.0f} ms" in text and "kernel per operator" in text
    assert not any(c.id.endswith("-estimate") and "lower bound" in c.question for c in flashcards.deck())


def test_fp8_decode_speedup_accepts_1_9_and_names_the_halving_and_all_weights_mistakes():
    card = flashcards.get_card("fp8-decode-speedup")
    assert flashcards.check_numeric(card, "1.9").correct
    for typed, flag in (("2", 1), ("1.97", 2)):
        verdict = flashcards.check_numeric(card, typed)
        assert not verdict.correct and card.red_flags[flag] in verdict.message, verdict.message
    text = " ".join(_texts(card))
    assert "old" not in text.split() and "{halved" in text and "{allw" in text


def test_gpt_fast_gap_prices_the_bound_at_the_runs_context_and_does_not_recommend_what_the_run_has():
    from roofline_lessons.topics.many_chips import gpt_fast_empirical_bandwidth_bytes_per_s
    from roofline_lessons.topics.published import GPT_FAST_CONTEXT_TOKENS, gpt_fast_7b_bound, gpt_fast_7b_measurement

    card = flashcards.get_card("gpt-fast-gap")
    bound = float(gpt_fast_7b_bound().tokens_per_s_upper_bound)
    assert _v(card.id, "bound") == pytest.approx(bound) and _v(card.id, "ctx") == GPT_FAST_CONTEXT_TOKENS
    assert _v(card.id, "pct") == pytest.approx(100 * gpt_fast_7b_measurement().tokens_per_s / bound)
    # batch-1 decode is memory-bound: at the empirical bandwidth the fraction rises by the bandwidth ratio
    from roofline_lessons.core.hardware import get_part

    ratio = get_part("a100-80gb").memory_bandwidth_bytes_per_s / gpt_fast_empirical_bandwidth_bytes_per_s()
    assert _v(card.id, "pct_emp") == pytest.approx(_v(card.id, "pct") * ratio, rel=1e-3)
    m = gpt_fast_7b_measurement()
    assert "CUDA graphs" in m.conditions and "reduce-overhead" in m.conditions and m.date
    answer = card.follow_up_answer(0)
    assert "already" in answer and "reduce-overhead" in answer and "hypothesis" in answer
    assert "Launch gaps: CUDA graphs" not in answer


def test_h100_vs_l4_card_quotes_both_graph_speedups_and_computes_what_graphs_leave():
    from roofline_lessons.topics.datasheets import best_measurement

    card = flashcards.get_card("reality-h100-vs-l4-floor")
    f = best_measurement("h100-sxm", "decode_fraction_of_memory_floor").value
    g = best_measurement("h100-sxm", "cuda_graphs_decode_speedup").value
    assert _v(card.id, "h100_graphs") == pytest.approx(100 * f * g)
    assert _v(card.id, "gap_left") == pytest.approx(100 * (1 / (f * g) - 1) / (1 / f - 1))
    assert 50 < _v(card.id, "gap_left") < 90  # graphs explain part of the gap, not most of it
    assert _v(card.id, "graphs_l4") == best_measurement("l4", "cuda_graphs_decode_speedup").value
    text = card.detailed_answer()
    assert "hypothesis" in text and f"{_v(card.id, 'graphs_l4'):.3f}×" in text
    assert "without CUDA Graphs" in card.short_answer() and "SDPA" in card.short_answer()


def test_capacity_cards_state_which_capacity_they_count():
    from roofline_lessons.core.memory import usable_capacity_bytes, weight_bytes

    driver_gib = 143771 / 1024
    assert usable_capacity_bytes("h200") / 2**30 == 141 > driver_gib  # the catalog: the vendor's figure
    assert 0.9 * driver_gib < weight_bytes("llama-3.1-70b") / 2**30 < driver_gib  # the conclusions hold either way
    for cid in ("capacity-third-number", "capacity-70b-h100", "many-chips-70b-two-h100-vs-h200"):
        text = flashcards.get_card(cid).detailed_answer()
        assert "vendor's capacity" in text and f"{driver_gib:.1f} GiB" in text, cid
    assert f"{0.9 * driver_gib:.1f} GiB" in flashcards.get_card("capacity-70b-h100").detailed_answer()


def test_qualitative_words_of_the_hybrid_and_serving_cards_come_with_their_numbers():
    text = flashcards.get_card("deltanet-state").detailed_answer()
    assert "negligible" not in text and "visible share" not in text
    assert _v("deltanet-state", "share1") < 1 < 10 < _v("deltanet-state", "share32")
    lever = flashcards.get_card("state-dtype-lever")
    words = lever.short_answer() + lever.detailed_answer()
    assert "noticeable" not in words and "modest but real" not in words
    assert 0 < _v(lever.id, "gain1") < 1 < _v(lever.id, "gain32") < 20
    answer = flashcards.get_card("serving-ttft-tpot").follow_up_answer(0)
    assert "barely" not in answer and "roughly doubles" not in answer
    assert _v("serving-ttft-tpot", "ttft_x") > 2 and 0 < _v("serving-ttft-tpot", "tpot_pct") < 5
    assert _v("serving-ttft-tpot", "ttft4k") == pytest.approx(_v("serving-ttft-tpot", "ttft_x")
                                                             * _v("serving-ttft-tpot", "value"))


def test_speculative_cards_say_estimate_and_that_the_mtp_draft_cost_is_assumed():
    for cid in ("serving-tokens-per-verify", "serving-draft-cost"):
        text = flashcards.get_card(cid).short_answer()
        assert "by the estimate" in text and "assum" in text, cid


def test_cpu_decode_card_does_not_overstate():
    card = flashcards.get_card("measure-cpu-decode")
    text = card.detailed_answer() + card.follow_up_answer(0)
    assert "memory-bound everywhere" not in text and "Batch-1 decode" in text
    assert "would not help" not in card.follow_up_answer(0) and "saturates" in card.follow_up_answer(0)
    assert _v(card.id, "tps") == pytest.approx(30e9 / (_v(card.id, "gb") * 1e9))


def test_fp8_measured_says_how_its_ridge_is_made():
    assert "÷ the datasheet bandwidth" in flashcards.get_card("fp8-measured").detailed_answer()


# ---- seed parity: memory aids and sources (issue 25) ------------------------------------------------

#: a name in a card's text that means its prose rests on that source → what its sources must then name
CITED = {
    r"FlashAttention": "FlashAttention", r"vLLM": "vLLM", r"gpt-fast": "gpt-fast", r"DeepEP": "DeepEP",
    r"AWQ": "AWQ", r"GPTQ": "GPTQ", r"MXFP4": "MX", r"Megatron": "Megatron", r"\bMTP\b": "multi-token prediction",
    r"\bSTREAM\b": "STREAM", r"MAMF": "MAMF", r"Nsight": "Nsight", r"(?i)CUDA graph": "CUDA Graphs",
    r"\bMBU\b": "MBU", r"nccl-tests": "nccl-tests", r"Mistral": "Mistral", r"DeepSeek": "DeepSeek",
    r"(?i)speculative": "speculative decoding", r"(?i)\bpaged\b": "PagedAttention", r"FlashMLA": "FlashMLA",
    r"roofline paper": "Roofline: an insightful",
}


def _filled(card):
    return [card.question, card.short_answer(), card.detailed_answer()] + [
        f.question + " " + card.follow_up_answer(i) for i, f in enumerate(card.follow_ups)]


@pytest.mark.parametrize("card", flashcards.deck(), ids=lambda c: c.id)
def test_every_card_has_sources_and_its_references_are_real_strings(card):
    sources = card.sources()
    assert sources and sources[0] == f"Lesson {card.lesson}"
    assert all(isinstance(s, str) and s.strip() for s in sources)
    assert isinstance(card.references, tuple)
    assert all(isinstance(r, str) and len(r.strip()) > 10 for r in card.references), card.references
    assert len(set(card.references)) == len(card.references)


@pytest.mark.parametrize("card", flashcards.deck(), ids=lambda c: c.id)
def test_a_card_that_names_a_source_cites_it(card):
    """Prose that quotes a paper, a repository or a tool's documentation ends with that source (beyond
    'Lesson N'): in its references, or in the catalog entry its numbers come from."""
    text = " ".join(_filled(card))
    sources = " ".join(card.sources()).lower()
    missing = [need for pattern, need in CITED.items() if re.search(pattern, text) and need.lower() not in sources]
    assert not missing, (card.id, missing)


def test_memory_aids_where_they_help_short_and_filled():
    deck = flashcards.deck()
    with_aid = [c for c in deck if c.memory_aid]
    assert 0 < len(with_aid) < len(deck)  # where one helps, not on every card
    for c in with_aid:
        aid = c.memory_aid_text()
        assert "{" not in aid and "}" not in aid and len(aid) < 400, c.id
    # the seed card's picture, in the course's own words: workers are compute, trucks are bandwidth
    concept = flashcards.get_card("concept-plain-language").memory_aid_text()
    assert "workers" in concept and "(compute)" in concept and "trucks" in concept and "(bandwidth)" in concept
    # an aid quoting a figure computes it
    ridge = flashcards.get_card("ridge-h100-bf16")
    assert f"{ridge.answer_value():,.0f} FLOPs per byte" in ridge.memory_aid_text()


def test_sources_include_the_measurements_a_card_quotes():
    srcs = flashcards.get_card("fp8-measured").sources()
    assert any(s.startswith("Measured,") and "stas00" in s for s in srcs)
    assert any("gpt-fast" in s for s in flashcards.get_card("gpt-fast-gap").sources())
    assert any("arXiv 2605.30571" in s for s in flashcards.get_card("reality-h100-vs-l4-floor").sources())


def test_the_deck_file_is_in_lesson_order():
    """Not only deck() (which sorts): the file itself, so a card added at the end of the file is caught."""
    import tomllib
    from importlib import resources

    raw = tomllib.loads(resources.files("roofline_lessons").joinpath("data/flashcards.toml").read_text("utf-8"))
    lessons = [c["lesson"] for c in raw["cards"]]
    assert lessons == sorted(lessons)
    assert [c["id"] for c in raw["cards"]] == [c.id for c in flashcards.deck()]


# ---- item 10: int4's critical batch, by the bound and by the estimate ------------------------------

def test_int4_critical_batch_card_gives_the_bound_and_the_estimate():
    """Lesson 12's setting (Llama-3.1-70B, a B200, 128 tokens cached): the weight lens's knee falls from
    BF16's to BF16's ÷ the weight-byte ratio by the lower bound (the matmul roof stays), and further by the
    estimate (the dequantisation in series lowers the roof the step meets)."""
    from roofline_lessons.topics.shrinking import batch_sweep, format_speedup

    card = flashcards.get_card("shrink-int4-batch1-speedup")
    bf16 = batch_sweep("llama-3.1-70b", "b200", 128)
    int4 = batch_sweep("llama-3.1-70b", "b200", 128, weights_dtype="int4")
    fp4 = batch_sweep("llama-3.1-70b", "b200", 128, weights_dtype="fp4", compute_dtype="fp4")
    lb, est = int4.weight_lens_critical_batch_lower_bound, int4.weight_lens_critical_batch_estimate
    ratio = format_speedup("llama-3.1-70b", "b200", 128).weight_bytes_ratio
    assert _v(card.id, "crit_lb") == lb and _v(card.id, "crit_int4") == est
    assert _v(card.id, "crit_bf16") == bf16.weight_lens_critical_batch_lower_bound \
        == bf16.weight_lens_critical_batch_estimate
    assert _v(card.id, "wratio") == pytest.approx(ratio)
    # "meets the same ridge at a batch {wratio}× smaller": the bound's ridge is BF16's at that batch
    assert abs(lb - _v(card.id, "crit_bf16") / ratio) < 1.5
    assert int4.ridge_point_lower_bound_flop_per_byte[lb - 1] == pytest.approx(bf16.ridge_point_lower_bound_flop_per_byte[0])
    assert est < lb < _v(card.id, "crit_bf16") / 2  # "sooner" by the estimate
    assert not int4.dequant_sets_lower_bound.any()  # the bound rests on the matmuls, not the dequant convention
    # W4A4: "by both figures", "near BF16's"; all traffic "rises" by both figures
    assert fp4.weight_lens_critical_batch_lower_bound == fp4.weight_lens_critical_batch_estimate == _v(card.id, "crit_fp4")
    assert _v(card.id, "crit_fp4") == pytest.approx(_v(card.id, "crit_bf16"), rel=0.25)
    assert (_v(card.id, "all_fp4_lb"), _v(card.id, "all_bf16_lb")) == (fp4.critical_batch_lower_bound,
                                                                      bf16.critical_batch_lower_bound)
    assert (_v(card.id, "all_fp4"), _v(card.id, "all_bf16")) == (fp4.critical_batch_estimate, bf16.critical_batch_estimate)
    assert _v(card.id, "all_fp4_lb") > _v(card.id, "all_bf16_lb") and _v(card.id, "all_fp4") > _v(card.id, "all_bf16")
    text = card.detailed_answer()
    assert f"to {lb:,.0f} by the lower bound" in text and f"The estimate says {est:,.0f}" in text
    assert "intercept" not in text and "roof stayed" not in text


def test_words_of_the_follow_ups_issue_25_rewrote():
    # decode-tokens-h200: throughput rises less than the batch, and the step grows faster as users are added
    assert _v("decode-tokens-h200", "t16") < 16 and _v("decode-tokens-h200", "t32") < 32
    assert 0 < _v("decode-tokens-h200", "g16") < _v("decode-tokens-h200", "g32")
    assert _v("decode-tokens-h200", "t32") / 32 < _v("decode-tokens-h200", "t16") / 16
    # capacity-70b-h100: 8-bit weights fit an H100 within vLLM's 90 % and leave some room ("leaves N GiB")
    assert 0 < _v("capacity-70b-h100", "fp8free") < 0.1 * _v("capacity-70b-h100", "h100")
    # the int4 card: "W4A4 raises the compute roof about as much as it cuts the weight bytes"
    from roofline_lessons.core.hardware import get_part

    b200 = get_part("b200")
    roof = b200.peak_flops_per_s("fp4") / b200.peak_flops_per_s("bf16")
    assert roof == pytest.approx(NUMERIC_FUNCTIONS["weight_read_ratio"]("llama-3.1-70b", "fp4"), rel=0.15)


def test_pipeline_card_and_the_packages_bound_agree_that_one_token_crosses_the_stages_in_turn():
    """M6: the package's pipeline bound for batch-1 decode is the stages' bounds added (about one chip's), the
    same thing card many-chips-pipeline-latency teaches; not the busiest stage's (about half of it)."""
    card = flashcards.get_card("many-chips-pipeline-latency")
    one_lb = NUMERIC_FUNCTIONS["parallel"]("llama-3.1-70b", "h100-sxm", "time_lower_bound_s", scale=1000)
    assert _v(card.id, "pplb") == pytest.approx(one_lb, rel=1e-3)
    assert _v(card.id, "pplb") > 1.9 * _v(card.id, "tplb")
    assert f"{_v(card.id, 'pplb'):.1f} ms" in card.detailed_answer()


# ---- the serving-engine and kernel cards (lessons 6, 10, 11, 12, 14): their words follow their numbers ----

def test_serving_engine_and_kernel_cards_words_follow_their_numbers():
    F = NUMERIC_FUNCTIONS
    # FA4: "the tensor cores grew" from the H100 to the B200
    assert _v("flash-fa4-exp-limiter", "b200") > _v("flash-fa4-exp-limiter", "h100")
    # Little's law: in the system = being served + waiting; 64 slots complete "fewer than the 12 arriving"
    card = "serving-littles-law-sizing"
    assert _v(card, "value") == pytest.approx(_v(card, "served") + _v(card, "queued"))
    assert _v(card, "cap") < 12
    # goodput: the best batch meets both objectives; the largest that fits "misses the TPOT objective"; a random
    # arrival's TTFT lies "beyond the 2 s objective"; at 500 ms "the TTFT objective binds instead" (a smaller batch)
    card = "serving-goodput-slo"
    assert _v(card, "tpot") <= 10 and _v(card, "ttft") <= 2000 < _v(card, "ttftw")
    fit_tpot_ms = F["serving"]("llama-3.1-8b", "h100-sxm", "tpot_s", 1024, 256, batch=int(_v(card, "fit")), scale=1e3)
    assert fit_tpot_ms > 10 and _v(card, "fit") > _v(card, "batch")
    assert _v(card, "b500") < _v(card, "batch") and _v(card, "g500") < _v(card, "value")
    # cost: the largest batch that fits is "less on paper"; batch 1 costs more
    card = "serving-cost-at-slo"
    assert _v(card, "fitcost") < _v(card, "value") < _v(card, "one")
    # preemption: "the swap moves the cache in less time than the re-prefill takes"
    assert _v("serving-engine-preemption", "swap") < _v("serving-engine-preemption", "re")
    # chunked prefill: the chunk "adds so little" next to the decode step; an unchunked prefill holds decodes far longer
    card = "serving-engine-chunked-prefill"
    dec, mix, full = _v(card, "dec"), _v(card, "mix"), _v(card, "full")
    assert 0 < mix - dec < 0.25 * dec and full > 5 * mix
    # NVFP4 and MXFP4: "close" in bytes, both above half a byte
    card = "shrink-nvfp4-vs-mxfp4"
    assert 0.5 < _v(card, "mx") < _v(card, "value") < 1.1 * _v(card, "mx")
    assert _v(card, "nvb") < _v(card, "mxb")  # "smaller blocks"
    # flash-decoding: unsplit "can leave most SMs idle"; split, every SM holds a CTA, at the full-bandwidth time
    card = "serving-engine-flash-decoding"
    assert _v(card, "value") < 50 and _v(card, "splits") > 1 and _v(card, "s32") == 1
    assert F["decode_grid"]("llama-3.1-8b", "h100-sxm", 65536, splits="flash") == 100
    # the simple rule's CTAs spill into a second wave ("run in two waves"); the wave-efficient count stays in
    # one and comes "near the full-bandwidth" time (within 15 %)
    units = _v(card, "sms")
    assert units < _v(card, "ctas2") <= 2 * units and _v(card, "t2") < _v(card, "t1")
    assert _v(card, "sw") * 8 <= units and _v(card, "tb") <= _v(card, "tw") < 1.15 * _v(card, "tb") < _v(card, "t2")
    # GQA packing: packing fills more rows than one head at a time, and more query positions fill more
    card = "serving-engine-gqa-packing"
    assert _v(card, "one") < _v(card, "value") < _v(card, "spec")
    # decode GEMM: "most SMs idle", one wave; split-K by 4 nearly fills them
    card = "serving-engine-decode-gemm-waves"
    assert _v(card, "value") < 50 and _v(card, "skp") > 90 and _v(card, "guw") == 2
    # small all-reduce: one-shot < two-shot < ring; NVLS "within a few per cent of one-shot"; bytes alone tiny
    card = "many-chips-allreduce-one-shot"
    assert _v(card, "lb") < _v(card, "value") < _v(card, "two") < _v(card, "ring")
    assert _v(card, "nvls") == pytest.approx(_v(card, "value"), rel=0.05)
    # logits: more than "one more of the layers"; the share "falls" at batch 64
    card = "serving-engine-sampling-logits"
    assert _v(card, "onel") < _v(card, "value") and _v(card, "s64") < _v(card, "value")
    # acceptance length grows with the acceptance rate
    assert _v("serving-spec-eagle-medusa", "a6") < _v("serving-spec-eagle-medusa", "a8")
