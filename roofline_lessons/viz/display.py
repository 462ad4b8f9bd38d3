"""Small helpers for notebooks: sentences and tables whose numbers come from the package."""

from __future__ import annotations

from typing import Sequence


def md(text: str):
    """Show ``text`` as Markdown in a notebook (prints it outside one)."""
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


def show_table(headers: Sequence[str], rows: Sequence[Sequence[object]]):
    """Display a Markdown table."""
    return md(markdown_table(headers, rows))
