"""The same probes on a CUDA GPU, when PyTorch with a CUDA device is importable. PyTorch is never
a dependency of the course: without it (or without a GPU) :func:`gpu_probes` says why and returns
a dict with ``available: False``; everything else runs."""

from __future__ import annotations

import re

#: device-name patterns -> catalog part ids (first match wins)
_NAME_TO_PART = (
    (r"GB300", "gb300"),
    (r"B300", "b300"),
    (r"GB200", "gb200"),
    (r"B200", "b200"),
    (r"H200", "h200"),
    (r"H800(?!.*PCIe)", "h800"),
    (r"H100.*PCIe", "h100-pcie"),
    (r"H100", "h100-sxm"),
    (r"A100.*80", "a100-80gb"),
    (r"A100.*40", "a100-40gb"),
    (r"RTX PRO 6000.*Workstation", "rtx-pro-6000"),  # the catalog's edition (600 W); Server and Max-Q differ
    (r"L40S", "l40s"),
    (r"\bL4\b", "l4"),
    (r"RTX 4090", "rtx-4090"),
    (r"MI355X", "mi355x"),
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


#: memory-bound probes use working sets at least this many times the device's L2, so that repeated
#: calls stream from device memory instead of finding last call's data in the cache
LLC_MULTIPLE = 8


def device_l2_bytes(props=None, device_name: str = "") -> tuple[int, str]:
    """(bytes, where the figure came from): the L2 PyTorch reports for the device, else the catalog's
    last-level cache for the part the name maps to, else the largest last-level cache in the catalog."""
    reported = getattr(props, "L2_cache_size", None) if props is not None else None
    if isinstance(reported, int) and reported > 0:
        return reported, "reported by the device"
    from ..core.hardware import get_part, list_parts

    part_id = catalog_part_for(device_name)
    if part_id and get_part(part_id).last_level_cache_bytes:
        return int(get_part(part_id).last_level_cache_bytes), f"the catalog's {part_id}"
    largest = max((get_part(p).last_level_cache_bytes or 0) for p in list_parts())
    return int(largest), "the largest last-level cache in the catalog (this device's is unknown)"


def probe_sizes(mode: str, l2_bytes: int) -> dict:
    """Sizes of the GPU probes: the copy buffers and the matrix–vector product's bf16 matrix each
    hold at least ``LLC_MULTIPLE`` × L2 (never less than the mode's floor); the matmul is fixed."""
    floor_buffer = (256 if mode == "quick" else 1024) * 2**20
    need = LLC_MULTIPLE * int(l2_bytes)
    copy_buffer_bytes = max(floor_buffer, -(-need // 2**20) * 2**20)
    gemv_n = 4096 if mode == "quick" else 8192
    while 2 * gemv_n * gemv_n < need:
        gemv_n += 1024
    return {"copy_elements": copy_buffer_bytes // 2, "gemv_n": gemv_n, "matmul_n": 4096 if mode == "quick" else 8192}


def gpu_probes(mode: str = "quick") -> dict:
    """Copy bandwidth, BF16 (and FP8 where supported) matmul and BF16 matrix–vector on GPU 0; the
    memory-bound probes are sized past the device's L2 (:func:`probe_sizes`)."""
    ok, reason = gpu_status()
    if not ok:
        return {"available": False, "reason": reason}
    import torch

    dev = torch.device("cuda", 0)
    name = torch.cuda.get_device_name(0)
    repeats = 5 if mode == "quick" else 20
    l2, l2_source = device_l2_bytes(torch.cuda.get_device_properties(0), name)
    sizes = probe_sizes(mode, l2)
    out: dict = {"available": True, "reason": reason, "device": name, "catalog_part": catalog_part_for(name),
                 "l2_bytes": l2, "l2_source": l2_source, "probes": []}
    n = sizes["copy_elements"]  # bf16 elements per buffer
    a = torch.empty(n, dtype=torch.bfloat16, device=dev).fill_(1.0)
    b = torch.empty_like(a)
    t = _time_cuda(lambda: b.copy_(a), repeats)
    out["probes"].append({"kind": "bandwidth", "name": "device copy", "bytes": 2 * a.numel() * 2, "flops": 0,
                          "working_set_bytes": 2 * a.numel() * 2, **t})
    a = b = None  # free the buffers before the matmuls
    big = sizes["gemv_n"]
    w = torch.randn(big, big, dtype=torch.bfloat16, device=dev)
    vec = torch.randn(big, 1, dtype=torch.bfloat16, device=dev)
    t = _time_cuda(lambda: w @ vec, repeats)
    out["probes"].append({"kind": "kernel", "name": f"bf16 matrix–vector {big}²", "dtype": "bf16",
                          "flops": 2.0 * big * big, "bytes": 2.0 * (big * big + 2 * big),
                          "working_set_bytes": 2 * big * big, **t})
    w = vec = None
    size = sizes["matmul_n"]
    x = torch.randn(size, size, dtype=torch.bfloat16, device=dev)
    y = torch.randn(size, size, dtype=torch.bfloat16, device=dev)
    t = _time_cuda(lambda: x @ y, repeats)
    out["probes"].append({"kind": "matmul", "name": f"bf16 matmul {size}³", "dtype": "bf16",
                          "flops": 2.0 * size ** 3, "bytes": 3.0 * size * size * 2, **t})
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

