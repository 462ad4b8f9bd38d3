"""Spaced repetition for the interview deck: Leitner boxes, progress saved to a JSON file in the
learner's data folder, and a drill session (plain Python, unit-tested) behind the ipywidgets drill.

Ratings: ``again`` sends a card back to box 1; ``hard`` keeps it where it is; ``good`` moves it up
one box; ``easy`` two. Each box has a review interval; due cards come first, then new ones.
Progress writes are atomic; a corrupt or unreadable progress file is moved aside (never deleted)
with a message, and a fresh one is started.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..core.files import atomic_write_text
from .flashcards import Card, check_numeric, deck, filter_cards

RATINGS = ("again", "hard", "good", "easy")
BOX_INTERVALS_S = (0, 10 * 60, 24 * 3600, 3 * 24 * 3600, 7 * 24 * 3600, 21 * 24 * 3600)  # box 0 = new
MAX_BOX = len(BOX_INTERVALS_S) - 1
PROGRESS_SCHEMA = "roofline-lessons/drill-progress"
#: cards renamed since a progress file may have been written: old id → new id. A saved state under an old
#: id is carried over to the new one (unless the new one has its own); ids of cards no longer in the deck
#: are kept in the file and ignored by the drill
RENAMED_CARDS = {"ttft-estimate": "ttft-lower-bound", "tpot-estimate": "tpot-lower-bound"}


@dataclass
class CardState:
    box: int = 0  #: 0 = never seen
    due: float = 0.0  #: epoch seconds
    reviews: int = 0
    lapses: int = 0
    last_rating: str | None = None


def schedule(state: CardState, rating: str, now: float) -> CardState:
    """The card's new Leitner box and due time after ``rating``."""
    if rating not in RATINGS:
        raise ValueError(f"rating must be one of {', '.join(RATINGS)}, got {rating!r}")
    box = {"again": 1, "hard": max(state.box, 1), "good": min(state.box + 1, MAX_BOX),
           "easy": min(state.box + 2, MAX_BOX)}[rating]
    return CardState(box=box, due=now + BOX_INTERVALS_S[box], reviews=state.reviews + 1,
                     lapses=state.lapses + (rating == "again" and state.box > 1), last_rating=rating)


def next_card(cards: list[Card], states: dict[str, CardState], now: float) -> Card | None:
    """Due cards first (earliest due, lowest box), then unseen cards in deck order, else None."""
    due = [c for c in cards if c.id in states and states[c.id].box > 0 and states[c.id].due <= now]
    if due:
        return min(due, key=lambda c: (states[c.id].due, states[c.id].box))
    new = [c for c in cards if c.id not in states or states[c.id].box == 0]
    return new[0] if new else None


def data_file() -> Path:
    from ..measure.results import data_dir

    return data_dir() / "drill-progress.json"


class ProgressStore:
    """Card states on disk. ``messages`` tells the learner about anything recovered."""

    def __init__(self, path: Path | str | None = None) -> None:
        self.path = Path(path) if path is not None else data_file()
        self.messages: list[str] = []
        self.states: dict[str, CardState] = self._load()

    def _set_aside(self, why: str) -> None:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        aside = self.path.with_name(f"{self.path.stem}.unreadable-{stamp}{self.path.suffix}")
        n = 1
        while aside.exists():
            n += 1
            aside = self.path.with_name(f"{self.path.stem}.unreadable-{stamp}-{n}{self.path.suffix}")
        try:
            self.path.replace(aside)
            self.messages.append(f"Your progress file {self.path} could not be read ({why}). It was kept as "
                                 f"{aside.name} and a fresh one started — nothing was deleted.")
        except OSError as exc:
            self.messages.append(f"Your progress file {self.path} could not be read ({why}) nor moved aside ({exc}); "
                                 "progress this session will be saved when the file becomes writable.")

    def _load(self) -> dict[str, CardState]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        except (OSError, UnicodeDecodeError) as exc:
            self._set_aside(f"{type(exc).__name__}: {exc}")
            return {}
        try:
            data = json.loads(text)
            if not isinstance(data, dict) or data.get("schema") != PROGRESS_SCHEMA:
                raise ValueError("not a drill progress file")
            states = {}
            for card_id, s in data["cards"].items():
                states[str(card_id)] = CardState(box=int(s["box"]), due=float(s["due"]), reviews=int(s["reviews"]),
                                                 lapses=int(s.get("lapses", 0)), last_rating=s.get("last_rating"))
            for old, new in RENAMED_CARDS.items():
                if old in states:
                    state = states.pop(old)
                    states.setdefault(new, state)
            return states
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            self._set_aside(f"{type(exc).__name__}: {exc}")
            return {}

    def save(self) -> None:
        data = {"schema": PROGRESS_SCHEMA, "version": 1,
                "cards": {cid: vars(s) for cid, s in sorted(self.states.items())}}
        try:
            atomic_write_text(self.path, json.dumps(data, indent=1) + "\n")
        except OSError as exc:
            self.messages.append(f"Could not save progress to {self.path}: {exc}. Your ratings are kept in memory.")


@dataclass
class DrillSession:
    """The drill's state machine: show a card, reveal, check a number, rate, move on.

    In both modes a revealed card offers its follow-ups, one at a time (``next_follow_up``). In
    ``mode="drill"`` they are optional: the card can be rated as soon as its answer is revealed.
    ``mode="mock"`` chains them as an interviewer would: the widget offers the ratings only after the
    last follow-up has been asked and answered (``view()["can_rate"]``).
    Everything here is plain Python; the widget only displays ``view()`` and calls these methods.
    """

    store: ProgressStore
    lesson: int | None = None
    tag: str | None = None
    mode: str = "drill"  #: "drill" or "mock"
    clock: object = time.time
    card: Card | None = None
    revealed: bool = False
    follow_up_index: int = -1  #: -1: the main question; k: follow-up k
    numeric_feedback: str = ""
    wrong_tries: int = 0  #: wrong numbers checked for the current card
    log: list = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.mode not in ("drill", "mock"):
            raise ValueError(f"mode must be 'drill' or 'mock', got {self.mode!r}")
        self.advance()

    def cards(self) -> list[Card]:
        return filter_cards(self.lesson, self.tag)

    def advance(self) -> None:
        self.card = next_card(self.cards(), self.store.states, self.clock())
        self.revealed, self.follow_up_index, self.numeric_feedback, self.wrong_tries = False, -1, "", 0

    def reveal(self) -> None:
        self.revealed = True

    def check(self, answer) -> str:
        """Check a number for the current card. A first wrong try is told too high or too low (and the
        classic mistake it matches) without the value; the second, or any try after the answer is
        revealed, shows the package's value."""
        if self.card is None:
            return ""
        verdict = check_numeric(self.card, answer, show_value=self.revealed or self.wrong_tries >= 1)
        if not verdict.correct and verdict.message.startswith("✗"):
            self.wrong_tries += 1
        self.numeric_feedback = verdict.message
        return self.numeric_feedback

    def more_follow_ups(self) -> bool:
        """Whether the current card has a follow-up still to ask."""
        return self.card is not None and self.follow_up_index + 1 < len(self.card.follow_ups)

    def can_rate(self) -> bool:
        """A card is rated once its answer is revealed; in mock mode, only after its last follow-up."""
        return self.card is not None and self.revealed and not (self.mode == "mock" and self.more_follow_ups())

    def next_follow_up(self) -> bool:
        """Move to the next follow-up question (after the current answer is revealed, in either mode);
        False when there is none left or the current answer is not revealed yet."""
        if not self.revealed or not self.more_follow_ups():
            return False
        self.follow_up_index += 1
        self.revealed = False
        return True

    def rate(self, rating: str) -> None:
        """Schedule the current card, save progress, and show the next card. (The widget offers the
        ratings only when :meth:`can_rate`; the session itself takes a rating at any time.)"""
        if self.card is None:
            return
        now = self.clock()
        self.store.states[self.card.id] = schedule(self.store.states.get(self.card.id, CardState()), rating, now)
        self.log.append((self.card.id, rating))
        self.store.save()
        self.advance()

    def counts(self) -> dict[str, int]:
        now = self.clock()
        cards = self.cards()
        states = self.store.states
        return {
            "cards": len(cards),
            "new": sum(1 for c in cards if c.id not in states or states[c.id].box == 0),
            "due": sum(1 for c in cards if c.id in states and states[c.id].box > 0 and states[c.id].due <= now),
            "learned": sum(1 for c in cards if c.id in states and states[c.id].box >= 3),
        }

    def view(self) -> dict:
        """What the widget shows now."""
        c = self.card
        if c is None:
            return {"done": True, "text": "Nothing due in this selection. Come back later, or widen the filter."}
        out = {"done": False, "card": c.id, "lesson": c.lesson, "tags": c.tags, "numeric": c.numeric is not None,
               "revealed": self.revealed, "feedback": self.numeric_feedback, "counts": self.counts()}
        if self.follow_up_index < 0:
            out["question"] = c.question
            out["answer_label"] = "30-second answer"
            out["answer"] = c.short_answer() if self.revealed else None
            out["detail"] = c.detailed_answer() if self.revealed else None
            out["red_flags"] = list(c.red_flags) if self.revealed else []
            out["memory_aid"] = c.memory_aid_text() if self.revealed else ""
        else:
            f = c.follow_ups[self.follow_up_index]
            out["question"] = f"Follow-up {self.follow_up_index + 1}: {f.question}"
            out["answer_label"] = "Answer"
            out["answer"] = c.follow_up_answer(self.follow_up_index) if self.revealed else None
            out["detail"], out["red_flags"], out["memory_aid"] = None, [], ""
        # where the card comes from: shown with every revealed answer, the follow-ups' included
        out["sources"] = list(c.sources()) if self.revealed else []
        out["more_follow_ups"] = self.more_follow_ups()
        out["can_rate"] = self.can_rate()
        return out


#: marks the drill's card panel, so an offline handout can print the deck in its place
DRILL_MARK = 'class="rl-drill"'


def _sources_html(sources) -> str:
    import html

    items = "".join(f"<li>{html.escape(s)}</li>" for s in sources)
    return f"<details><summary><b>Sources</b> ({len(sources)})</summary><ul>{items}</ul></details>"


def _html(view: dict) -> str:
    import html

    if view["done"]:
        return f"<div {DRILL_MARK}><p><b>{html.escape(view['text'])}</b></p></div>"
    counts = view["counts"]
    parts = [f"<p style='color:#555'>Lesson {view['lesson']} · {', '.join(map(html.escape, view['tags']))} · "
             f"{counts['due']} due, {counts['new']} new, {counts['learned']} learned of {counts['cards']} "
             f"<span title='learned: rated good or easy on enough reviews for its interval to reach box 3; "
             f"a first good only schedules the next review'>(learned: three good reviews, fewer with easy)</span></p>",
             f"<h3>{html.escape(view['question'])}</h3>"]
    if view["answer"]:
        label = html.escape(view.get("answer_label", "Answer"))
        parts.append(f"<p><b>{label}.</b> {html.escape(view['answer'])}</p>")
    if view.get("detail"):
        parts.append(f"<p><b>In more depth.</b> {html.escape(view['detail'])}</p>")
    if view.get("memory_aid"):
        parts.append(f"<p><b>Memory aid.</b> {html.escape(view['memory_aid'])}</p>")
    if view.get("red_flags"):
        parts.append("<p><b>Don't say this:</b></p><ul>" + "".join(f"<li>{html.escape(r)}</li>"
                                                                     for r in view["red_flags"]) + "</ul>")
    if view.get("sources"):
        parts.append(_sources_html(view["sources"]))
    if view.get("feedback"):
        parts.append(f"<p>{html.escape(view['feedback'])}</p>")
    return f"<div {DRILL_MARK}>" + "\n".join(parts) + "</div>"


def card_html(card: Card) -> str:
    """One card printed whole, for paper and offline pages: the question as a heading, then the
    30-second answer, the answer in more depth, the memory aid, what not to say, the follow-ups with
    their answers, and the sources. Figures are computed now by the package."""
    import html

    e = html.escape
    parts = [f"<h4>{e(card.question)}</h4>",
             f"<p style='color:#555'>Lesson {card.lesson} · card {e(card.id)} · {e(', '.join(card.tags))}</p>",
             f"<p><b>30-second answer.</b> {e(card.short_answer())}</p>",
             f"<p><b>In more depth.</b> {e(card.detailed_answer())}</p>"]
    if card.memory_aid:
        parts.append(f"<p><b>Memory aid.</b> {e(card.memory_aid_text())}</p>")
    if card.red_flags:
        parts.append("<p><b>Don't say this:</b></p><ul>" + "".join(f"<li>{e(r)}</li>" for r in card.red_flags)
                     + "</ul>")
    for i, f in enumerate(card.follow_ups):
        parts.append(f"<p><b>Follow-up {i + 1}:</b> {e(f.question)}<br><b>Answer.</b> {e(card.follow_up_answer(i))}</p>")
    parts.append("<p><b>Sources:</b></p><ul>" + "".join(f"<li>{e(s)}</li>" for s in card.sources()) + "</ul>")
    return "<section class='rl-card'>" + "".join(parts) + "</section>"


def deck_html(cards=None) -> str:
    """Every card of the deck (or ``cards``), in lesson order, each in a collapsed section under its
    question: the drill on paper, for the offline handout."""
    import html

    cards = list(deck() if cards is None else cards)
    out = [f"<p>{len(cards)} cards, in lesson order: open a question to see its answers, its memory aid (where it "
           "has one), its red flags, its follow-ups and its sources.</p>"]
    lesson = None
    for c in cards:
        if c.lesson != lesson:
            lesson = c.lesson
            out.append(f"<h3>Lesson {lesson}</h3>")
        out.append(f"<details><summary>{html.escape(c.question)}</summary>{card_html(c)}</details>")
    return "\n".join(out)


def flashcard_drill(mode: str = "drill", path: Path | str | None = None):
    """The ipywidgets drill: filter, show, reveal (the answer, its memory aid and its sources), check a number,
    ask the follow-ups, rate; progress persists."""
    import ipywidgets as widgets
    from IPython.display import display

    store = ProgressStore(path)
    # 0 and "" stand for "any": a Dropdown shows no label for a None value
    lessons = [("all lessons", 0)] + [(f"lesson {n}", n) for n in sorted({c.lesson for c in deck()})]
    from .flashcards import all_tags

    lesson_w = widgets.Dropdown(options=lessons, value=0, description="lesson")
    tag_w = widgets.Dropdown(options=[("any tag", "")] + [(t, t) for t in all_tags()], value="", description="tag")
    mode_w = widgets.ToggleButtons(options=[("drill", "drill"), ("mock interview", "mock")], value=mode)
    panel_w = widgets.HTML()
    number_w = widgets.Text(placeholder="your number", description="answer")
    check_w = widgets.Button(description="check")
    reveal_w = widgets.Button(description="reveal", button_style="info")
    follow_w = widgets.Button(description="ask a follow-up")
    rate_ws = [widgets.Button(description=r, button_style={"again": "danger", "hard": "warning", "good": "success",
                                                           "easy": "primary"}[r]) for r in RATINGS]
    notes = widgets.HTML("<br>".join(store.messages))
    state = {"session": DrillSession(store, mode=mode)}

    def refresh(*_):
        v = state["session"].view()
        panel_w.value = _html(v)
        numeric = not v["done"] and v["numeric"] and state["session"].follow_up_index < 0
        number_w.layout.display = check_w.layout.display = None if numeric else "none"
        follow_w.layout.display = None if (not v["done"] and v["revealed"] and v["more_follow_ups"]) else "none"
        for b in rate_ws:
            b.disabled = v["done"] or not v["can_rate"]
        reveal_w.disabled = v["done"] or v["revealed"]
        notes.value = "<br>".join(store.messages)

    def restart(*_):
        state["session"] = DrillSession(store, lesson=lesson_w.value or None, tag=tag_w.value or None,
                                        mode=mode_w.value)
        number_w.value = ""
        refresh()

    def on_check(_):
        state["session"].check(number_w.value)
        refresh()

    def on_reveal(_):
        state["session"].reveal()
        refresh()

    def on_follow(_):
        state["session"].next_follow_up()
        refresh()

    def on_rate(button):
        state["session"].rate(button.description)
        number_w.value = ""
        refresh()

    for w in (lesson_w, tag_w, mode_w):
        w.observe(restart, names="value")
    check_w.on_click(on_check)
    reveal_w.on_click(on_reveal)
    follow_w.on_click(on_follow)
    for b in rate_ws:
        b.on_click(on_rate)
    refresh()
    ui = widgets.VBox([widgets.HBox([lesson_w, tag_w, mode_w]), panel_w, widgets.HBox([number_w, check_w]),
                       widgets.HBox([reveal_w, follow_w]), widgets.HBox(rate_ws), notes])
    ui.session = state  # for tests and the curious
    display(ui)
    return ui
