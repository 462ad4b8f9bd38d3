"""The course in a real browser: JupyterLab served from this environment, driven through Debian's
Chromium by Playwright. For every lesson notebook with a dashboard (found automatically): run all
cells, check that there is no error output and no widget error text, that the controls are visible,
and that moving a slider and changing a dropdown change the chart.

Needs the test extras (playwright) and a system Chromium (`apt-get install chromium`, or set
ROOFLINE_CHROMIUM to its path). Without them the tests are skipped locally; with CI=true they fail.
Screenshots go to artifacts/browser/ (git-ignored).
"""

from __future__ import annotations

import os
import re
import shutil
import time
from pathlib import Path

import pytest
from lab_driver import (CHROMIUM_ARGS, DEADLINE_S, WIDGET_ERROR_TEXTS, dashboard_image_src, dashboard_notebooks,
                        find_chromium,
                        jupyterlab_server, open_and_run_all, port_is_free, shutdown_kernels, wait_for_new_image,
                        wait_idle, widget_problems)

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "artifacts" / "browser"
IN_CI = os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")
DASHBOARDS = dashboard_notebooks(ROOT)

pytestmark = pytest.mark.browser

BROKEN = '''# %%
import ipywidgets as widgets
import traitlets
from IPython.display import display


class MismatchedSlider(widgets.IntSlider):
    """A slider that asks the browser for a front-end version that does not exist."""
    _model_module_version = traitlets.Unicode("99.0.0").tag(sync=True)
    _view_module_version = traitlets.Unicode("99.0.0").tag(sync=True)


display(MismatchedSlider(description="broken"))
'''


def _missing() -> list[str]:
    missing = []
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        missing.append("the Python package playwright (install the test extras: pip install -e '.[test]')")
    if not find_chromium():
        missing.append("a system Chromium (Debian: apt-get install chromium; or set ROOFLINE_CHROMIUM)")
    return missing


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    missing = _missing()
    if missing:
        message = "browser tests need " + " and ".join(missing)
        if IN_CI:
            pytest.fail(message + ". CI=true, so a missing browser is a failure, not a skip.")
        pytest.skip(message + ". See README, 'Browser tests'.")
    import jupytext
    from playwright.sync_api import sync_playwright

    scratch = tmp_path_factory.mktemp("browser")
    content = scratch / "course"  # a copy: running cells here never touches the learner's notebooks
    shutil.copytree(ROOT / "notebooks", content / "notebooks")
    broken = jupytext.reads(BROKEN, fmt="py:percent")
    broken.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    jupytext.write(broken, str(content / "broken_widget.ipynb"), fmt="ipynb")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with jupyterlab_server(content, scratch / "server") as (base, token):
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=find_chromium(), args=CHROMIUM_ARGS)
            try:
                yield base, token, browser
            finally:
                browser.close()


def images_without_alt(page) -> list[str]:
    """Every image in an output (static charts and the dashboard's) states its message in alt text."""
    imgs = page.locator(".jp-OutputArea-output img")
    bad = [i for i in range(imgs.count()) if not (imgs.nth(i).get_attribute("alt") or "").strip()]
    return [f"{len(bad)} of {imgs.count()} images in the outputs have no alt text"] if bad else []


def check_dashboard(browser, base: str, token: str, rel_path: str, shot: str) -> list[str]:
    """Open a notebook, run it, and exercise its dashboard; returns the problems seen (empty = fine)."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    problems: list[str] = []
    try:
        if not open_and_run_all(page, base, token, rel_path):
            return ["Run All Cells did not run the notebook"]
        controls = page.locator(".jp-OutputArea-output .widget-slider, .jp-OutputArea-output .widget-dropdown")
        error_text = page.get_by_text(re.compile("|".join(re.escape(s) for s in WIDGET_ERROR_TEXTS)))
        try:
            controls.or_(error_text).first.wait_for(timeout=DEADLINE_S * 1000)
        except Exception:
            problems.append(f"no widget controls appeared within {DEADLINE_S} s")
        time.sleep(1.0)
        try:
            wait_idle(page)
        except Exception:
            problems.append("the kernel did not become idle after Run All")
        page.screenshot(path=str(ARTIFACTS / f"{shot}-1-ran.png"))
        problems += widget_problems(page)
        problems += images_without_alt(page)
        if problems:
            return problems
        if not controls.first.is_visible():
            return ["the widget controls are not visible"]
        before = wait_for_new_image(page, None)
        if not before:
            return ["the dashboard shows no chart image"]
        handles = page.locator(".jp-OutputArea-output .widget-slider .noUi-handle")
        dropdowns = page.locator(".jp-OutputArea-output .widget-dropdown select")
        if handles.count() == 0 and dropdowns.count() == 0:
            return ["the dashboard has neither a slider nor a dropdown to move"]
        after_slider = before
        if handles.count():
            handle = handles.first
            handle.scroll_into_view_if_needed()
            handle.focus()
            for _ in range(3):
                handle.press("ArrowRight")
            wait_for_new_image(page, before)
            wait_idle(page)
            after_slider = dashboard_image_src(page)
            page.screenshot(path=str(ARTIFACTS / f"{shot}-2-slider.png"))
            if after_slider == before:
                problems.append("moving the slider did not change the chart")
        if dropdowns.count() == 0:
            return problems + widget_problems(page)
        dropdown = dropdowns.first
        options = dropdown.locator("option").all_inner_texts()
        current = dropdown.input_value()
        dropdown.select_option(next(o for o in options if o != current))
        wait_for_new_image(page, after_slider)
        wait_idle(page)
        after_dropdown = dashboard_image_src(page)
        page.screenshot(path=str(ARTIFACTS / f"{shot}-3-dropdown.png"))
        if after_dropdown == after_slider:
            problems.append("changing a dropdown did not change the chart")
        problems += widget_problems(page)
        problems += images_without_alt(page)
        return problems
    finally:
        page.close()
        shutdown_kernels(base, token)


def test_dashboards_are_found():
    assert ROOT / "notebooks" / "01_the_concept.ipynb" in DASHBOARDS


@pytest.mark.parametrize("notebook", DASHBOARDS, ids=lambda p: p.name)
def test_dashboard_works_in_jupyterlab(lab, notebook):
    base, token, browser = lab
    problems = check_dashboard(browser, base, token, f"notebooks/{notebook.name}", notebook.stem)
    assert problems == [], f"{notebook.name} in JupyterLab: {problems} (screenshots in {ARTIFACTS})"


def test_a_broken_widget_is_caught(lab):
    """The check above can fail: a widget asking for a front-end that does not match is reported."""
    base, token, browser = lab
    problems = check_dashboard(browser, base, token, "broken_widget.ipynb", "broken-widget")
    assert any("the page shows" in p for p in problems), problems


def test_server_is_stopped_and_port_freed(tmp_path):
    if _missing() and not IN_CI:
        pytest.skip("needs the browser-test requirements")
    content = tmp_path / "c"
    content.mkdir()
    first, second = {}, {}
    with jupyterlab_server(content, tmp_path / "s", first) as (base, _token):
        port = int(base.rsplit(":", 1)[1])
        assert not port_is_free(port)
    with pytest.raises(RuntimeError, match="boom"):  # a failing test body still stops the server
        with jupyterlab_server(content, tmp_path / "s2", second):
            raise RuntimeError("boom")
    for info in (first, second):
        assert info["returncode"] is not None  # the process has exited
        assert port_is_free(info["port"])


def _drill_header(page):
    return page.locator(".jp-OutputArea-output .widget-html").filter(has_text="learned of").first


def _drill_new_count(page, timeout_s: float = DEADLINE_S, not_equal: int | None = None) -> int:
    """The drill's 'N new' count, read once its header is rendered and in view; with ``not_equal``,
    the first count that differs from it (or the last one read, when the deadline passes)."""
    header = _drill_header(page)
    header.wait_for(timeout=timeout_s * 1000)
    deadline = time.monotonic() + timeout_s
    found = None
    while time.monotonic() < deadline:
        header.scroll_into_view_if_needed()
        found = re.search(r"(\d+) new", header.inner_text())
        if found and (not_equal is None or int(found.group(1)) != not_equal):
            return int(found.group(1))
        time.sleep(0.25)
    if found:
        return int(found.group(1))
    raise AssertionError(f"the drill header never showed a count: {header.inner_text()!r}")


def test_interview_drill_keeps_progress_across_a_kernel_restart(lab):
    """Reveal and rate a card in the drill, restart the kernel, and find the progress still there.
    Every wait is for a condition (the count changed, the old output gone), never a fixed pause."""
    base, token, browser = lab
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        assert open_and_run_all(page, base, token, "notebooks/13_interview_drill.ipynb")
        wait_idle(page)
        new_before = _drill_new_count(page)
        assert widget_problems(page) == []
        reveal = page.get_by_role("button", name="reveal").first
        reveal.scroll_into_view_if_needed()
        reveal.click()
        page.locator(".jp-OutputArea-output .widget-html").filter(has_text="30-second answer.").first.wait_for(
            timeout=DEADLINE_S * 1000)
        page.get_by_role("button", name="good").first.click()
        rated = _drill_new_count(page, not_equal=new_before)  # the rating reached the kernel and was saved
        assert rated == new_before - 1, (new_before, rated)
        page.screenshot(path=str(ARTIFACTS / "drill-1-rated.png"))
        old_header = _drill_header(page).element_handle()
        # Restart the kernel and run everything again, as a learner coming back would
        page.locator(".lm-MenuBar-item", has_text="Run").first.click()
        page.locator("li[data-command='runmenu:restart-and-run-all']").click()
        page.locator(".jp-Dialog-button.jp-mod-accept").first.click()
        old_header.wait_for_element_state("hidden", timeout=DEADLINE_S * 1000)  # the old output is gone
        new_after = _drill_new_count(page)  # read from the header the new kernel drew
        wait_idle(page)
        page.screenshot(path=str(ARTIFACTS / "drill-2-after-restart.png"))
        assert new_after == new_before - 1, (new_before, new_after)
        assert widget_problems(page) == []
    finally:
        page.close()
        shutdown_kernels(base, token)
