"""Offline handouts (roofline_lessons.course.handouts): export lesson 1 (a dashboard, formulas,
charts) and lesson 8 (it saves a measurement into the learner's data folder when run), then check the
pages fetch nothing from the network, leave the learner's data alone, print no kernel warnings, and —
opened in Chromium with every non-file request aborted — show typeset formulas, charts and the
dashboard's static picture. Screenshots go to artifacts/browser/ (git-ignored).

The browser part needs playwright and a system Chromium (as tests/test_browser.py): skipped locally
without them, a failure with CI=true.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from pathlib import Path

import pytest

from roofline_lessons.course import handouts

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "artifacts" / "browser"
IN_CI = os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")
LESSONS = ["01", "08"]
LOCAL_SCHEMES = ("file://", "data:", "about:", "blob:")

# a tag attribute that makes the browser fetch from the network (CDN scripts, styles, fonts, images)
REMOTE_ATTR = re.compile(r"<(script|link|img|iframe|source|embed)\b[^>]*\s(src|href|srcset)\s*=\s*[\"']?\s*(https?:)?//",
                         re.IGNORECASE)
# TeX that MathJax did not typeset: a $…$ or \(…\) span holding a TeX command
RAW_TEX = re.compile(r"\$[^$\n]*\\[A-Za-z]+[^$\n]*\$|\\\(.*?\\\)")


@contextlib.contextmanager
def _stderr_fd_to(file):
    """Send file descriptor 2 (this process's and its children's stderr) to ``file`` for a while."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        os.dup2(file.fileno(), 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """Export LESSONS once for the module, with a learner data folder that holds a file already."""
    tmp = tmp_path_factory.mktemp("handouts")
    learner = tmp / "learner-data"
    (learner / "measurements").mkdir(parents=True)
    (learner / "measurements" / "mine.json").write_text('{"kept": true}\n')
    before = _snapshot(learner)
    # the learner's IPython folder, with a file of theirs: a kernel started with it would add
    # profile_default/ (history.sqlite, startup/README) to it
    ipython_dir = tmp / "learner-ipython"
    (ipython_dir / "extensions").mkdir(parents=True)
    (ipython_dir / "extensions" / "mine.py").write_text("# the learner's\n")
    ipython_before = _snapshot(ipython_dir)
    out = tmp / "out"
    lines: list[str] = []
    mp = pytest.MonkeyPatch()
    mp.setenv("ROOFLINE_LESSONS_DATA", str(learner))
    mp.setenv("IPYTHONDIR", str(ipython_dir))
    err_file = tmp / "stderr.txt"
    try:
        # the kernels write their warnings to the inherited file descriptor 2, not to sys.stderr
        with open(err_file, "w+b") as err, _stderr_fd_to(err):
            written = handouts.export(ROOT, out, only=LESSONS, log=lines.append)
    finally:
        mp.undo()
    return {"out": out, "written": written, "learner": learner, "before": before, "log": lines,
            "ipython_dir": ipython_dir, "ipython_before": ipython_before,
            "stderr": err_file.read_text(errors="replace")}


def test_export_writes_each_lesson_mathjax_and_cheatsheet(exported):
    out, written = exported["out"], exported["written"]
    names = {p.name for p in written}
    assert {"01_the_concept.html", "08_measure_your_machine.html", "cheatsheet.html", "cheatsheet.md"} <= names
    assert (out / handouts.MATHJAX_DIR / "MathJax.js").is_file()
    assert (out / handouts.MATHJAX_DIR / "jax" / "input" / "TeX" / "jax.js").is_file()
    assert all(p.exists() for p in written)
    # one progress line per lesson and nothing else
    assert exported["log"] == ["running 01_the_concept.ipynb …", "running 08_measure_your_machine.ipynb …"]
    assert not list(out.glob(".*.tmp")) and not list(out.glob(".mathjax-*"))  # no half-written leftovers


def test_pages_fetch_nothing_from_the_network(exported):
    for name in ("01_the_concept.html", "08_measure_your_machine.html"):
        page = (exported["out"] / name).read_text(encoding="utf-8")
        assert not REMOTE_ATTR.search(page), (name, REMOTE_ATTR.search(page).group(0))
        assert handouts.remote_references(page) == []
        assert 'src="mathjax/MathJax.js' in page
        assert "require.js" not in page and "embed-amd" not in page and "mermaid.esm" not in page
        assert "application/vnd.jupyter.widget" not in page  # no widget views or state left to render


def test_dashboard_replaced_by_its_static_picture(exported):
    page = (exported["out"] / "01_the_concept.html").read_text(encoding="utf-8")
    figures = re.findall(r'<figure class="rl-static-dashboard">(.*?)</figure>', page, re.DOTALL)
    assert len(figures) == 1, len(figures)
    fig = figures[0]
    img = re.search(r"<img\b[^>]*>", fig).group(0)
    assert 'class="rl-chart"' in img and re.search(r'src="data:image/png;base64,[A-Za-z0-9+/]{1000}', img)
    alt = re.search(r'alt="([^"]+)"', img)
    assert alt and "roofline" in alt.group(1).lower() and re.search(r"\d", alt.group(1))
    assert "data-render-ms" not in fig  # the kernel's timing means nothing on paper
    assert 'class="rl-verdict"' in fig
    assert "interactive" in fig and "notebooks/01_the_concept.ipynb" in fig


def test_export_leaves_the_learners_data_alone_and_is_quiet(exported):
    assert _snapshot(exported["learner"]) == exported["before"]
    # IPYTHONDIR untouched: no profile_default/, no history.sqlite (the kernels had their own)
    assert _snapshot(exported["ipython_dir"]) == exported["ipython_before"]
    assert [p.name for p in exported["ipython_dir"].iterdir()] == ["extensions"]
    assert "TCP" not in exported["stderr"] and "WARNING" not in exported["stderr"]
    # lesson 8 did save its measurement, into the export's scratch folder: its output says where
    page = (exported["out"] / "08_measure_your_machine.html").read_text(encoding="utf-8")
    saved = re.search(r"saved to (\S+\.json)", page)
    assert saved and str(exported["learner"]) not in saved.group(1)


def test_export_is_quiet_on_the_file_descriptors(tmp_path, capfd):
    """The kernel's "running over TCP without encryption" warning is written by the kernel process to
    the inherited stderr file descriptor: capfd sees it where redirect_stderr cannot."""
    import jupytext

    root = tmp_path / "course"
    (root / "notebooks").mkdir(parents=True)
    nb = jupytext.reads("# %% [markdown]\n# # Tiny, $E = mc^2$\n\n# %%\nprint(6 * 7)\n", fmt="py:percent")
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    jupytext.write(nb, str(root / "notebooks" / "01_tiny.ipynb"), fmt="ipynb")
    written = handouts.export(root, tmp_path / "out", log=None)
    captured = capfd.readouterr()
    assert captured.out == "" and "TCP" not in captured.err and "WARNING" not in captured.err, captured
    page = (tmp_path / "out" / "01_tiny.html").read_text(encoding="utf-8")
    assert "42" in page  # executed, with its output
    assert (tmp_path / "out" / "cheatsheet.html") in written
    with pytest.raises(FileNotFoundError, match="no lesson notebooks"):
        handouts.export(tmp_path / "nowhere", tmp_path / "x", log=None)
    with pytest.raises(FileNotFoundError, match=r"matching \['99'\]"):
        handouts.export(root, tmp_path / "x", only=["99"], log=None)


def test_remote_references_and_strip_remote():
    page = ('<script src="https://cdn.example/require.js"></script><link rel="stylesheet" href="//fonts.example/x.css">'
            '<img src="http://x.example/a.png"><a href="https://example.org">a link fetches nothing</a>'
            '<script src="mathjax/MathJax.js"></script>')
    assert len(handouts.remote_references(page)) == 3
    stripped = handouts.strip_remote(page)
    assert handouts.remote_references(stripped) == ['<img src=\'http://x.example/a.png\'>']
    assert 'src="mathjax/MathJax.js"' in stripped and 'href="https://example.org"' in stripped


def _widget_notebook(value: str):
    """A notebook whose one output is a widget view (an HBox holding an HTML widget of ``value``), with the
    widget state a run records."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    view = nbformat.v4.new_output("display_data", data={handouts.WIDGET_VIEW: {"model_id": "box"},
                                                        "text/plain": "VBox(...)"})
    nb.cells.append(nbformat.v4.new_code_cell("flashcard_drill()", outputs=[view]))
    nb.metadata["widgets"] = {handouts.WIDGET_STATE: {"state": {
        "box": {"state": {"children": ["IPY_MODEL_html"]}}, "html": {"state": {"value": value}}}}}
    return nb


def test_the_drill_is_printed_as_the_deck_in_a_handout(tmp_path):
    """Issue 25: offline readers get the deck on paper, with every card's memory aid and sources."""
    from roofline_lessons.course import flashcards
    from roofline_lessons.course.drill import DrillSession, ProgressStore, _html

    session_view = DrillSession(ProgressStore(tmp_path / "p.json")).view()
    nb = _widget_notebook(_html(session_view))
    assert handouts.replace_dashboards(nb, "notebooks/15_interview_drill.ipynb") == 1
    out = nb.cells[0].outputs[0]["data"]["text/html"]
    deck = flashcards.deck()
    assert out.count("<section class='rl-card'>") == len(deck)
    assert out.count("Memory aid.") == sum(bool(c.memory_aid) for c in deck)
    assert out.count("<b>Sources:</b>") == len(deck)
    assert "notebooks/15_interview_drill.ipynb" in out and "widgets" not in nb.metadata
    # any other widget without a dashboard panel still gets the plain pointer
    other = _widget_notebook("<p>some other widget</p>")
    handouts.replace_dashboards(other, "notebooks/xx.ipynb")
    assert "An interactive widget is here" in other.cells[0].outputs[0]["data"]["text/html"]


# ---- in a browser, offline -------------------------------------------------------------------------


def _browser_missing() -> list[str]:
    sys.path.insert(0, str(Path(__file__).parent))
    from lab_driver import browser_missing

    return browser_missing()


@pytest.mark.browser
def test_handout_offline_in_chromium(exported):
    missing = _browser_missing()
    if missing:
        message = "the offline handout check needs " + " and ".join(missing)
        if IN_CI:
            pytest.fail(message + ". CI=true, so a missing browser is a failure, not a skip.")
        pytest.skip(message)
    from lab_driver import CHROMIUM_ARGS, find_chromium
    from playwright.sync_api import sync_playwright

    page_path = exported["out"] / "01_the_concept.html"
    blocked: list[str] = []

    def only_files(route):
        url = route.request.url
        if url.startswith(LOCAL_SCHEMES):
            route.continue_()
        else:
            blocked.append(url)
            route.abort()

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=find_chromium(), args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport={"width": 1100, "height": 900}, offline=True)
            page = context.new_page()
            page.route("**/*", only_files)
            failed: list[str] = []
            page.on("requestfailed", lambda r: None if r.url.startswith(("about:", "data:"))
                    else failed.append(f"{r.url} {r.failure}"))  # a missing file of the MathJax copy
            page.goto(page_path.as_uri(), wait_until="load")
            page.wait_for_function("() => window.MathJax && window.MathJax.isReady", timeout=300_000)
            page.evaluate("() => new Promise(done => MathJax.Hub.Queue(done))")  # after every typeset
            result = page.evaluate("""() => {
                const formulas = document.querySelectorAll('script[type^="math/tex"]').length;
                const typeset = document.querySelectorAll('span.MathJax').length;
                const errors = document.querySelectorAll('.MathJax_Error, merror').length
                    + (document.body.innerText.includes('Math Processing Error') ? 1 : 0);
                // markdown cells and the markdown the code cells display (md(...)): never their code
                const markdown = [...document.querySelectorAll('.jp-MarkdownCell .jp-RenderedHTMLCommon, .jp-OutputArea-output.jp-RenderedMarkdown')]
                    .map(el => el.innerText);
                const images = [...document.images].map(img => ({
                    cls: img.className, w: img.naturalWidth, h: img.naturalHeight, complete: img.complete,
                    shown: img.getBoundingClientRect().width}));
                const outputs_with_tex = [...document.querySelectorAll('.jp-OutputArea-output.jp-RenderedMarkdown')]
                    .filter(el => el.querySelector('span.MathJax')).length;
                return {formulas, typeset, errors, markdown, images, outputs_with_tex};
            }""")
            assert result["formulas"] > 10 and result["typeset"] >= result["formulas"], result["formulas"]
            assert result["errors"] == 0
            raw = [m.group(0) for text in result["markdown"] for m in RAW_TEX.finditer(text)]
            assert raw == [], raw[:5]
            assert result["outputs_with_tex"] > 0  # displayed markdown with formulas was checked too
            images = result["images"]
            dashboard = [i for i in images if i["cls"] == "rl-chart"]
            charts = [i for i in images if i["cls"] != "rl-chart"]
            assert len(dashboard) == 1 and charts, images
            assert all(i["complete"] and i["w"] > 0 and i["h"] > 0 and i["shown"] > 0 for i in images), images
            assert blocked == [] and failed == [], (blocked, failed)

            page.screenshot(path=str(ARTIFACTS / "handout-01-top.png"))
            formula = page.locator(".jp-MarkdownCell .MathJax_Display").first
            formula.scroll_into_view_if_needed()
            page.screenshot(path=str(ARTIFACTS / "handout-01-formula.png"))
            page.locator("figure.rl-static-dashboard").screenshot(path=str(ARTIFACTS / "handout-01-dashboard.png"))
            context.close()
        finally:
            browser.close()


def test_the_cheat_sheet_and_lesson_12_give_one_state_figure():
    """Issue 26, item 6: one quantity, one name, one function — the cheat sheet once printed the
    Gated DeltaNet state alone (144 MiB) where lesson 12 printed it with the conv state (147 MiB)."""
    from roofline_lessons.core.memory import state_bytes_per_sequence
    from roofline_lessons.course.cheatsheet import _numbers

    (label, value), = [(k, v) for k, v in _numbers() if "Qwen3.8-27B recurrent state" in k]
    assert value == f"{state_bytes_per_sequence('qwen3.8-27b') / 2**20:,.0f} MiB" and "conv" in label


def test_a_handout_keeps_answers_folded_and_narration_code_hidden():
    """Issue 26, item 2: the handout showed each answer under an empty <details>, and narration
    cells' md(f"…") source above its own sentence. Rendered here as the export renders a lesson: the
    answer text sits only inside its <details>, and a collapsed cell's code is not in the page."""
    import re

    import nbformat

    from roofline_lessons.course.handouts import fold_answers, hide_collapsed_sources, offline_exporter

    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell('md(f"secret_source_marker {x}")', metadata={"jupyter": {"source_hidden": True}})
    cell.outputs = [nbformat.v4.new_output("display_data", data={
        "text/markdown": "A question?\n\n<details><summary>Answer</summary>\n\nThe **answer** is 42.\n\n</details>\n\nAfter.",
        "text/plain": "<Markdown>"})]
    nb.cells = [cell]
    assert fold_answers(nb) == 1 and hide_collapsed_sources(nb) == 1
    body, _ = offline_exporter().from_notebook_node(nb)
    assert "secret_source_marker" not in body
    folded = re.findall(r"<details>(.*?)</details>", body, flags=re.S)
    assert len(folded) == 1 and "answer</strong> is 42" in folded[0]
    outside = re.sub(r"<details>.*?</details>", "", body, flags=re.S)
    assert "is 42" not in outside and "A question?" in outside and "After." in outside
