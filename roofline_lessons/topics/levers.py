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

Which weights a narrow format applies to is the **recipe** (:data:`RECIPE_WORDS`): the default for
8- and 4-bit weights is the linear layers of the transformer blocks, with the embedding, the
lm_head and the norms kept in BF16, as published FP8 checkpoints are made; a matmul whose weights
stay BF16 runs at the BF16 rate.

Each lever's speed-up is given twice (:class:`LeverResult`), baseline ÷ lever:

- ``speedup_lower_bound``: the ratio of the placements' **lower bounds** (``time_lower_bound_s``:
  compulsory bytes only, tensor and vector units overlapped, so weight-only dequantisation is
  hidden under the matmuls); the speed-up an ideal implementation of each would see;
- ``speedup_estimate``: the ratio of the **estimates** (``time_estimate_s``), whose conventions
  include operators unfused (every activation through HBM) and weight-only dequantisation in series
  with the matmuls. A real step is never faster than the bound; the estimate is a convention, not
  a ceiling (both charge dequantisation once per weight per step, where a tiled kernel repeats it
  for each block of token rows; a Marlin-style weight-only kernel hides much of it, not all; and a
  kernel below its roofs can be slower than the estimate), so real speed-ups can fall outside both.

What the cost model charges nothing for at all — quantising activations, their scales, the 8-bit
per-channel weight scales — is said on each lever (``not_counted``).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

from ..core.costs import DEQUANT_FLOPS_PER_WEIGHT, Workload
from ..core.dtypes import DEFAULT_WEIGHT_GROUP, weight_bytes_per_element
from ..core.errors import RooflineInputError
from ..core.hardware import get_part
from ..core.placement import Placement, place

#: which weights a narrow format is applied to, in words (``Workload.weight_recipe``)
RECIPE_WORDS = {
    "all": "every weight, embedding, lm_head and norms included",
    "linear": "the linear layers of the blocks; embedding, lm_head, norms (and any short convolution or MoE router) "
              "stay BF16",
    "mlp": "the MLPs only; attention, embedding, lm_head and norms stay BF16",
    "experts": "the MoE experts only; everything else stays BF16",
}


@dataclass(frozen=True)
class Lever:
    """One configuration: the :class:`~roofline_lessons.core.costs.Workload` fields it changes from all-BF16."""

    name: str
    changes: Mapping[str, str]
    what: str  #: what is stored and computed in which format
    not_counted: str = ""  #: what the cost model charges nothing for

    @property
    def recipe(self) -> str:
        """Which weights the lever stores in its narrow format (the default recipe of its weight format),
        in words; ``"none (all BF16)"`` when it leaves the weights in BF16."""
        w = Workload(**{k: v for k, v in self.changes.items() if k in ("weights_dtype", "compute_dtype")})
        if w.weights_dtype == "bf16":
            return "none: all weights BF16"
        return RECIPE_WORDS[w.weight_recipe]


_DEQUANT = (f"dequantised to BF16 on the fly by the vector units ({DEQUANT_FLOPS_PER_WEIGHT:g} FLOPs a weight, "
            "charged once per weight per step: the estimate adds that time to the matmuls', the lower bound "
            "overlaps the two)")
_W8A16 = Lever(
    "weight-only 8-bit (W8A16)", MappingProxyType({"weights_dtype": "fp8"}),
    f"weights in 8 bits (FP8 or INT8: the same bytes), {_DEQUANT}; every matmul at the BF16 rate",
    "the per-channel weight scales' bytes; dequantising a weight again for each further block of token rows a "
    "tiled kernel multiplies it by")
_W8A8 = Lever(
    "W8A8 FP8", MappingProxyType({"weights_dtype": "fp8", "compute_dtype": "fp8"}),
    "FP8 weights and FP8 activations at each quantised weight matmul's input; those matmuls on FP8 tensor cores "
    "(the BF16-kept lm_head at the BF16 rate); attention, softmax, norms and the recurrence stay BF16",
    "quantising the activations and their scales; the per-channel weight scales' bytes; activation traffic is counted "
    "at BF16 (the residual stream and the matmul outputs stay BF16)")
_KV8 = Lever(
    "FP8 KV cache", MappingProxyType({"kv_dtype": "fp8"}),
    "cached K and V in FP8, converted to BF16 inside the attention kernel (as modelled here); attention's "
    "arithmetic stays BF16",
    "converting K and V to BF16, and the KV scales")
_W8A8_INT8 = Lever(
    "W8A8 INT8", MappingProxyType({"weights_dtype": "int8", "compute_dtype": "int8"}),
    "INT8 weights and INT8 activations at each quantised weight matmul's input; those matmuls on INT8 tensor "
    "cores (the BF16-kept lm_head at the BF16 rate); attention, softmax, norms and the recurrence stay BF16",
    "quantising the activations and their scales; the per-channel weight scales' bytes; dequantising the INT32 "
    "accumulators; activation traffic is counted at BF16")
_W8A16_KV8 = Lever(
    "weight-only 8-bit + FP8 KV cache", MappingProxyType({**_W8A16.changes, **_KV8.changes}),
    f"8-bit weights {_DEQUANT}, and an FP8 KV cache; every matmul and attention's arithmetic at the BF16 rate",
    "as for each of the two")
_W8A8_KV8 = Lever(
    "W8A8 FP8 + FP8 KV cache", MappingProxyType({**_W8A8.changes, **_KV8.changes}),
    "W8A8 FP8 and an FP8 KV cache; attention's arithmetic stays BF16", "as for each of the two")
_W4A16 = Lever(
    "weight-only 4-bit (W4A16)", MappingProxyType({"weights_dtype": "fp4"}),
    f"weights in 4 bits with their block scales (FP4 as MXFP4, one 8-bit scale per {DEFAULT_WEIGHT_GROUP['fp4']}: "
    f"{weight_bytes_per_element('fp4'):g} byte a weight; INT4 "
    f"with groups of 128 would be {weight_bytes_per_element('int4'):g}), {_DEQUANT}; every matmul at the BF16 rate",
    "unpacking and scaling work beyond the FLOPs charged for dequantisation, and its repeat for each further "
    "block of token rows a tiled kernel multiplies a weight by")
_W4A4 = Lever(
    "W4A4 FP4", MappingProxyType({"weights_dtype": "fp4", "compute_dtype": "fp4"}),
    "FP4 weights and activations at each quantised weight matmul's input; those matmuls on FP4 tensor cores "
    "(the BF16-kept lm_head at the BF16 rate); attention and the rest stay BF16",
    "quantising the activations and their per-block scales (the weights' block scales are counted); activation "
    "traffic counted at BF16")

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
    """One lever's step against the all-BF16 step: the speed-up of the lower bound and of the estimate."""

    lever: str
    placement: Placement | None  #: None when the part cannot run the lever
    speedup_estimate: float | None  #: baseline ``time_estimate_s`` ÷ this lever's; None when unavailable
    unavailable: str | None = None  #: why not, e.g. "a100-80gb has no fp8 rate in the catalog …"
    #: baseline ``time_lower_bound_s`` ÷ this lever's (the ratio of the two lower bounds, not a bound on the
    #: speed-up); None when unavailable
    speedup_lower_bound: float | None = None

    @property
    def bound(self) -> str | None:
        """The estimate's binding roof (``Placement.bound``): ``"memory"`` or ``"compute"``."""
        return None if self.placement is None else str(self.placement.bound)

    @property
    def lower_bound_roof(self) -> str | None:
        """The lower bound's binding roof (``Placement.lower_bound_roof``): ``"memory"`` or ``"compute"``."""
        return None if self.placement is None else str(self.placement.lower_bound_roof)

    @property
    def regime(self) -> str | None:
        """The estimate's regime: ``"memory-bound"``, ``"compute-bound"``, or ``"at the ridge"`` (within
        :data:`AT_RIDGE_TOLERANCE`), from the unfused intensity and the ridge of the step's FLOP mix with
        dequantisation in series."""
        if self.placement is None:
            return None
        return regime(self.placement.intensity, self.placement.ridge_point_flop_per_byte)

    @property
    def regime_lower_bound(self) -> str | None:
        """The lower bound's regime: compulsory intensity against the ridge of the bound's compute time
        (tensor and vector units overlapped). ``I / I*`` is the compute time ÷ the memory time."""
        p = self.placement
        if p is None:
            return None
        return regime(float(p.compute_lower_bound_s), float(p.memory_lower_bound_s))

    @property
    def fits(self) -> bool | None:
        """Whether weights + KV cache + state fit in the part's memory (None when unavailable)."""
        return None if self.placement is None else bool(self.placement.fits_in_memory)

    @property
    def label(self) -> str:
        """The estimate's speed-up: ``"1.84× (memory-bound)"``; ``"not available"`` where the catalog has no
        sourced rate for the lever's format on the part."""
        if self.speedup_estimate is None:
            return "not available"
        return f"{self.speedup_estimate:.2f}× ({self.regime})"

    @property
    def label_lower_bound(self) -> str:
        """The lower bound's speed-up: ``"1.98× (compute-bound)"``, or ``"not available"``."""
        if self.speedup_lower_bound is None:
            return "not available"
        return f"{self.speedup_lower_bound:.2f}× ({self.regime_lower_bound})"

    @property
    def same_both(self) -> bool:
        """Whether the bound's and the estimate's speed-ups read the same (two decimals, same regime)."""
        return self.label == self.label_lower_bound

    @property
    def label_both(self) -> str:
        """One label where the two figures read the same (``"1.93× (compute-bound), both"``), else both:
        ``"bound 1.98× (compute-bound); estimate 1.84× (memory-bound)"``."""
        if self.speedup_estimate is None:
            return "not available"
        if self.same_both:
            return f"{self.label}, both"
        return f"bound {self.label_lower_bound}; estimate {self.label}"


def _fields(phase: str, tokens) -> dict:
    return {"prompt_tokens": tokens} if phase == "prefill" else {"context_tokens": tokens}


def lever_speedups(model: str, part: str, phase: str, tokens: int = 8192, batch: int = 1,
                   levers: Mapping[str, Mapping[str, str]] | None = None) -> list[LeverResult]:
    """Every lever in ``levers`` (default :data:`LEVERS`) for one step.

    ``tokens`` is the prompt (prefill) or the cache (decode). A lever whose format has no sourced rate
    for the part in the catalog (FP8 matmuls on an A100, INT8 on an H200) comes back with
    ``speedup_estimate=speedup_lower_bound=None`` and the reason in ``unavailable``.
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
        out.append(LeverResult(name, p, float(base.time_estimate_s / p.time_estimate_s),
                               speedup_lower_bound=float(base.time_lower_bound_s / p.time_lower_bound_s)))
    return out


def lever_speedup(model: str, part: str, phase: str, lever: str, tokens: int = 8192, batch: int = 1) -> LeverResult:
    """One lever of :data:`LEVERS` by name."""
    if lever not in LEVERS:
        raise RooflineInputError(f"unknown lever {lever!r}; choose from: {', '.join(LEVERS)}")
    return lever_speedups(model, part, phase, tokens, batch, {lever: LEVERS[lever]})[0]


def per_channel_scale_share(model, scale_bytes: float = 2.0, weight_bytes: float = 1.0) -> float:
    """The most per-channel scales can add to an 8-bit weight matrix's bytes, as a fraction of them.

    One ``scale_bytes`` scale (BF16: 2) per output channel, over a row of ``in_features`` weights of
    ``weight_bytes`` each, adds ``scale_bytes / (in_features · weight_bytes)``; this takes the smallest
    ``in_features`` any linear layer of ``model`` has (hidden size, attention output, MLP or expert
    down-projection, linear-attention output, MLA's low-rank inputs), so no quantised matrix adds more.
    The cost model does not count these bytes (:func:`~roofline_lessons.core.dtypes.weight_bytes_per_element`);
    this is the size of what it leaves out."""
    from ..core.models import get_model

    m = get_model(model)
    inputs = [m.hidden_size, m.num_attention_heads * m.head_dim, m.intermediate_size, m.moe_intermediate_size,
              m.linear_num_value_heads * m.linear_value_head_dim, m.q_lora_rank, m.kv_lora_rank,
              m.num_attention_heads * m.v_head_dim]
    return scale_bytes / (min(n for n in inputs if n > 0) * weight_bytes)


def ridge_shift(part: str, dtypes=("bf16", "fp8", "fp4")) -> dict[str, float]:
    """The part's ridge point (FLOP/byte) for each format it has a rate for."""
    p = get_part(part)
    return {dt: p.ridge_point_flop_per_byte(dt) for dt in dtypes if dt in p.dense_flops_per_s}


# ---- the measured FP8 gap: conditions and hypotheses ------------------------------------------

#: The protocol behind the catalog's best measured matmul figures (hardware.toml ``measured`` entries
#: with a ``shape`` and ``software``; source: stas00/ml-engineering, compute/accelerator/README.md,
#: "Maximum Achievable Matmul FLOPS comparison table").
MEASUREMENT_PROTOCOL = ("torch matmul with inputs in the format (FP8 = float8_e4m3fn), dense; mean of 100 iterations "
                        "after 50 warm-up per shape; the best shape of a brute-force search; one GPU; clocks and "
                        "power cap not stated (stas00/ml-engineering MAMF table)")


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
        "lower the SM clock further than in BF16 (the source does not say the clocks were locked)",
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

#: An assumption, not a measured spread: the source gives one run per shape (a mean of 100 iterations), neither
#: clocks nor power cap, a different best shape per format, and no run-to-run variation. A difference between the FP8 and the
#: BF16 fraction of peak smaller than this many percentage points is treated as one such a source cannot resolve.
RESOLVABLE_GAP_PERCENTAGE_POINTS = 5.0

#: figures the measured-matmul source (stas00/ml-engineering's MAMF table) gives for a part only as a note on
#: another part's row, not as a run of its own: (part, dtype) → (the part whose row carries the note, the note).
#: The catalog files no measurement for them; lesson 7 says so and why it does not pair them.
SOURCE_NOTES_ONLY = MappingProxyType({("h200", "bf16"): ("h100-sxm", "H200 is the same")})


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


# ---- one format throughout (the lesson 1 dashboard) -------------------------------------------------


def one_format_placement(model: str, part: str, dtype: str, phase: str, batch: int, tokens: int) -> Placement:
    """One step with ``dtype`` throughout: weights, activations, KV cache and every matmul (attention's
    too), so an 8- or 4-bit ``dtype`` is a real W8A8 / W4A4 recipe and moves the point (fewer bytes) as
    well as the ridge. ``tokens`` is the prompt (prefill) or the tokens already cached (decode)."""
    return place(model, part, phase=phase, batch=batch, compute_dtype=dtype, weights_dtype=dtype,
                 activations_dtype=dtype, kv_dtype=dtype, attention_compute_dtype=dtype, **_fields(phase, tokens))


def formats_alike(model: str, part: str, dtype: str, phase: str, batch: int, tokens: int,
                  placed: Mapping[str, Placement] | None = None) -> tuple[str, ...]:
    """The part's other formats whose :func:`one_format_placement` has the same intensity and the same
    peak as ``dtype``'s (to a relative 1e-9): they put the same point under the same roof (FP16 and BF16
    on most parts). Formats the part has no rate for are skipped; ``placed`` (format -> step already
    placed) saves placing those again."""
    import numpy as np

    placed = dict(placed or {})
    if dtype not in placed:
        placed[dtype] = one_format_placement(model, part, dtype, phase, batch, tokens)
    intensity, peak = float(placed[dtype].intensity), float(placed[dtype].peak_flops_per_s)
    alike = []
    for other in get_part(part).dtypes:
        if other == dtype:
            continue
        try:
            q = placed[other] if other in placed else one_format_placement(model, part, other, phase, batch, tokens)
        except RooflineInputError:
            continue
        if np.isclose(float(q.intensity), intensity, rtol=1e-9) and np.isclose(float(q.peak_flops_per_s), peak,
                                                                             rtol=1e-9):
            alike.append(other)
    return tuple(alike)


# ---- a recipe against the all-BF16 step (appended: the lesson 7 dashboard) ---------------------------

#: every compute format a weight recipe uses, BF16 first
RECIPE_FORMATS = tuple(dict.fromkeys(["bf16"] + [lev.changes["compute_dtype"] for lev in WEIGHT_RECIPES.values()
                                              if "compute_dtype" in lev.changes]))


def recipe_steps(model: str, part, phase: str, recipe: str, kv: str = "BF16 KV cache", tokens: int = 8192,
                 batch: int = 1) -> tuple[Placement, Placement, dict[str, str]]:
    """The all-BF16 step, the step with ``recipe`` and ``kv`` (names of :data:`WEIGHT_RECIPES` and
    :data:`KV_FORMATS`), and the workload fields they change. ``tokens`` is the prompt (prefill) or the
    cache (decode). Raises RooflineInputError for an unknown name, or where the part has no sourced rate
    for a format the recipe uses."""
    change = recipe_fields(recipe, kv)
    fields = _fields(phase, tokens)
    return (place(model, part, phase=phase, batch=batch, **fields),
            place(model, part, phase=phase, batch=batch, **fields, **change), change)


def recipe_not_counted(model: str, recipe: str, kv: str = "BF16 KV cache") -> list[str]:
    """What neither the lower bound nor the estimate charges for ``recipe`` with ``kv``: each lever's
    ``not_counted`` (none for the all-BF16 baseline), the per-channel weight scales sized for ``model``
    (:func:`per_channel_scale_share`), not called small in words."""
    from ..core.units import percent

    lever = WEIGHT_RECIPES[recipe]
    kv_lever = next(lev for lev in LEVER_SPECS if lev.name == "FP8 KV cache")
    said = "the per-channel weight scales' bytes"
    sized = f"{said} (at most {percent(per_channel_scale_share(model), 3)} of an 8-bit weight matrix's bytes)"
    return [lev.not_counted.replace(said, sized) for lev in ((lever,) if lever.changes else ())
            + ((kv_lever,) if KV_FORMATS[kv] else ())]
