"""Lesson 10 (serving a request): its checkers accept the solution's values, reject stubs, wrong types
and each classic mistake by name, and follow the package; its cards compute their figures; the lesson
labels its price as an assumption and prints no scientific notation."""

import math
import re
from pathlib import Path

import numpy as np
import pytest

from roofline_lessons.core.costs import model_cost
from roofline_lessons.core.hardware import get_part
from roofline_lessons.course import flashcards
from roofline_lessons.course.checks import lesson10
from roofline_lessons.topics.serving import expected_tokens_per_verify, request_timeline

ROOT = Path(__file__).resolve().parents[1]
LESSON = ROOT / "py" / "notebooks" / "10_serving_a_request.py"
SOLUTIONS = ROOT / "py" / "solutions" / "10_serving_a_request.py"


def _solution():
    """The solutions, computed independently of the checkers (by hand where the exercise says so)."""
    h100 = get_part("h100-sxm")
    prefill = model_cost("llama-3.1-8b", phase="prefill", prompt_tokens=2048)
    ttft = max(float(prefill.flops) / h100.peak_flops_per_s("bf16"),
               float(prefill.bytes) / h100.memory_bandwidth_bytes_per_s)
    short = request_timeline("llama-3.1-8b", "h100-sxm", prompt_tokens=2048, output_tokens=16, batch=8)
    plain = request_timeline("llama-3.1-70b", "h200", prompt_tokens=8192, output_tokens=128, weights_dtype="fp8")
    drafted = request_timeline("llama-3.1-70b", "h200", prompt_tokens=8192, output_tokens=128, weights_dtype="fp8",
                               speculative_tokens=4, acceptance=0.7, draft_model="llama-3.1-8b")
    b32 = request_timeline("llama-3.1-8b", "h100-sxm", prompt_tokens=2048, output_tokens=256, batch=32)
    return {"10.1": ttft, "10.2": (short.e2e_s - short.ttft_s) / 15, "10.3": 1 + 0.8 + 0.8**2 + 0.8**3,
            "10.4": plain.tpot_s / drafted.tpot_s, "10.5": 2.50 / 3600 / b32.output_tokens_per_s * 1e6}


def _args(ex):
    return lesson10.MISTAKE_ARGS.get(ex, lambda: ())()


def test_every_exercise_has_mistakes_or_a_reason():
    assert set(lesson10.MISTAKES) | set(lesson10.NO_NUMERIC_MISTAKES) == set(lesson10.EXERCISES)
    assert len(lesson10.EXERCISES) >= 4


@pytest.mark.parametrize("ex", sorted(lesson10.EXERCISES))
def test_solution_accepted_stub_rejected(ex):
    assert lesson10.EXERCISES[ex](_solution()[ex], *_args(ex)).passed
    stub = lesson10.EXERCISES[ex](..., *_args(ex))
    assert not stub.passed and stub.status == "not attempted"


@pytest.mark.parametrize("ex,mistake", [(ex, m) for ex, make in lesson10.MISTAKES.items() for m in make()],
                         ids=lambda v: v if isinstance(v, str) else v.label[:30])
def test_classic_mistakes_rejected_by_name(ex, mistake):
    result = lesson10.EXERCISES[ex](mistake.value, *_args(ex))
    assert not result.passed and mistake.label in result.message


@pytest.mark.parametrize("ex", sorted(lesson10.EXERCISES))
@pytest.mark.parametrize("answer", ["0.03", [1], True, float("nan"), np.array([1.0, 2.0]), {"a": 1}, object()],
                         ids=["text", "list", "bool", "nan", "array", "dict", "object"])
def test_wrong_types_never_crash(ex, answer):
    result = lesson10.EXERCISES[ex](answer, *_args(ex))
    assert not result.passed and result.status == "incorrect" and result.message


@pytest.mark.parametrize("label,value", [
    ("output − 1", lambda: (lambda t: (t.e2e_s - t.ttft_s) / t.output_tokens)(lesson10._short())),
    ("α^k instead of α^(k+1)", lambda: (1 - 0.8**3) / 0.2),
    ("bandwidth", lambda: float(model_cost("llama-3.1-8b", phase="prefill", prompt_tokens=2048).bytes)
     / get_part("h100-sxm").memory_bandwidth_bytes_per_s),
    ("draft's cost", lambda: lesson10._speedup_mistakes()[0].value),
    ("one user's tokens/s", lambda: lesson10._cost_mistakes(2.5)[0].value),
])
def test_the_briefs_classic_mistakes_are_named(label, value):
    """TPOT over output (not output − 1), α^k, TTFT from bandwidth when compute binds, the draft's
    cost forgotten, per-sequence throughput for total: each is in its checker's list and named."""
    named = [(ex, m) for ex, make in lesson10.MISTAKES.items() for m in make() if label in m.label]
    assert named, label
    ex, m = named[0]
    assert m.value == pytest.approx(value())
    result = lesson10.EXERCISES[ex](value(), *_args(ex))
    assert not result.passed and label in result.message


def test_prefill_is_compute_bound_so_the_bandwidth_mistake_is_distinct():
    from roofline_lessons import place

    p = place("llama-3.1-8b", "h100-sxm", phase="prefill", prompt_tokens=2048)
    assert p.bound == "compute"
    assert not lesson10.ttft_by_hand_s(float(p.memory_time_s)).passed


def test_tokens_per_verify_matches_the_closed_form():
    for k in range(0, 9):
        for a in (0.0, 0.3, 0.7, 0.95):
            assert expected_tokens_per_verify(k, a) == pytest.approx(sum(a**i for i in range(k + 1)))
    assert lesson10.tokens_per_verify_step(sum(0.8**i for i in range(4))).passed


def test_cost_checker_follows_the_learners_price():
    """The price is the learner's assumption: a doubled price doubles the expected answer."""
    base = _solution()["10.5"]
    assert lesson10.usd_per_million_tokens(2 * base, 5.0).passed
    assert not lesson10.usd_per_million_tokens(base, 5.0).passed


@pytest.mark.parametrize("price", ["two", None, -1.0, 0, [2.5], True])
def test_a_bad_price_is_explained_not_crashed(price):
    result = lesson10.usd_per_million_tokens(0.2, price)
    assert not result.passed and "price" in result.message


def test_checkers_compute_from_the_package(monkeypatch):
    """Expected values are computed when the checker runs: a faster part moves the TTFT answer."""
    from roofline_lessons.topics import serving

    real = serving.request_timeline
    calls = []

    def spy(*a, **kw):
        calls.append((a, kw))
        return real(*a, **kw)

    monkeypatch.setattr(lesson10, "request_timeline", spy)
    lesson10.ttft_by_hand_s(_solution()["10.1"])
    assert calls and calls[0][0][:2] == ("llama-3.1-8b", "h100-sxm")


# ---- the cards ------------------------------------------------------------------------------------


def test_lesson10_has_serving_cards():
    cards = flashcards.filter_cards(lesson=10)
    assert len(cards) >= 3
    assert all(c.id.startswith("serving-") for c in cards)


def test_serving_value_functions_follow_the_package():
    ttft = flashcards.get_card("serving-ttft-tpot")
    t = request_timeline("llama-3.1-8b", "h100-sxm", prompt_tokens=2048, output_tokens=256)
    assert ttft.answer_value() == pytest.approx(1e3 * t.ttft_s)
    assert f"{1e3 * t.tpot_s:.1f} ms" in ttft.short_answer()
    verify = flashcards.get_card("serving-tokens-per-verify")
    assert verify.answer_value() == pytest.approx(float(expected_tokens_per_verify(4, 0.7)))
    draft = flashcards.get_card("serving-draft-cost")
    plain = request_timeline("llama-3.1-70b", "b200", prompt_tokens=2048, output_tokens=256)
    drafted = request_timeline("llama-3.1-70b", "b200", prompt_tokens=2048, output_tokens=256,
                               speculative_tokens=4, acceptance=0.7, draft_model="llama-3.1-8b")
    assert f"{plain.tpot_s / drafted.tpot_s:.2f}×" in draft.short_answer()
    # the pair fits the B200 the card names, not the H200 it used to name (issue 25)
    on_h200 = request_timeline("llama-3.1-70b", "h200", prompt_tokens=2048, output_tokens=256,
                               speculative_tokens=4, acceptance=0.7, draft_model="llama-3.1-8b")
    assert drafted.memory_required_bytes <= drafted.memory_capacity_bytes
    assert on_h200.memory_required_bytes > on_h200.memory_capacity_bytes
    assert f"{on_h200.memory_required_bytes / 2**30:,.0f} GiB: they do not fit one H200" in draft.short_answer()
    assert flashcards.NUMERIC_FUNCTIONS["spec_speedup"]("llama-3.1-70b", "b200", 2048, 256, 4, 0.7) > \
        flashcards.NUMERIC_FUNCTIONS["spec_speedup"]("llama-3.1-70b", "b200", 2048, 256, 4, 0.7,
                                                     draft="llama-3.1-8b") > 1


# ---- the lesson's text ----------------------------------------------------------------------------


MAIN_PATH = ("## 1. A request's timeline", "## 2. TPOT: one name, three numbers",
             "## 3. Throughput against latency: the batch", "## 4. Little's law and goodput",
             "## 5. Continuous batching: what the static batch leaves on the table",
             "## 6. Chunked prefill: the mixed step", "## 7. Speculative decoding", "## 8. Prefix caching",
             "## 9. Cost per token")
GOING_FURTHER = ("## Going further: what chunking costs the newcomer",
                 "## Going further: where speculation's speed-up goes",
                 "## Going further: a draft model of its own", "## Going further: energy per token")
TABLE_RULE = re.compile(r"^\|(---\|)+$")


def _run_cells(path):
    """The lesson run cell by cell as a learner meets it: per cell, the ``##`` section it sits in, its
    type, its source, whether its source is shown, and what it displays (md and tables, as text)."""
    import contextlib
    import io

    import IPython.display
    import jupytext

    from roofline_lessons.course.notebook_files import is_source_hidden

    cells, section, scope = [], None, {"__name__": "__main__"}
    real = IPython.display.display
    try:
        for cell in jupytext.read(str(path)).cells:
            shown = io.StringIO()
            if cell.cell_type == "markdown":
                heading = next((ln for ln in cell.source.splitlines() if ln.startswith("## ")), None)
                section = heading or section
            elif cell.cell_type == "code":
                IPython.display.display = lambda obj, *a, **k: shown.write(str(getattr(obj, "data", obj)) + "\n")
                with contextlib.redirect_stdout(shown):
                    exec(compile(cell.source, str(path), "exec"), scope)
            cells.append({"section": section, "type": cell.cell_type, "source": cell.source,
                          "hidden": is_source_hidden(cell), "shown": shown.getvalue()})
    finally:
        IPython.display.display = real
    return cells


@pytest.fixture(scope="module")
def lesson_cells():
    return _run_cells(LESSON)


@pytest.fixture(scope="module")
def lesson_text(lesson_cells):
    return "".join(c["shown"] for c in lesson_cells)


def test_lesson_prints_no_scientific_notation(lesson_text):
    readable = re.sub(r"base64,[A-Za-z0-9+/=]+", "base64,…", lesson_text)  # image data is not text
    assert not re.search(r"\d(\.\d+)?e[+-]?\d", readable)
    assert "TTFT" in lesson_text and "goodput" in lesson_text


def test_the_price_is_an_assumption_and_energy_an_upper_bound():
    for path in (LESSON, SOLUTIONS):
        line = next(ln for ln in path.read_text("utf-8").splitlines() if ln.startswith("PRICE_PER_HOUR_USD"))
        assert "ASSUMPTION" in line
    text = LESSON.read_text("utf-8")
    assert "upper bound on the energy per token at that rate" in text
    # the table feeds an estimated rate: its header must call the figure an estimate, never a bound (issue 25, item 23)
    header = next(ln for ln in text.splitlines() if "GPU-board energy per token" in ln and ln.lstrip().startswith('"'))
    assert "estimate" in header and "at most" not in header and "upper bound" not in header
    assert "estimate at the assumed power" in text
    assert "exercises/10_serving_a_request.ipynb" in text


def test_lesson_shows_both_tpot_definitions_disagreeing(lesson_text):
    """Without speculation the two TPOTs agree; with it the mean step time is larger than the gap."""
    spec = request_timeline("llama-3.1-8b", "h100-sxm", prompt_tokens=2048, output_tokens=256,
                            speculative_tokens=4, acceptance=0.7)
    assert spec.mean_step_s > 1.5 * spec.tpot_s
    assert "(E2E − TTFT) ÷ (output − 1)" in lesson_text and "mean step time" in lesson_text


def test_every_section_is_there_in_the_chapters_order():
    """Main path, Explore, Summary, then the Going further sections, each heading once (issue 26)."""
    text = LESSON.read_text("utf-8")
    order = [*MAIN_PATH, "## Explore: the serving dashboard", "## Summary", *GOING_FURTHER]
    at = [text.find(h) for h in order]
    assert all(i >= 0 for i in at), [h for h, i in zip(order, at) if i < 0]
    assert at == sorted(at) and all(text.count(h) == 1 for h in order)
    headings = [ln for ln in text.splitlines() if re.match(r"#\s*##\s", ln)]
    assert len(headings) == len(order)  # no section outside the outline
    assert text.count("**Question.**") >= len(MAIN_PATH) + len(GOING_FURTHER)


def test_the_conventions_are_stated_once_at_the_top(lesson_cells):
    """One box before section 1 names both figures and every convention of the estimate, so the
    paragraphs below need not re-hedge."""
    top = next(c["source"] for c in lesson_cells if c["type"] == "markdown")
    box = top[top.index("> **Conventions.**"):]
    assert all(ln.startswith(">") for ln in box.splitlines() if ln.strip())
    for term in ("**lower bound**", "compulsory traffic only", "overlap", "assumes no latency", "**upper bound**",
                 "**estimate**", "unfused", "one chip", "per-call latency", "one static batch", "probability α",
                 "price per GPU-hour", "board power", "does not fit"):
        assert term in box, term
    assert sum(c["source"].count("**Conventions.**") for c in lesson_cells) == 1


def test_every_main_path_section_ends_in_a_question(lesson_cells):
    """A section's last markdown cell asks the reader a question, and only its answer follows it."""
    for heading in (*MAIN_PATH, *GOING_FURTHER):
        cells = [c for c in lesson_cells if c["section"] == heading]
        last_md = max(i for i, c in enumerate(cells) if c["type"] == "markdown")
        assert "**Question.**" in cells[last_md]["source"], heading
        after = cells[last_md + 1:]
        assert len(after) == 1 and "<summary>Answer</summary>" in after[0]["shown"], heading


def test_main_path_tables_have_at_most_five_columns(lesson_cells):
    widths = {}
    for c in lesson_cells:
        lines = c["shown"].splitlines()
        for rule in (ln for ln in lines if TABLE_RULE.match(ln)):
            widths.setdefault(c["section"], []).append(rule.count("---"))
    main = {s: w for s, w in widths.items() if s in MAIN_PATH}
    assert len(main) >= 7 and all(n <= 5 for w in main.values() for n in w), main


def test_no_assert_in_a_source_the_learner_sees(lesson_cells):
    """Checks that keep the prose honest run in collapsed narration cells, not in code a learner reads."""
    visible = [c["source"] for c in lesson_cells if c["type"] == "code" and not c["hidden"]]
    assert not [ln for src in visible for ln in src.splitlines() if ln.lstrip().startswith("assert ")]
    assert sum(src.count("assert ") for src in (c["source"] for c in lesson_cells)) >= 15  # the checks stay


def test_no_figure_without_alt_text():
    """The lesson draws no matplotlib figure; if one is added it must carry alt text (set_alt)."""
    text = LESSON.read_text("utf-8")
    assert "plt." not in text or "set_alt(" in text
    assert not math.isnan(_solution()["10.4"])


def test_draft_speedup_e2e_mistake_is_far_from_the_answer():
    """10.4's request makes the prefill a large share of E2E, so the E2E speed-up is a mistake the
    checker can name (at 2,048 in / 256 out it was 4 % from the answer, inside rounding)."""
    labels = {m.label: m.value for m in lesson10.MISTAKES["10.4"]()}
    e2e = next(v for k, v in labels.items() if "E2E" in k)
    assert abs(e2e / _solution()["10.4"] - 1) > 0.15


def test_draft_speedup_setup_fits_and_names_every_mistake():
    """10.4 prices a pair that runs: the 70B target and the 8B draft, FP8 weights, fit one H200 (in
    BF16 they do not), and none of the four named mistakes lands on the answer."""
    drafted = lesson10._spec(speculative_tokens=lesson10.SPEC_K, acceptance=lesson10.SPEC_ALPHA,
                             draft_model=lesson10.DRAFT)
    assert drafted.fits_in_memory
    bf16 = request_timeline("llama-3.1-70b", "h200", prompt_tokens=8192, output_tokens=128,
                            speculative_tokens=4, acceptance=0.7, draft_model="llama-3.1-8b")
    assert not bf16.fits_in_memory
    mistakes = lesson10.MISTAKES["10.4"]()
    assert len(mistakes) == 4  # forget the draft, MTP pricing, E2E, inverted: none equals the answer
    values = sorted(m.value for m in mistakes)
    assert all(b / a - 1 > 2 * lesson10._REL_TOL for a, b in zip(values, values[1:]))  # and distinct from each other
    # an MTP head (about one layer and the lm_head) is a cheaper draft than eight billion parameters: its
    # speed-up lies above the 8B draft's (it once lay below, from pricing the whole model's dequantisation)
    mtp = next(m.value for m in mistakes if "MTP" in m.label)
    assert mtp > _solution()["10.4"] * (1 + 2 * lesson10._REL_TOL)


def test_lesson_10_qualifies_the_bound_and_marks_what_does_not_fit():
    """Continuous batching's upper bound assumes one token per sequence per step: speculation beats it (the
    lesson's own MTP request at batch 1), so every place that states it says "without speculative decoding";
    the goodput answer credits continuous batching, not chunking, with moving the TTFT wall; the 70B + 8B
    pair on an H200 is marked as not fitting; the chunked answer prices each chunk over the ones before it."""
    from pathlib import Path

    from roofline_lessons.topics import serving

    plain = request_timeline("llama-3.1-8b", "h100-sxm", prompt_tokens=2048, output_tokens=256)
    spec = request_timeline("llama-3.1-8b", "h100-sxm", prompt_tokens=2048, output_tokens=256,
                            speculative_tokens=4, acceptance=0.7)
    assert spec.output_tokens_per_s > plain.output_tokens_per_s_upper_bound  # why the qualification is needed
    assert math.isnan(spec.output_tokens_per_s_upper_bound)
    raw = (Path(__file__).resolve().parents[1] / "py" / "notebooks" / "10_serving_a_request.py").read_text("utf-8")
    text = re.sub(r'"\s*\n\s*f?"', "", raw)  # adjacent string literals joined
    text = " ".join(re.sub(r"\n#\s*", " ", text).split())  # markdown comment lines joined, spaces collapsed
    assert text.count("without speculative decoding") >= 2 and "no speculation (upper bound)" in text
    # the bound holds for the workload as priced, not for every engine (issue 26): a prefix cache beats it too
    assert text.count("every prompt prefilled in full") >= 3  # conventions, section 5, summary (section 9 below)
    assert "lower bound on the cost of any engine that does not speculate" not in text
    assert ("batch by batch, a lower bound on the cost of any engine with that batch in flight that prefills every "
            "prompt in full, in BF16, without speculating") in text
    assert "chunked prefill (next section) is how servers move that wall" not in text
    assert "continuous batching (with chunked prefill, sections 5 and 6) is how servers move that wall" in text
    assert "unless_too_big(draft70" in text and "prefill_cached_tokens=start" in text
    assert "without speculative decoding" in serving.__doc__


def _shown_in(cells, heading):
    return "".join(c["shown"] for c in cells if c["section"] == heading)


def test_goodput_is_swept_over_every_batch_and_called_a_best_case(lesson_cells):
    """Section 4 picks the best batch over every batch that fits, not a coarse list; calls the chip
    count a best case that assumes arrivals line up with batches; and prices a random arrival's wait,
    which already misses the TTFT objective at the best batch (issue 26, items 1 and 2)."""
    from roofline_lessons.core.memory import max_batch_that_fits
    from roofline_lessons.core.units import duration
    from roofline_lessons.topics.serving import goodput_requests_per_s

    wall = max_batch_that_fits("llama-3.1-8b", "h100-sxm", 2048 + 256)
    kw = dict(prompt_tokens=2048, output_tokens=256, batches=range(1, wall + 1), ttft_slo_s=1.0, tpot_slo_s=0.010)
    est = goodput_requests_per_s("llama-3.1-8b", "h100-sxm", **kw)
    lb = goodput_requests_per_s("llama-3.1-8b", "h100-sxm", figures="lower_bound", **kw)
    listed = goodput_requests_per_s("llama-3.1-8b", "h100-sxm", **{**kw, "batches": [1, 4, 16, 32, 64, 128]})
    assert est.best_batch == lb.best_batch != listed.best_batch  # the list alone would name the wrong batch
    shown = _shown_in(lesson_cells, "## 4. Little's law and goodput")
    assert f"is **{est.best_batch}** by both figures" in shown and "**best case**" in shown
    wait = est.mean_arrival_wait_s[est.best_batch - 1]
    assert wait > 1.0 and f"**{duration(wait)}**" in shown
    assert "TPOT: estimate (lower bound)" in shown  # both figures beside each other in the table
    assert "a batch that misses two objectives gains nothing" not in shown


def test_continuous_batching_gap_peaks_where_the_cycle_turns_compute_bound(lesson_cells):
    """Section 5 does not call the largest of four batches the peak: it finds the peak over every batch
    and says why the gap shrinks past it, and shows a prefix cache beating the bound (items 3 and 4)."""
    shown = _shown_in(lesson_cells, "## 5. Continuous batching: what the static batch leaves on the table")
    assert "Of these four batches" in shown and "compute-bound" in shown and "section 8" in shown
    assert "uniform expert routing" not in "".join(c["source"] for c in lesson_cells)  # noise for a dense model


def test_ratios_of_lower_bounds_are_not_called_bounds(lesson_cells):
    shown = _shown_in(lesson_cells, "## 6. Chunked prefill: the mixed step")
    assert "lower bounds' ratio (not itself a bound)" in shown and "ratio of lower bounds (not a bound)" in shown
    assert not re.search(r"by the lower bound\b(?!s)", shown)  # a slowdown "by the lower bound" is not one
    further = _shown_in(lesson_cells, "## Going further: what chunking costs the newcomer")
    assert "a ratio of lower bounds, not itself a bound" in further


def test_speculation_text_is_qualified(lesson_cells):
    """Bursts, not an even gap; the MTP head is hypothetical for Llama; the summary's claim holds on short
    prompts only; the draft-model paragraph does not contradict itself (items 6, 7, 10)."""
    spec = request_timeline("llama-3.1-8b", "h100-sxm", prompt_tokens=2048, output_tokens=256,
                            speculative_tokens=4, acceptance=0.7)
    shown = _shown_in(lesson_cells, "## 7. Speculative decoding")
    assert "arrive in bursts" in shown and "**mean** gap" in shown and f"{spec.tokens_per_verify_step:.3g}" in shown
    text = LESSON.read_text("utf-8")
    assert text.count("hypothetical") >= 2 and "Llama-3.1 has none" in text
    assert "On short prompts it buys most at batch 1" in text
    draft = _shown_in(lesson_cells, "## Going further: a draft model of its own")
    assert "Put both models on one H200" in draft and "live on one" not in draft


def test_units_peaks_and_glosses(lesson_cells):
    """The dense peak and the sparse headline are both named; capacity is binary and said once; the
    ridge and the lm_head are glossed; the energy helper's name is explained (items 8, 9, 12)."""
    part = get_part("h100-sxm")
    shown = _shown_in(lesson_cells, "## 1. A request's timeline")
    assert f"dense BF16 peak, {part.peak_flops_per_s('bf16') / 1e12:,.0f} TFLOP/s" in shown
    assert f"{part.sparse_headline_flops_per_s('bf16') / 1e12:,.0f} is with sparsity" in shown
    top = next(c["source"] for c in lesson_cells if c["type"] == "markdown")
    assert "Capacity is binary" in top and "dense BF16 peak" in top
    assert "the ridge (where compute and memory take equal time" in "".join(c["shown"] for c in lesson_cells)
    text = LESSON.read_text("utf-8")
    assert "**lm_head** (the matrix from hidden state to vocabulary" in " ".join(re.sub(r"\n#\s*", " ", text).split())
    assert "`energy_per_token_upper_bound_j` is named for" in " ".join(re.sub(r"\n#\s*", " ", text).split())


def test_summary_and_interview_match_the_lesson():
    text = " ".join(re.sub(r"\n#\s*", " ", LESSON.read_text("utf-8")).split())
    assert "continuous batching can do better" in text and "continuous batching does better" not in text
    assert "under a 1 s TTFT and a 10 ms TPOT objective" in text
    assert "The **capacity wall** {wall_role}" in text and "comes first in practice" not in text


def test_no_visible_cell_calls_a_helper_defined_in_a_collapsed_one(lesson_cells):
    """A learner reading the visible code can find every function it calls (issue 26, item 12)."""
    import ast

    hidden_defs = {n.name for c in lesson_cells if c["type"] == "code" and c["hidden"]
                   for n in ast.parse(c["source"]).body if isinstance(n, ast.FunctionDef)}
    called = {n.func.id for c in lesson_cells if c["type"] == "code" and not c["hidden"]
              for n in ast.walk(ast.parse(c["source"])) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    assert not hidden_defs & called, hidden_defs & called
    assert "SHORT_PROMPT = " in next(c["source"] for c in lesson_cells if c["type"] == "code" and not c["hidden"])
