"""Published inference measurements of real engines, to hold against the course's bound and estimate.

Rows live in ``data/engine_runs.toml``: each one figure a primary source published (a vendor's
performance table, an MLPerf log, an engine's blog), with the hardware, model, number formats,
parallelism and workload the source states, and what it leaves unsaid. This module only reads and
checks them. It does not price them: holding a row against a bound is the lesson's job.

Part and model ids are the course's ids, but the loader does not look them up in the hardware and
model catalogs (a row may name a part or model that is still being added there); it checks only that
they are well-formed ids.

``value`` is in the unit its ``metric`` names (:data:`METRIC_UNITS`): tokens per second, or seconds
for ``ttft_s`` and ``tpot_s``. It is the source's figure, changed only by a unit conversion (ms to s)
or, for a ``*_per_chip`` metric, by dividing an aggregate over the chips the source itself says it
covers (each row's ``notes`` says when).
"""

from __future__ import annotations

import datetime as _dt
import math
import re
from dataclasses import dataclass
from functools import cache
from typing import Any

from ._catalog import load_catalog
from .dtypes import DTYPES
from .errors import RooflineInputError

CATALOG_FILE = "engine_runs.toml"

#: The regime a row mainly illustrates.
REGIMES: tuple[str, ...] = (
    "batch-1 latency", "max throughput", "prefill and TTFT", "many chips", "moe", "4-bit weights",
)

#: What ``value`` measures, and its unit.
METRIC_UNITS: dict[str, str] = {
    "output_tokens_per_s": "output tokens per second, all the row's chips together",
    "output_tokens_per_s_per_chip": "output tokens per second per chip",
    "output_tokens_per_s_per_user": "output tokens per second of one sequence (its decode rate)",
    "total_tokens_per_s": "input + output tokens per second, all the row's chips together",
    "input_tokens_per_s": "input (prefill) tokens per second, all the row's chips together",
    "input_tokens_per_s_per_chip": "input (prefill) tokens per second per chip",
    "ttft_s": "seconds from a request's arrival to its first output token",
    "tpot_s": "seconds per output token after the first",
}
METRICS: tuple[str, ...] = tuple(METRIC_UNITS)

#: A number format the source does not give.
NOT_STATED = "not stated"
DTYPE_CHOICES: tuple[str, ...] = DTYPES + (NOT_STATED,)

_REQUIRED_TEXT = ("id", "regime", "engine", "engine_version", "part", "model", "model_as_published",
                  "weights_dtype", "compute_dtype", "kv_dtype", "metric", "value_as_published", "source",
                  "source_url", "source_file", "published", "taken", "conditions", "unsaid")
_OPTIONAL_COUNTS = ("tensor", "expert", "pipeline", "replicas", "expert_slots", "speculative_tokens", "prompt_tokens",
                    "output_tokens", "batch")
_FIELDS = frozenset(_REQUIRED_TEXT + _OPTIONAL_COUNTS + (
    "chips", "value", "parallelism_stated", "attention_data_parallel", "bits_per_weight", "notes"))
_SLUG = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
_DATE = re.compile(r"^(\d{4})(?:-(\d{2})(?:-(\d{2}))?)?$")


@dataclass(frozen=True)
class EngineRun:
    """One published measurement of an inference engine on real hardware.

    Quantities carry their unit in the field name, except ``value``, whose unit is its ``metric``'s
    (:data:`METRIC_UNITS`: tokens per second, or seconds for ``ttft_s`` / ``tpot_s``). A count the
    source does not give is ``None``; a number format it does not give is ``"not stated"``.
    """

    id: str
    regime: str  #: one of :data:`REGIMES`
    engine: str
    engine_version: str  #: as the source states it, or "not stated"
    part: str  #: the course's hardware id (not looked up in the hardware catalog here)
    chips: int  #: accelerators the figure covers, in total
    parallelism_stated: bool  #: False: tensor/expert/... were inferred (``notes`` says how) or are unknown
    model: str  #: the course's model id (not looked up in the model catalog here)
    model_as_published: str  #: the source's own model name, verbatim
    weights_dtype: str  #: course dtype name or "not stated"
    compute_dtype: str  #: the format the matrix multiplies run in, or "not stated"
    kv_dtype: str  #: the KV cache's format, or "not stated"
    metric: str  #: one of :data:`METRICS`
    value: float  #: the figure, in the unit :data:`METRIC_UNITS` gives for ``metric``
    value_as_published: str  #: the source's figure verbatim, with its unit
    source: str  #: title of the primary source
    source_url: str
    source_file: str  #: repository path (and commit) or page section
    published: str  #: when the source published the figure: YYYY, YYYY-MM or YYYY-MM-DD
    taken: str  #: when this catalog took it (YYYY-MM-DD)
    conditions: str  #: software, settings, power caps: what the source states about the run
    unsaid: str  #: what the source leaves out that a bound needs
    tensor: int | None = None  #: tensor-parallel degree
    expert: int | None = None  #: expert-parallel degree
    pipeline: int | None = None  #: pipeline-parallel degree
    replicas: int | None = None  #: data-parallel copies of the whole model
    attention_data_parallel: bool | None = None  #: attention run data-parallel across the ranks
    expert_slots: int | None = None  #: routed-expert copies placed in all, when redundant experts are stated
    #: tokens drafted per verify step when the run decodes speculatively (MTP layers, a draft model); None: off
    speculative_tokens: int | None = None
    bits_per_weight: float | None = None  #: stored bits per weight, scales included, where the source gives the layout
    prompt_tokens: int | None = None  #: input tokens per request (a dataset mean says so in ``unsaid``)
    output_tokens: int | None = None  #: output tokens per request
    batch: int | None = None  #: concurrent sequences, as stated
    notes: str = ""

    @property
    def unit(self) -> str:
        """The unit of ``value``, in words."""
        return METRIC_UNITS[self.metric]

    @property
    def is_latency(self) -> bool:
        """True when ``value`` is a time in seconds (``ttft_s``, ``tpot_s``): lower is better."""
        return self.metric in ("ttft_s", "tpot_s")


def _bad(row: str, field: str, problem: str) -> RooflineInputError:
    return RooflineInputError(f"{CATALOG_FILE}: run {row!r}: {field} {problem}")


def _text(row: str, entry: dict, field: str) -> str:
    value = entry.get(field)
    if not isinstance(value, str) or not value.strip():
        raise _bad(row, field, f"must be non-empty text, got {value!r}")
    return value.strip()


def _choice(row: str, entry: dict, field: str, allowed: tuple[str, ...]) -> str:
    value = _text(row, entry, field)
    if value not in allowed:
        raise _bad(row, field, f"must be one of {', '.join(repr(a) for a in allowed)}, got {value!r}")
    return value


def _count(row: str, entry: dict, field: str, required: bool = False) -> int | None:
    if field not in entry:
        if required:
            raise _bad(row, field, "is missing (a whole number >= 1)")
        return None
    value = entry[field]
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise _bad(row, field, f"must be a whole number >= 1, got {value!r}")
    return value


def _flag(row: str, entry: dict, field: str, required: bool = False) -> bool | None:
    if field not in entry:
        if required:
            raise _bad(row, field, "is missing (true or false)")
        return None
    value = entry[field]
    if not isinstance(value, bool):
        raise _bad(row, field, f"must be true or false, got {value!r}")
    return value


def _positive(row: str, entry: dict, field: str, required: bool = False) -> float | None:
    if field not in entry:
        if required:
            raise _bad(row, field, "is missing (a number > 0)")
        return None
    value = entry[field]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise _bad(row, field, f"must be a finite number > 0, got {value!r}")
    return float(value)


def _date(row: str, entry: dict, field: str, full: bool) -> str:
    value = entry.get(field)
    if isinstance(value, _dt.date):  # TOML reads a bare 2025-03-01 as a date
        value = value.isoformat()
    if not isinstance(value, str):
        raise _bad(row, field, f"must be a date as text (YYYY-MM-DD{'' if full else ', YYYY-MM or YYYY'}), "
                               f"got {value!r}")
    match = _DATE.match(value.strip())
    if not match or (full and match.group(3) is None):
        raise _bad(row, field, f"must be YYYY-MM-DD{'' if full else ', YYYY-MM or YYYY'}, got {value!r}")
    year, month, day = (int(g) if g else 1 for g in match.groups())
    try:
        _dt.date(year, month, day)
    except ValueError:
        raise _bad(row, field, f"is not a calendar date: {value!r}") from None
    return value.strip()


def run_from_entry(entry: Any, position: int = 0) -> EngineRun:
    """Check one ``[[runs]]`` table and build its :class:`EngineRun`.

    Every problem raises :class:`RooflineInputError` naming the row (its id, or its position when the
    id itself is bad), the field, and what is allowed.
    """
    if not isinstance(entry, dict):
        raise RooflineInputError(f"{CATALOG_FILE}: run #{position + 1} must be a table, got {entry!r}")
    raw_id = entry.get("id")
    row = raw_id if isinstance(raw_id, str) and raw_id.strip() else f"#{position + 1}"
    unknown = sorted(set(entry) - _FIELDS)
    if unknown:
        raise _bad(row, ", ".join(unknown), f"is not a field of a run (fields: {', '.join(sorted(_FIELDS))})")
    run_id = _text(row, entry, "id")
    if not _SLUG.match(run_id):
        raise _bad(row, "id", "must be a slug: lower-case letters, digits, '.', '_' and '-'")
    for field in ("part", "model"):
        if not _SLUG.match(_text(row, entry, field)):
            raise _bad(row, field, f"must be a course id (lower-case slug), got {entry[field]!r}")
    url = _text(row, entry, "source_url")
    if not url.startswith("https://"):
        raise _bad(row, "source_url", f"must be an https:// address, got {url!r}")
    counts = {f: _count(row, entry, f) for f in _OPTIONAL_COUNTS}
    chips = _count(row, entry, "chips", required=True)
    for field in ("tensor", "expert", "pipeline", "replicas"):
        if counts[field] is not None and counts[field] > chips:
            raise _bad(row, field, f"({counts[field]}) cannot exceed chips ({chips})")
    spread = math.prod(counts[f] or 1 for f in ("tensor", "pipeline", "replicas"))
    if spread > chips:
        raise _bad(row, "tensor × pipeline × replicas", f"({spread}) cannot exceed chips ({chips})")
    regime = _choice(row, entry, "regime", REGIMES)
    if regime == "batch-1 latency" and counts["batch"] != 1:
        raise _bad(row, "batch", f"must be 1 for a 'batch-1 latency' run, got {counts['batch']!r}")
    published = _date(row, entry, "published", full=False)
    taken = _date(row, entry, "taken", full=True)
    if published > taken[: len(published)]:
        raise _bad(row, "published", f"({published}) is after taken ({taken})")
    return EngineRun(
        id=run_id,
        regime=regime,
        engine=_text(row, entry, "engine"),
        engine_version=_text(row, entry, "engine_version"),
        part=entry["part"].strip(),
        chips=chips,
        parallelism_stated=_flag(row, entry, "parallelism_stated", required=True),
        model=entry["model"].strip(),
        model_as_published=_text(row, entry, "model_as_published"),
        weights_dtype=_choice(row, entry, "weights_dtype", DTYPE_CHOICES),
        compute_dtype=_choice(row, entry, "compute_dtype", DTYPE_CHOICES),
        kv_dtype=_choice(row, entry, "kv_dtype", DTYPE_CHOICES),
        metric=_choice(row, entry, "metric", METRICS),
        value=_positive(row, entry, "value", required=True),
        value_as_published=_text(row, entry, "value_as_published"),
        source=_text(row, entry, "source"),
        source_url=url,
        source_file=_text(row, entry, "source_file"),
        published=published,
        taken=taken,
        conditions=_text(row, entry, "conditions"),
        unsaid=_text(row, entry, "unsaid"),
        attention_data_parallel=_flag(row, entry, "attention_data_parallel"),
        bits_per_weight=_positive(row, entry, "bits_per_weight"),
        notes=str(entry.get("notes", "")).strip(),
        **counts,
    )


def runs_from_catalog(data: Any) -> tuple[EngineRun, ...]:
    """Check a parsed catalog (``{"runs": [...]}``) and return its runs in file order; ids must be unique."""
    if not isinstance(data, dict) or not isinstance(data.get("runs"), list) or not data["runs"]:
        raise RooflineInputError(f"{CATALOG_FILE} must hold a non-empty [[runs]] array")
    runs = tuple(run_from_entry(entry, i) for i, entry in enumerate(data["runs"]))
    seen: set[str] = set()
    for run in runs:
        if run.id in seen:
            raise _bad(run.id, "id", "is used by more than one run")
        seen.add(run.id)
    return runs


@cache
def list_engine_runs() -> tuple[EngineRun, ...]:
    """Every run in ``data/engine_runs.toml``, checked, in file order."""
    return runs_from_catalog(load_catalog(CATALOG_FILE))


def get_engine_run(run_id: str) -> EngineRun:
    """One run by id; an unknown id lists the ids there are."""
    for run in list_engine_runs():
        if run.id == run_id:
            return run
    ids = ", ".join(r.id for r in list_engine_runs())
    raise RooflineInputError(f"unknown engine run {run_id!r}; runs are: {ids}")
