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


# ---- the strict reader's second pass on lesson 2 (W4, M4–M7, N2, N3, N7) ----

def _source(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def test_headline_list_claims_only_the_formats_the_catalog_holds():
    """W4: the catalog holds no TF32 rates, so it cannot say every kind a figure is; 989 and 2.2 are TF32 sparse too."""
    from roofline_lessons import list_parts

    held = {dt for pid in list_parts() for t in (get_part(pid).dense_flops_per_s, get_part(pid).sparse_flops_per_s)
            for dt in t}
    assert "tf32" not in held
    src, text = _source(LESSON), _markdown(LESSON)
    assert "the catalog says every one it is" not in text
    assert "among the formats it holds" in src and "TF32" in src and '"tf32" not in formats_held' in src
    sol = _markdown(SOLUTION).replace("\n", " ")
    assert "TF32 Tensor Core 2.2 PFLOPS" in sol and "with sparsity" in sol


def test_sparse_headlines_are_described_as_the_sheets_print_them():
    """N3: NVIDIA's H100/H200/B200 tables print only the sparse figure, footnoted."""
    text = _markdown(LESSON).replace("\n", " ")
    assert "print both, and the bigger one gets the large font" not in text
    assert "print only the sparse figure" in text and "footnote" in text


def test_streaming_sentence_is_computed_from_every_row_the_catalog_holds():
    """M4: 'real kernels fall short of both' was false for a store-only kernel at 101 %; the sentence now spans
    the min and max of the H100 PCIe streaming rows, with or without an init row, and calls 2.0 TB/s rounded."""
    src, text = _source(LESSON), _markdown(LESSON).replace("\n", " ")
    assert "fall short of both" not in text
    assert "min(streams" in src and "max(streams" in src and "the datasheet's rounded figure" in src
    assert '"bandwidth_bytes_per_s", "store_bandwidth_bytes_per_s"' in src  # reads and any store-only row
    # with or without a row above the datasheet figure, the sentence's branch is computed
    assert "if above else" in src


def test_measured_matmul_is_quoted_with_its_conditions():
    """M5: the 794 TFLOP/s and the 237 ridge carry shape, conditions and software."""
    src = _source(LESSON)
    assert "{mamf.conditions}" in src and "{mamf.shape}" in src and "provenance(mamf)" in src
    assert "{mamf.software}" in src
    m = best_measurement("h100-sxm", "matmul_flops_per_s", "bf16")
    assert m.conditions and m.shape and m.software
    sol = _source(SOLUTION)
    assert "{mamf.conditions}" in sol and "{mamf.shape}" in sol


def test_capacity_is_called_nominal_and_the_device_figure_agrees_with_the_catalog():
    """M6: nominal GiB beside what nvidia-smi reports; the typed MiB figures are the ones the catalog's comments
    record, so the two cannot drift apart unnoticed."""
    src, text = _source(LESSON), _markdown(LESSON)
    assert "**nominal**" in text and "upper bound on what fits on the card" in text.replace("\n", " ")
    catalog = (ROOT / "roofline_lessons" / "data" / "hardware.toml").read_text(encoding="utf-8")
    found = re.search(r"NVIDIA_SMI_TOTAL_MIB = \{([^}]*)\}", src)
    assert found
    figures = dict(re.findall(r'"([\w.-]+)": ([\d_]+)', found.group(1)))
    assert set(figures) == {"h100-sxm", "h200", "b200"}
    for pid, mib in figures.items():
        mib = int(mib.replace("_", ""))
        assert f"{mib:,} MiB" in catalog, pid  # the catalog's comment gives the same figure
        assert mib * 2**20 < get_part(pid).memory_capacity_bytes
    # "fits with 9.58 GiB to spare" is also given on the device's figure
    free_device = int(figures["h200"].replace("_", "")) * 2**20 - weight_bytes("llama-3.1-70b")
    assert 0 < free_device < get_part("h200").memory_capacity_bytes - weight_bytes("llama-3.1-70b")
    assert "h200_device_free" in src and "on_device" in src


def test_vllm_budget_puts_the_cuda_context_in_the_other_share():
    """N2: vLLM's baseline snapshot is taken after the CUDA context exists, as core/memory.py says."""
    text = _markdown(LESSON).replace("\n", " ")
    assert "(the CUDA context among it)" not in text
    assert "The CUDA context is not in the budget" in text


def test_fp8_weights_are_not_called_half():
    """N7: 67.7 GiB is 51.5 % of 131.4 GiB because the embedding and lm_head stay BF16."""
    src = _source(LESSON)
    assert "halve to" not in src and "rather " in src and "than half" in src
    ratio = weight_bytes("llama-3.1-70b", "fp8") / weight_bytes("llama-3.1-70b", "bf16")
    assert 0.51 < ratio < 0.52


def test_ridge_table_labels_accumulate_mode_and_matrix_rates_from_the_notes():
    """M7: the RTX 4090's BF16 and FP8 rates are its FP32-accumulate ones; AMD's FP32 mark follows its note."""
    src = _source(LESSON)
    assert '" (FP32 accumulate)"' in src and 'note_sentences(r["part"], dt.upper(), "FP32 accumulate")' in src
    assert "FP32 accumulate" in get_part("rtx-4090").notes
    # AMD's mark is read from the note: "(vector = matrix)" once the note gives the vector rate as the same figure
    assert '" (vector = matrix)"' in src and '" (matrix)"' in src
