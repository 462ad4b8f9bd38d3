"""Lesson 15 (the interview drill) and the workshop kit: the deck, scheduling, persistence (corrupt files included), the
drill session, the cheat sheet and doctor (export: tests/test_handouts.py)."""

import json
import math

import pytest

from roofline_lessons import place
from roofline_lessons.cli import main
from roofline_lessons.core.hardware import get_part
from roofline_lessons.core.parallel import Parallelism
from roofline_lessons.course import cheatsheet, flashcards
from roofline_lessons.course.drill import (BOX_INTERVALS_S, MAX_BOX, CardState, DrillSession, ProgressStore, _html,
                                           flashcard_drill, next_card, schedule)

# ---- the deck -----------------------------------------------------------------------------------

def test_deck_is_big_and_covers_every_lesson():
    deck = flashcards.deck()
    assert len(deck) >= 40
    assert {c.lesson for c in deck} >= set(range(1, 9))
    for c in deck:
        assert c.question.strip() and c.short and c.detailed and c.tags, c.id
        assert c.follow_ups and all(f.question and f.answer for f in c.follow_ups), c.id
        assert c.red_flags, c.id


@pytest.mark.parametrize("card", [c for c in flashcards.deck() if c.numeric], ids=lambda c: c.id)
def test_numeric_cards_compute_and_accept_their_own_answer(card):
    value = card.answer_value()
    assert math.isfinite(value) and value > 0
    assert "{value" not in card.short_answer()
    assert flashcards.check_numeric(card, value).correct
    assert flashcards.check_numeric(card, f"{value:,.6g}").correct  # typed as text, with commas
    assert not flashcards.check_numeric(card, value * 3).correct


@pytest.mark.parametrize("card", flashcards.deck(), ids=lambda c: c.id)
def test_every_card_text_is_filled_from_the_package(card):
    texts = [card.short_answer(), card.detailed_answer()] + [card.follow_up_answer(i)
                                                              for i in range(len(card.follow_ups))]
    assert not any("{" in t or "}" in t for t in texts), card.id


def test_quoted_figures_follow_the_package():
    """gpt-fast's bound is priced at the context every lesson prices the run at (GPT_FAST_CONTEXT_TOKENS),
    the same one its percentage uses (the second strict reader found 256 beside 104)."""
    gpt = flashcards.get_card("gpt-fast-gap")
    from roofline_lessons import place
    from roofline_lessons.topics.published import GPT_FAST_CONTEXT_TOKENS

    bound = float(place("llama-2-7b", "a100-80gb", phase="decode",
                        context_tokens=GPT_FAST_CONTEXT_TOKENS).tokens_per_s_upper_bound)
    assert f"{bound:,.0f} tokens/s" in gpt.short_answer() and f"about {GPT_FAST_CONTEXT_TOKENS:,} tokens cached" \
        in gpt.short_answer()


def test_numeric_answers_follow_the_catalog(monkeypatch):
    card = flashcards.get_card("ridge-h200-bf16")
    assert card.answer_value() == pytest.approx(get_part("h200").ridge_point_flop_per_byte("bf16"))


@pytest.mark.parametrize("answer", [None, ..., "", "abc", [1], True, float("nan")])
def test_numeric_check_never_crashes(answer):
    verdict = flashcards.check_numeric(flashcards.get_card("ridge-h100-bf16"), answer)
    assert not verdict.correct and verdict.message


def test_non_numeric_card_check_explains():
    assert "no numeric answer" in flashcards.check_numeric(flashcards.get_card("concept-plain-language"), 3).message


# ---- scheduling -----------------------------------------------------------------------------------

def test_leitner_boxes():
    s = CardState()
    s = schedule(s, "good", 0)
    assert s.box == 1 and s.due == BOX_INTERVALS_S[1]
    s = schedule(s, "easy", 100)
    assert s.box == 3 and s.due == 100 + BOX_INTERVALS_S[3]
    s = schedule(s, "hard", 200)
    assert s.box == 3
    s = schedule(s, "again", 300)
    assert s.box == 1 and s.lapses == 1 and s.reviews == 4
    for _ in range(10):
        s = schedule(s, "easy", 400)
    assert s.box == MAX_BOX
    with pytest.raises(ValueError, match="rating"):
        schedule(s, "meh", 0)


def test_due_cards_come_before_new_ones():
    cards = list(flashcards.deck()[:3])
    states = {cards[1].id: CardState(box=2, due=50)}
    assert next_card(cards, states, now=100).id == cards[1].id  # due
    assert next_card(cards, states, now=10).id == cards[0].id  # not due yet: first new card
    all_seen = {c.id: CardState(box=3, due=1000) for c in cards}
    assert next_card(cards, all_seen, now=10) is None


# ---- persistence ------------------------------------------------------------------------------------

def test_progress_survives_a_restart(tmp_path):
    path = tmp_path / "p.json"
    clock = [1000.0]
    session = DrillSession(ProgressStore(path), clock=lambda: clock[0])
    first = session.card.id
    session.reveal()
    session.rate("good")
    assert session.card.id != first
    again = ProgressStore(path)  # a new kernel
    assert again.states[first].box == 1 and again.states[first].reviews == 1
    clock[0] += BOX_INTERVALS_S[1] + 1
    assert DrillSession(again, clock=lambda: clock[0]).card.id == first  # due again after its interval


def test_progress_under_renamed_or_removed_card_ids_loads_and_carries_over(tmp_path):
    """ttft-estimate and tpot-estimate were renamed (they quote lower bounds): a progress file written before
    loads without a crash, the old state moves to the new id, and an id no card has is kept and ignored."""
    from roofline_lessons.course.drill import RENAMED_CARDS

    path = tmp_path / "p.json"
    old = {"box": 3, "due": 5.0, "reviews": 4, "lapses": 1, "last_rating": "good"}
    path.write_text(json.dumps({"schema": "roofline-lessons/drill-progress", "version": 1,
                                "cards": {"ttft-estimate": old, "tpot-estimate": old, "no-such-card": old}}))
    store = ProgressStore(path)
    assert not store.messages  # nothing set aside
    for was, now in RENAMED_CARDS.items():
        assert was not in store.states and store.states[now].box == 3 and store.states[now].reviews == 4
        flashcards.get_card(now)  # the new ids are the deck's
    assert "no-such-card" in store.states
    session = DrillSession(store, clock=lambda: 10.0)
    assert session.card is not None and session.card.id != "no-such-card"
    assert session.card.id in ("ttft-lower-bound", "tpot-lower-bound")  # due first (due 5 <= now 10)
    session.reveal()
    session.rate("good")
    saved = json.loads(path.read_text())["cards"]
    assert "ttft-estimate" not in saved and "tpot-estimate" not in saved and "no-such-card" in saved


@pytest.mark.parametrize("content", ["{ not json", '{"schema": "something-else"}', "[]",
                                     '{"schema": "roofline-lessons/drill-progress", "cards": {"x": {"box": "?"}}}'])
def test_corrupt_progress_is_moved_aside_never_lost(tmp_path, content):
    path = tmp_path / "p.json"
    path.write_text(content)
    store = ProgressStore(path)
    assert store.states == {} and store.messages and "kept as" in store.messages[0]
    kept = list(tmp_path.glob("p.unreadable-*.json"))
    assert len(kept) == 1 and kept[0].read_text() == content  # the old history is still there
    DrillSession(store).rate("good")
    assert json.loads(path.read_text())["schema"] == "roofline-lessons/drill-progress"


def test_unwritable_progress_keeps_the_session_going(tmp_path, monkeypatch):
    store = ProgressStore(tmp_path / "p.json")

    def boom(*_a, **_k):
        raise OSError("read-only file system")

    monkeypatch.setattr("roofline_lessons.course.drill.atomic_write_text", boom)
    session = DrillSession(store)
    session.rate("good")
    assert "Could not save progress" in store.messages[-1] and session.card is not None


def test_progress_location_follows_the_environment(monkeypatch, tmp_path):
    from roofline_lessons.course.drill import data_file

    monkeypatch.setenv("ROOFLINE_LESSONS_DATA", str(tmp_path))
    assert data_file() == tmp_path / "drill-progress.json"


# ---- the session and the widget ---------------------------------------------------------------------

def test_filters_and_mock_interview(tmp_path):
    session = DrillSession(ProgressStore(tmp_path / "p.json"), lesson=6, mode="mock")
    assert session.card.lesson == 6
    view = session.view()
    assert view["answer"] is None and not view["revealed"]
    session.reveal()
    assert session.view()["answer"] and session.view()["more_follow_ups"] == bool(session.card.follow_ups)
    while session.next_follow_up():
        assert session.view()["question"].startswith("Follow-up")
        session.reveal()
        assert session.view()["answer"]
    session.rate("easy")
    tagged = DrillSession(ProgressStore(tmp_path / "q.json"), tag="fp8")
    assert "fp8" in tagged.card.tags
    with pytest.raises(ValueError):
        DrillSession(ProgressStore(tmp_path / "r.json"), mode="exam")


def test_numeric_check_in_session(tmp_path):
    session = DrillSession(ProgressStore(tmp_path / "p.json"), tag="ridge")
    assert session.card.numeric is not None
    assert session.check(session.card.answer_value()).startswith("✓")
    assert session.check("twelve").startswith("'twelve' is not a number")


def test_running_out_of_cards(tmp_path):
    session = DrillSession(ProgressStore(tmp_path / "p.json"), lesson=8, clock=lambda: 0.0)
    for _ in range(len(flashcards.filter_cards(lesson=8))):
        session.rate("easy")
    assert session.card is None and session.view()["done"]
    session.rate("good")  # nothing to rate: no error


def test_drill_widget_clicks(tmp_path):
    import ipywidgets as widgets

    ui = flashcard_drill(path=tmp_path / "p.json")
    buttons = {w.description: w for box in ui.children if isinstance(box, widgets.HBox) for w in box.children
               if isinstance(w, widgets.Button)}
    html = ui.children[1]
    first = html.value
    assert buttons["good"].disabled
    buttons["reveal"].click()
    assert "30-second answer" in html.value and not buttons["good"].disabled
    buttons["good"].click()
    assert html.value != first
    assert json.loads((tmp_path / "p.json").read_text())["cards"]


# ---- cheat sheet, doctor --------------------------------------------------------------------

def test_cheat_sheet_is_computed_from_the_package(tmp_path):
    md = cheatsheet.markdown()
    assert f"{get_part('h100-sxm').ridge_point_flop_per_byte('bf16'):,.0f}" in md and "64 KiB" in md
    paths = cheatsheet.write(tmp_path)
    html = (tmp_path / "cheatsheet.html").read_text()
    assert len(paths) == 2 and html.startswith("<!doctype html>") and "Ridge points" in html
    assert "http" not in html  # self-contained: prints and opens offline


def test_doctor_passes_here_and_reports_fixes(monkeypatch, capsys):
    assert main(["doctor"]) == 0
    assert "All good" in capsys.readouterr().out
    from roofline_lessons.course import workshop

    real = workshop.metadata.version
    monkeypatch.setattr(workshop.metadata, "version",
                        lambda name: "1.1.4" if name == "jupyterlab_widgets" else real(name))
    assert main(["doctor"]) == 1
    out = capsys.readouterr().out
    assert "✗ ipywidgets" in out and "fix: run `pip install 'jupyterlab_widgets>=3,<4'`" in out
    assert "problem(s) to fix" in out


def test_doctor_json(capsys):
    main(["doctor", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert all({"ok", "what", "fix"} <= set(d) for d in data)


def test_drill_filters_from_the_widget(tmp_path):
    import ipywidgets as widgets

    ui = flashcard_drill(path=tmp_path / "p.json")
    lesson_w, tag_w, mode_w = ui.children[0].children
    assert lesson_w.label == "all lessons" and tag_w.label == "any tag"
    lesson_w.value = 6
    assert "Lesson 6" in ui.children[1].value
    tag_w.value = "fp8"
    assert ui.session["session"].tag == "fp8"
    mode_w.value = "mock"
    assert ui.session["session"].mode == "mock"
    assert isinstance(ui, widgets.VBox)


def test_capacity_cards_agree_with_the_package():
    """The 70B/H200 cards say the weights fit in 141 GiB but not in vLLM's default 90 % of it."""
    from roofline_lessons.core.memory import usable_capacity_bytes, weight_bytes
    from roofline_lessons.course.flashcards import get_card

    w = weight_bytes("llama-3.1-70b", "bf16")
    assert usable_capacity_bytes("h200", 0.9) < w <= usable_capacity_bytes("h200", 1.0)
    text = get_card("capacity-70b-h100").detailed_answer()
    assert "141 GiB" in text and "only" in text
    assert " -" not in get_card("capacity-third-number").detailed_answer()  # no negative "room left"


def test_paging_is_not_called_a_byte_lever():
    from roofline_lessons.course import cheatsheet
    from roofline_lessons.course.flashcards import deck

    levers = dict(cheatsheet.LEVERS)
    assert "paging" not in levers["Memory-bound (decode)"] and "paged" in levers["Does not fit"]
    for card in deck():
        for text in (card.short, card.detailed):
            assert "FP8 KV, paging" not in text, card.id


def test_drill_progress_does_not_depend_on_where_the_drill_notebook_lives(monkeypatch, tmp_path):
    """The drill moved from lesson 9 to lesson 13, then to 14, then to 15: progress lives in the learner's data folder under
    a fixed name, so what was saved before the move is found after it."""
    from roofline_lessons.course.drill import data_file

    monkeypatch.setenv("ROOFLINE_LESSONS_DATA", str(tmp_path))
    assert data_file() == tmp_path / "drill-progress.json"


# ---- lesson 11: many chips ----------------------------------------------------------------------------

LESSON11_CARDS = {"many-chips-link-per-direction", "many-chips-ring-all-reduce", "many-chips-tp-batch1-decode",
                  "many-chips-interconnect-ridge", "many-chips-kv-replication", "many-chips-pipeline-latency",
                  "many-chips-expert-all-to-all", "many-chips-70b-two-h100-vs-h200",
                  # issue 29: MoE serving, small-message all-reduce, long-context prefill
                  "many-chips-moe-imbalance-eplb", "many-chips-moe-grouped-gemm", "many-chips-deepep-modes",
                  "many-chips-allreduce-one-shot", "many-chips-nvls-rmsnorm-fusion", "many-chips-ring-attention"}


def _decode70(part="h100-sxm", **par):
    from roofline_lessons import place
    from roofline_lessons.core.parallel import Parallelism

    return place("llama-3.1-70b", part, phase="decode", context_tokens=4096, parallelism=Parallelism(**par))


def test_lesson11_has_its_cards():
    ids = {c.id for c in flashcards.filter_cards(lesson=11)}
    assert ids == LESSON11_CARDS
    assert sum(flashcards.get_card(i).numeric is not None for i in ids) >= 6


def test_lesson11_numeric_answers_are_the_package_s_numbers():
    """Each numeric card's answer, recomputed here straight from the package (not through the deck's value
    functions), and shown in the card's short answer as the package gives it."""
    from roofline_lessons import place
    from roofline_lessons.core.models import get_model
    from roofline_lessons.core.parallel import Parallelism, interconnect_ridge_flop_per_byte

    h100 = get_part("h100-sxm")
    tp2 = _decode70(tensor=2)
    tp8 = _decode70(tensor=8)
    ar = next(c for c in tp8.comm.parts if c.name.startswith("tensor all-reduce"))
    message = get_model("llama-3.1-70b").hidden_size * 2  # one token's BF16 activations
    qwen = dict(phase="decode", context_tokens=4096, batch=64)
    kv1 = place("qwen3-235b-a22b", "h200", **qwen).footprint.kv_cache_bytes
    kv8 = place("qwen3-235b-a22b", "h200", parallelism=Parallelism(tensor=8), **qwen).footprint.kv_cache_bytes
    ep8 = place("qwen3-235b-a22b", "h200", parallelism=Parallelism(expert=8), **qwen)
    expected = {
        "many-chips-link-per-direction": (h100.scale_up_link.per_direction_bytes_per_s / 1e9, "{:,.0f} GB/s"),
        "many-chips-ring-all-reduce": (float(ar.bytes) / ar.calls / message, "{:.2f} × M"),
        "many-chips-tp-batch1-decode": (float(tp2.time_estimate_s) * 1e3, "{:.1f} ms"),
        "many-chips-interconnect-ridge": (interconnect_ridge_flop_per_byte(h100.peak_flops_per_s("bf16"),
                                                                           h100.scale_up_link), "{:,.0f} FLOP/byte"),
        "many-chips-kv-replication": (kv8 / kv1, "{:.2f}"),
        "many-chips-expert-all-to-all": (float(ep8.comm_bytes) / 1e6, "{:.0f} MB"),
        "many-chips-70b-two-h100-vs-h200": (float(_decode70("h200").time_estimate_s / tp2.time_estimate_s),
                                            "{:.2f}×"),
    }
    for card_id, (value, shown) in expected.items():
        card = flashcards.get_card(card_id)
        assert card.answer_value() == pytest.approx(value, rel=1e-9), card_id
        assert shown.format(value) in card.short_answer(), (card_id, card.short_answer())
    assert expected["many-chips-ring-all-reduce"][0] == pytest.approx(2 * (8 - 1) / 8)  # the card's formula
    kv_heads = get_model("qwen3-235b-a22b").num_key_value_heads
    assert expected["many-chips-kv-replication"][0] == pytest.approx(1 / kv_heads)  # "a quarter, not an eighth"
    assert f"has {kv_heads} KV heads" in flashcards.get_card("many-chips-kv-replication").question


def test_lesson11_card_text_follows_the_link_catalog(monkeypatch):
    """A faster NVLink in the catalog changes the link and ridge cards' text: nothing in them is typed."""
    from dataclasses import replace

    from roofline_lessons.core import hardware

    part = get_part("h100-sxm")
    link = replace(part.scale_up_link, per_direction_bytes_per_s=700e9, bidirectional_bytes_per_s=1400e9)
    monkeypatch.setattr(hardware, "_PARTS", {**hardware._all(), "h100-sxm": replace(part, scale_up_link=link)})
    assert "About 700 GB/s" in flashcards.get_card("many-chips-link-per-direction").short_answer()
    ridge = part.peak_flops_per_s("bf16") / 700e9
    assert f"{ridge:,.0f} FLOP/byte" in flashcards.get_card("many-chips-interconnect-ridge").short_answer()


def test_lesson11_card_claims_hold_in_the_package():
    """The words around the computed numbers ('latency-bound', 'does not improve', 'more than an H200',
    'only just', 'assumed') stay true of the package's numbers."""
    from roofline_lessons import place
    from roofline_lessons.core.memory import usable_capacity_bytes
    from roofline_lessons.core.parallel import Parallelism, interconnect_ridge_flop_per_byte

    tp2, one, pp2, h200 = _decode70(tensor=2), _decode70(), _decode70(pipeline=2), _decode70("h200")
    # TP 2 batch-1 decode: the collectives' per-call latency dwarfs their bytes; the latency is assumed
    latency_s = tp2.comm.calls * tp2.link.latency_s
    assert latency_s > 100 * float(tp2.comm_bytes) / tp2.link.per_direction_bytes_per_s
    assert tp2.link.latency_basis == "assumed" and not tp2.parallelism.overlap_comm
    assert not one.fits_in_memory and tp2.fits_in_memory and tp2.bound == "memory"
    # pipeline 2 is no faster than one (big enough) chip; TP 2 is
    assert pp2.time_estimate_s >= one.time_estimate_s > tp2.time_estimate_s
    # the pair beats the H200 per step, the H200 beats the pair per chip; the H200 fits, but not within 90 %
    assert tp2.time_estimate_s < h200.time_estimate_s
    assert h200.tokens_per_s_estimate > tp2.tokens_per_s_estimate / 2
    assert usable_capacity_bytes("h200", 0.9) < h200.memory_required_bytes <= usable_capacity_bytes("h200")
    # NVLink's ridge is far above the HBM ridge; TP 8's interconnect intensity is only just above the L4's PCIe ridge
    h100 = get_part("h100-sxm")
    assert interconnect_ridge_flop_per_byte(h100.peak_flops_per_s("bf16"), h100.scale_up_link) > \
        5 * h100.ridge_point_flop_per_byte("bf16")
    l4 = place("llama-3.1-70b", "l4", phase="prefill", prompt_tokens=4096, parallelism=Parallelism(tensor=8))
    assert l4.link.kind == "pcie"
    assert 1.0 < float(l4.interconnect_intensity) / l4.interconnect_ridge_point_flop_per_byte < 1.1
    assert float(l4.comm_time_s) == pytest.approx(float(l4.compute_time_s), rel=0.1)  # "about as long"
    tp8_decode = _decode70(tensor=8)  # "near ... in prefill and in decode"
    assert float(tp8_decode.interconnect_intensity) == pytest.approx(float(l4.interconnect_intensity), rel=0.05)
    # KV replication: TP 8 of Qwen3-235B-A22B at batch 64, 32K does not fit an H200; EP 8 does
    long = dict(phase="decode", context_tokens=32768, batch=64)
    tp8 = place("qwen3-235b-a22b", "h200", parallelism=Parallelism(tensor=8), **long)
    ep8 = place("qwen3-235b-a22b", "h200", parallelism=Parallelism(expert=8), **long)
    assert not tp8.fits_in_memory and ep8.fits_in_memory
    assert any("replicated" in w for w in tp8.warnings)


def test_cheat_sheet_has_the_interconnect_ridge_per_direction():
    md = cheatsheet.markdown()
    link = get_part("h100-sxm").scale_up_link
    ridge = get_part("h100-sxm").peak_flops_per_s("bf16") / link.per_direction_bytes_per_s
    row = next(line for line in md.splitlines() if line.startswith(f"| h100-sxm | {link.name} |"))
    assert f"| {ridge:,.0f} |" in row and f"{link.per_direction_bytes_per_s / 1e9:,.0f} GB/s" in row
    assert f"{link.bidirectional_bytes_per_s / 1e9:,.0f} GB/s" in row  # the headline, beside it
    assert "2(n − 1)/n" in md and "Interconnect ridges" in cheatsheet.html_page()
    assert any(line.startswith("| l4 | PCIe") for line in md.splitlines())  # a PCIe-only part has its row


# ---- lesson 12: shrinking the bytes -------------------------------------------------------------------

LESSON12_CARDS = {"shrink-mla-latent-per-token", "shrink-mla-absorbed-vs-expanded", "shrink-int4-bytes-per-weight",
                  "shrink-int4-batch1-speedup", "shrink-dequant-cost", "shrink-gemma-sliding-window-kv",
                  "shrink-paged-sliding-window", "shrink-which-lever-which-byte"}
#: issue 29's quantisation-accuracy and KV-eviction cards (three of them without a number to check)
LESSON12_ACCURACY_CARDS = {"shrink-smoothquant-outliers", "shrink-fp8-scale-granularity", "shrink-nvfp4-vs-mxfp4",
                           "shrink-kv-eviction-sinks"}


def test_lesson12_has_its_cards():
    ids = {c.id for c in flashcards.filter_cards(lesson=12)}
    assert ids == LESSON12_CARDS | LESSON12_ACCURACY_CARDS
    assert all(flashcards.get_card(i).numeric is not None for i in LESSON12_CARDS)


def test_lesson12_numeric_answers_are_the_package_s_numbers():
    """Each numeric card's answer, recomputed here straight from the package (not through the deck's value
    functions), and shown in the card's short answer as the package gives it."""
    from dataclasses import replace

    from roofline_lessons import place
    from roofline_lessons.core.costs import model_cost
    from roofline_lessons.core.dtypes import weight_bytes_per_element
    from roofline_lessons.core.memory import kv_cache_bytes_per_sequence, max_batch_that_fits
    from roofline_lessons.core.models import get_model

    decode70 = dict(phase="decode", context_tokens=4096)
    bf16 = place("llama-3.1-70b", "h100-sxm", **decode70)
    int4 = place("llama-3.1-70b", "h100-sxm", weights_dtype="int4", **decode70)
    gemma = get_model("gemma-3-27b")
    long = model_cost("llama-3.1-70b", phase="decode", batch=32, context_tokens=32768)
    expected = {
        "shrink-mla-latent-per-token": (get_model("deepseek-v3").kv_bytes_per_token("bf16") / 1024, "{:,.1f} KiB"),
        "shrink-mla-absorbed-vs-expanded": (float(model_cost("deepseek-v3", phase="decode", context_tokens=32768,
                                                             mla_absorbed=False).flops) / 1e12, "{:,.1f} TFLOP"),
        "shrink-int4-bytes-per-weight": (weight_bytes_per_element("int4", 128), "{:.4f} bytes"),
        "shrink-int4-batch1-speedup": (float(bf16.time_estimate_s / int4.time_estimate_s), "{:.2f}×"),
        "shrink-dequant-cost": (float(int4.dequant_time_s) * 1e3, "{:,.2f} ms"),
        "shrink-gemma-sliding-window-kv": (kv_cache_bytes_per_sequence(gemma, 32768) / 2**30, "{:,.2f} GiB"),
        "shrink-paged-sliding-window": (max_batch_that_fits(gemma, "h200", 32768, memory_utilization=0.9),
                                        "{:,.0f} sequences"),
        "shrink-which-lever-which-byte": (100 * float(long.kv_bytes) / float(long.bytes), "{:.0f}% KV"),
    }
    for card_id, (value, shown) in expected.items():
        card = flashcards.get_card(card_id)
        assert card.answer_value() == pytest.approx(value, rel=1e-9), card_id
        assert shown.format(value) in card.short_answer(), (card_id, card.short_answer())
    # the paged-allocator card's "against N with full-context pages": every layer allocated as if global
    everything = replace(gemma, id="gemma-all-global", sliding_window=32768)
    naive = max_batch_that_fits(everything, "h200", 32768, memory_utilization=0.9)
    assert f"against {naive:,.0f} with full-context pages" in \
        flashcards.get_card("shrink-paged-sliding-window").short_answer()
    # the Gemma card's "if every layer were global": every caching layer holds every token
    uncapped = gemma.kv_bytes_per_token("bf16") * 32768 / 2**30
    assert f"against {uncapped:,.1f} GiB if every layer were global" in \
        flashcards.get_card("shrink-gemma-sliding-window-kv").short_answer()
    # the int4 card's whole-model ratio comes from the stored weights (scales and BF16 layers included)
    from roofline_lessons.core.memory import weight_bytes

    ratio = weight_bytes("llama-3.1-70b", "bf16") / weight_bytes("llama-3.1-70b", "int4")
    assert f"shrinks {ratio:.2f}×" in flashcards.get_card("shrink-int4-bytes-per-weight").short_answer()


def test_lesson12_card_claims_hold_in_the_package():
    """The words around the computed numbers stay true of the package's numbers."""
    from roofline_lessons import place
    from roofline_lessons.core.costs import model_cost
    from roofline_lessons.core.memory import weight_bytes
    from roofline_lessons.core.models import get_model
    from roofline_lessons.topics.batching import critical_batch

    decode70 = dict(phase="decode", context_tokens=4096)
    bf16 = place("llama-3.1-70b", "h100-sxm", **decode70)
    int4 = place("llama-3.1-70b", "h100-sxm", weights_dtype="int4", **decode70)
    # "not 4×": neither the model nor the step; "does not even fit 80 GiB" in BF16; memory-bound, dequant hidden
    assert weight_bytes("llama-3.1-70b", "bf16") / weight_bytes("llama-3.1-70b", "int4") < 4
    assert weight_bytes("llama-3.1-70b", "bf16") / weight_bytes("llama-3.1-70b", "int4", quantized_weights="all") < 4
    assert float(bf16.time_estimate_s / int4.time_estimate_s) < 4
    assert not bf16.fits_in_memory and int4.fits_in_memory
    assert int4.bound == "memory" and float(int4.compute_time_s) < float(int4.memory_time_s)
    assert float(int4.dequant_time_s) > 0.5 * float(int4.compute_time_s)  # "most of the compute time"
    assert int4.vector_peak_flops_per_s == int4.part.dense_flops_per_s["fp32"] < int4.part.peak_flops_per_s("bf16")
    # weight-only lowers the critical batch (weights lens); W4A4 keeps it near BF16's (lesson 12's setting:
    # a B200, 128 tokens cached)
    crit = {k: critical_batch("llama-3.1-70b", "b200", 128, lens="weights only", **w) for k, w in
            {"bf16": {}, "int4": {"weights_dtype": "int4"},
             "fp4": {"weights_dtype": "fp4", "compute_dtype": "fp4"}}.items()}
    assert crit["int4"] < crit["bf16"] / 2 and crit["fp4"] == pytest.approx(crit["bf16"], rel=0.25)
    big = dict(phase="decode", context_tokens=1024, batch=256)
    b200 = {k: place("llama-3.1-70b", "b200", **big, **w) for k, w in
            {"bf16": {}, "int4": {"weights_dtype": "int4"},
             "fp4": {"weights_dtype": "fp4", "compute_dtype": "fp4"}}.items()}
    assert (b200["bf16"].bound, b200["int4"].bound, b200["fp4"].bound) == ("memory", "compute", "memory")
    assert float(b200["fp4"].dequant_time_s) == 0 < float(b200["int4"].dequant_time_s)
    # H100 has no FP4 rate: W4A4 there is an error
    with pytest.raises(Exception, match="fp4"):
        place("llama-3.1-70b", "h100-sxm", weights_dtype="fp4", compute_dtype="fp4", **decode70)
    # MLA: expanded decode costs more FLOPs and bytes; prefill flips; absorbed attention near the H100's ridge
    ds = get_model("deepseek-v3")
    dec = {f: model_cost(ds, phase="decode", context_tokens=32768, mla_absorbed=f) for f in (True, False)}
    pre = {f: model_cost(ds, phase="prefill", prompt_tokens=4096, mla_absorbed=f) for f in (True, False)}
    assert dec[False].flops > 50 * dec[True].flops and dec[False].bytes > dec[True].bytes
    assert pre[False].flops < pre[True].flops
    att = next(o for o in dec[True].ops if o.name.startswith("attention"))
    ridge = get_part("h100-sxm").ridge_point_flop_per_byte("bf16")
    assert 0.5 * ridge < float(att.flops) / float(att.kv_read_bytes) < 1.5 * ridge
    assert ds.kv_lora_rank + ds.qk_rope_head_dim == ds.mla_cache_elements_per_token
    # Gemma 3: "five to one", the global layers hold most of the cache, growth past the window "about a sixth"
    gemma = get_model("gemma-3-27b")
    assert gemma.num_sliding_attention_layers == pytest.approx(5 * gemma.num_full_attention_layers, abs=2)
    per_layer = gemma.kv_bytes_per_token_per_layer("bf16")
    glob = gemma.num_full_attention_layers * per_layer * 32768
    assert glob > 0.8 * gemma.kv_cache_bytes_per_sequence(32768)
    assert gemma.num_full_attention_layers / gemma.num_hidden_layers == pytest.approx(1 / 6, rel=0.1)
    # gpt-oss: full-context pages "about halve" the batch
    lost = flashcards.NUMERIC_FUNCTIONS["paged_batch"]("gpt-oss-120b", "h200", 32768, lost_percent=True,
                                                       weights="fp4", recipe="experts")
    assert 40 < lost < 60
    # the lever card: KV dominates at batch 32 × 32K, the weights at batch 1 × 4K; each lever moves its own byte
    speed = flashcards.NUMERIC_FUNCTIONS["format_speedup"]
    # batch 32 × 32K fits no single H200 (issue 25): the card prices it on four, tensor parallel 4
    assert speed("llama-3.1-70b", "h200", 32768, 32, tensor=4, kv="int4") > \
        speed("llama-3.1-70b", "h200", 32768, 32, tensor=4, weights="int4")
    assert speed("llama-3.1-70b", "h200", 32768, 32, tensor=4, weights="int4", kv="int4") > \
        speed("llama-3.1-70b", "h200", 32768, 32, tensor=4, kv="int4")
    assert speed("llama-3.1-70b", "h200", 4096, 1, weights="int4") > 3 * speed("llama-3.1-70b", "h200", 4096, 1,
                                                                                kv="int4") / 1.1


def test_lesson12_card_text_follows_the_catalog(monkeypatch):
    """A different window in the catalog changes the Gemma cards' text: nothing in them is typed."""
    from dataclasses import replace

    from roofline_lessons.core import models

    gemma = models.get_model("gemma-3-27b")
    wider = replace(gemma, sliding_window=4096)
    def fake(m):
        return wider if m in ("gemma-3-27b", wider) else (m if isinstance(m, models.Model) else models._models()[m])
    monkeypatch.setattr(models, "get_model", fake)
    monkeypatch.setattr(flashcards, "get_model", fake)  # the deck's own import of it
    card = flashcards.get_card("shrink-gemma-sliding-window-kv")
    assert "last 4,096 tokens" in card.short_answer()
    assert f"{wider.kv_cache_bytes_per_sequence(32768) / 2**30:,.2f} GiB" in card.short_answer()


def test_cheat_sheet_has_the_shrinking_numbers():
    from roofline_lessons.core.dtypes import weight_bytes_per_element
    from roofline_lessons.core.models import get_model

    md = cheatsheet.markdown()
    assert "leave both roofs where they were" in md and "intercept" not in md
    for label, dtype, group in (("| BF16 |", "bf16", None), ("| FP8 |", "fp8", None),
                                ("| int4, groups of 128", "int4", 128), ("| MXFP4, blocks of 32", "fp4", None)):
        row = next(line for line in md.splitlines() if line.startswith(label))
        assert f"| {weight_bytes_per_element(dtype, group):g} |" in row, row
    for mid in ("llama-3.1-70b", "deepseek-v3"):
        m = get_model(mid)
        row = next(line for line in md.splitlines() if line.startswith(f"| {m.name} |"))
        assert f"{m.kv_bytes_per_token() / 1024:,.1f} KiB" in row
    assert "Shrinking the bytes" in cheatsheet.html_page()


# ---- bound and estimate: every quoted step time says which it is (issue 23) ---------------------

def test_time_cards_quote_the_bound_and_name_the_estimate():
    from roofline_lessons.course.flashcards import NUMERIC_FUNCTIONS

    ttft, tpot = flashcards.get_card("ttft-lower-bound"), flashcards.get_card("tpot-lower-bound")
    bound = place("llama-3.1-8b", "h100-sxm", phase="prefill", prompt_tokens=8192)
    assert ttft.answer_value() == pytest.approx(float(bound.time_lower_bound_s) * 1e3)
    # "those bytes take less time than the FLOPs": the estimate's memory term hides under its compute
    assert float(bound.memory_time_s) < float(bound.compute_time_s)
    assert f"{float(bound.time_estimate_s) * 1e3:,.0f} ms" in ttft.detailed_answer()
    step = place("llama-3.1-8b", "h100-sxm", phase="decode", context_tokens=32768)
    assert tpot.answer_value() == pytest.approx(float(step.time_lower_bound_s) * 1e3)
    assert f"{float(step.time_estimate_s) * 1e3:.2f} ms" in tpot.detailed_answer()
    assert "lower bound" in tpot.short_answer() and "estimate" in tpot.detailed_answer()
    assert NUMERIC_FUNCTIONS["tokens_per_s"]("llama-3.1-8b", "h100-sxm", 32768) == pytest.approx(
        float(step.tokens_per_s_upper_bound))
    assert NUMERIC_FUNCTIONS["tokens_per_s"]("llama-3.1-8b", "h100-sxm", 32768, figure="estimate") == pytest.approx(
        float(step.tokens_per_s_estimate))
    with pytest.raises(ValueError, match="figure"):
        NUMERIC_FUNCTIONS["time_ms"]("llama-3.1-8b", "h100-sxm", "decode", 8192, figure="best")


def test_no_card_calls_an_estimate_a_bound():
    for card in flashcards.deck():
        text = " ".join([card.short, card.detailed] + [f.answer for f in card.follow_ups])
        assert ", a bound." not in text, card.id
        assert "at best" not in text, card.id
    tp = flashcards.get_card("many-chips-tp-batch1-decode")
    lb = place("llama-3.1-70b", "h100-sxm", phase="decode", context_tokens=4096, parallelism=Parallelism(tensor=2))
    assert f"the lower bound (least bytes, overlapped, no latency) {float(lb.time_lower_bound_s) * 1e3:.1f} ms" \
        in tp.detailed_answer()


def test_cheat_sheet_gives_both_figures():
    md = cheatsheet.markdown()
    pl = place("llama-3.1-70b", "h100-sxm", phase="decode", context_tokens=4096, parallelism=Parallelism(tensor=2))
    assert f"lower bound {float(pl.time_lower_bound_s) * 1e3:,.1f} ms; estimate {float(pl.time_estimate_s) * 1e3:,.1f}" \
        in md
    assert "**Time lower bound**" in md and "**Time estimate**" in md


# ---- issue 25: seed parity (memory aids, sources), drill follow-ups, the cheat sheet's choices ------

def test_drill_mode_offers_follow_ups_after_reveal(tmp_path):
    session = DrillSession(ProgressStore(tmp_path / "p.json"), lesson=1)
    card = session.card
    assert card.follow_ups and session.view()["more_follow_ups"]
    assert not session.next_follow_up()  # not before the answer is revealed
    session.reveal()
    view = session.view()
    assert view["more_follow_ups"] and view["can_rate"]  # drill mode: optional, the card can be rated now
    assert view["answer_label"] == "30-second answer"
    assert session.next_follow_up()
    view = session.view()
    assert view["question"] == f"Follow-up 1: {card.follow_ups[0].question}" and view["answer"] is None
    session.reveal()
    view = session.view()
    assert view["answer"] == card.follow_up_answer(0) and view["answer_label"] == "Answer"
    html = _html(view)
    assert "<b>Answer.</b>" in html and "30-second answer" not in html


def test_mock_mode_rates_only_after_the_last_follow_up(tmp_path):
    session = DrillSession(ProgressStore(tmp_path / "p.json"), lesson=11, mode="mock")
    session.reveal()
    assert session.view()["more_follow_ups"] and not session.view()["can_rate"]
    while session.next_follow_up():
        session.reveal()
    assert session.view()["can_rate"]


def test_revealed_cards_show_their_memory_aid_and_sources(tmp_path):
    session = DrillSession(ProgressStore(tmp_path / "p.json"))
    card = session.card
    assert card.id == "concept-plain-language" and card.memory_aid  # the seed card's factory picture
    hidden = session.view()
    assert hidden["memory_aid"] == "" and hidden["sources"] == []
    assert "Memory aid" not in _html(hidden) and "Sources" not in _html(hidden)
    session.reveal()
    view = session.view()
    assert view["memory_aid"] == card.memory_aid_text() and "workers" in view["memory_aid"]
    assert view["sources"] == list(card.sources()) and view["sources"][0] == "Lesson 1"
    html = _html(view)
    assert "<b>Memory aid.</b>" in html and "Sources</b> (" in html and "Roofline: an insightful" in html
    # a follow-up shows the card's sources too, but not the main answer's memory aid
    session.next_follow_up()
    session.reveal()
    assert session.view()["sources"] and session.view()["memory_aid"] == ""


def test_drill_widget_follow_up_button_in_drill_mode(tmp_path):
    import ipywidgets as widgets

    ui = flashcard_drill(path=tmp_path / "p.json")
    buttons = {w.description: w for box in ui.children if isinstance(box, widgets.HBox) for w in box.children
               if isinstance(w, widgets.Button)}
    html = ui.children[1]
    follow = buttons["ask a follow-up"]
    assert follow.layout.display == "none"
    buttons["reveal"].click()
    assert follow.layout.display is None and "Memory aid" in html.value and "Sources" in html.value
    assert not buttons["good"].disabled
    follow.click()
    buttons["reveal"].click()
    assert "Follow-up 1" in html.value and "<b>Answer.</b>" in html.value and "30-second answer" not in html.value


def test_printed_deck_has_every_card_with_its_aid_and_sources():
    from roofline_lessons.course.drill import card_html, deck_html

    page = deck_html()
    deck = flashcards.deck()
    assert page.count("<section class='rl-card'>") == len(deck)
    assert f"<p>{len(deck)} cards, in lesson order" in page
    one = card_html(flashcards.get_card("shrink-int4-batch1-speedup"))
    assert "Memory aid." in one and "Sources:" in one and "Follow-up 1:" in one and "{" not in one


def test_cheat_sheet_questions_and_red_flags_cover_every_lesson():
    lessons = {c.lesson for c in flashcards.deck()}
    q_cards = [flashcards.get_card(cid) for cid in cheatsheet.QUESTION_CARDS]
    assert sorted(c.lesson for c in q_cards) == sorted(lessons)  # one per lesson
    flags = [(flashcards.get_card(cid), i) for cid, i in cheatsheet.RED_FLAG_CARDS]
    assert sorted(c.lesson for c, _ in flags) == sorted(lessons)
    md, page = cheatsheet.markdown(), cheatsheet.html_page()
    for card, i in flags:
        flag = card.red_flags[i]
        assert f"- {flag} *(lesson {card.lesson}, card {card.id})*" in md
        import html as html_mod

        assert html_mod.escape(flag) in page and f"card {card.id}" in page
    assert "Red flags (one per lesson)" in page  # the HTML sheet has them too
    for card in q_cards:
        assert card.question in md
        if card.memory_aid:
            assert f"Memory aid: {card.memory_aid_text()}" in md
    assert md.count("Memory aid:") == sum(bool(c.memory_aid) for c in q_cards)


def test_cheat_sheet_tp_formula_keeps_the_mla_latent_whole():
    from roofline_lessons.core.models import get_model
    from roofline_lessons.core.parallel import kv_split

    formula = dict(cheatsheet.FORMULAS)["Tensor parallel n, per chip"]
    assert "MLA" in formula and "KV / 1" in formula and "min(n, KV heads)" in formula
    # the package's rule, which the formula states
    assert kv_split(get_model("deepseek-v3"), 8) == 1
    assert kv_split(get_model("qwen3-235b-a22b"), 8) == get_model("qwen3-235b-a22b").num_key_value_heads == 4
    assert kv_split(get_model("llama-3.1-70b"), 4) == 4


def test_cheat_sheet_kv_of_a_windowed_model_is_not_per_token_times_context():
    """M7: Gemma-3-27B's per-token KV beside its per-sequence cache says it holds before the window caps it
    (and what a token adds past it), as `roofline-lessons models` does, and the fit formula uses KV per
    sequence; N13: the link table's last column is the part's memory ridge (the L4's is GDDR6)."""
    from roofline_lessons.core.models import get_model

    md = cheatsheet.markdown()
    g = get_model("gemma-3-27b")
    row = next(line for line in md.splitlines() if line.startswith(f"| {g.name} |"))
    past = float(g.kv_cache_bytes_per_sequence(g.sliding_window + 1)) - float(g.kv_cache_bytes_per_sequence(g.sliding_window))
    assert (f"{g.kv_bytes_per_token() / 1024:,.1f} KiB before the window caps it (past {g.sliding_window:,} tokens: "
            f"{past / 1024:,.1f} KiB)") in row
    per_seq = float(g.kv_cache_bytes_per_sequence(cheatsheet.KV_CONTEXT_TOKENS))
    assert per_seq < 0.5 * g.kv_bytes_per_token() * cheatsheet.KV_CONTEXT_TOKENS  # per token × context overstates it
    assert "before the window" not in next(line for line in md.splitlines() if line.startswith("| Llama-3.1-70B |"))
    fits = dict(cheatsheet.FORMULAS)["Fits?"]
    assert "KV per sequence" in fits and "KV per token · context)" not in fits
    assert "memory ridge" in md and "HBM ridge" not in md and "memory ridge" in cheatsheet.html_page()
    assert any(r[0] == "l4" for r in cheatsheet._link_rows())


def test_a_first_wrong_number_gets_a_second_try_before_the_value(tmp_path):
    """Issue 26 (drill): a wrong numeric answer used to reveal the value at once."""
    from roofline_lessons.course.drill import DrillSession, ProgressStore
    from roofline_lessons.course.flashcards import deck

    card = next(c for c in deck() if c.numeric is not None)
    session = DrillSession(ProgressStore(tmp_path / "p.json"))
    session.card = card
    value = card.answer_value()
    first = session.check(value * 10)
    assert first.startswith("✗") and "Try once more" in first and f"{value:,.0f}" not in first.split("(")[0]
    second = session.check(value * 10)
    assert "the package says" in second
    assert session.check(value).startswith("✓")
