"""Number formats and their sizes in bytes per element."""

from __future__ import annotations

import numbers

from .errors import RooflineInputError, unknown_name_error

#: Bytes per element of each number format the course uses. fp4 packs two values per byte.
BYTES_PER_ELEMENT: dict[str, float] = {
    "fp32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "fp4": 0.5,
    "int4": 0.5,
}

DTYPES: tuple[str, ...] = tuple(BYTES_PER_ELEMENT)

#: Formats of under 8 bits need a scale per small group of elements to keep their range.
#: Weights: int4 → one bf16 scale per ``group`` elements (128 by default: GPTQ/AWQ-style, symmetric,
#: no zero point); fp4 → MXFP4 (OCP Microscaling): one 8-bit power-of-two (E8M0) scale per 32.
#: KV cache: int8 and int4 → one bf16 scale per token and head (``group`` = head_dim; MLA: the
#: latent); fp8 → one scale per tensor, which rounds to nothing per element.
WEIGHT_SCALE_BYTES = {"int4": 2.0, "fp4": 1.0}
DEFAULT_WEIGHT_GROUP = {"int4": 128, "fp4": 32}
KV_SCALE_BYTES = {"int8": 2.0, "int4": 2.0}


def weight_bytes_per_element(dtype: str, group_size: int | None = None) -> float:
    """Bytes one stored weight costs in ``dtype``, its share of the group's scale included.

    ``int4`` with groups of 128: 0.5 + 2/128 = 0.515625; MXFP4 (``fp4``, blocks of 32 with an 8-bit
    scale): 0.5 + 1/32 = 0.53125. 8- and 16-bit formats: the element alone; their per-channel scales
    are not counted (one BF16 scale per output channel adds 2 bytes per row of in_features weights:
    ``topics.levers.per_channel_scale_share`` computes the most that leaves out). ``group_size``
    overrides the default group of a 4-bit format.
    """
    base = bytes_per_element(dtype)
    if dtype not in WEIGHT_SCALE_BYTES:
        return base
    group = DEFAULT_WEIGHT_GROUP[dtype] if group_size is None else check_group_size(group_size)
    return base + WEIGHT_SCALE_BYTES[dtype] / group


def kv_bytes_per_element(dtype: str, group: int) -> float:
    """Bytes one cached K/V (or latent) element costs in ``dtype``, its scale's share included."""
    return bytes_per_element(dtype) + KV_SCALE_BYTES.get(dtype, 0.0) / group


def check_group_size(value) -> int:
    """A quantisation group: a whole number of elements >= 1 (a numpy integer is accepted)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise RooflineInputError(f"group size must be a whole number of elements >= 1 (e.g. 32, 64, 128), "
                                 f"got {value!r}")
    return int(value)


def effective_weight_group(dtype: str, group_size: int | None = None) -> int | None:
    """Elements per scale that a weight in ``dtype`` actually uses: ``group_size`` or the format's
    default (int4 128, fp4 32); None for 8- and 16-bit formats, which have no scale groups."""
    if check_dtype(dtype) not in WEIGHT_SCALE_BYTES:
        return None
    return DEFAULT_WEIGHT_GROUP[dtype] if group_size is None else check_group_size(group_size)


def check_dtype(name: object) -> str:
    """Return ``name`` if it is a known dtype, else raise an error listing the allowed names."""
    if not isinstance(name, str) or name not in BYTES_PER_ELEMENT:
        raise unknown_name_error("dtype", name, DTYPES)
    return name


def bytes_per_element(name: str) -> float:
    """Size of one element of ``name`` in bytes (fp4 → 0.5)."""
    return BYTES_PER_ELEMENT[check_dtype(name)]
