"""The numpy decoder's twin in PyTorch, for the GPU path of lesson 9 (BF16 on a CUDA device).

PyTorch is never a dependency of the course: this module imports it only inside its functions, and
:func:`roofline_lessons.measure.reality.run_gpu` says why it cannot run when PyTorch or a CUDA
device is missing. The weights are the numpy decoder's (same seed), cast to ``dtype``; the
arithmetic is the same layer by layer, so the cost model's count applies unchanged.
"""

from __future__ import annotations

import math

from .decoder import RMS_EPS, NumpyDecoder


class TorchDecoder:
    """``NumpyDecoder(model, seed)``'s weights on ``device`` in ``dtype``; decode with a KV cache."""

    def __init__(self, source: NumpyDecoder, device: str = "cuda", dtype: str = "bfloat16") -> None:
        import torch

        self.torch, self.model, self.device = torch, source.model, device
        self.dtype = getattr(torch, dtype)

        def put(a):
            return torch.from_numpy(a).to(device=device, dtype=self.dtype)

        self.embed, self.final_norm, self.lm_head = put(source.embed), put(source.final_norm), put(source.lm_head)
        self.layers = [{name: put(a) for name, a in layer.items()} for layer in source.layers]
        self.inv_freq = torch.from_numpy(source.inv_freq).to(device=device, dtype=torch.float32)

    def weight_bytes(self) -> int:
        tensors = [self.embed, self.final_norm, self.lm_head] + [t for layer in self.layers for t in layer.values()]
        return int(sum(t.numel() * t.element_size() for t in tensors))

    def new_cache(self, batch: int, capacity_tokens: int) -> dict:
        m, torch = self.model, self.torch
        shape = (batch, m.num_key_value_heads, capacity_tokens, m.head_dim)
        return {"k": [torch.zeros(shape, device=self.device, dtype=self.dtype) for _ in self.layers],
                "v": [torch.zeros(shape, device=self.device, dtype=self.dtype) for _ in self.layers], "length": 0}

    def _norm(self, x, weight):
        x32 = x.float()
        return (x32 * self.torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + RMS_EPS)).to(self.dtype) * weight

    def _rope(self, x, positions):
        torch = self.torch
        angles = positions[:, None].float() * self.inv_freq[None, :]
        cos, sin = angles.cos().to(self.dtype), angles.sin().to(self.dtype)
        half = x.shape[-1] // 2
        x1, x2 = x[..., :half], x[..., half:]
        return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)

    def forward(self, tokens, cache: dict):
        """``tokens`` (batch, t) int64 on the device; returns the last position's logits (batch, vocab)."""
        torch, m = self.torch, self.model
        b, t = tokens.shape
        nq, nkv, d = m.num_attention_heads, m.num_key_value_heads, m.head_dim
        start = cache["length"]
        positions = torch.arange(start, start + t, device=self.device)
        x = self.embed[tokens]
        # torch.matmul folds a 3-D (b, t, h) @ 2-D W into one (b·t, h) @ W product (numpy's does not:
        # the numpy decoder folds the rows itself), so each weight is read once per step here too
        for i, layer in enumerate(self.layers):
            y = self._norm(x, layer["attn_norm"])
            q = (y @ layer["wq"]).view(b, t, nq, d).transpose(1, 2)
            k = (y @ layer["wk"]).view(b, t, nkv, d).transpose(1, 2)
            v = (y @ layer["wv"]).view(b, t, nkv, d).transpose(1, 2)
            q, k = self._rope(q, positions), self._rope(k, positions)
            cache["k"][i][:, :, start:start + t] = k
            cache["v"][i][:, :, start:start + t] = v
            keys, values = cache["k"][i][:, :, :start + t], cache["v"][i][:, :, :start + t]
            group = nq // nkv
            qg = q.reshape(b, nkv, group, t, d)
            scores = (qg @ keys[:, :, None].transpose(-1, -2)).float() / math.sqrt(d)
            if t > 1:
                allowed = torch.arange(start + t, device=self.device)[None, :] <= positions[:, None]
                scores = scores.masked_fill(~allowed, float("-inf"))
            probs = scores.softmax(-1).to(self.dtype)
            out = (probs @ values[:, :, None]).reshape(b, nq, t, d).transpose(1, 2).reshape(b, t, nq * d)
            x = x + out @ layer["wo"]
            y = self._norm(x, layer["mlp_norm"])
            x = x + (torch.nn.functional.silu(y @ layer["w_gate"]) * (y @ layer["w_up"])) @ layer["w_down"]
        cache["length"] = start + t
        return self._norm(x[:, -1], self.final_norm) @ self.lm_head
