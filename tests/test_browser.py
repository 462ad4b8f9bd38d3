"""The course in a real browser: JupyterLab served from this environment, driven through Debian's
Chromium by Playwright. For every lesson notebook with a dashboard (found automatically): run all
cells, check that there is no error output and no widget error text, that the controls are visible,
and that moving a slider and changing a dropdown change the chart. This file takes the first half of
the dashboards and the checks of the harness itself; tests/test_browser_second_half.py the rest and
the interview drill (two files, so pytest-xdist's two workers share the work).

Needs the test extras (playwright) and a system Chromium (`apt-get install chromium`, or set
ROOFLINE_CHROMIUM to its path). Without them the tests are skipped locally; with CI=true they fail.
Screenshots go to artifacts/browser/ (git-ignored).
"""

from __future__ import annotations

import pytest
from browser_checks import (ARTIFACTS, DASHBOARDS, IN_CI, ROOT, _missing, check_dashboard, halves, lab,  # noqa: F401
                            lab_page, rendering_problems)
from lab_driver import jupyterlab_server, port_is_free

pytestmark = pytest.mark.browser
FIRST_HALF, _ = halves(DASHBOARDS)


def test_dashboards_are_found_and_each_is_in_one_half():
    assert ROOT / "notebooks" / "01_the_concept.ipynb" in DASHBOARDS
    first, second = halves(DASHBOARDS)
    assert first + second == DASHBOARDS and first and second


@pytest.mark.parametrize("notebook", FIRST_HALF, ids=lambda p: p.name)
def test_dashboard_works_in_jupyterlab(lab_page, notebook):
    problems = check_dashboard(lab_page, f"notebooks/{notebook.name}", notebook.stem)
    assert problems == [], f"{notebook.name} in JupyterLab: {problems} (screenshots in {ARTIFACTS})"


def test_broken_markdown_is_caught(lab_page):
    """The rendering check every dashboard notebook gets can fail: money "$" across a table and a
    sentence continued with "+ " are both reported as JupyterLab draws them."""
    try:
        assert lab_page.open_and_run_all("broken_markdown.ipynb")
        lab_page.page.locator(".jp-RenderedMarkdown table, .jp-RenderedMarkdown p").first.wait_for(timeout=30_000)
        lab_page.page.wait_for_timeout(1500)  # MathJax typesets after the Markdown renders
        problems = rendering_problems(lab_page.page)
        lab_page.page.screenshot(path=str(ARTIFACTS / "broken-markdown.png"))
    finally:
        if not lab_page.close_notebook():
            lab_page.reload()
    assert any("did not render" in p or "typeset as math" in p for p in problems), problems
    assert any("broken into a list item" in p for p in problems), problems


def test_a_broken_widget_is_caught(lab_page):
    """The check above can fail: a widget asking for a front-end that does not match is reported."""
    problems = check_dashboard(lab_page, "broken_widget.ipynb", "broken-widget")
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
