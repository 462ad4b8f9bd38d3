"""The hardware catalog: peak rates, memory bandwidth and capacity of accelerators.

Figures live in ``data/hardware.toml`` with their source and date; this module only reads them.
All rates are SI: FLOP/s and bytes/s. Peak rates are dense (no structured sparsity).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

from ._catalog import load_catalog
from .dtypes import DTYPES, check_dtype
from .errors import RooflineInputError, unknown_name_error
from .units import GiB


@dataclass(frozen=True)
class Measurement:
    """A measured (not vendor) figure for a part: what real kernels reach."""

    quantity: str  #: e.g. "matmul_flops_per_s", "bandwidth_bytes_per_s"
    value: float  #: in the unit its quantity names (FLOP/s or bytes/s)
    what: str
    source: str
    dtype: str | None = None
    kernel: str | None = None
    model: str | None = None  #: model id, for a measured end-to-end figure
    tokens_per_s: float | None = None  #: measured decode rate, for a measured end-to-end figure
    head_dim: int | None = None  #: attention kernels: the head dimension measured
    causal: bool | None = None  #: attention kernels: causal mask or not
    sequence_length: int | None = None  #: attention kernels: tokens per sequence at the quoted rate
    conditions: str = ""  #: everything else a like-with-like comparison needs
    shape: str = ""  #: matmul benchmarks: the M×N×K the figure was measured at
    software: str = ""  #: the software build the figure was measured with
    date: str = ""  #: when the source was published (ISO date), where the catalog records it
    chips: int | None = None  #: collectives: how many chips took part


#: Why a part has no dense rate for a format (``Part.rate_status``): the catalog holds the rate; the chip has no
#: arithmetic in that format; the vendor publishes no figure for it; or none of these is recorded.
RATE_IN_CATALOG = "in the catalog"
RATE_NO_UNITS = "no units"
RATE_NOT_PUBLISHED = "not published"
RATE_NOT_IN_CATALOG = "not in the catalog"
RATE_GAP_KINDS = (RATE_NO_UNITS, RATE_NOT_PUBLISHED)  #: the kinds ``rate_gaps`` in hardware.toml may give

#: figures a catalog entry may carry a second published value for (``alternative_figures``): a top-level
#: field, or a rate as "dense_flops_per_s.<dtype>" / "sparse_flops_per_s.<dtype>"
ALTERNATIVE_FIELDS = ("memory_bandwidth_bytes_per_s", "memory_capacity_gib", "dense_flops_per_s", "sparse_flops_per_s")


@dataclass(frozen=True)
class RateGap:
    """Why a part has no dense rate for ``dtype``: ``kind`` is one of :data:`RATE_GAP_KINDS`."""

    dtype: str
    kind: str
    why: str


@dataclass(frozen=True)
class AlternativeFigure:
    """A second published value for a figure the catalog holds, kept beside the one the course uses."""

    field: str  #: "memory_bandwidth_bytes_per_s", "dense_flops_per_s.fp32", …
    value: float  #: in the field's unit (bytes/s, FLOP/s, GiB)
    used_value: float  #: the catalog's own figure for the field, the one every computation uses
    source: str
    as_of: str
    why_not_used: str  #: which figure the course uses and why


#: what a part's ``compute_units`` count: NVIDIA streaming multiprocessors, AMD compute units, TPU TensorCores
COMPUTE_UNIT_NAMES = ("SM", "CU", "TensorCore")

#: the links a part may have: the scale-up fabric inside a server (NVLink, Infinity Fabric, ICI), PCIe to
#: the host, and the scale-out network between servers (a reference NIC per chip: InfiniBand, RoCE)
LINK_KINDS = ("scale-up", "pcie", "scale-out")
LATENCY_BASES = ("assumed", "measured")
_LINK_FIELDS = {"scale-up": "scale_up_link", "pcie": "host_link", "scale-out": "scale_out_link"}


@dataclass(frozen=True)
class Link:
    """A link between chips. Bandwidths are SI bytes/s; every computation uses the per-direction rate.

    Vendors quote the bidirectional total (both directions added); a ring all-reduce, an all-to-all
    or a pipeline send is limited by one direction, half of it. Both are kept so a lesson can show
    the trap; the catalog refuses a pair whose per-direction figure is not half the total.
    """

    kind: str  #: "scale-up" (NVLink, Infinity Fabric, ICI), "pcie" (the host link) or "scale-out" (the NIC)
    name: str
    per_direction_bytes_per_s: float
    bidirectional_bytes_per_s: float  #: the vendor's headline, kept beside the figure we use
    #: most chips one domain of this link joins (a server's, for scale-up and PCIe); None for a scale-out
    #: network: the course does not bound the cluster (it assumes a non-blocking fabric)
    max_chips: int | None
    latency_s: float  #: fixed cost of one collective call, seconds
    latency_basis: str  #: "assumed" (an order of magnitude) or "measured"
    latency_source: str  #: where ``latency_s`` comes from (for an assumption: what it rests on)
    source: str
    as_of: str
    notes: str = ""
    #: True when the link's switch reduces in the switch (NVLink SHARP, "NVLS", on third-generation
    #: NVSwitch, NVLink 4 and later; InfiniBand SHARP in the network's switches): an all-reduce then
    #: sends each byte once instead of the ring's 2(n − 1)/n; ``in_switch_source`` says where that comes from
    in_switch_reduction: bool = False
    in_switch_source: str = ""


@dataclass(frozen=True)
class Part:
    """One accelerator. Rates are per chip (per GPU), dense unless a field says sparse."""

    id: str
    name: str
    vendor: str
    memory_type: str
    memory_bandwidth_bytes_per_s: float
    memory_capacity_bytes: float  #: binary: a vendor's "80 GB" of HBM is 80 GiB = 80 × 2^30 bytes
    dense_flops_per_s: Mapping[str, float]
    sparse_flops_per_s: Mapping[str, float]
    source: str
    as_of: str
    notes: str = ""
    last_level_cache_bytes: int | None = None  #: binary: 50 MiB = 52,428,800 bytes
    last_level_cache_name: str | None = None
    #: the most shared memory one SM (compute unit) can hold, binary (228 KiB = 233,472 bytes): the largest
    #: carveout of its L1/shared array, not the array (compute capability 8.9: 100 KiB of a 128 KiB array)
    shared_memory_per_sm_bytes: int | None = None
    measured: tuple[Measurement, ...] = field(default=())
    board_power_w: float | None = None  #: rated board power (TDP), watts, of the configuration whose rates these are
    board_power_source: str = ""  #: where ``board_power_w`` comes from
    board_power_as_of: str = ""  #: date of that source (ISO)
    scale_up_link: Link | None = None  #: NVLink / Infinity Fabric / ICI; None for PCIe-only parts
    host_link: Link | None = None  #: PCIe to the host (the only path between PCIe-only parts)
    #: the scale-out network between servers: one reference NIC per chip (None: no published reference)
    scale_out_link: Link | None = None
    #: special-function (multi-function unit) operations per second: exponentials, reciprocals, … (one
    #: operation per result, no FMA doubling); None where the catalog has no sourced figure
    special_function_ops_per_s: float | None = None
    special_function_source: str = ""  #: where ``special_function_ops_per_s`` comes from
    special_function_as_of: str = ""  #: date of that source (ISO)
    rate_gaps: Mapping[str, RateGap] = field(default_factory=lambda: MappingProxyType({}))
    alternative_figures: tuple[AlternativeFigure, ...] = field(default=())
    #: parallel compute units the chip's work is spread over: streaming multiprocessors on NVIDIA GPUs,
    #: compute units on AMD GPUs, TensorCores on a TPU (``compute_unit_name`` says which); None where no
    #: source the catalog read gives the count (``compute_units_note`` then says so)
    compute_units: int | None = None
    compute_unit_name: str | None = None  #: one of :data:`COMPUTE_UNIT_NAMES`, with ``compute_units``
    compute_units_source: str = ""  #: where ``compute_units`` comes from
    compute_units_as_of: str = ""  #: date of that source, or of the catalog's reading of it (ISO)
    compute_units_note: str = ""  #: why the count is absent, or what a reader should know about it

    @property
    def dtypes(self) -> tuple[str, ...]:
        """The dtypes this catalog has a dense peak rate for."""
        return tuple(self.dense_flops_per_s)

    def peak_flops_per_s(self, dtype: str = "bf16") -> float:
        """Dense peak FLOP/s for ``dtype``; a clear error if the part has no such rate."""
        check_dtype(dtype)
        try:
            return self.dense_flops_per_s[dtype]
        except KeyError:
            gap = self.rate_gaps.get(dtype)
            extra = f" ({gap.kind}: {gap.why})" if gap else ""
            raise RooflineInputError(
                f"{self.id} has no {dtype} rate in the catalog{extra}; "
                f"rates it has: {', '.join(self.dtypes)}"
            ) from None

    def rate_status(self, dtype: str) -> str:
        """Whether the catalog has a dense ``dtype`` rate for this part, and if not, why: one of
        :data:`RATE_IN_CATALOG`, :data:`RATE_NO_UNITS` (the chip has no arithmetic in that format),
        :data:`RATE_NOT_PUBLISHED` (the vendor gives no figure) or :data:`RATE_NOT_IN_CATALOG` (no reason
        recorded: a figure may exist that the catalog has not taken in)."""
        check_dtype(dtype)
        if dtype in self.dense_flops_per_s:
            return RATE_IN_CATALOG
        gap = self.rate_gaps.get(dtype)
        return gap.kind if gap else RATE_NOT_IN_CATALOG

    def special_function_peak_ops_per_s(self) -> float:
        """Special-function operations per second (the exponentials of a softmax run on these units),
        from ``special_function_source``; a clear error where the catalog has no figure for the part."""
        if self.special_function_ops_per_s is None:
            have = [pid for pid in list_parts() if get_part(pid).special_function_ops_per_s is not None]
            raise RooflineInputError(f"{self.id} has no special-function rate in the catalog; parts that have one: "
                                     f"{', '.join(have) or 'none'}")
        return self.special_function_ops_per_s

    def alternatives(self, field_name: str | None = None) -> tuple[AlternativeFigure, ...]:
        """Second published values for this part's figures (all, or those of ``field_name``)."""
        return tuple(a for a in self.alternative_figures if field_name is None or a.field == field_name)

    def sparse_headline_flops_per_s(self, dtype: str = "bf16") -> float | None:
        """The vendor's with-sparsity headline for ``dtype``, or None if none is quoted."""
        check_dtype(dtype)
        return self.sparse_flops_per_s.get(dtype)

    def ridge_point_flop_per_byte(self, dtype: str = "bf16") -> float:
        """Intensity where the compute and bandwidth roofs meet: peak / bandwidth (FLOP/byte)."""
        return self.peak_flops_per_s(dtype) / self.memory_bandwidth_bytes_per_s

    def link(self, kind: str = "scale-up") -> Link:
        """The link of ``kind`` ("scale-up", "pcie" or "scale-out"); a clear error when the part has none."""
        if kind not in LINK_KINDS:
            raise RooflineInputError(f"unknown link {kind!r}; links are: {', '.join(LINK_KINDS)}")
        link = getattr(self, _LINK_FIELDS[kind])
        if link is None:
            has = [k for k in LINK_KINDS if getattr(self, _LINK_FIELDS[k]) is not None]
            what = {"scale-up": "no scale-up link (PCIe only)", "pcie": "no PCIe host link in the catalog",
                    "scale-out": "no scale-out link in the catalog (no published reference NIC per chip)"}[kind]
            raise RooflineInputError(f"{self.id} has {what}; links it has: {', '.join(has) or 'none'}")
        return link

    def measurements(self, quantity: str | None = None) -> tuple[Measurement, ...]:
        """Measured figures, optionally only those of one ``quantity``."""
        return tuple(m for m in self.measured if quantity is None or m.quantity == quantity)


def _capacity_bytes(part_id: str, entry: dict) -> float:
    """Device memory in bytes from the catalog's ``memory_capacity_gib`` (vendors' GB of HBM are GiB)."""
    if "memory_capacity_gib" not in entry:
        raise ValueError(f"hardware.toml: part {part_id!r} needs memory_capacity_gib (the vendor's 'GB' of "
                         "device memory, which is binary)")
    return float(entry["memory_capacity_gib"]) * GiB


def _part_from_entry(part_id: str, entry: dict) -> Part:
    dense = {check_dtype(k): float(v) for k, v in entry["dense_flops_per_s"].items()}
    sparse = {check_dtype(k): float(v) for k, v in entry.get("sparse_flops_per_s", {}).items()}
    measured = tuple(
        Measurement(
            quantity=m["quantity"],
            value=float(m["value"]),
            what=m["what"],
            source=m["source"],
            dtype=m.get("dtype"),
            kernel=m.get("kernel"),
            model=m.get("model"),
            tokens_per_s=m.get("tokens_per_s"),
            head_dim=m.get("head_dim"),
            causal=m.get("causal"),
            sequence_length=m.get("sequence_length"),
            conditions=m.get("conditions", ""),
            shape=m.get("shape", ""),
            software=m.get("software", ""),
            date=str(m.get("date", "")),
            chips=m.get("chips"),
        )
        for m in entry.get("measured", [])
    )
    return Part(
        id=part_id,
        name=entry["name"],
        vendor=entry["vendor"],
        memory_type=entry["memory_type"],
        memory_bandwidth_bytes_per_s=float(entry["memory_bandwidth_bytes_per_s"]),
        memory_capacity_bytes=_capacity_bytes(part_id, entry),
        dense_flops_per_s=MappingProxyType(dense),
        sparse_flops_per_s=MappingProxyType(sparse),
        source=entry["source"],
        as_of=entry["as_of"],
        notes=entry.get("notes", ""),
        last_level_cache_bytes=entry.get("last_level_cache_bytes"),
        last_level_cache_name=entry.get("last_level_cache_name"),
        shared_memory_per_sm_bytes=entry.get("shared_memory_per_sm_bytes"),
        measured=measured,
        board_power_w=_board_power_w(part_id, entry),
        board_power_source=entry.get("board_power_source", ""),
        board_power_as_of=str(entry.get("board_power_as_of", "")),
        scale_up_link=_link(part_id, "scale-up", entry.get("scale_up_link")),
        host_link=_link(part_id, "pcie", entry.get("host_link")),
        scale_out_link=_link(part_id, "scale-out", entry.get("scale_out_link")),
        special_function_ops_per_s=_special_function(part_id, entry),
        special_function_source=entry.get("special_function_source", ""),
        special_function_as_of=str(entry.get("special_function_as_of", "")),
        rate_gaps=MappingProxyType(_rate_gaps(part_id, entry, dense)),
        alternative_figures=tuple(_alternative(part_id, entry, a) for a in entry.get("alternative_figures", [])),
        **_compute_units(part_id, entry),
    )


def _compute_units(part_id: str, entry: dict) -> dict:
    """``compute_units`` and its name, source and date, checked: a whole number >= 1 with a name from
    :data:`COMPUTE_UNIT_NAMES`, a source and a date; absent, a note may say why."""
    note = str(entry.get("compute_units_note", ""))
    if "compute_units" not in entry:
        for key in ("compute_unit_name", "compute_units_source", "compute_units_as_of"):
            if key in entry:
                raise ValueError(f"hardware.toml: part {part_id!r} gives {key} without compute_units")
        return {"compute_units_note": note}
    where = f"hardware.toml: part {part_id!r}"
    value = entry["compute_units"]
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{where}: compute_units must be a whole number >= 1, got {value!r}")
    name = entry.get("compute_unit_name")
    if name not in COMPUTE_UNIT_NAMES:
        raise ValueError(f"{where}: compute_unit_name must be one of {', '.join(COMPUTE_UNIT_NAMES)}, got {name!r}")
    if not str(entry.get("compute_units_source", "")).strip() or not str(entry.get("compute_units_as_of", "")).strip():
        raise ValueError(f"{where} gives compute_units without compute_units_source and compute_units_as_of")
    return {"compute_units": int(value), "compute_unit_name": name,
            "compute_units_source": entry["compute_units_source"],
            "compute_units_as_of": str(entry["compute_units_as_of"]), "compute_units_note": note}


def _special_function(part_id: str, entry: dict) -> float | None:
    """The special-function rate, or None; a figure without its source and date is refused."""
    return _sourced_figure(part_id, entry, "special_function_ops_per_s", "special_function")


def _rate_gaps(part_id: str, entry: dict, dense: Mapping[str, float]) -> dict[str, RateGap]:
    """``rate_gaps``: for a dtype without a dense rate, why (``no units`` / ``not published``), checked."""
    gaps = {}
    for dt, gap in entry.get("rate_gaps", {}).items():
        where = f"hardware.toml: part {part_id!r} rate_gaps.{dt}"
        check_dtype(dt)
        if dt in dense:
            raise ValueError(f"{where}: the part has a dense {dt} rate, so it has no gap")
        if not isinstance(gap, dict) or gap.get("kind") not in RATE_GAP_KINDS or not str(gap.get("why", "")).strip():
            raise ValueError(f"{where} needs kind (one of {', '.join(RATE_GAP_KINDS)}) and why, got {gap!r}")
        gaps[dt] = RateGap(dt, gap["kind"], gap["why"])
    return gaps


def _alternative(part_id: str, entry: dict, alt: dict) -> AlternativeFigure:
    """One ``alternative_figures`` entry, checked: a figure the part holds, another value, source, date, why."""
    where = f"hardware.toml: part {part_id!r} alternative_figures"
    for key in ("field", "value", "source", "as_of", "why_not_used"):
        if not str(alt.get(key, "")).strip():
            raise ValueError(f"{where} needs {key}")
    name = alt["field"]
    head, _, dt = name.partition(".")
    if head not in ALTERNATIVE_FIELDS or (head.endswith("flops_per_s") != bool(dt)):
        raise ValueError(f"{where}: field {name!r} is not one of {', '.join(ALTERNATIVE_FIELDS)} "
                         "(a rate as 'dense_flops_per_s.<dtype>')")
    used = entry.get(head, {}).get(dt) if dt else entry.get(head)
    if used is None:
        raise ValueError(f"{where}: field {name!r} has no value of its own in the catalog to stand beside")
    value = float(alt["value"])
    if not value > 0 or value == float(used):
        raise ValueError(f"{where}: value for {name!r} must be > 0 and differ from the catalog's {float(used):g}")
    return AlternativeFigure(field=name, value=value, used_value=float(used), source=alt["source"],
                             as_of=str(alt["as_of"]), why_not_used=alt["why_not_used"])


def _link(part_id: str, kind: str, entry: dict | None) -> Link | None:
    """A catalog link, checked: per direction = half the bidirectional total, source and date given."""
    if entry is None:
        return None
    where = f"hardware.toml: part {part_id!r} {kind} link"
    for key in ("name", "per_direction_bytes_per_s", "bidirectional_bytes_per_s", "max_chips", "latency_s",
                "latency_basis", "latency_source", "source", "as_of"):
        if key not in entry and not (key == "max_chips" and kind == "scale-out"):
            raise ValueError(f"{where} needs {key}")
    if kind == "scale-out" and "max_chips" in entry:
        raise ValueError(f"{where}: a scale-out network has no max_chips (the course does not bound the cluster)")
    for key in ("name", "source", "as_of", "latency_source"):
        if not str(entry[key]).strip():
            raise ValueError(f"{where}: {key} must not be empty")
    per, both = float(entry["per_direction_bytes_per_s"]), float(entry["bidirectional_bytes_per_s"])
    if not per > 0:
        raise ValueError(f"{where}: per_direction_bytes_per_s must be > 0, got {per:g}")
    max_chips = entry.get("max_chips")
    if kind != "scale-out" and (isinstance(max_chips, bool) or not isinstance(max_chips, int) or max_chips < 2):
        raise ValueError(f"{where}: max_chips must be a whole number >= 2 (a link joins chips), got {max_chips!r}")
    if not float(entry["latency_s"]) >= 0:
        raise ValueError(f"{where}: latency_s must be >= 0 seconds, got {entry['latency_s']!r}")
    if abs(2 * per - both) > 1e-9 * both:
        raise ValueError(f"{where}: per_direction_bytes_per_s ({per:g}) must be half of bidirectional_bytes_per_s "
                         f"({both:g})")
    if entry["latency_basis"] not in LATENCY_BASES:
        raise ValueError(f"{where}: latency_basis must be one of {', '.join(LATENCY_BASES)}")
    return Link(kind=kind, name=entry["name"], per_direction_bytes_per_s=per, bidirectional_bytes_per_s=both,
                max_chips=None if max_chips is None else int(max_chips), latency_s=float(entry["latency_s"]),
                latency_basis=entry["latency_basis"], latency_source=entry["latency_source"],
                source=entry["source"], as_of=str(entry["as_of"]), notes=entry.get("notes", ""),
                in_switch_reduction=_in_switch(where, entry), in_switch_source=entry.get("in_switch_source", ""))


def _in_switch(where: str, entry: dict) -> bool:
    value = entry.get("in_switch_reduction", False)
    if not isinstance(value, bool):
        raise ValueError(f"{where}: in_switch_reduction must be true or false, got {value!r}")
    if value and not str(entry.get("in_switch_source", "")).strip():
        raise ValueError(f"{where}: in_switch_reduction = true needs in_switch_source")
    return value


def _board_power_w(part_id: str, entry: dict) -> float | None:
    """The rated board power in watts, or None; a figure without its source and date is refused."""
    return _sourced_figure(part_id, entry, "board_power_w", "board_power")


def _sourced_figure(part_id: str, entry: dict, field: str, prefix: str) -> float | None:
    """``entry[field]`` as a positive number, or None when absent; refused without
    ``<prefix>_source`` and ``<prefix>_as_of`` beside it, or when not above 0."""
    if field not in entry:
        return None
    if not entry.get(f"{prefix}_source") or not entry.get(f"{prefix}_as_of"):
        raise ValueError(f"hardware.toml: part {part_id!r} gives {field} without {prefix}_source and {prefix}_as_of")
    value = float(entry[field])
    if not value > 0:
        raise ValueError(f"hardware.toml: part {part_id!r}: {field} must be > 0, got {value:g}")
    return value


def _parts() -> dict[str, Part]:
    raw = load_catalog("hardware.toml")["parts"]
    return {pid: _part_from_entry(pid, entry) for pid, entry in raw.items()}


_PARTS: dict[str, Part] | None = None


def list_parts() -> tuple[str, ...]:
    """All part ids in catalog order."""
    return tuple(_all())


def compute_dtypes() -> tuple[str, ...]:
    """The dtypes (in ``DTYPES`` order) that at least one catalog part has a dense rate for: what a
    "compute in" control can offer (a 4-bit *storage* format no part computes in is left out)."""
    rated = {d for part in _all().values() for d in part.dense_flops_per_s}
    return tuple(d for d in DTYPES if d in rated)


def _all() -> dict[str, Part]:
    global _PARTS
    if _PARTS is None:
        _PARTS = _parts()
    return _PARTS


def get_part(part_id: str | Part) -> Part:
    """Look a part up by id (``"h100-sxm"``); an unknown id names the closest ids."""
    if isinstance(part_id, Part):
        return part_id
    parts = _all()
    if isinstance(part_id, str) and part_id.strip().lower() in parts:
        return parts[part_id.strip().lower()]
    raise unknown_name_error("hardware id", part_id, parts)
