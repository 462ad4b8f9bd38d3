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
    """many-chips-tp-batch1-decode accepted half the one-chip time; tpot-estimate accepted 2·P ÷ β."""
    tp = flashcards.get_card("many-chips-tp-batch1-decode")
    half = NUMERIC_FUNCTIONS["parallel"]("llama-3.1-70b", "h100-sxm", "time_estimate_s", scale=1000) / 2
    assert not flashcards.check_numeric(tp, half).correct
    tpot = flashcards.get_card("tpot-estimate")
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
    # tpot-estimate's follow-up at batch 8, 32K: "more than a quarter of the weights", "only ... -fold"
    kv, w = _v("tpot-estimate", "kvgb"), _v("tpot-estimate", "wgb")
    assert kv > w / 4
    assert _v("tpot-estimate", "tps8") < 8 / 2 < 0.85 * 8 < _v("tpot-estimate", "tps2k")
    assert _v("tpot-estimate", "step8") == pytest.approx(_v("tpot-estimate", "ms8") / _v("tpot-estimate", "value"))
    answer = flashcards.get_card("tpot-estimate").follow_up_answer(0)
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


def test_lesson13_does_not_type_the_card_count():
    from pathlib import Path

    lesson = (Path(__file__).resolve().parents[1] / "py" / "notebooks" / "13_interview_drill.py").read_text("utf-8")
    assert "Forty-odd" not in lesson and "len(deck)" in lesson


def test_capacity_long_context_red_flags():
    """Counting every layer's KV or reading 141 GB as 10⁹ bytes changes the answer; forgetting the state
    does not at 128K ("less than a sequence"), though at short context the state is most of a sequence."""
    from roofline_lessons.core.memory import (kv_cache_bytes_per_sequence, state_bytes_per_sequence,
                                              usable_capacity_bytes, weight_bytes)

    card = flashcards.get_card("capacity-long-context")
    free = usable_capacity_bytes("h200") - weight_bytes("qwen3.8-27b", "bf16")
    no_state = math.floor(free / kv_cache_bytes_per_sequence("qwen3.8-27b", 131072))
    assert no_state == card.answer_value()
    assert state_bytes_per_sequence("qwen3.8-27b") > kv_cache_bytes_per_sequence("qwen3.8-27b", 1024)
    assert "less than a sequence" in card.red_flags[2]


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
