"""Offline handouts: run each lesson notebook and write it as one HTML page that works with the
network switched off (for learners who cannot run Jupyter, and for rooms without Wi-Fi).

What makes a page work offline:

- **Formulas** are typeset by a copy of MathJax written beside the handouts (``mathjax/``), taken
  from the ``jupyter-server-mathjax`` package (MathJax 2.7, the version nbconvert's template
  configures), never from a CDN.
- **Dashboards** need a live kernel, so each one is replaced by a static picture of its default
  state: the very panel the notebook's own ``lessonNN_dashboard()`` call drew (verdict, chart with
  its alt text, table), taken from the widget state the run recorded, with a caption saying the
  dashboard is interactive in JupyterLab.
- **The flashcard drill** (lesson 15) needs a live kernel too; in its place the handout prints the
  whole deck (:func:`roofline_lessons.course.drill.deck_html`): every card's question, answers,
  memory aid, red flags, follow-ups and sources, its figures computed by the package at export.
- **Nothing else is fetched**: no require.js, no widget manager, no mermaid loader (the template's
  blocks for them are emptied), and any remote ``<script>``/``<link>`` that remains is removed.

No side effects: each kernel runs with ``ROOFLINE_LESSONS_DATA`` pointed at a temporary folder
(lessons 8 and 9 save measurement files), with ``IPYTHONDIR`` pointed there too (IPython creates
its profile folder and history database under IPYTHONDIR when a kernel starts, so the learner's own
``~/.ipython`` is neither created nor written) and its history kept in memory
(``--HistoryManager.hist_file=:memory:``), and with its sockets over IPC in that folder (so no
"kernel over TCP" warning either). The temporary folder is removed after each notebook. Every
file is written atomically.
"""

from __future__ import annotations

import html
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path

from ..core.files import atomic_write_text
from ..measure.results import DATA_ENV

#: the folder, inside the handouts folder, that holds the MathJax copy
MATHJAX_DIR = "mathjax"
#: MathJax's combined configuration and the Safe extension (both in jupyter-server-mathjax)
MATHJAX_CONFIG = "TeX-AMS-MML_HTMLorMML-full,Safe"
#: how to get MathJax when it is missing
MATHJAX_FIX = "pip install jupyter-server-mathjax (or `make install`)"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
#: the class of the panel a dashboard draws (roofline_lessons.viz.panel.frame_html)
PANEL_MARK = 'class="rl-panel"'

# The lab template, less everything it would fetch from the network (MathJax is kept: its URL is
# the local copy).
_TEMPLATE = """{%- extends 'index.html.j2' -%}
{%- block html_head_js_requirejs -%}{%- endblock html_head_js_requirejs -%}
{%- block jupyter_widgets -%}{%- endblock jupyter_widgets -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{%- block html_head_js_mathjax -%}
<script type="text/x-mathjax-config">
// the copy from jupyter-server-mathjax ships STIX-Web fonts only: never look for the TeX ones
MathJax.Hub.Config({
    "HTML-CSS": {availableFonts: [], preferredFont: null, webFont: "STIX-Web", imageFont: null},
    "SVG": {font: "STIX-Web"}
});
</script>
{{ super() }}
{%- endblock html_head_js_mathjax -%}
{%- block extra_css -%}
<style type="text/css">
figure.rl-static-dashboard { margin: 0.5em 0; padding-left: 0.8em; border-left: 3px solid #999; }
figure.rl-static-dashboard figcaption { font-style: italic; margin: 0.3em 0 0.6em 0; }
</style>
{%- endblock extra_css -%}
"""
_TEMPLATE_NAME = "roofline_offline.html.j2"


def lesson_notebooks(root: Path | str) -> list[Path]:
    """The lesson notebooks under ``root/notebooks`` (names starting with a digit), in order."""
    return sorted((Path(root) / "notebooks").glob("[0-9]*.ipynb"))


# ---- MathJax -------------------------------------------------------------------------------------


def mathjax_source() -> Path:
    """The folder of MathJax's static files shipped by ``jupyter-server-mathjax``."""
    try:
        import jupyter_server_mathjax
    except ImportError:
        raise FileNotFoundError(f"MathJax for offline handouts is not installed: {MATHJAX_FIX}") from None
    src = Path(jupyter_server_mathjax.__file__).parent / "static"
    if not (src / "MathJax.js").exists():
        raise FileNotFoundError(f"jupyter-server-mathjax has no MathJax.js under {src}: reinstall it, {MATHJAX_FIX}")
    return src


def _mathjax_version(src: Path) -> str:
    from importlib import metadata

    try:
        return metadata.version("jupyter-server-mathjax")
    except metadata.PackageNotFoundError:
        return str((src / "MathJax.js").stat().st_mtime_ns)


def _skip_translations(folder: str, names: list[str]) -> set[str]:
    """Keep English only: the handouts are in English, and the other translations are 2 MB."""
    return {n for n in names if n != "en"} if Path(folder).name == "localization" else set()


def copy_mathjax(out: Path | str) -> Path:
    """Put MathJax in ``out/mathjax`` (skipped when that copy is already of the installed version).
    The copy is built in a temporary folder and moved into place, so a reader never sees half."""
    src = mathjax_source()
    target = Path(out) / MATHJAX_DIR
    stamp_name = ".roofline-lessons-version"
    version = _mathjax_version(src)
    stamp = target / stamp_name
    if stamp.exists() and stamp.read_text(encoding="utf-8").strip() == version:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix=".mathjax-", dir=target.parent))
    old = None
    try:
        fresh = building / MATHJAX_DIR
        shutil.copytree(src, fresh, ignore=_skip_translations)
        atomic_write_text(fresh / stamp_name, version + "\n")
        if target.exists():
            old = building / "old"
            os.replace(target, old)
        os.replace(fresh, target)
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return target


# ---- dashboards -> static pictures ---------------------------------------------------------------


def _descendants(state: dict, model_id: str) -> list[str]:
    """``model_id`` and every widget model under it (children, in order), depth first."""
    seen, order, stack = set(), [], [model_id]
    while stack:
        mid = stack.pop()
        if mid in seen or mid not in state:
            continue
        seen.add(mid)
        order.append(mid)
        children = state[mid].get("state", {}).get("children", [])
        refs = [c[len("IPY_MODEL_"):] for c in children if isinstance(c, str) and c.startswith("IPY_MODEL_")]
        stack.extend(reversed(refs))
    return order


def static_caption(notebook_name: str) -> str:
    """The caption under a dashboard's static picture."""
    return (f"A static picture of the dashboard at its default settings. In JupyterLab it is interactive: "
            f"open {notebook_name} and move its controls to redraw it.")


def deck_caption(notebook_name: str) -> str:
    """The caption under the printed deck that stands in for the flashcard drill."""
    return (f"The flashcard drill is interactive in JupyterLab (open {notebook_name} to be quizzed, check numbers "
            "and keep your progress). Here is its deck on paper: open a question for its answers, memory aid, red "
            "flags, follow-ups and sources.")


def _static_deck(notebook_name: str) -> dict:
    """The printed deck, in place of the drill widget."""
    import nbformat

    from .drill import deck_html

    caption = html.escape(deck_caption(notebook_name))
    body = (f'<figure class="rl-static-dashboard rl-static-deck"><figcaption>{caption}</figcaption>'
            f"{deck_html()}</figure>")
    return nbformat.v4.new_output("display_data", data={"text/html": body, "text/plain": deck_caption(notebook_name)})


def _static_output(panel_html: str | None, notebook_name: str) -> dict:
    import nbformat

    caption = html.escape(static_caption(notebook_name))
    if panel_html is None:  # a widget that is neither a dashboard panel nor the drill: say where it lives
        where = html.escape(notebook_name)
        body = ('<figure class="rl-static-dashboard"><figcaption>An interactive widget is here in JupyterLab: '
                f"open {where} and run it there. It only works live, so it has no static picture.</figcaption></figure>")
        text = f"An interactive widget is here in JupyterLab: open {notebook_name} and run it there."
    else:
        body = f'<figure class="rl-static-dashboard">{panel_html}<figcaption>{caption}</figcaption></figure>'
        text = static_caption(notebook_name)
    return nbformat.v4.new_output("display_data", data={"text/html": body, "text/plain": text})


_RENDER_MS = re.compile(r'\s+data-render-ms="[^"]*"')


def replace_dashboards(nb, notebook_name: str) -> int:
    """Replace every widget output in ``nb`` (executed, with its widget state recorded) by the static
    HTML its dashboard panel held when the run ended, with a caption (the flashcard drill: the deck
    printed whole); drop the widget state so the page loads no widget manager. Returns how many
    outputs were replaced."""
    from .drill import DRILL_MARK

    state = nb.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    replaced = 0
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        outputs = []
        for out in cell.get("outputs", []):
            view = out.get("data", {}).get(WIDGET_VIEW) if out.get("output_type") in (
                "display_data", "execute_result") else None
            if view is None:
                outputs.append(out)
                continue
            values = [state[m]["state"].get("value", "") for m in _descendants(state, view.get("model_id", ""))]
            panels = [_RENDER_MS.sub("", p) for p in values if isinstance(p, str) and PANEL_MARK in p]
            if not panels and any(isinstance(v, str) and DRILL_MARK in v for v in values):
                outputs.append(_static_deck(notebook_name))
            else:
                outputs.append(_static_output("".join(panels) or None, notebook_name))
            replaced += 1
        cell.outputs = outputs
    nb.metadata.pop("widgets", None)
    return replaced


# ---- HTML ----------------------------------------------------------------------------------------

_REMOTE = re.compile(r"^\s*(https?:)?//", re.IGNORECASE)
#: tags whose attribute makes a browser fetch something when the page loads
FETCHING = {"script": ("src",), "link": ("href",), "img": ("src", "srcset"), "iframe": ("src",),
            "source": ("src", "srcset"), "video": ("src", "poster"), "audio": ("src",), "embed": ("src",),
            "object": ("data",), "track": ("src",), "input": ("src",)}


class _Fetches(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name in FETCHING.get(tag, ()) and value and _REMOTE.match(value):
                self.found.append(f"<{tag} {name}={value!r}>")

    handle_startendtag = handle_starttag


def remote_references(page: str) -> list[str]:
    """Every tag in ``page`` that would fetch something from the network when it loads."""
    p = _Fetches()
    p.feed(page)
    p.close()
    return p.found


_REMOTE_SCRIPT = re.compile(r"<script\b[^>]*\ssrc\s*=\s*[\"']?\s*(https?:)?//[^>]*>.*?</script\s*>",
                            re.IGNORECASE | re.DOTALL)
_REMOTE_LINK = re.compile(r"<link\b[^>]*\shref\s*=\s*[\"']?\s*(https?:)?//[^>]*>", re.IGNORECASE)


def strip_remote(page: str) -> str:
    """``page`` less any ``<script src>`` or ``<link href>`` that points at the network."""
    return _REMOTE_LINK.sub("", _REMOTE_SCRIPT.sub("", page))


_DETAILS = re.compile(r"<details>\s*<summary>(.*?)</summary>(.*?)</details>", re.S)


def _markdown_html(text: str) -> str:
    from nbconvert.filters.markdown_mistune import markdown2html_mistune

    return markdown2html_mistune(text) if text.strip() else ""


def fold_answers(nb) -> int:
    """Keep each ``<details><summary>…</summary> answer </details>`` of a Markdown output folded in
    the handout, as JupyterLab shows it. nbconvert's Markdown renderer closes an HTML block at its
    first blank line, so the answer landed *after* an empty ``<details>``, visible to every reader;
    here each such output is rendered to HTML piece by piece, the answer inside its ``<details>``.
    Returns the outputs changed."""
    changed = 0
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            text = data.get("text/markdown")
            if not text or "<details>" not in text:
                continue
            pieces, last = [], 0
            for m in _DETAILS.finditer(text):
                pieces.append(_markdown_html(text[last:m.start()]))
                pieces.append(f"<details><summary>{m.group(1)}</summary>{_markdown_html(m.group(2))}</details>")
                last = m.end()
            pieces.append(_markdown_html(text[last:]))
            data["text/html"] = "\n".join(p for p in pieces if p)
            del data["text/markdown"]
            changed += 1
    return changed


def hide_collapsed_sources(nb) -> int:
    """Leave out of the handout the code of every cell JupyterLab shows collapsed (the narration
    cells: their output is the lesson's prose, their ``md(f"…")`` source would repeat it, answers
    included). Returns the cells hidden."""
    hidden = 0
    for cell in nb.cells:
        if cell.cell_type == "code" and cell.get("metadata", {}).get("jupyter", {}).get("source_hidden"):
            cell.metadata.setdefault("transient", {})["remove_source"] = True
            hidden += 1
    return hidden


def offline_exporter():
    """nbconvert's lab HTML exporter with the network-fetching blocks emptied and MathJax local."""
    from jinja2 import DictLoader
    from nbconvert import HTMLExporter

    return HTMLExporter(template_name="lab", template_file=_TEMPLATE_NAME,
                        extra_loaders=[DictLoader({_TEMPLATE_NAME: _TEMPLATE})],
                        mathjax_url=f"{MATHJAX_DIR}/MathJax.js?config={MATHJAX_CONFIG}",
                        require_js_url="", widget_renderer_url="", jupyter_widgets_base_url="",
                        mermaid_js_url="", embed_images=True)


# ---- running ---------------------------------------------------------------------------------------


def execute(nb, cwd: Path, scratch: Path, timeout_s: int = 600) -> None:
    """Run ``nb`` in place in a fresh python3 kernel started in ``cwd``, with the learner's data folder,
    IPython's folder (``IPYTHONDIR``) and the kernel's sockets (IPC, POSIX) in ``scratch``, and
    IPython's history in memory."""
    from nbclient import NotebookClient
    from traitlets.config import Config

    config = Config()
    if os.name == "posix":
        # IPC sockets are files only this user can reach: no "running over TCP without encryption"
        config.KernelManager.transport = "ipc"
        config.KernelManager.ip = str(scratch / "kernel")
    env = dict(os.environ)
    env[DATA_ENV] = str(scratch / "data")
    env["IPYTHONDIR"] = str(scratch / "ipython")  # the profile IPython creates at start-up goes here
    env.pop("MPLBACKEND", None)  # the kernel draws inline, as in JupyterLab, whatever this process uses
    client = NotebookClient(nb, timeout=timeout_s, kernel_name="python3", config=config,
                            resources={"metadata": {"path": str(cwd)}}, store_widget_state=True,
                            extra_arguments=["--HistoryManager.hist_file=:memory:"])
    client.execute(env=env)


def export(root: Path | str = ".", out: Path | str = "handouts", only: list[str] | None = None,
           timeout_s: int = 600, log: Callable[[str], object] | None = print) -> list[Path]:
    """Execute each lesson notebook in a fresh kernel and write it as a self-contained HTML page into
    ``out``, with MathJax beside it and the cheat sheet. ``only`` limits to notebooks whose name starts
    with one of the given prefixes ("01", "02"). ``log`` gets one progress line per notebook (None: quiet).
    Returns the files written (MathJax's own files not listed, only its folder's ``MathJax.js``)."""
    import nbformat

    from . import cheatsheet

    root, out = Path(root), Path(out)
    notebooks = lesson_notebooks(root)
    if only:
        notebooks = [p for p in notebooks if any(p.name.startswith(o) for o in only)]
    if not notebooks:
        raise FileNotFoundError(f"no lesson notebooks found under {root / 'notebooks'}"
                                + (f" matching {only}" if only else ""))
    mathjax = copy_mathjax(out)
    exporter = offline_exporter()
    written = [mathjax / "MathJax.js"]
    for nb_path in notebooks:
        if log is not None:
            log(f"running {nb_path.name} …")
        nb = nbformat.read(str(nb_path), as_version=4)
        with tempfile.TemporaryDirectory(prefix="rl-export-") as scratch:
            execute(nb, nb_path.parent, Path(scratch), timeout_s)
        replace_dashboards(nb, f"notebooks/{nb_path.name}")
        fold_answers(nb)
        hide_collapsed_sources(nb)
        body, _ = exporter.from_notebook_node(nb, resources={"metadata": {"name": nb_path.stem}})
        body = strip_remote(body)
        left = remote_references(body)
        if left:
            raise RuntimeError(f"{nb_path.name}: the handout would fetch from the network: {left[:3]}")
        target = out / nb_path.with_suffix(".html").name
        atomic_write_text(target, body)
        written.append(target)
    written += cheatsheet.write(out)
    return written
