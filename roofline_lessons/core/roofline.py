"""The roofline model itself: P = min(peak, β·I).

Williams, Waterman and Patterson (CACM 52(4), 2009). Every function takes scalars or numpy arrays.
Units: FLOP/s, bytes/s, FLOP/byte, seconds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MEMORY = "memory"
COMPUTE = "compute"


@dataclass(frozen=True)
class Roof:
    """One roofline: a compute ceiling (FLOP/s) and a bandwidth slope (bytes/s). ``part_id`` names
    the catalog part it belongs to, if any, so every chart draws that part in the same style."""

    label: str
    peak_flops_per_s: float
    bandwidth_bytes_per_s: float
    part_id: str | None = None

    @property
    def ridge_point_flop_per_byte(self) -> float:
        return self.peak_flops_per_s / self.bandwidth_bytes_per_s


def ridge_point_flop_per_byte(peak_flops_per_s, bandwidth_bytes_per_s):
    """Intensity (FLOP/byte) at which the two roofs meet: I* = peak / bandwidth."""
    return np.divide(peak_flops_per_s, bandwidth_bytes_per_s)


def attainable_flops_per_s(intensity_flop_per_byte, peak_flops_per_s, bandwidth_bytes_per_s):
    """Attainable performance P = min(peak, bandwidth × intensity), in FLOP/s."""
    return np.minimum(peak_flops_per_s, np.multiply(bandwidth_bytes_per_s, intensity_flop_per_byte))


def fraction_of_peak(intensity_flop_per_byte, peak_flops_per_s, bandwidth_bytes_per_s):
    """The best a kernel of this intensity can reach, as a fraction of the compute peak (0..1)."""
    return np.divide(
        attainable_flops_per_s(intensity_flop_per_byte, peak_flops_per_s, bandwidth_bytes_per_s),
        peak_flops_per_s,
    )


def bound(intensity_flop_per_byte, peak_flops_per_s, bandwidth_bytes_per_s):
    """Which roof binds: ``"memory"`` left of the ridge, ``"compute"`` at or right of it.

    Returns a string for scalar input and an array of strings for array input.
    """
    ridge = ridge_point_flop_per_byte(peak_flops_per_s, bandwidth_bytes_per_s)
    result = np.where(np.asarray(intensity_flop_per_byte) < ridge, MEMORY, COMPUTE)
    return str(result) if result.ndim == 0 else result


def time_lower_bound_s(flops, bytes_moved, peak_flops_per_s, bandwidth_bytes_per_s):
    """max(FLOPs / peak, bytes / bandwidth), seconds: a lower bound on a kernel's time only when
    ``bytes_moved`` is its **compulsory** traffic (what any implementation must move: each input read
    once, each output written once) and ``flops`` the arithmetic it must do, at the peak of the format
    it runs in. Given an implementation's own byte count (unfused operators writing their
    intermediates to memory, say), the same formula is an estimate of that implementation, not a
    bound: a fused kernel can move fewer bytes and run faster."""
    return np.maximum(np.divide(flops, peak_flops_per_s), np.divide(bytes_moved, bandwidth_bytes_per_s))
