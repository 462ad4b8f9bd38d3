"""Lesson 14's dashboard: the update is a plain function of the widget values (the view), its words
come from the same simulation as its chart, a rate move reuses the setting's simulated curve, and bad
values are named."""

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from roofline_lessons.viz.dashboards import lesson14 as l14  # noqa: E402

SETTING = (8, 1024, 256, 512, "one pool of 2")


def test_view_reports_the_percentiles_of_its_own_run():
    view = l14.lesson14_view(*SETTING)
    assert view.error is None
    here = l14._run(8, 1024, 256, 512, "one pool of 2")
    assert view.attainment_at_rate == here[0] and view.ttft_percentiles_s == here[1]
    i = l14.RATE_CHOICES.index(8)
    assert view.attainment[i] == view.attainment_at_rate
    assert view.ttft_percentiles_s[0] <= view.ttft_percentiles_s[1] <= view.ttft_percentiles_s[2]
    # the words say what the numbers are
    assert ("at or above" in view.text) == (view.attainment_at_rate >= l14.ATTAINMENT)
    assert f"{view.goodput_requests_per_s:g} requests/s" in view.text
    assert ("every rate on the grid meets" in view.text) == bool(np.all(np.array(view.attainment) >= l14.ATTAINMENT))


def test_goodput_is_the_last_rate_before_the_first_miss():
    view = l14.lesson14_view(8, 4096, 256, 512, "one pool of 2")
    att = np.array(view.attainment)
    rates = np.array(view.rates_per_s)
    first_miss = np.argmax(att < l14.ATTAINMENT) if np.any(att < l14.ATTAINMENT) else len(att)
    assert view.goodput_requests_per_s == (rates[first_miss - 1] if first_miss else 0.0)
    # past capacity the attainment falls below the target on this grid
    assert np.any(att < l14.ATTAINMENT)


def test_a_rate_move_reuses_the_curve():
    l14.lesson14_view(*SETTING)
    before = l14._curve.cache_info().misses
    l14.lesson14_view(16, *SETTING[1:])
    assert l14._curve.cache_info().misses == before


def test_separate_pools_keep_prefill_out_of_decode_steps():
    one = l14.lesson14_view(8, 4096, 256, "whole prompt", "one pool of 2")
    split = l14.lesson14_view(8, 4096, 256, "whole prompt", "1 prefill + 1 decode")
    assert split.tpot_percentiles_s[2] < one.tpot_percentiles_s[2]


def test_frame_has_chart_and_alt_from_the_same_view():
    view = l14.lesson14_view(*SETTING)
    frame = l14.lesson14_frame(view, l14.Lesson14Chart())
    assert frame.png.startswith(b"\x89PNG") and not frame.error
    assert f"{view.rate} requests/s" in frame.alt
    assert f"{view.ttft_percentiles_s[0] / l14.TTFT_SLO_S:.2g}×" in frame.alt


@pytest.mark.parametrize("args,name", [((7, 1024, 256, 512, "one pool of 2"), "rate"),
                                       ((8, 1000, 256, 512, "one pool of 2"), "prompt"),
                                       ((8, 1024, 256, 100, "one pool of 2"), "chunk"),
                                       ((8, 1024, 256, 512, "three pools"), "deployment")])
def test_bad_values_are_named(args, name):
    view = l14.lesson14_view(*args)
    assert view.error is not None and view.error.startswith(name)
    assert l14.lesson14_frame(view, l14.Lesson14Chart()).png is None
