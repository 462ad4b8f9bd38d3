# ---
# jupyter:
#   jupytext:
#     notebook_metadata_filter: -jupytext.text_representation.jupytext_version
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Lesson 15 — Interview drill
#
# Cards covering every lesson (the table below counts them): a question, a 30-second answer, a
# longer one, the follow-ups an interviewer asks next, and the things not to say. Some cards add a
# **memory aid**, a picture to hold the answer by, where one helps; every card lists its **sources**:
# its lesson, the papers and documentation its prose rests on, and the catalog entries (datasheets,
# model configs, published measurements) its numbers are computed from. Numeric cards ("the ridge of
# an H200 in BF16?") get their answers from the package when you open them, so they are never stale;
# their checker also recognises the number each red flag leads to, and says which.
#
# **How to use it**
#
# 1. Read the question and answer aloud, in thirty seconds, with a number in it.
# 2. Press **reveal** and compare. For a numeric card, type your number and press **check** first.
#    The revealed card shows its memory aid (if it has one) and its sources.
# 3. Press **ask a follow-up** to hear what an interviewer would ask next, answer it, reveal.
# 4. Rate yourself: **again** (back to the start), **hard** (see it again soon), **good**, **easy**.
#    A Leitner schedule decides what comes next: due cards first, then new ones.
# 5. **Mock interview** mode asks every follow-up before it lets you rate the card, the way a real
#    interviewer digs.
#
# Your progress is saved after every rating in your data folder (it survives restarting the kernel
# or the computer); set `ROOFLINE_LESSONS_DATA` to keep it somewhere else.

# %%
from roofline_lessons import get_part
from roofline_lessons.course import cheatsheet, flashcards
from roofline_lessons.viz.display import md, show_table
from roofline_lessons.course.drill import data_file

deck = flashcards.deck()
by_lesson = {}
for card in deck:
    by_lesson.setdefault(card.lesson, []).append(card)
show_table(["lesson", "cards", "numeric", "with follow-ups", "with a memory aid", "citing papers or docs"],
           [[n, len(cs), sum(c.numeric is not None for c in cs), sum(bool(c.follow_ups) for c in cs),
             sum(bool(c.memory_aid) for c in cs), sum(bool(c.references) for c in cs)]
            for n, cs in sorted(by_lesson.items())])
with_aid = sum(bool(c.memory_aid) for c in deck)
md(f"{len(deck)} cards in all, {with_aid} of them with a memory aid. Progress file: `{data_file()}`.")

# %% jupyter={"source_hidden": true}
assert 0 < with_aid < len(deck)  # "some cards add a memory aid"
assert all(c.sources() for c in deck)  # "every card lists its sources"

# %% [markdown]
# ## A numeric card, answered by the package
#
# The answer is computed now from the hardware catalog — if a figure is corrected, the card is too.

# %%
card = flashcards.get_card("ridge-h200-bf16")
print(card.question)
print(flashcards.check_numeric(card, 200).message)
print("30-second answer:", card.short_answer())
print("Sources:", *card.sources(), sep="\n  ")

# %% [markdown]
# ## A memory aid, and where a card comes from
#
# The first card of the deck, as the drill shows it once revealed: its memory aid and its sources.

# %%
card = flashcards.get_card("concept-plain-language")
print(card.question)
print("30-second answer:", card.short_answer())
print("Memory aid:", card.memory_aid_text())
print("Sources:", *card.sources(), sep="\n  ")

# %% [markdown]
# ## The drill
#
# Filter by lesson or tag, or drill everything.

# %%
from roofline_lessons.course.drill import flashcard_drill

drill = flashcard_drill()

# %% [markdown]
# ## The 60-second cheat sheet
#
# Generated from the package and the deck: formulas, ridges of the common parts, numbers worth
# knowing, the levers per regime, and one question and one red flag per lesson, each naming the card
# it comes from. `roofline-lessons cheatsheet --out DIR` writes it as Markdown and HTML for printing.

# %% jupyter={"source_hidden": true}
md(cheatsheet.markdown())

# %% [markdown]
# ## Before the interview

# %% jupyter={"source_hidden": true}
h100_ridge = get_part("h100-sxm").ridge_point_flop_per_byte("bf16")
md("- Lead with the regime: \"batch-1 decode is memory-bound: about one FLOP per byte of weights in BF16, "
   f"against an H100's dense BF16 ridge of about {h100_ridge:,.0f}\".\n"
   "- Put a number in every answer, and say where it came from (dense or sparse, datasheet or measured) and "
   "which figure it is: the lower bound (compulsory bytes only, everything overlapped, no latency: nothing "
   "pessimistic assumed, though full overlap is itself an assumption in its favour) or an estimate (name its "
   "conventions: unfused activations, dequantisation in series, an assumed latency per call, …). The cards say "
   "which they quote.\n"
   "- Name the lever that matches the regime — bytes for decode, FLOPs for prefill — and the one that does not, "
   "and why.")
