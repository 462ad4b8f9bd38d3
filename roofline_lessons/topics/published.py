"""Published measurements the lessons hold against the course's bounds, and the assumptions needed
to price them.

gpt-fast (pytorch-labs/gpt-fast) quotes batch-1 decode rates, but not every condition a bound
needs: its README's benchmark header gives the prompt ("just 5 tokens"), not how many tokens each
run generated. The lessons price its figures at one context, :data:`GPT_FAST_CONTEXT_TOKENS`, built
from the prompt and an assumed generation length, so that every lesson quoting gpt-fast's fraction
of the bound quotes the same number.

How generate.py times a run (read from its source): it encodes the prompt with
``encode_tokens(tokenizer, prompt, bos=True)``, so the prefill carries the prompt's tokens and the
BOS token before them; the timed region holds that prefill, which yields the first new token, then
``decode_n_tokens(max_new_tokens - 1)`` decode steps, at input positions ``prefill`` … ``prefill +
max_new_tokens - 2``; the rate it prints is ``max_new_tokens`` ÷ that whole time."""

from __future__ import annotations

import re

from ..core.hardware import Measurement, get_part
from ..core.placement import Placement, place
from ..core.errors import RooflineInputError

GPT_FAST_PART = "a100-80gb"  #: the part gpt-fast's README benchmarks ran on
GPT_FAST_7B = "llama-2-7b"  #: the model of its single-chip figure
#: the README's benchmark header: "a very small prompt length (just 5 tokens)"; the catalog's conditions
#: say the same ("a 5-token prompt"). The text's tokens: generate.py adds a BOS token before them
GPT_FAST_PROMPT_TOKENS = 5
#: the BOS token generate.py prepends (``encode_tokens(..., bos=True)`` in its ``main``)
GPT_FAST_BOS_TOKENS = 1
#: tokens the prefill carries, and the first decode step finds cached: the prompt and the BOS token
GPT_FAST_PREFILL_TOKENS = GPT_FAST_PROMPT_TOKENS + GPT_FAST_BOS_TOKENS
#: ASSUMPTION: generate.py's default ``--max_new_tokens``; the README does not state the setting its
#: benchmark runs used
GPT_FAST_NEW_TOKENS = 200
#: decode steps in a run: the prefill yields the first new token, each step one more
GPT_FAST_DECODE_STEPS = GPT_FAST_NEW_TOKENS - 1
#: ASSUMPTION (from the ones above): tokens cached at the middle decode step of a run — the steps see
#: ``GPT_FAST_PREFILL_TOKENS`` … ``GPT_FAST_PREFILL_TOKENS + GPT_FAST_NEW_TOKENS - 2`` tokens cached
#: (:func:`gpt_fast_context_range`), and an odd number of them has an exact middle. A decode step's
#: compulsory bytes grow linearly with its context, so when memory binds every step the bound at the
#: middle step is the mean of the steps' bounds (the prefill's own bound is
#: :func:`gpt_fast_run_rate_bound`'s business).
GPT_FAST_CONTEXT_TOKENS = GPT_FAST_PREFILL_TOKENS + (GPT_FAST_NEW_TOKENS - 2) // 2


def gpt_fast_context_range() -> tuple[int, int]:
    """The fewest and the most tokens cached over a run's decode steps, under the assumption above:
    the prefill's tokens (the prompt and BOS) alone at the first step (the prefill has produced one
    token, which that step consumes), those and all but the last two generated tokens at the last
    step."""
    return GPT_FAST_PREFILL_TOKENS, GPT_FAST_PREFILL_TOKENS + GPT_FAST_NEW_TOKENS - 2


def gpt_fast_run_rate_bound() -> float:
    """Upper bound on the rate generate.py prints for the assumed run (tokens/s): the tokens it
    counts (``GPT_FAST_NEW_TOKENS``) over the lower bounds of everything in its timed region — the
    prompt's prefill and every decode step, each priced by the package."""
    prefill = place(GPT_FAST_7B, GPT_FAST_PART, phase="prefill", prompt_tokens=GPT_FAST_PREFILL_TOKENS)
    fewest, most = gpt_fast_context_range()
    steps_s = sum(float(gpt_fast_7b_bound(c).time_lower_bound_s) for c in range(fewest, most + 1))
    return GPT_FAST_NEW_TOKENS / (float(prefill.time_lower_bound_s) + steps_s)


def stated_prompt_tokens(measurement: Measurement) -> int:
    """The prompt length a catalog measurement's conditions state ("a N-token prompt")."""
    found = re.search(r"a (\d+)-token prompt", measurement.conditions or "")
    if not found:
        raise RooflineInputError(f"the catalog entry does not state its prompt length ({measurement.conditions!r})")
    return int(found.group(1))


def gpt_fast_7b_measurement() -> Measurement:
    """The catalog's gpt-fast Llama-2-7B batch-1 decode on one A100-80GB (its tokens/s, the 'bandwidth
    achieved' it prints as ``value``, conditions and source)."""
    found = [m for m in get_part(GPT_FAST_PART).measured if m.model == GPT_FAST_7B and m.tokens_per_s]
    if not found:
        raise RooflineInputError(f"the catalog has no measured decode rate of {GPT_FAST_7B} on {GPT_FAST_PART}")
    return found[0]


def gpt_fast_7b_bound(context_tokens: int = GPT_FAST_CONTEXT_TOKENS) -> Placement:
    """The batch-1 decode placement of gpt-fast's 7B run (its model, part and BF16 default), at
    ``context_tokens`` cached: read its lower bound (``tokens_per_s_upper_bound``)."""
    return place(GPT_FAST_7B, GPT_FAST_PART, phase="decode", context_tokens=context_tokens)


def gpt_fast_model_size_bytes(model: str = GPT_FAST_7B, dtype: str = "bf16") -> float:
    """The "model size" today's generate.py multiplies by tokens/s for its "Bandwidth achieved": its
    ``_get_model_size`` sums the parameters and buffers of every top-level module but the
    ``nn.Embedding``, and runs before ``generate`` allocates the KV cache — so, for a dense model,
    the weights less the embedding table (bytes). The README's figures were NOT made with this
    count (:func:`gpt_fast_readme_model_size_bytes`)."""
    from ..core.memory import weight_bytes
    from ..core.models import get_model
    from ..core.dtypes import bytes_per_element

    m = get_model(model)
    return float(weight_bytes(model, dtype)) - m.vocab_size * m.hidden_size * bytes_per_element(dtype)


def gpt_fast_readme_model_size_bytes(model: str = GPT_FAST_7B, dtype: str = "bf16") -> float:
    """The "model size" behind the README's "Memory Bandwidth (GB/s)" column: the generate.py of its
    benchmarks (e.g. commit 0055c42) computed ``model_size = sum(p.numel() * p.dtype.itemsize for p
    in chain(model.parameters(), model.buffers()))`` before the KV cache existed — every weight, the
    embedding table included, no KV cache (bytes; for a dense BF16 model, the package's weights).
    The README's int8 row (GB/s ÷ tokens/s) reproduces this count of the int8 model to 0.01 % (int8
    linears with their per-channel BF16 scales, BF16 norms and embedding; the lesson-9 tests check
    it); less the table, the count falls 3.8 % short of it. Today's ``_get_model_size`` leaves the embedding
    table out (:func:`gpt_fast_model_size_bytes`)."""
    from ..core.memory import weight_bytes

    return float(weight_bytes(model, dtype))


def provenance(measurement: Measurement) -> str:
    """Source, date and software of a catalog measurement, saying which the catalog does not record."""
    return (f"{measurement.source}; {measurement.date or 'date not recorded'}; "
            f"{('software: ' + measurement.software) if measurement.software else 'software not recorded'}")
