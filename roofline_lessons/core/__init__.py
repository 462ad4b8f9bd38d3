"""The analytic core: the layer every other one stands on. No plotting, no widgets, no notebooks.

- :mod:`.dtypes`     — bytes per element of each number format.
- :mod:`.units`      — SI and binary prefixes, number formatting for people.
- :mod:`.errors`     — :class:`RooflineInputError`, the one error bad input raises.
- :mod:`.files`      — atomic file writes (used by every layer that saves a learner's work).
- :mod:`.hardware`   — the hardware catalog (``data/hardware.toml``): peaks, bandwidth, capacity.
- :mod:`.models`     — the model catalog (``data/models.toml``) and parameter counts from shapes.
- :mod:`.costs`      — FLOPs and bytes per operator for prefill and decode.
- :mod:`.roofline`   — attainable = min(peak, β·I), ridge point, bound, time lower bound.
- :mod:`.memory`     — footprint against capacity; the largest batch that fits.
- :mod:`.placement`  — a model + a part + a workload → a point on the roofline.

Imports run one way inside the layer: dtypes/units/errors → hardware, models → costs → memory →
placement (``tests/test_package_layers.py`` holds every layer to this).
"""
