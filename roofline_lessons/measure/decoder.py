"""A real transformer decode loop to hold against the roofline (lesson 9, groundwork).

A Llama-architecture decoder written in numpy: token embedding, RMSNorm, rotary position embedding
(RoPE), grouped-query attention with a KV cache, a SwiGLU MLP, a final norm and the lm_head. The
weights are seeded random numbers: a step's time does not depend on trained values, and nothing is
downloaded. Its shape is an ordinary catalog :class:`~roofline_lessons.core.models.Model`, so the
cost model prices the very loop that runs (:func:`llama_like`, :func:`sized_for_cache`).

Arrays are float32 (numpy's fast path on a CPU). Shapes: ``batch`` sequences, ``t`` new tokens,
``T`` cached tokens; ``nq`` query heads and ``nkv`` key/value heads of ``d`` elements each.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..core.errors import RooflineInputError
from ..core.models import Model

#: RoPE base frequency (Llama 2 and many others use 10,000; Llama 3 uses 500,000)
ROPE_THETA = 10_000.0
RMS_EPS = 1e-5
#: a decode loop on a CPU streams its weights from DRAM only if they dwarf the last-level cache
CACHE_MULTIPLE = 8
#: the most layers :func:`sized_for_cache` gives its model family
FAMILY_LAYERS = 256


def llama_like(name: str, *, hidden_size: int, num_hidden_layers: int, num_attention_heads: int,
               num_key_value_heads: int, head_dim: int, intermediate_size: int, vocab_size: int,
               max_context_tokens: int = 4096) -> Model:
    """A Llama-architecture :class:`Model` (no tied embeddings, no biases) for the numpy decoder."""
    for field, value in (("hidden_size", hidden_size), ("num_hidden_layers", num_hidden_layers),
                         ("num_attention_heads", num_attention_heads), ("num_key_value_heads", num_key_value_heads),
                         ("head_dim", head_dim), ("intermediate_size", intermediate_size),
                         ("vocab_size", vocab_size), ("max_context_tokens", max_context_tokens)):
        if not isinstance(value, (int, np.integer)) or value < 1:
            raise RooflineInputError(f"{field} must be a positive whole number, got {value!r}")
    if num_attention_heads % num_key_value_heads:
        raise RooflineInputError(f"num_attention_heads ({num_attention_heads}) must be a multiple of "
                                 f"num_key_value_heads ({num_key_value_heads}) for grouped-query attention")
    if head_dim % 2:
        raise RooflineInputError(f"head_dim must be even for rotary embeddings, got {head_dim}")
    return Model(id=name, name=name, source="roofline_lessons.measure.decoder (seeded random weights)",
                 hidden_size=hidden_size, num_hidden_layers=num_hidden_layers,
                 num_attention_heads=num_attention_heads, num_key_value_heads=num_key_value_heads,
                 head_dim=head_dim, intermediate_size=intermediate_size, vocab_size=vocab_size,
                 max_context_tokens=max_context_tokens)


def sized_for_cache(last_level_cache_bytes: int, multiple: int = CACHE_MULTIPLE, element_bytes: int = 4,
                    max_streamed_bytes: int | None = None) -> Model:
    """The smallest model of a fixed Llama-like shape family whose *streamed* weights are at least
    ``multiple`` times the last-level cache, so each decode step reads them from DRAM, not from
    cache. Streamed: every weight but the embedding table, of which a step reads one row per token.
    Layers grow in steps of one; width is fixed (hidden 1,024, 8 query and 2 KV heads of 128).

    ``max_streamed_bytes`` caps the size (a time or memory budget): past it, the largest model of
    the family within the cap (one layer at least) is returned, and it reaches less than
    ``multiple`` × the cache — the caller says so."""
    if last_level_cache_bytes <= 0:
        raise RooflineInputError(f"last_level_cache_bytes must be positive, got {last_level_cache_bytes!r}")
    if max_streamed_bytes is not None and max_streamed_bytes <= 0:
        raise RooflineInputError(f"max_streamed_bytes must be positive (bytes) or None, got {max_streamed_bytes!r}")
    target = multiple * last_level_cache_bytes
    previous = None
    for layers in range(1, FAMILY_LAYERS + 1):
        model = family_member(layers)
        streamed = streamed_weight_bytes(model, element_bytes)
        if max_streamed_bytes is not None and streamed > max_streamed_bytes:
            return previous or model
        if streamed >= target:
            return model
        previous = model
    if max_streamed_bytes is not None:
        return previous
    raise RooflineInputError(f"no model up to {FAMILY_LAYERS} layers reaches {multiple}× a {last_level_cache_bytes:,}-byte cache")


def family_member(layers: int) -> Model:
    """The family :func:`sized_for_cache` picks from, with ``layers`` layers."""
    return llama_like(f"numpy-llama-{layers}L", hidden_size=1024, num_hidden_layers=layers, num_attention_heads=8,
                      num_key_value_heads=2, head_dim=128, intermediate_size=2816, vocab_size=8192)


def streamed_weight_bytes(model: Model, element_bytes: int = 4) -> int:
    """Bytes of weights one batch-1 decode step reads: all but the embedding table, plus one row of it."""
    return (model.parameter_count() - (model.vocab_size - 1) * model.hidden_size) * element_bytes


@dataclass
class KVCache:
    """Keys and values of every layer for ``batch`` sequences: ``k[layer]`` has shape
    ``(batch, nkv, capacity, d)``; the first ``length`` positions are filled."""

    k: list[np.ndarray]
    v: list[np.ndarray]
    length: int = 0

    @property
    def capacity(self) -> int:
        return self.k[0].shape[2]

    @property
    def batch(self) -> int:
        return self.k[0].shape[0]


def _rms_norm(x: np.ndarray, weight: np.ndarray) -> np.ndarray:
    return x * (1.0 / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + RMS_EPS)) * weight


def _silu(x: np.ndarray) -> np.ndarray:
    return x / (1.0 + np.exp(-x))


def _linear(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``x @ w`` for x of shape (batch, t, fan_in), as ONE 2-D matrix product of (batch·t) rows.

    numpy's matmul on a 3-D ``x`` loops over its leading dimension: (batch, 1, h) @ (h, n) runs
    ``batch`` matrix–vector products, each reading all of ``w`` — a batch-b decode step would read
    every weight b times, where a serving engine (and the cost model) reads it once. Folding the
    rows into one matrix reads ``w`` once per call, whatever the batch."""
    b, t, fan_in = x.shape
    return (x.reshape(b * t, fan_in) @ w).reshape(b, t, w.shape[1])


class NumpyDecoder:
    """A Llama-architecture decoder with seeded random weights; see the module docstring."""

    def __init__(self, model: Model, seed: int = 0, dtype=np.float32) -> None:
        if model.is_hybrid or model.is_moe or model.tie_word_embeddings or model.qk_norm or model.attn_output_gate:
            raise RooflineInputError(f"{model.id}: the numpy decoder runs dense Llama-architecture models only "
                                     "(no Gated DeltaNet, MoE, tied embeddings, QK-norm or output gate)")
        self.model, self.dtype = model, np.dtype(dtype)
        h, d = model.hidden_size, model.head_dim
        nq, nkv, inter = model.num_attention_heads, model.num_key_value_heads, model.intermediate_size
        rng = np.random.default_rng(seed)

        def uniform(shape: tuple[int, int], std: float) -> np.ndarray:
            """Uniform in ±√3·std (so its standard deviation is ``std``), built in place: a uniform
            draw is about 3× faster than a normal one, and a model of a few GiB is built in seconds."""
            w = rng.random(shape, dtype=np.float32)
            w -= np.float32(0.5)
            w *= np.float32(2 * math.sqrt(3) * std)
            return w if w.dtype == self.dtype else w.astype(self.dtype)

        def weight(fan_in: int, fan_out: int) -> np.ndarray:
            return uniform((fan_in, fan_out), 1 / math.sqrt(fan_in))

        self.embed = uniform((model.vocab_size, h), 1.0)
        self.layers = [{
            "attn_norm": np.ones(h, self.dtype), "wq": weight(h, nq * d), "wk": weight(h, nkv * d),
            "wv": weight(h, nkv * d), "wo": weight(nq * d, h), "mlp_norm": np.ones(h, self.dtype),
            "w_gate": weight(h, inter), "w_up": weight(h, inter), "w_down": weight(inter, h),
        } for _ in range(model.num_hidden_layers)]
        self.final_norm = np.ones(h, self.dtype)
        self.lm_head = weight(h, model.vocab_size)
        self.inv_freq = 1.0 / ROPE_THETA ** (np.arange(0, d, 2, dtype=np.float64) / d)

    # --- bookkeeping -------------------------------------------------------------------------
    def parameter_count(self) -> int:
        """Elements in every weight array: equals ``model.parameter_count()`` (tested)."""
        arrays = [self.embed, self.final_norm, self.lm_head] + [a for layer in self.layers for a in layer.values()]
        return int(sum(a.size for a in arrays))

    def weight_bytes(self) -> int:
        return self.parameter_count() * self.dtype.itemsize

    def new_cache(self, batch: int, capacity_tokens: int) -> KVCache:
        """An empty KV cache for ``batch`` sequences of up to ``capacity_tokens`` tokens."""
        if batch < 1 or capacity_tokens < 1:
            raise RooflineInputError(f"batch and capacity_tokens must be ≥ 1, got {batch} and {capacity_tokens}")
        m = self.model
        shape = (batch, m.num_key_value_heads, capacity_tokens, m.head_dim)
        return KVCache([np.zeros(shape, self.dtype) for _ in self.layers],
                       [np.zeros(shape, self.dtype) for _ in self.layers])

    # --- the layers --------------------------------------------------------------------------
    def _rope(self, x: np.ndarray, positions: np.ndarray) -> np.ndarray:
        """Rotate ``x`` (batch, heads, t, d) by its positions (t,), halves convention (as HF Llama)."""
        angles = positions[:, None].astype(np.float64) * self.inv_freq[None, :]  # (t, d/2)
        cos = np.cos(angles).astype(self.dtype)
        sin = np.sin(angles).astype(self.dtype)
        half = x.shape[-1] // 2
        x1, x2 = x[..., :half], x[..., half:]
        return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)

    def _attention(self, layer: dict, x: np.ndarray, cache: KVCache, index: int, start: int) -> np.ndarray:
        m = self.model
        b, t, _ = x.shape
        nq, nkv, d = m.num_attention_heads, m.num_key_value_heads, m.head_dim
        positions = np.arange(start, start + t)
        q = _linear(x, layer["wq"]).reshape(b, t, nq, d).transpose(0, 2, 1, 3)
        k = _linear(x, layer["wk"]).reshape(b, t, nkv, d).transpose(0, 2, 1, 3)
        v = _linear(x, layer["wv"]).reshape(b, t, nkv, d).transpose(0, 2, 1, 3)
        q, k = self._rope(q, positions), self._rope(k, positions)
        cache.k[index][:, :, start:start + t] = k
        cache.v[index][:, :, start:start + t] = v
        keys, values = cache.k[index][:, :, :start + t], cache.v[index][:, :, :start + t]
        group = nq // nkv  # query heads that share one key/value head
        qg = q.reshape(b, nkv, group, t, d)
        scores = (qg @ keys[:, :, None].swapaxes(-1, -2)) / np.sqrt(np.float32(d))  # (b, nkv, group, t, T)
        if t > 1:  # causal: position start + i sees keys 0 … start + i
            allowed = np.arange(start + t)[None, :] <= positions[:, None]
            scores = np.where(allowed, scores, -np.inf)
        scores = scores - scores.max(axis=-1, keepdims=True)
        probs = np.exp(scores)
        probs /= probs.sum(axis=-1, keepdims=True)
        out = (probs @ values[:, :, None]).reshape(b, nq, t, d).transpose(0, 2, 1, 3).reshape(b, t, nq * d)
        return _linear(out, layer["wo"])

    def _forward(self, tokens: np.ndarray, cache: KVCache, last_only: bool) -> np.ndarray:
        tokens = np.asarray(tokens)
        if tokens.ndim != 2 or tokens.shape[0] != cache.batch:
            raise RooflineInputError(f"tokens must have shape (batch={cache.batch}, t), got {tokens.shape}")
        if tokens.min() < 0 or tokens.max() >= self.model.vocab_size:
            raise RooflineInputError(f"token ids must lie in 0 … {self.model.vocab_size - 1}")
        start, t = cache.length, tokens.shape[1]
        if start + t > cache.capacity:
            raise RooflineInputError(f"the cache holds {cache.capacity:,} tokens; {start + t:,} would not fit")
        x = self.embed[tokens]
        for i, layer in enumerate(self.layers):
            x = x + self._attention(layer, _rms_norm(x, layer["attn_norm"]), cache, i, start)
            y = _rms_norm(x, layer["mlp_norm"])
            x = x + _linear(_silu(_linear(y, layer["w_gate"])) * _linear(y, layer["w_up"]), layer["w_down"])
        cache.length = start + t
        x = _rms_norm(x[:, -1:] if last_only else x, self.final_norm)
        return _linear(x, self.lm_head)

    # --- what a serving loop calls -----------------------------------------------------------
    def prefill(self, tokens: np.ndarray, cache: KVCache) -> np.ndarray:
        """Run a prompt (batch, t) in one pass, filling the cache; logits of the last position (batch, vocab)."""
        return self._forward(tokens, cache, last_only=True)[:, 0]

    def decode(self, tokens: np.ndarray, cache: KVCache) -> np.ndarray:
        """One new token per sequence (batch,), reading the cache; its logits (batch, vocab)."""
        tokens = np.asarray(tokens)
        return self._forward(tokens.reshape(-1, 1), cache, last_only=True)[:, 0]

    def logits_without_cache(self, tokens: np.ndarray) -> np.ndarray:
        """Every position's logits (batch, t, vocab), recomputed from scratch: the reference."""
        tokens = np.asarray(tokens)
        cache = self.new_cache(tokens.shape[0], tokens.shape[1])
        return self._forward(tokens, cache, last_only=False)


# --- how many numpy calls a layer makes (lesson 9's overhead sentence) ---------------------------
#: numpy itself: the counting code below must not call the stand-in it swaps in for ``np``
_numpy = np


@dataclass(frozen=True)
class NumpyCalls:
    """numpy calls one decode step makes per layer, counted by running one (:func:`numpy_calls_per_layer`).

    ``total`` counts every call Python dispatches to numpy: ufuncs and operators (``@``, ``*``, ``+``,
    ``np.exp``, reductions), numpy functions (``np.mean``, ``np.concatenate``), array methods
    (``reshape``, ``transpose``, ``astype``) and indexing (reads, views and the cache writes). ``views``
    is the part of it that only reshapes, slices or writes (no arithmetic); ``compute`` the rest."""

    total: int
    views: int

    @property
    def compute(self) -> int:
        return self.total - self.views


#: array methods and indexing that create a view or write in place, with no arithmetic
_VIEW_METHODS = ("reshape", "transpose", "swapaxes", "__getitem__", "__setitem__")
#: array methods that compute (each counted as one call; numpy's own calls inside it are not)
_COMPUTE_METHODS = ("astype", "max", "sum")


class _Tally:
    def __init__(self) -> None:
        self.total = self.views = self.depth = 0

    def call(self, fn, *args, view: bool = False, **kwargs):
        """Run ``fn``, counting it once if it is not itself inside a counted call."""
        if self.depth == 0:
            self.total += 1
            self.views += view
        self.depth += 1
        try:
            return fn(*args, **kwargs)
        finally:
            self.depth -= 1


def _counting_types(tally: _Tally):
    """An ndarray subclass whose operators, methods and indexing count into ``tally``, and a stand-in
    for the ``np`` module whose functions do."""

    def plain(a):
        return a.view(_numpy.ndarray) if isinstance(a, _numpy.ndarray) else a

    def wrap(a):
        return a.view(Counted) if type(a) is _numpy.ndarray else a

    class Counted(_numpy.ndarray):
        def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kwargs):
            if out is not None:
                kwargs["out"] = tuple(plain(o) for o in out)
            result = tally.call(getattr(ufunc, method), *(plain(a) for a in inputs), **kwargs)
            if out is not None:
                return out[0] if len(out) == 1 else out
            return tuple(wrap(r) for r in result) if isinstance(result, tuple) else wrap(result)

        def __array_function__(self, func, types, args, kwargs):
            def run():
                unwrapped = [[plain(a) for a in x] if isinstance(x, (list, tuple)) else plain(x) for x in args]
                return func(*unwrapped, **{k: plain(v) for k, v in kwargs.items()})
            return wrap(tally.call(run))

    def method(name: str, view: bool):
        base = getattr(_numpy.ndarray, name)

        def counted(self, *args, **kwargs):
            return wrap(tally.call(base, plain(self), *args, view=view, **kwargs))
        return counted

    for name in _VIEW_METHODS:
        setattr(Counted, name, method(name, True))
    for name in _COMPUTE_METHODS:
        setattr(Counted, name, method(name, False))

    class CountingNumpy:
        """``np`` for the decoder's code while it is counted: its functions count, its types do not."""

        def __getattr__(self, name):
            attr = getattr(_numpy, name)
            if isinstance(attr, type) or not callable(attr):
                return attr

            def counted(*args, **kwargs):
                return wrap(tally.call(attr, *args, **kwargs))
            return counted

    return Counted, CountingNumpy()


def _decode_step_calls(layers: int, batch: int, cached_tokens: int) -> _Tally:
    """numpy calls of one decode step of a tiny ``layers``-layer decoder, ``cached_tokens`` already cached."""
    import sys

    module = sys.modules[__name__]
    tally = _Tally()
    counted, counting_np = _counting_types(tally)
    model = llama_like("count-calls", hidden_size=16, num_hidden_layers=layers, num_attention_heads=4,
                       num_key_value_heads=2, head_dim=4, intermediate_size=32, vocab_size=32)
    decoder = NumpyDecoder(model, seed=0)
    cache = decoder.new_cache(batch, cached_tokens + 1)
    decoder.prefill(_numpy.zeros((batch, cached_tokens), dtype=_numpy.int64), cache)
    decoder.embed, decoder.lm_head, decoder.final_norm = (a.view(counted) for a in
                                                          (decoder.embed, decoder.lm_head, decoder.final_norm))
    decoder.inv_freq = decoder.inv_freq.view(counted)
    decoder.layers = [{k: a.view(counted) for k, a in layer.items()} for layer in decoder.layers]
    cache.k, cache.v = [a.view(counted) for a in cache.k], [a.view(counted) for a in cache.v]
    tokens = _numpy.zeros(batch, dtype=_numpy.int64)
    module.np = counting_np  # the decoder's own code (and _rms_norm, _silu) now calls numpy through the counter
    try:
        decoder.decode(tokens, cache)
    finally:
        module.np = _numpy
    return tally


def numpy_calls_per_layer(batch: int = 1, cached_tokens: int = 8) -> NumpyCalls:
    """numpy calls one decode step of :class:`NumpyDecoder` makes per layer, counted by running it: a
    two-layer step's calls minus a one-layer step's (so the embedding, final norm and lm_head cancel).
    The count depends on the code, not on the sizes; lesson 9 quotes it for the per-step overhead."""
    if batch < 1 or cached_tokens < 1:
        raise RooflineInputError(f"batch and cached_tokens must be ≥ 1, got {batch} and {cached_tokens}")
    one, two = _decode_step_calls(1, batch, cached_tokens), _decode_step_calls(2, batch, cached_tokens)
    return NumpyCalls(total=two.total - one.total, views=two.views - one.views)
