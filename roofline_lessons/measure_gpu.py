"""The same probes on a CUDA GPU, when PyTorch with a CUDA device is importable. PyTorch is never
a dependency of the course: without it (or without a GPU) :func:`gpu_probes` says why and returns
a dict with ``available: False``; everything else runs."""

from __future__ import annotations

import re

#: device-name patterns -> catalog part ids (first match wins)
_NAME_TO_PART = (
    (r"GB200", "gb200"),
    (r"B200", "b200"),
    (r"H200", "h200"),
    (r"H100.*PCIe", "h100-pcie"),
    (r"H100", "h100-sxm"),
    (r"A100.*80", "a100-80gb"),
    (r"L40S", "l40s"),
    (r"\bL4\b", "l4"),
    (r"RTX 4090", "rtx-4090"),
    (r"MI325X", "mi325x"),
    (r"MI300X", "mi300x"),
)


def catalog_part_for(device_name: str) -> str | None:
    """The catalog id of a GPU from the name CUDA reports ("NVIDIA H100 80GB HBM3" -> "h100-sxm")."""
    for pattern, part in _NAME_TO_PART:
        if re.search(pattern, device_name, flags=re.IGNORECASE):
            return part
    return None


def gpu_status() -> tuple[bool, str]:
    """(usable, reason): whether PyTorch imports and sees a CUDA device."""
    try:
        import torch
    except ImportError:
        return False, "PyTorch is not installed, so the GPU probes are skipped (the CPU probes still run)."
    if not torch.cuda.is_available():
        return False, f"PyTorch {torch.__version__} sees no CUDA device, so the GPU probes are skipped."
    return True, f"PyTorch {torch.__version__} on {torch.cuda.get_device_name(0)}"


def _time_cuda(fn, repeats: int) -> dict:
    """Best / median / worst seconds per call, timed with CUDA events after a warm-up."""
    import statistics

    import torch

    fn()
    torch.cuda.synchronize()
    samples = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        samples.append(start.elapsed_time(end) / 1e3)
    return {"best_s": min(samples), "median_s": statistics.median(samples), "worst_s": max(samples)}


def gpu_probes(mode: str = "quick") -> dict:
    """Copy bandwidth, BF16 (and FP8 where supported) matmul and BF16 matrix–vector on GPU 0."""
    ok, reason = gpu_status()
    if not ok:
        return {"available": False, "reason": reason}
    import torch

    dev = torch.device("cuda", 0)
    name = torch.cuda.get_device_name(0)
    repeats = 5 if mode == "quick" else 20
    out: dict = {"available": True, "reason": reason, "device": name, "catalog_part": catalog_part_for(name),
                 "probes": []}
    n = (256 if mode == "quick" else 1024) * 2**20 // 2  # elements of bf16: 256 MiB / 1 GiB per buffer
    a = torch.empty(n, dtype=torch.bfloat16, device=dev).fill_(1.0)
    b = torch.empty_like(a)
    t = _time_cuda(lambda: b.copy_(a), repeats)
    out["probes"].append({"kind": "bandwidth", "name": "device copy", "bytes": 2 * a.numel() * 2, "flops": 0, **t})
    a = b = None  # free the buffers before the matmuls
    size = 4096 if mode == "quick" else 8192
    x = torch.randn(size, size, dtype=torch.bfloat16, device=dev)
    y = torch.randn(size, size, dtype=torch.bfloat16, device=dev)
    t = _time_cuda(lambda: x @ y, repeats)
    out["probes"].append({"kind": "matmul", "name": f"bf16 matmul {size}³", "dtype": "bf16",
                          "flops": 2.0 * size ** 3, "bytes": 3.0 * size * size * 2, **t})
    vec = torch.randn(size, 1, dtype=torch.bfloat16, device=dev)
    t = _time_cuda(lambda: x @ vec, repeats)
    out["probes"].append({"kind": "kernel", "name": f"bf16 matrix–vector {size}²", "dtype": "bf16",
                          "flops": 2.0 * size * size, "bytes": 2.0 * (size * size + 2 * size), **t})
    major, minor = torch.cuda.get_device_capability(0)
    if (major, minor) >= (8, 9) and hasattr(torch, "_scaled_mm") and hasattr(torch, "float8_e4m3fn"):
        try:
            x8 = x.to(torch.float8_e4m3fn)
            y8 = y.to(torch.float8_e4m3fn).t().contiguous().t()  # _scaled_mm wants a column-major right operand
            one = torch.tensor(1.0, device=dev)
            t = _time_cuda(lambda: torch._scaled_mm(x8, y8, scale_a=one, scale_b=one, out_dtype=torch.bfloat16),
                           repeats)
            out["probes"].append({"kind": "matmul", "name": f"fp8 matmul {size}³", "dtype": "fp8",
                                  "flops": 2.0 * size ** 3, "bytes": 2.0 * size * size + 2.0 * size * size, **t})
        except Exception as exc:  # an API change between PyTorch versions must not stop the lesson
            out["fp8_skipped"] = f"FP8 matmul not run: {type(exc).__name__}: {exc}"
    else:
        out["fp8_skipped"] = f"compute capability {major}.{minor} has no FP8 tensor cores (needs 8.9 or newer)"
    return out

