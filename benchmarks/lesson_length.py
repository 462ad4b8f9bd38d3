"""Benchmark: how long each lesson reads, as a learner sees it.

Prints, per lesson notebook:

- **main path**: the screens above the first heading that starts with "Going further" (the lesson
  a learner reads through; the deeper material follows it);
- **screens**: the height of the lesson's offline handout (the notebook run, narration sources
  folded away and answers inside their ``<details>``, the way JupyterLab shows it) in Chromium at
  1400 x 1000, divided by 1000 px;
- **code cells / visible**: code cells in all, and those whose source a learner sees (narration
  cells, collapsed in JupyterLab, are not counted as visible);
- **visible asserts**: ``assert`` lines in the sources a learner sees.

Target (issue 26): no lesson's main path over 15 screens, and few asserts in what a learner reads.

Run: .venv/bin/python benchmarks/lesson_length.py [--only 10 11 12] [--out /tmp/rl-length]
(needs Chromium: `make browser-deps`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

VIEWPORT = {"width": 1400, "height": 1000}
TARGET_SCREENS = 15


def visible_code(path: Path) -> tuple[int, int, int]:
    """(code cells, code cells with a visible source, assert lines in visible sources)."""
    nb = nbformat.read(str(path), as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    shown = [c for c in code if not c.get("metadata", {}).get("jupyter", {}).get("source_hidden")]
    asserts = sum(1 for c in shown for line in c.source.splitlines() if line.lstrip().startswith("assert "))
    return len(code), len(shown), asserts


MAIN_PATH_JS = """() => {
  const h = [...document.querySelectorAll('h1, h2')].find(e => e.textContent.trim().startsWith('Going further'));
  return h ? h.getBoundingClientRect().top + window.scrollY : document.documentElement.scrollHeight;
}"""


def page_heights(pages: list[Path]) -> dict[str, tuple[float, float]]:
    """Per page: (whole height, height of the main path), in CSS px."""
    from playwright.sync_api import sync_playwright

    from lab_driver import CHROMIUM_ARGS, find_chromium

    heights = {}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=find_chromium(), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport=VIEWPORT)
        for html in pages:
            page.goto(html.as_uri())
            page.wait_for_timeout(1500)  # MathJax typesets
            heights[html.stem] = (page.evaluate("document.documentElement.scrollHeight"), page.evaluate(MAIN_PATH_JS))
        browser.close()
    return heights


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="lesson prefixes, e.g. 10 11")
    parser.add_argument("--out", default="/tmp/rl-lesson-length", help="where the handouts are written")
    args = parser.parse_args()

    from roofline_lessons.course.handouts import export

    written = export(ROOT, args.out, only=args.only, log=None)
    pages = [p for p in written if p.suffix == ".html" and p.stem[:2].isdigit()]
    heights = page_heights(pages)
    print(f"{'lesson':32} {'screens':>8} {'main path':>10} {'code cells':>10} {'visible':>8} {'visible asserts':>16}")
    for html in pages:
        code, shown, asserts = visible_code(ROOT / "notebooks" / f"{html.stem}.ipynb")
        whole, main_path = (h / VIEWPORT["height"] for h in heights[html.stem])
        flag = "  main path over target" if main_path > TARGET_SCREENS else ""
        print(f"{html.stem:32} {whole:8.1f} {main_path:10.1f} {code:10d} {shown:8d} {asserts:16d}{flag}")


if __name__ == "__main__":
    main()
