"""What the browser tests share (tests/test_browser.py and tests/test_browser_second_half.py): the
JupyterLab-and-Chromium fixture, and the check of one dashboard. Two test files, so that pytest-xdist's
two workers each drive half of the dashboards (each file is whole on one worker, with its own
JupyterLab). No test lives here."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest
from lab_driver import (CHROMIUM_ARGS, DEADLINE_S, WIDGET_ERROR_TEXTS, LabPage, browser_missing,
                        dashboard_image_src, dashboard_notebooks, find_chromium, jupyterlab_server,
                        wait_for_new_image, wait_idle, wait_ran_all, widget_problems)

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "artifacts" / "browser"
IN_CI = os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")
DASHBOARDS = dashboard_notebooks(ROOT)

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


# A notebook whose Markdown the renderer breaks the two ways issue 26 saw: money "$" opening TeX math
# across a table, and a continued sentence starting with "+ " becoming a list item.
BROKEN_MARKDOWN = """# %% [markdown]
# | item | US$ per million |
# |---|---|
# | GPU-hour | $3.24 |
# | tokens | $0.51 |
#
# The time is calls × latency
# + bytes ÷ per-direction bandwidth.

# %%
cell_to_run = True  # Run All needs a code cell to run
"""

# Rendered Markdown in the outputs and in markdown cells, as JupyterLab draws it (MathJax 3 puts each
# formula in an mjx-container): what a learner would see broken.
RENDERING_JS = r"""() => {
  const problems = [];
  const blocks = document.querySelectorAll('.jp-RenderedMarkdown, .jp-RenderedHTMLCommon');
  for (const block of blocks) {
    for (const p of block.querySelectorAll('p')) {
      const text = p.textContent;
      if ((text.match(/\|/g) || []).length >= 3)
        problems.push('a table that did not render: ' + text.slice(0, 80));
    }
    for (const m of block.querySelectorAll('mjx-container')) {
      const text = (m.querySelector('mjx-assistive-mml') || m).textContent.replace(/\s+/g, '');
      if (/^[0-9][0-9.,]*[A-Za-z]{3,}/.test(text) || text.includes('|'))
        problems.push('money or a table typeset as math: ' + text.slice(0, 80));
    }
    for (const ul of block.querySelectorAll('ul')) {
      const before = ul.previousElementSibling;
      const first = ul.querySelector('li');
      if (before && before.tagName === 'P' && first && !/[.:?!)\u2026]\s*$/.test(before.textContent)
          && /^[a-z\u00f7\u00d7+]/.test(first.textContent.trim()))
        problems.push('a sentence broken into a list item: ' + before.textContent.slice(-40) + ' / ' +
                      first.textContent.slice(0, 40));
    }
  }
  return problems;
}"""


def rendering_problems(page) -> list[str]:
    """Markdown JupyterLab rendered broken: a table left as pipes, money typeset as math, a continued
    sentence turned into a list item (see RENDERING_JS)."""
    return page.evaluate(RENDERING_JS)


_missing = browser_missing


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
    broken_md = jupytext.reads(BROKEN_MARKDOWN, fmt="py:percent")
    broken_md.metadata["kernelspec"] = broken.metadata["kernelspec"]
    jupytext.write(broken_md, str(content / "broken_markdown.ipynb"), fmt="ipynb")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with jupyterlab_server(content, scratch / "server") as (base, token):
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=find_chromium(), args=CHROMIUM_ARGS)
            try:
                yield base, token, browser
            finally:
                browser.close()


@pytest.fixture(scope="module")
def lab_page(lab):
    """One JupyterLab page for the whole file (see :class:`lab_driver.LabPage`)."""
    base, token, browser = lab
    shared = LabPage(browser, base, token)
    try:
        yield shared
    finally:
        shared.close()


def images_without_alt(page) -> list[str]:
    """Every image in an output (static charts and the dashboard's) states its message in alt text."""
    imgs = page.locator(".jp-OutputArea-output img")
    bad = [i for i in range(imgs.count()) if not (imgs.nth(i).get_attribute("alt") or "").strip()]
    return [f"{len(bad)} of {imgs.count()} images in the outputs have no alt text"] if bad else []


def check_dashboard(lab_page: LabPage, rel_path: str, shot: str) -> list[str]:
    """Open a notebook in the shared page, run it, and exercise its dashboard; returns the problems
    seen (empty = fine). The notebook is closed, its kernel shut down, whatever happened, and after a
    problem the page is reloaded, so a failed test leaves nothing behind for the next one."""
    problems = ["the check did not finish"]
    try:
        problems = _exercise_dashboard(lab_page, rel_path, shot)
        return problems
    finally:
        if not lab_page.close_notebook() or problems:
            lab_page.reload()


def _exercise_dashboard(lab_page: LabPage, rel_path: str, shot: str) -> list[str]:
    page = lab_page.page
    problems: list[str] = []
    if not lab_page.open_and_run_all(rel_path):
        return ["Run All Cells did not run the notebook"]
    controls = page.locator(".jp-OutputArea-output .widget-slider, .jp-OutputArea-output .widget-dropdown")
    error_text = page.get_by_text(re.compile("|".join(re.escape(s) for s in WIDGET_ERROR_TEXTS)))
    try:
        controls.or_(error_text).first.wait_for(timeout=DEADLINE_S * 1000)
    except Exception:
        problems.append(f"no widget controls appeared within {DEADLINE_S} s")
    try:
        wait_ran_all(page)
    except Exception as err:
        problems.append(f"Run All did not finish: {err}")
    page.screenshot(path=str(ARTIFACTS / f"{shot}-1-ran.png"))
    problems += widget_problems(page)
    problems += images_without_alt(page)
    problems += rendering_problems(page)
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


def halves(items: list) -> tuple[list, list]:
    """The dashboards split in two (first half to tests/test_browser.py, the rest to the second file)."""
    middle = (len(items) + 1) // 2
    return items[:middle], items[middle:]
