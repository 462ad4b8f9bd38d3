"""Number formats as levers, as real serving configurations.

"Use FP8" names several different changes, and they move different numbers on the roofline:

- **weight-only** (W8A16, W4A16): weights stored in 8 or 4 bits, dequantised to BF16 on the fly;
  every matmul runs at the BF16 rate. Only the weight bytes change, so it needs no 8-bit tensor
  cores and runs on the A100 too.
- **W8A8 FP8** (W4A4 FP4): FP8 weights *and* FP8 activations at each weight matmul's input, so the
  weight matmuls run on FP8 tensor cores (which take FP8 operands: FP8 compute over BF16 weights
  is not a configuration). Attention, softmax, norms and the recurrence stay BF16.
- **W8A8 INT8**: the same with INT8 weights and activations on INT8 tensor cores (integer
  accumulation); the 8-bit matmul lever of a part without FP8 tensor cores, such as the A100.
- **FP8 KV cache**: cached keys and values stored in FP8 and converted to BF16 inside the attention
  kernel; attention's arithmetic stays BF16.

Each lever's speed-up is the ratio of time lower bounds (baseline ÷ lever). What the cost model
charges nothing for — dequantising weights, quantising activations, scale factors and their bytes —
is said on each lever: the speed-ups are best cases in that respect.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

from ..core.errors import RooflineInputError
from ..core.hardware import get_part
from ..core.placement import Placement, place


@dataclass(frozen=True)
class Lever:
    """One configuration: the :class:`~roofline_lessons.core.costs.Workload` fields it changes from all-BF16."""

    name: str
    changes: Mapping[str, str]
    what: str  #: what is stored and computed in which format
    not_counted: str = ""  #: what the cost model charges nothing for


_W8A16 = Lever(
    "weight-only 8-bit (W8A16)", MappingProxyType({"weights_dtype": "fp8"}),
    "weights in 8 bits (FP8 or INT8: the same bytes), dequantised to BF16 on the fly; every matmul at the BF16 rate",
    "the dequantisation work and the scale factors' bytes")
_W8A8 = Lever(
    "W8A8 FP8", MappingProxyType({"weights_dtype": "fp8", "compute_dtype": "fp8"}),
    "FP8 weights and FP8 activations at each weight matmul's input; weight matmuls on FP8 tensor cores; "
    "attention, softmax, norms and the recurrence stay BF16",
    "quantising the activations and the scales; activation traffic is counted at BF16 (the residual stream and "
    "the matmul outputs stay BF16)")
_KV8 = Lever(
    "FP8 KV cache", MappingProxyType({"kv_dtype": "fp8"}),
    "cached K and V in FP8, converted to BF16 inside the attention kernel (as modelled here); attention's "
    "arithmetic stays BF16",
    "the conversion work and the scales")
_W8A8_INT8 = Lever(
    "W8A8 INT8", MappingProxyType({"weights_dtype": "int8", "compute_dtype": "int8"}),
    "INT8 weights and INT8 activations at each weight matmul's input; weight matmuls on INT8 tensor cores; "
    "attention, softmax, norms and the recurrence stay BF16",
    "quantising the activations, the scales, and dequantising the INT32 accumulators; activation traffic is "
    "counted at BF16")
_W8A16_KV8 = Lever(
    "weight-only 8-bit + FP8 KV cache", MappingProxyType({**_W8A16.changes, **_KV8.changes}),
    "8-bit weights dequantised to BF16 and an FP8 KV cache; every matmul and attention's arithmetic at the BF16 "
    "rate", "as for each of the two")
_W8A8_KV8 = Lever(
    "W8A8 FP8 + FP8 KV cache", MappingProxyType({**_W8A8.changes, **_KV8.changes}),
    "W8A8 FP8 and an FP8 KV cache; attention's arithmetic stays BF16", "as for each of the two")
_W4A16 = Lever(
    "weight-only 4-bit (W4A16)", MappingProxyType({"weights_dtype": "fp4"}),
    "weights in 4 bits (INT4 or FP4: the same bytes), dequantised to BF16 on the fly; every matmul at the BF16 rate",
    "the dequantisation work and the per-group scales' bytes")
_W4A4 = Lever(
    "W4A4 FP4", MappingProxyType({"weights_dtype": "fp4", "compute_dtype": "fp4"}),
    "FP4 weights and activations at each weight matmul's input; weight matmuls on FP4 tensor cores; "
    "attention and the rest stay BF16",
    "quantising the activations and the per-block scales and their bytes; activation traffic counted at BF16")

BASELINE = "BF16 (baseline)"

#: the levers lesson 7 compares, in order; the first is the all-BF16 baseline
LEVER_SPECS: tuple[Lever, ...] = (
    Lever(BASELINE, MappingProxyType({}), "weights, activations, KV cache and every matmul in BF16"),
    _W8A16, _W8A8, _W8A8_INT8, _KV8, _W8A16_KV8, _W8A8_KV8,
)

#: lever name -> the workload fields it changes (everything else stays BF16)
LEVERS: dict[str, dict[str, str]] = {lev.name: dict(lev.changes) for lev in LEVER_SPECS}

#: the dashboard's weight-and-matmul recipes (each one a real configuration) ...
WEIGHT_RECIPES: dict[str, Lever] = {lev.name: lev for lev in (LEVER_SPECS[0], _W8A16, _W8A8, _W8A8_INT8, _W4A16,
                                                                  _W4A4)}
#: ... and its KV-cache formats; any recipe goes with either
KV_FORMATS: dict[str, dict[str, str]] = {"BF16 KV cache": {}, "FP8 KV cache": {"kv_dtype": "fp8"}}


def recipe_fields(recipe: str, kv: str = "BF16 KV cache") -> dict[str, str]:
    """The workload fields of a weight recipe plus a KV-cache format (names from the two dicts above)."""
    if recipe not in WEIGHT_RECIPES:
        raise RooflineInputError(f"unknown recipe {recipe!r}; choose from: {', '.join(WEIGHT_RECIPES)}")
    if kv not in KV_FORMATS:
        raise RooflineInputError(f"unknown KV-cache format {kv!r}; choose from: {', '.join(KV_FORMATS)}")
    return {**WEIGHT_RECIPES[recipe].changes, **KV_FORMATS[kv]}


#: a step whose intensity is within this fraction of its ridge is called "at the ridge": there both roofs bind
#: to within that fraction, and which one the model names is decided by rounding, not by the workload
AT_RIDGE_TOLERANCE = 0.01


def regime(intensity: float, ridge: float, tolerance: float = AT_RIDGE_TOLERANCE) -> str:
    """``"at the ridge"`` within ``tolerance`` of the ridge, else ``"memory-bound"`` or ``"compute-bound"``."""
    intensity, ridge = float(intensity), float(ridge)
    if abs(intensity / ridge - 1) <= tolerance:
        return "at the ridge"
    return "memory-bound" if intensity < ridge else "compute-bound"


@dataclass(frozen=True)
class LeverResult:
    lever: str
    placement: Placement | None  #: None when the part cannot run the lever
    speedup: float | None  #: baseline time bound ÷ this lever's time bound; None when unavailable
    unavailable: str | None = None  #: why not, e.g. "a100-80gb has no fp8 rate in the catalog …"

    @property
    def bound(self) -> str | None:
        return None if self.placement is None else str(self.placement.bound)

    @property
    def regime(self) -> str | None:
        """``"memory-bound"``, ``"compute-bound"``, or ``"at the ridge"`` (within :data:`AT_RIDGE_TOLERANCE`)."""
        if self.placement is None:
            return None
        return regime(self.placement.intensity, self.placement.ridge_point_flop_per_byte)

    @property
    def fits(self) -> bool | None:
        """Whether weights + KV cache + state fit in the part's memory (None when unavailable)."""
        return None if self.placement is None else bool(self.placement.fits_in_memory)

    @property
    def label(self) -> str:
        """``"1.93× (compute-bound)"`` or ``"1.98× (at the ridge)"``; ``"not available"`` where the catalog has
        no sourced rate for the lever's format on the part."""
        if self.speedup is None:
            return "not available"
        return f"{self.speedup:.2f}× ({self.regime})"


def _fields(phase: str, tokens) -> dict:
    return {"prompt_tokens": tokens} if phase == "prefill" else {"context_tokens": tokens}


def lever_speedups(model: str, part: str, phase: str, tokens: int = 8192, batch: int = 1,
                   levers: Mapping[str, Mapping[str, str]] | None = None) -> list[LeverResult]:
    """Every lever in ``levers`` (default :data:`LEVERS`) for one step.

    ``tokens`` is the prompt (prefill) or the cache (decode). A lever whose format has no sourced rate
    for the part in the catalog (FP8 matmuls on an A100, INT8 on an H200) comes back with
    ``speedup=None`` and the reason in ``unavailable``.
    """
    fields = _fields(phase, tokens)
    base = place(model, part, phase=phase, batch=batch, **fields)
    out = []
    for name, change in (LEVERS if levers is None else levers).items():
        try:
            p = place(model, part, phase=phase, batch=batch, **fields, **change)
        except RooflineInputError as exc:
            out.append(LeverResult(name, None, None, str(exc)))
            continue
        out.append(LeverResult(name, p, float(base.time_estimate_s / p.time_estimate_s)))
    return out


def lever_speedup(model: str, part: str, phase: str, lever: str, tokens: int = 8192, batch: int = 1) -> LeverResult:
    """One lever of :data:`LEVERS` by name."""
    if lever not in LEVERS:
        raise RooflineInputError(f"unknown lever {lever!r}; choose from: {', '.join(LEVERS)}")
    return lever_speedups(model, part, phase, tokens, batch, {lever: LEVERS[lever]})[0]


def ridge_shift(part: str, dtypes=("bf16", "fp8", "fp4")) -> dict[str, float]:
    """The part's ridge point (FLOP/byte) for each format it has a rate for."""
    p = get_part(part)
    return {dt: p.ridge_point_flop_per_byte(dt) for dt in dtypes if dt in p.dense_flops_per_s}


# ---- the measured FP8 gap: conditions and hypotheses ------------------------------------------

#: The protocol behind the catalog's best measured matmul figures (hardware.toml ``measured`` entries
#: with a ``shape`` and ``software``; source: stas00/ml-engineering, compute/accelerator/README.md,
#: "Maximum Achievable Matmul FLOPS comparison table").
MEASUREMENT_PROTOCOL = ("torch matmul with inputs in the format (FP8 = float8_e4m3fn), dense; mean of 100 iterations "
                        "after 50 warm-up per shape; the best shape of a brute-force search; one GPU; clocks not "
                        "locked (stas00/ml-engineering MAMF table)")


@dataclass(frozen=True)
class Hypothesis:
    """A candidate explanation for a measured gap, with the measurement that would test it."""

    name: str
    mechanism: str
    test: str


#: Why the best measured FP8 matmul sits further below its datasheet roof than BF16 on the H100:
#: hypotheses, none established by the measurements in the catalog.
FP8_GAP_HYPOTHESES: tuple[Hypothesis, ...] = (
    Hypothesis(
        "clock or power throttling",
        "the datasheet peak assumes the boost clock; at twice the math rate the part may reach its power limit and "
        "lower the SM clock further than in BF16 (the runs did not lock clocks)",
        "log SM clock, power draw and throttle reasons during both runs (nvidia-smi --query-gpu=clocks.sm,power.draw,"
        "clocks_throttle_reasons.active -lms 100, or DCGM); divide each rate by clock ÷ boost clock, or lock both runs "
        "to one clock (nvidia-smi -lgc): if the FP8 fraction then matches BF16's, this was it"),
    Hypothesis(
        "per-step pipeline latency",
        "FP8 operands are half the bytes at twice the rate, so the tensor cores need the same operand bytes per "
        "second as in BF16. What else changes depends on the tile: if the FP8 kernel keeps the BF16 K-tile in "
        "elements (e.g. 64), each K-step carries half the bytes and K-steps per second double — loads into shared "
        "memory, barrier waits, instruction issue — so latencies a BF16 pipeline hides may show; if it keeps the "
        "K-tile in bytes (e.g. 128 FP8 vs 64 BF16 elements), K-steps per second stay the same "
        "and this mechanism predicts no extra gap",
        "read the tile shape of both best-shape kernels (kernel name or Nsight Compute launch details); profile both "
        "with Nsight Compute: tensor-pipe utilisation, warp stall reasons (barrier, long scoreboard vs. math), "
        "shared-memory and L2 throughput; compare FP8 with a K-tile of the same elements and of the same bytes as "
        "BF16's"),
    Hypothesis(
        "fixed per-tile epilogue",
        "each output tile ends with an epilogue (convert the FP32 accumulators, apply the scales in FP8, store "
        "BF16) whose time does not shrink with the input format, so at twice the math rate it is a larger share",
        "sweep K at fixed M and N: a fixed per-tile cost shrinks as 1/K, so the FP8 fraction should climb with K "
        "and the FP8–BF16 gap narrow"),
    Hypothesis(
        "kernel selection and shape search",
        "the two best figures of a part come from different shapes; FP8 library kernels and their heuristics may "
        "be less tuned, and the search covers a non-exhaustive set of shapes",
        "run both formats on the same shapes and library build; compare cuBLASLt's choice with an autotuned CUTLASS "
        "kernel (cutlass_profiler) on the FP8 best shape"),
)

#: An assumption, not a measured spread: the source gives one run per shape (a mean of 100 iterations), clocks not
#: locked, a different best shape per format, and no run-to-run variation. A difference between the FP8 and the
#: BF16 fraction of peak smaller than this many percentage points is treated as one such a source cannot resolve.
RESOLVABLE_GAP_PERCENTAGE_POINTS = 5.0


def gap_verdict(gap_pp: float, resolvable: float = RESOLVABLE_GAP_PERCENTAGE_POINTS) -> str:
    """How to read a BF16-minus-FP8 fraction-of-peak gap in percentage points, given :data:`RESOLVABLE_GAP_PERCENTAGE_POINTS`."""
    if abs(gap_pp) < resolvable:
        return "not resolved"
    return "FP8 clearly lower" if gap_pp > 0 else "FP8 clearly higher"


#: What the measured gap is *not* evidence about: a bare matmul takes inputs already in FP8.
NOT_IN_THE_MATMUL_MEASUREMENT = (
    "quantising activations to FP8 (amax, scale, cast) happens in a real W8A8 layer but not in a bare matmul "
    "benchmark, whose inputs are already FP8: it cannot explain this gap, though it costs time end to end "
    "(test: profile a W8A8 layer and separate the quantise kernels from the GEMM)")


def operand_bytes_per_s_ratio(part: str, fast: str = "fp8", slow: str = "bf16") -> float:
    """Operand bytes per second the tensor cores consume at peak in ``fast`` ÷ in ``slow``, for one tile shape.

    Per FLOP, a tile reads (M + N)·K elements for 2·M·N·K FLOPs, so bytes per second at peak scale as
    peak × bytes per element: (peak ratio) × (bytes-per-element ratio). FP8 vs BF16: 2 × ½ = 1.
    """
    from ..core.dtypes import bytes_per_element

    p = get_part(part)
    return (p.peak_flops_per_s(fast) / p.peak_flops_per_s(slow)) * (bytes_per_element(fast) / bytes_per_element(slow))
