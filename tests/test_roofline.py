import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from roofline_lessons.core.roofline import (attainable_flops_per_s, bound, fraction_of_peak, ridge_point_flop_per_byte,
                                            time_lower_bound_s)

peaks = st.floats(1e9, 1e17)
bandwidths = st.floats(1e8, 1e14)
intensities = st.floats(1e-4, 1e7)


@given(intensities, peaks, bandwidths)
def test_attainable_never_exceeds_either_roof(i, peak, bw):
    p = attainable_flops_per_s(i, peak, bw)
    assert p <= peak * (1 + 1e-12) and p <= bw * i * (1 + 1e-12)
    assert p == pytest.approx(min(peak, bw * i))


@given(intensities, intensities, peaks, bandwidths)
def test_attainable_is_monotone_in_intensity(a, b, peak, bw):
    lo, hi = sorted((a, b))
    assert attainable_flops_per_s(lo, peak, bw) <= attainable_flops_per_s(hi, peak, bw)


@given(peaks, bandwidths)
def test_continuous_at_the_ridge_and_the_bound_flips_there(peak, bw):
    ridge = ridge_point_flop_per_byte(peak, bw)
    left, right = ridge * (1 - 1e-9), ridge * (1 + 1e-9)
    assert attainable_flops_per_s(left, peak, bw) == pytest.approx(peak, rel=1e-8)
    assert attainable_flops_per_s(right, peak, bw) == pytest.approx(peak, rel=1e-8)
    assert bound(left, peak, bw) == "memory"
    assert bound(right, peak, bw) == "compute"
    assert bound(ridge / 10, peak, bw) == "memory" and bound(ridge * 10, peak, bw) == "compute"


@given(st.floats(1, 1e18), st.floats(1, 1e15), peaks, bandwidths)
def test_time_lower_bound_is_the_slower_of_the_two(flops, nbytes, peak, bw):
    t = time_lower_bound_s(flops, nbytes, peak, bw)
    assert t >= flops / peak * (1 - 1e-12) and t >= nbytes / bw * (1 - 1e-12)
    # the bound and the attainable rate agree: time = flops / attainable
    assert t == pytest.approx(flops / attainable_flops_per_s(flops / nbytes, peak, bw), rel=1e-9)


def test_works_on_arrays():
    i = np.array([0.5, 1.0, 295.0, 1000.0])
    p = attainable_flops_per_s(i, 989.4e12, 3.35e12)
    assert p.shape == (4,)
    assert list(bound(i, 989.4e12, 3.35e12)) == ["memory", "memory", "memory", "compute"]
    assert fraction_of_peak(1000.0, 989.4e12, 3.35e12) == 1.0


def test_h100_numbers_from_the_lesson():
    assert ridge_point_flop_per_byte(989.4e12, 3.35e12) == pytest.approx(295.3, rel=1e-3)
    assert fraction_of_peak(1.0, 989.4e12, 3.35e12) == pytest.approx(0.00339, rel=0.01)
    assert attainable_flops_per_s(32, 989.4e12, 3.35e12) == pytest.approx(107.2e12)


def test_time_lower_bound_says_it_is_a_bound_only_for_compulsory_bytes():
    """Issue 25 (N10): max(FLOPs/peak, bytes/bandwidth) bounds a kernel only when the bytes are compulsory."""
    doc = time_lower_bound_s.__doc__
    assert "compulsory" in doc and "estimate" in doc and "No kernel finishes faster" not in doc
