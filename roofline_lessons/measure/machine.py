"""What this machine is: CPU model, cores, cache sizes, frequency and vector width (where the OS
reports them), and the BLAS numpy uses. Everything degrades to None when unknown."""

from __future__ import annotations

import os
import platform
from pathlib import Path


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def _size_bytes(text: str | None) -> int | None:
    if not text:
        return None
    text = text.strip().upper()
    for suffix, factor in (("K", 1024), ("M", 1024**2), ("G", 1024**3)):
        if text.endswith(suffix):
            return int(float(text[:-1]) * factor)
    return int(text) if text.isdigit() else None


def _data_caches():
    """(level name, /sys index folder) of cpu0's data and unified caches; none without /sys."""
    base = Path("/sys/devices/system/cpu/cpu0/cache")
    if not base.exists():
        return
    for index in sorted(base.glob("index*")):
        level, kind = _read(str(index / "level")), _read(str(index / "type"))
        if level and kind in ("Data", "Unified"):
            yield f"L{level}", index


def cache_sizes() -> dict[str, int]:
    """Per-core data/unified cache sizes in bytes by level name (L1, L2, L3), from /sys when present."""
    sizes = {name: _size_bytes(_read(str(index / "size"))) for name, index in _data_caches()}
    return {name: size for name, size in sizes.items() if size}


def _cpu_count_in(cpu_list: str | None) -> int | None:
    """CPUs in a /sys list such as "0-3,8-11" (None when unreadable)."""
    if not cpu_list:
        return None
    total = 0
    try:
        for part in cpu_list.split(","):
            lo, _, hi = part.partition("-")
            total += int(hi or lo) - int(lo) + 1
    except ValueError:
        return None
    return total


def cache_shared_cpus() -> dict[str, int]:
    """How many CPUs share each cache level (1 = private to a core), from /sys when present."""
    counts = {name: _cpu_count_in(_read(str(index / "shared_cpu_list"))) for name, index in _data_caches()}
    return {name: count for name, count in counts.items() if count}


def cpu_model() -> str:
    for line in (_read("/proc/cpuinfo") or "").splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def max_frequency_hz() -> float | None:
    khz = _read("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq")
    if khz and khz.isdigit():
        return int(khz) * 1e3
    for line in (_read("/proc/cpuinfo") or "").splitlines():
        if line.startswith("cpu MHz"):
            return float(line.split(":", 1)[1]) * 1e6
    return None


def vector_bits() -> int | None:
    """Widest SIMD the CPU reports: 512 (AVX-512), 256 (AVX2), 128 (SSE2/NEON), else None."""
    flags = ""
    for line in (_read("/proc/cpuinfo") or "").splitlines():
        if line.startswith(("flags", "Features")):
            flags = line
            break
    words = set(flags.split())
    if "avx512f" in words:
        return 512
    if "avx2" in words:
        return 256
    if "sse2" in words or "asimd" in words:
        return 128
    return None


def theoretical_peak_flops_per_s(dtype_bytes: int = 8, fma_units: int = 2) -> float | None:
    """cores × frequency × (vector bits / element bits) lanes × 2 (an FMA is 2 FLOPs) × FMA units.

    ``fma_units=2`` is an assumption (true of most recent x86 server cores); the result is an upper
    bound for comparison, not a datasheet figure.
    """
    f, bits = max_frequency_hz(), vector_bits()
    if f is None or bits is None:
        return None
    return (os.cpu_count() or 1) * f * (bits // (8 * dtype_bytes)) * 2 * fma_units


def blas_info() -> dict:
    """The BLAS numpy is linked against and the threads it will use (threadpoolctl if installed)."""
    import numpy as np

    info: dict = {"numpy": np.__version__}
    try:
        cfg = np.show_config(mode="dicts")
        blas = cfg.get("Build Dependencies", {}).get("blas", {})
        info["blas"] = f"{blas.get('name', '?')} {blas.get('version', '')}".strip()
    except Exception:  # older numpy: no dict mode
        info["blas"] = "unknown"
    try:
        from threadpoolctl import threadpool_info

        pools = [p for p in threadpool_info() if p.get("user_api") == "blas"]
        if pools:
            info["blas_threads"] = pools[0].get("num_threads")
    except ImportError:
        pass
    info.setdefault("blas_threads", int(os.environ.get("OPENBLAS_NUM_THREADS", os.environ.get("OMP_NUM_THREADS",
                                                                                             os.cpu_count() or 1))))
    return info


def available_memory_bytes() -> int | None:
    """Memory the kernel says a new program could use without swapping (``MemAvailable`` in
    /proc/meminfo, bytes); None where the OS does not report it."""
    text = _read("/proc/meminfo")
    for line in (text or "").splitlines():
        name, _, rest = line.partition(":")
        if name == "MemAvailable" and rest.split():
            fields = rest.split()
            return int(fields[0]) * (1024 if len(fields) > 1 and fields[1].lower() == "kb" else 1)
    return None


def describe() -> dict:
    """A JSON-ready description of this machine."""
    return {
        "hostname": platform.node(),
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "caches": cache_sizes(),
        "cache_shared_cpus": cache_shared_cpus(),
        "max_frequency_hz": max_frequency_hz(),
        "vector_bits": vector_bits(),
        "python": platform.python_version(),
        **blas_info(),
    }
