"""Lesson 2 after issue 25: checker 2.6's BF16 mistake, the ridge table's fp32 column, and the nits."""

import re
from pathlib import Path

import jupytext
import pytest

from roofline_lessons import get_part
from roofline_lessons.core.memory import max_batch_that_fits, weight_bytes
from roofline_lessons.course.checks import lesson02
from roofline_lessons.topics.datasheets import best_measurement, ridge_table

ROOT = Path(__file__).resolve().parents[1]
LESSON = ROOT / "py" / "notebooks" / "02_the_ridge_point.py"
SOLUTION = ROOT / "py" / "solutions" / "02_the_ridge_point.py"


def _bf16_mistake():
    return next(m for m in lesson02.MISTAKES["2.6"]() if "BF16" in m.label and "weights" in m.label)


def test_bf16_weights_fit_an_h200_and_the_mistake_says_so():
    n = max_batch_that_fits("llama-3.1-70b", "h200", 8192, weights_dtype="bf16", kv_dtype="bf16")
    assert weight_bytes("llama-3.1-70b", "bf16") < get_part("h200").memory_capacity_bytes  # they fit
    assert n >= 1
    m = _bf16_mistake()
    assert m.value == n  # the value the mistake gives, not 0
    assert "do not" not in m.label and "fit" in m.label and f"only {n} sequence" in m.label
    assert f"{weight_bytes('llama-3.1-70b', 'bf16') / 2**30:.1f}" in m.label


def test_checker_26_rejects_the_bf16_answer_by_name():
    m = _bf16_mistake()
    r = lesson02.llama70b_fp8_batch_on_h200(int(m.value))
    assert r.status != "correct" and m.label in r.message
    expected = max_batch_that_fits("llama-3.1-70b", "h200", 8192, weights_dtype="fp8", kv_dtype="bf16")
    assert lesson02.llama70b_fp8_batch_on_h200(expected).status == "correct"
    # every named mistake lies apart from the answer and from each other (each is named, none shadows another)
    values = [mm.value for mm in lesson02.MISTAKES["2.6"]()]
    assert expected not in values and len(set(values)) == len(values)


def _markdown(path: Path) -> str:
    return "\n".join(c.source for c in jupytext.read(path).cells if c.cell_type == "markdown")


def test_lesson2_nits_are_gone():
    text = _markdown(LESSON)
    assert "powers of two" not in text.replace("need not be a power of two", "")
    assert "bytes per FLOP" not in text and "halving the bytes per value" in text
    # a cell without a ridge says why (no units / not published / not in catalog), never a bare dash
    assert "*no units*" in text and "*not published*" in text and "*not in catalog*" in text
    assert "never a claim that" in text and "lacks the units" in text
    src = LESSON.read_text(encoding="utf-8")
    assert 'return "—"' not in src and ".rate_status(dt)" in src
    assert "non-tensor" in text and "CUDA cores" in text and "matrix" in text


def test_the_ridge_tables_fp32_column_is_labelled_and_amd_marked():
    src = LESSON.read_text(encoding="utf-8")
    assert '"ridge fp32 (non-tensor)"' in src and '" (matrix)"' in src
    # the convention the label states: the catalog's fp32 is the vector rate, AMD's the matrix rate
    amd = {r["part"] for r in ridge_table(("fp32",)) if get_part(r["part"]).vendor == "AMD"}
    assert amd and all("fp32" in get_part(p).dense_flops_per_s for p in amd)
    h100 = get_part("h100-sxm").dense_flops_per_s
    assert h100["fp32"] < h100["bf16"] / 10  # CUDA-core FP32, not a tensor-core rate
    assert "matrix" in get_part("mi300x").notes


def test_solution_25_names_the_bandwidth_it_assumes():
    text = _markdown(SOLUTION)
    m = best_measurement("h100-sxm", "matmul_flops_per_s", "bf16")
    bw = get_part("h100-sxm").memory_bandwidth_bytes_per_s
    assert f"{m.value / 1e12:.1f} ÷ {bw / 1e12:.2f} ≈ {m.value / bw:.0f}" in text
    assert re.search(r"only because the bandwidth\s+(#\s*)?stayed the datasheet", text.replace("\n# ", " "))
    assert "either side" in text


def test_solution_26_states_the_bf16_figures():
    text = _markdown(SOLUTION).replace("\n# ", " ").replace("\n", " ")
    n = max_batch_that_fits("llama-3.1-70b", "h200", 8192, weights_dtype="bf16", kv_dtype="bf16")
    gib = weight_bytes("llama-3.1-70b", "bf16") / 2**30
    assert f"they fit ({gib:.1f} GiB of the {get_part('h200').memory_capacity_bytes / 2**30:.0f} GiB)" in text
    assert f"room for only {n} sequences" in text


@pytest.mark.parametrize("bad", [None, "three", float("nan"), [3], -1])
def test_checker_26_never_crashes(bad):
    assert lesson02.llama70b_fp8_batch_on_h200(bad).status != "correct"
