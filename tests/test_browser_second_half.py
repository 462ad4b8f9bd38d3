"""The course in a real browser, second half: the rest of the dashboards (see tests/test_browser.py)
and the interview drill's progress across a kernel restart."""

from __future__ import annotations

import re
import time

import pytest
from browser_checks import (ARTIFACTS, DASHBOARDS, ROOT, check_dashboard, halves, images_without_alt,  # noqa: F401
                            lab, lab_page, rendering_problems)
from lab_driver import DEADLINE_S, open_and_run_all, shutdown_kernels, wait_idle, wait_ran_all, widget_problems

pytestmark = pytest.mark.browser
_, SECOND_HALF = halves(DASHBOARDS)


@pytest.mark.parametrize("notebook", SECOND_HALF, ids=lambda p: p.name)
def test_dashboard_works_in_jupyterlab(lab_page, notebook):
    problems = check_dashboard(lab_page, f"notebooks/{notebook.name}", notebook.stem)
    assert problems == [], f"{notebook.name} in JupyterLab: {problems} (screenshots in {ARTIFACTS})"


#: lessons with no dashboard that still render charts and tables a learner reads (the drill has its own test)
STATIC_LESSONS = ["13_real_engines.ipynb"]


@pytest.mark.parametrize("name", STATIC_LESSONS)
def test_static_lesson_runs_and_renders_in_jupyterlab(lab_page, name):
    """A lesson without a dashboard (lesson 13): Run All finishes with no error output, every chart
    has alt text, and its Markdown tables and prose render (no pipes left, no money as math)."""
    assert (ROOT / "notebooks" / name).exists() and (ROOT / "notebooks" / name) not in DASHBOARDS
    page = lab_page.page
    try:
        assert lab_page.open_and_run_all(f"notebooks/{name}")
        wait_ran_all(page)
        page.screenshot(path=str(ARTIFACTS / f"{name.removesuffix('.ipynb')}-ran.png"), full_page=True)
        assert page.locator(".jp-OutputArea-output img").count() >= 1
        problems = widget_problems(page) + images_without_alt(page) + rendering_problems(page)
        assert problems == [], f"{name} in JupyterLab: {problems} (screenshots in {ARTIFACTS})"
    finally:
        if not lab_page.close_notebook():
            lab_page.reload()


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
        assert open_and_run_all(page, base, token, "notebooks/15_interview_drill.ipynb")
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


def test_every_lesson_opens_unmodified(lab):
    """Issue 26, item 4: JupyterLab writes the kernel's language_info into a notebook as its kernel
    starts; a lesson without it was marked modified (the tab's dirty dot) before any edit, and closing
    it asked to save. The course's server extension (roofline_lessons/course/lab.py) serves each
    lesson with it; here every lesson is opened, its kernel started, and its tab must stay clean."""
    from browser_checks import ROOT

    base, token, browser = lab
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    dirty = []
    try:
        for notebook in sorted((ROOT / "notebooks").glob("[0-9]*.ipynb")):
            page.goto(f"{base}/lab/tree/notebooks/{notebook.name}?reset&token={token}")
            page.locator(".jp-NotebookPanel .jp-Notebook").first.wait_for(timeout=DEADLINE_S * 1000)
            wait_idle(page)  # the kernel has answered: its language_info is in the model by now
            if page.locator(".jp-mod-dirty").count():
                dirty.append(notebook.name)
                page.screenshot(path=str(ARTIFACTS / f"dirty-{notebook.stem}.png"))
            shutdown_kernels(base, token)
    finally:
        page.close()
    assert dirty == [], f"opened already modified: {dirty} (screenshots in {ARTIFACTS})"
