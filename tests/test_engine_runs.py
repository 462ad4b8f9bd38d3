"""The catalog of published engine runs (data/engine_runs.toml) and its loader."""

import copy
import dataclasses
import re

import pytest

from roofline_lessons.core.dtypes import DTYPES
from roofline_lessons.core.engine_runs import (
    METRIC_UNITS, METRICS, NOT_STATED, REGIMES, EngineRun, get_engine_run, list_engine_runs, run_from_entry,
    runs_from_catalog,
)
from roofline_lessons.core.errors import RooflineInputError

RUNS = list_engine_runs()

GOOD = {
    "id": "example-run", "regime": "max throughput", "engine": "ExampleEngine", "engine_version": "1.0",
    "part": "h100-sxm", "chips": 8, "tensor": 8, "parallelism_stated": True, "model": "llama-3.1-70b",
    "model_as_published": "Llama 3.1 70B", "weights_dtype": "fp8", "compute_dtype": "fp8",
    "kv_dtype": NOT_STATED, "metric": "output_tokens_per_s", "value": 1234.5,
    "value_as_published": "1,234.5 tok/s", "source": "A blog", "source_url": "https://example.org/blog",
    "source_file": "section 2", "published": "2025-03", "taken": "2026-12-03", "conditions": "offline",
    "unsaid": "batch size",
}


def _refused(**changes) -> str:
    entry = copy.deepcopy(GOOD)
    for key, value in changes.items():
        if value is ...:
            entry.pop(key)
        else:
            entry[key] = value
    with pytest.raises(RooflineInputError) as info:
        run_from_entry(entry)
    return str(info.value)


# ---- the shipped catalog ----------------------------------------------------------------------

def test_catalog_has_enough_rows_and_every_regime_three_times():
    assert len(RUNS) >= 20
    for regime in REGIMES:
        assert sum(r.regime == regime for r in RUNS) >= 3, regime


def test_every_row_has_a_source_address_and_dates():
    for run in RUNS:
        assert run.source_url.startswith("https://"), run.id
        assert run.source.strip() and run.source_file.strip(), run.id
        assert re.fullmatch(r"\d{4}(-\d{2}(-\d{2})?)?", run.published), run.id
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", run.taken), run.id
        assert run.published <= run.taken, run.id
        assert run.value_as_published.strip() and run.unsaid.strip() and run.conditions.strip(), run.id


def test_rows_are_engine_runs_with_unique_ids_and_known_enums():
    assert all(isinstance(r, EngineRun) for r in RUNS)
    assert len({r.id for r in RUNS}) == len(RUNS)
    for run in RUNS:
        assert run.metric in METRICS and run.regime in REGIMES
        assert {run.weights_dtype, run.compute_dtype, run.kv_dtype} <= set(DTYPES) | {NOT_STATED}
        assert run.value > 0 and run.chips >= 1
        assert run.unit == METRIC_UNITS[run.metric]


def test_batch_one_rows_are_batch_one_and_latencies_are_seconds():
    for run in RUNS:
        if run.regime == "batch-1 latency":
            assert run.batch == 1, run.id
        if run.is_latency:
            assert run.value < 10, f"{run.id}: a ttft/tpot in seconds, not milliseconds"


def test_derived_per_chip_figures_say_so():
    # a per-chip value the source gave per node must say how it was divided
    for run in RUNS:
        if run.metric.endswith("_per_chip") and "node" in run.value_as_published:
            assert "/ 8" in run.notes, run.id


def test_a_few_figures_match_their_sources():
    assert get_engine_run("gpt-fast-llama-2-7b-bf16-a100-bs1").value == 104.9
    assert get_engine_run("mlperf-4.1-llama-2-70b-h200x8-offline").value == 31302.7
    assert get_engine_run("mlperf-4.1-llama-2-70b-h200x8-server-ttft").value == pytest.approx(0.198269106)
    assert get_engine_run("deepseek-online-decode-h800-ep144").value == pytest.approx(14_800 / 8)


def test_engine_run_is_frozen_and_get_refuses_unknown_ids():
    with pytest.raises(dataclasses.FrozenInstanceError):
        RUNS[0].value = 1.0
    with pytest.raises(RooflineInputError, match="unknown engine run 'no-such-run'"):
        get_engine_run("no-such-run")


# ---- the loader refuses bad rows with the row and field named ---------------------------------

def test_a_good_row_loads():
    run = run_from_entry(GOOD)
    assert run.id == "example-run" and run.tensor == 8 and run.expert is None and run.value == 1234.5


@pytest.mark.parametrize("changes, field, allowed", [
    ({"regime": "fast"}, "regime", "'batch-1 latency'"),
    ({"metric": "tokens"}, "metric", "'output_tokens_per_s'"),
    ({"weights_dtype": "q4_0"}, "weights_dtype", "'int4'"),
    ({"source_url": "http://example.org"}, "source_url", "https://"),
    ({"source_url": ...}, "source_url", "non-empty text"),
    ({"published": "March 2025"}, "published", "YYYY-MM-DD"),
    ({"published": "2025-13"}, "published", "calendar date"),
    ({"taken": "2026-12"}, "taken", "YYYY-MM-DD"),
    ({"published": "2027-01-01"}, "published", "after taken"),
    ({"chips": True}, "chips", "whole number >= 1"),
    ({"chips": 0}, "chips", "whole number >= 1"),
    ({"chips": ...}, "chips", "is missing"),
    ({"tensor": 16}, "tensor", "cannot exceed chips"),
    ({"tensor": 4, "pipeline": 2, "replicas": 2}, "tensor × pipeline × replicas", "cannot exceed chips"),
    ({"value": -3.0}, "value", "number > 0"),
    ({"value": float("nan")}, "value", "number > 0"),
    ({"value": "1234"}, "value", "number > 0"),
    ({"parallelism_stated": "yes"}, "parallelism_stated", "true or false"),
    ({"regime": "batch-1 latency"}, "batch", "must be 1"),
    ({"regime": "batch-1 latency", "batch": 4}, "batch", "must be 1"),
    ({"part": "H100 SXM"}, "part", "course id"),
    ({"id": "Bad Id"}, "id", "slug"),
    ({"unsaid": "  "}, "unsaid", "non-empty text"),
    ({"tensr": 8}, "tensr", "not a field"),
])
def test_bad_rows_are_refused_naming_row_field_and_what_is_allowed(changes, field, allowed):
    message = _refused(**changes)
    assert "engine_runs.toml" in message
    assert field in message and allowed in message
    if "id" not in changes:
        assert "'example-run'" in message


def test_duplicate_ids_and_empty_catalogs_are_refused():
    with pytest.raises(RooflineInputError, match="'example-run': id is used by more than one run"):
        runs_from_catalog({"runs": [GOOD, GOOD]})
    with pytest.raises(RooflineInputError, match=r"non-empty \[\[runs\]\]"):
        runs_from_catalog({"runs": []})
    with pytest.raises(RooflineInputError, match=r"run #2 must be a table"):
        runs_from_catalog({"runs": [GOOD, "not a table"]})


def test_a_row_without_an_id_is_named_by_position():
    entry = dict(GOOD, id="")
    with pytest.raises(RooflineInputError, match=r"run '#3': id must be non-empty"):
        run_from_entry(entry, position=2)
