"""Saving and loading measurements: one JSON file per machine that a learner can keep, compare and
redraw without measuring again. Writes are atomic; a corrupt or foreign file gives a clear
message (:class:`MeasurementFileError`), never a traceback from deep inside json."""

from __future__ import annotations

import json
from pathlib import Path

from ..core.files import atomic_write_text
from .probes import BandwidthSample, KernelSample, MatmulSample, Measurement, Timing

SCHEMA = "roofline-lessons/measurement"
VERSION = 1


class MeasurementFileError(ValueError):
    """The file is not a readable Roofline Lessons measurement; the message says why and what to do."""


def to_json(m: Measurement) -> str:
    return json.dumps({"schema": SCHEMA, "version": VERSION, **m.to_dict()}, indent=1)


def save(m: Measurement, path: Path | str) -> Path:
    """Write ``m`` to ``path`` atomically (the old file, if any, stays intact until the new one is whole)."""
    path = Path(path)
    atomic_write_text(path, to_json(m) + "\n")
    return path


DATA_ENV = "ROOFLINE_LESSONS_DATA"


def data_dir() -> Path:
    """Where the course keeps a learner's files: $ROOFLINE_LESSONS_DATA, else
    $XDG_DATA_HOME/roofline-lessons, else ~/.local/share/roofline-lessons."""
    import os

    if os.environ.get(DATA_ENV):
        return Path(os.environ[DATA_ENV]).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "roofline-lessons"


def new_path(m: Measurement, directory: Path | str | None = None) -> Path:
    """A fresh file name for ``m``: ``measurements/<host>-<mode>-<time>.json``. Never an existing file,
    so saving a new measurement never overwrites an old one."""
    import re
    import time

    folder = Path(directory) if directory is not None else data_dir() / "measurements"
    host = re.sub(r"[^A-Za-z0-9_.-]+", "-", str(m.machine.get("hostname") or "this-machine"))
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = folder / f"{host}-{m.mode}-{stamp}.json"
    n = 1
    while path.exists():
        n += 1
        path = folder / f"{host}-{m.mode}-{stamp}-{n}.json"
    return path


def saved(directory: Path | str | None = None) -> list[Path]:
    """Saved measurement files, oldest first."""
    folder = Path(directory) if directory is not None else data_dir() / "measurements"
    return sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime)


def _timing(d: dict) -> Timing:
    return Timing(float(d["best_s"]), float(d["median_s"]), float(d["worst_s"]))


def from_dict(data: object, where: str = "the data") -> Measurement:
    """Rebuild a :class:`Measurement`; raises :class:`MeasurementFileError` naming what is wrong."""
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise MeasurementFileError(
            f"{where} is not a Roofline Lessons measurement (no \"schema\": \"{SCHEMA}\" in it). "
            "Measure again with roofline_lessons.measure.probes.measure() and save with results.save().")
    if data.get("version") != VERSION:
        raise MeasurementFileError(f"{where} is measurement format version {data.get('version')!r}; this course reads "
                                   f"version {VERSION}. Measure again to get a file this version can read.")
    try:
        return Measurement(
            machine=dict(data["machine"]),
            mode=str(data["mode"]),
            created=str(data["created"]),
            bandwidth=[BandwidthSample(b["kernel"], int(b["working_set_bytes"]), int(b["bytes_moved"]),
                                       _timing(b["timing"]), threads=int(b.get("threads", 1)),
                                       passes=int(b.get("passes", 1))) for b in data["bandwidth"]],
            matmul=[MatmulSample(m["dtype"], int(m["n"]), float(m["flops"]), _timing(m["timing"]))
                    for m in data["matmul"]],
            kernels=[KernelSample(k["name"], k["shape"], float(k["flops"]), float(k["bytes_estimated"]),
                                  _timing(k["timing"])) for k in data["kernels"]],
            gpu=data.get("gpu"),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise MeasurementFileError(f"{where} looks like a measurement but is damaged ({type(exc).__name__}: {exc}). "
                                   "Measure again and save a fresh file.") from None


def load(path: Path | str) -> Measurement:
    """Read a saved measurement; a missing, corrupt or foreign file raises :class:`MeasurementFileError`."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise MeasurementFileError(f"{path} does not exist. Measure first, then save with results.save().") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise MeasurementFileError(f"{path} cannot be read ({exc}).") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise MeasurementFileError(f"{path} is not valid JSON (line {exc.lineno}: {exc.msg}); it may have been cut "
                                   "short. Measure again to replace it.") from None
    return from_dict(data, str(path))


def example() -> Measurement:
    """A measurement shipped with the course (quick mode, from the machine named inside it), for
    redrawing and for the exercises when you have not measured yet."""
    from importlib import resources

    text = resources.files("roofline_lessons").joinpath("data", "example_measurement.json").read_text("utf-8")
    return from_dict(json.loads(text), "the example measurement")
