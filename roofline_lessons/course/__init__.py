"""Running the course: exercises, checkers, the interview deck and the workshop tools (top layer,
below only the CLI).

- :mod:`.notebook_files` — jupytext pairs (.ipynb + .py) and their sync checks.
- :mod:`.exercisegen`    — writes ``exercises/`` from ``solutions/``.
- :mod:`.checkers`       — number and choice checkers that name the classic mistakes.
- :mod:`.checks`         — one module of checkers per lesson.
- :mod:`.flashcards`     — the interview deck (``data/flashcards.toml``), values computed live.
- :mod:`.drill`          — spaced-repetition drill with saved progress.
- :mod:`.cheatsheet`     — the printable cheat sheet.
- :mod:`.handouts`       — ``export``: self-contained offline HTML handouts (MathJax beside them).
- :mod:`.workshop`       — ``doctor``: checks a set-up dependency by dependency.
"""
