"""Small helpers for notebooks: sentences, tables and charts whose numbers come from the package.

Charts carry **alt text** stating their message: :func:`set_alt` attaches it to a matplotlib
figure, and inside IPython a ``text/html`` formatter shows every figure as an ``<img>`` with that
``alt`` (JupyterLab prefers the HTML over the plain PNG; the PNG stays in the output as well). A
figure shown without alt text gets ``alt=""`` and the tests fail on it.
"""

from __future__ import annotations

import base64
import html
import io
import re
from typing import Sequence

ALT_ATTRIBUTE = "roofline_alt"


#: a dollar sign Markdown would take for the start of TeX math: not escaped, and money-like (a plain
#: amount after it, "$3.24 per", or "US$"; TeX such as "$4Nd$" goes on with a letter or an operator) —
#: JupyterLab would set the rest of the line in italics
_MONEY_DOLLAR = re.compile(r"(?<!\\)(?:US\$|\$\s?\d[\d,]*(?:\.\d+)?(?=[\s,;:)!?]|\.(?:\s|$)|$))")
#: a line inside a paragraph that Markdown would start a bullet list with ("+ " is never meant as one here)
_STRAY_BULLET = re.compile(r"(?<=[^\n])\n[ \t]{0,3}\+[ \t]")


def markdown_problems(text: str) -> list[str]:
    """What would render wrongly in ``text`` as Markdown: a money dollar sign (write "USD", or
    escape it), an odd number of unescaped dollar signs (an unclosed TeX span), a line inside a
    paragraph that starts with "+ " (a stray bullet). Empty when the text is clean."""
    problems = []
    for m in _MONEY_DOLLAR.finditer(text):
        problems.append(f"a money dollar sign opens TeX math: …{text[max(0, m.start() - 20):m.end() + 20]}…")
    if len(re.findall(r"(?<!\\)\$", text)) % 2:
        problems.append("an odd number of unescaped $: a TeX span is not closed")
    for m in _STRAY_BULLET.finditer(text):
        problems.append(f"a line starting with '+ ' inside a paragraph becomes a bullet: "
                        f"…{text[max(0, m.start() - 30):m.end() + 20]!r}…")
    return problems


def md(text: str):
    """Show ``text`` as Markdown in a notebook (prints it outside one). Text that would render wrongly
    (:func:`markdown_problems`) raises, so a lesson that builds it fails its notebook test."""
    problems = markdown_problems(text)
    if problems:
        raise ValueError("this Markdown would render wrongly: " + "; ".join(problems))
    try:
        from IPython.display import Markdown, display
    except ImportError:  # plain Python
        print(text)
        return None
    display(Markdown(text))
    return None


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A Markdown table as text."""
    lines = ["| " + " | ".join(map(str, headers)) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(map(str, r)) + " |" for r in rows]
    return "\n".join(lines)


def html_table(headers: Sequence[str], rows: Sequence[Sequence[object]], caption: str = "") -> str:
    """The same table as HTML (cells escaped), for dashboards that redraw it on every move."""
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in r) + "</tr>" for r in rows)
    cap = f"<caption style=\"text-align: left; font-weight: bold;\">{html.escape(caption)}</caption>" if caption else ""
    return f'<table class="rl-table">{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def show_table(headers: Sequence[str], rows: Sequence[Sequence[object]]):
    """Display a Markdown table."""
    return md(markdown_table(headers, rows))


def set_alt(fig, text: str):
    """Attach alt text (the chart's message, in a sentence or two) to a matplotlib figure; returns it."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"alt text must be a non-empty sentence, got {text!r}")
    setattr(fig, ALT_ATTRIBUTE, text.strip())
    return fig


def alt_of(fig) -> str:
    """The figure's alt text, or ``""`` when none was set."""
    return getattr(fig, ALT_ATTRIBUTE, "")


def figure_html(fig) -> str:
    """A figure as ``<img alt=...>`` with the PNG inline (what the notebook shows)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight")
    data = base64.b64encode(buf.getvalue()).decode("ascii")
    alt = html.escape(alt_of(fig), quote=True)
    return f'<img class="rl-figure" src="data:image/png;base64,{data}" alt="{alt}" style="max-width: 100%;">'


def register_alt_text_formatter() -> bool:
    """Inside IPython, show matplotlib figures as ``<img>`` with their alt text. True if registered.

    The inline backend removes every formatter registered for ``Figure`` when it sets itself up
    (at the first figure a kernel draws), so the formatter is also put back after every cell,
    before the backend shows that cell's figures."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    ip = get_ipython()
    if ip is None or not hasattr(ip, "display_formatter"):
        return False
    from matplotlib.figure import Figure

    def ensure(*_args) -> None:
        ip.display_formatter.formatters["text/html"].for_type(Figure, figure_html)

    ensure()
    callbacks = ip.events.callbacks.get("post_execute", [])
    if not any(getattr(cb, "__name__", "") == "_roofline_alt_text" for cb in callbacks):
        ensure.__name__ = "_roofline_alt_text"
        # first in line: the inline backend's own post_execute callback shows the figures
        callbacks.insert(0, ensure)
    return True
