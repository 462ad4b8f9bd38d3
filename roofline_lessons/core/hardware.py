"""The hardware catalog: peak rates, memory bandwidth and capacity of accelerators.

Figures live in ``data/hardware.toml`` with their source and date; this module only reads them.
All rates are SI: FLOP/s and bytes/s. Peak rates are dense (no structured sparsity).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

from ._catalog import load_catalog
from .dtypes import check_dtype
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


LINK_KINDS = ("scale-up", "pcie")  #: the links a placement may ask for by name
LATENCY_BASES = ("assumed", "measured")


@dataclass(frozen=True)
class Link:
    """A link between chips. Bandwidths are SI bytes/s; every computation uses the per-direction rate.

    Vendors quote the bidirectional total (both directions added); a ring all-reduce, an all-to-all
    or a pipeline send is limited by one direction, half of it. Both are kept so a lesson can show
    the trap; the catalog refuses a pair whose per-direction figure is not half the total.
    """

    kind: str  #: "scale-up" (NVLink, Infinity Fabric, ICI) or "pcie" (the host link)
    name: str
    per_direction_bytes_per_s: float
    bidirectional_bytes_per_s: float  #: the vendor's headline, kept beside the figure we use
    max_chips: int  #: most chips one domain of this link joins
    latency_s: float  #: fixed cost of one collective call, seconds
    latency_basis: str  #: "assumed" (an order of magnitude) or "measured"
    latency_source: str  #: where ``latency_s`` comes from (for an assumption: what it rests on)
    source: str
    as_of: str
    notes: str = ""
    #: True when the link's switch reduces in the switch (NVLink SHARP, "NVLS", on third-generation
    #: NVSwitch, NVLink 4 and later): an all-reduce then sends each byte once instead of the ring's
    #: 2(n − 1)/n; ``in_switch_source`` says where that comes from
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
    shared_memory_per_sm_bytes: int | None = None  #: binary: 228 KiB = 233,472 bytes
    measured: tuple[Measurement, ...] = field(default=())
    board_power_w: float | None = None  #: rated board power (TDP), watts, of the configuration whose rates these are
    board_power_source: str = ""  #: where ``board_power_w`` comes from
    board_power_as_of: str = ""  #: date of that source (ISO)
    scale_up_link: Link | None = None  #: NVLink / Infinity Fabric / ICI; None for PCIe-only parts
    host_link: Link | None = None  #: PCIe to the host (the only path between PCIe-only parts)

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
            extra = " (the A100 has no FP8 units at all)" if self.id == "a100-80gb" and dtype == "fp8" else ""
            raise RooflineInputError(
                f"{self.id} has no {dtype} rate in the catalog{extra}; "
                f"rates it has: {', '.join(self.dtypes)}"
            ) from None

    def sparse_headline_flops_per_s(self, dtype: str = "bf16") -> float | None:
        """The vendor's with-sparsity headline for ``dtype``, or None if none is quoted."""
        check_dtype(dtype)
        return self.sparse_flops_per_s.get(dtype)

    def ridge_point_flop_per_byte(self, dtype: str = "bf16") -> float:
        """Intensity where the compute and bandwidth roofs meet: peak / bandwidth (FLOP/byte)."""
        return self.peak_flops_per_s(dtype) / self.memory_bandwidth_bytes_per_s

    def link(self, kind: str = "scale-up") -> Link:
        """The link of ``kind`` ("scale-up" or "pcie"); a clear error when the part has none."""
        if kind not in LINK_KINDS:
            raise RooflineInputError(f"unknown link {kind!r}; links are: {', '.join(LINK_KINDS)}")
        link = self.scale_up_link if kind == "scale-up" else self.host_link
        if link is None:
            has = [k for k in LINK_KINDS if (self.scale_up_link if k == "scale-up" else self.host_link)]
            what = "no scale-up link (PCIe only)" if kind == "scale-up" else "no PCIe host link in the catalog"
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
    )


def _link(part_id: str, kind: str, entry: dict | None) -> Link | None:
    """A catalog link, checked: per direction = half the bidirectional total, source and date given."""
    if entry is None:
        return None
    where = f"hardware.toml: part {part_id!r} {kind} link"
    for key in ("name", "per_direction_bytes_per_s", "bidirectional_bytes_per_s", "max_chips", "latency_s",
                "latency_basis", "latency_source", "source", "as_of"):
        if key not in entry:
            raise ValueError(f"{where} needs {key}")
    for key in ("name", "source", "as_of", "latency_source"):
        if not str(entry[key]).strip():
            raise ValueError(f"{where}: {key} must not be empty")
    per, both = float(entry["per_direction_bytes_per_s"]), float(entry["bidirectional_bytes_per_s"])
    if not per > 0:
        raise ValueError(f"{where}: per_direction_bytes_per_s must be > 0, got {per:g}")
    if isinstance(entry["max_chips"], bool) or not isinstance(entry["max_chips"], int) or entry["max_chips"] < 2:
        raise ValueError(f"{where}: max_chips must be a whole number >= 2 (a link joins chips), "
                         f"got {entry['max_chips']!r}")
    if not float(entry["latency_s"]) >= 0:
        raise ValueError(f"{where}: latency_s must be >= 0 seconds, got {entry['latency_s']!r}")
    if abs(2 * per - both) > 1e-9 * both:
        raise ValueError(f"{where}: per_direction_bytes_per_s ({per:g}) must be half of bidirectional_bytes_per_s "
                         f"({both:g})")
    if entry["latency_basis"] not in LATENCY_BASES:
        raise ValueError(f"{where}: latency_basis must be one of {', '.join(LATENCY_BASES)}")
    return Link(kind=kind, name=entry["name"], per_direction_bytes_per_s=per, bidirectional_bytes_per_s=both,
                max_chips=int(entry["max_chips"]), latency_s=float(entry["latency_s"]),
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
    if "board_power_w" not in entry:
        return None
    if not entry.get("board_power_source") or not entry.get("board_power_as_of"):
        raise ValueError(f"hardware.toml: part {part_id!r} gives board_power_w without board_power_source "
                         "and board_power_as_of")
    return float(entry["board_power_w"])


def _parts() -> dict[str, Part]:
    raw = load_catalog("hardware.toml")["parts"]
    return {pid: _part_from_entry(pid, entry) for pid, entry in raw.items()}


_PARTS: dict[str, Part] | None = None


def list_parts() -> tuple[str, ...]:
    """All part ids in catalog order."""
    return tuple(_all())


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
