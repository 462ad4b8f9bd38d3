"""A small Jupyter server extension for the course's JupyterLab (``make lab``, the tests' servers,
the workshop hub's single-user servers): a lesson opens *unmodified*.

JupyterLab writes the running kernel's ``language_info`` (its Python version among it) into a
notebook's metadata as soon as the kernel starts, and a notebook whose stored ``language_info``
differs — the course ships none, since no one Python version is right for every learner — is
marked modified before the learner has touched it, and closing it asks to save. Serving a notebook,
this extension fills in the ``language_info`` of the kernel that will run it (the ``python3``
kernel of this same environment) where the file has none, so what JupyterLab writes is what it
already holds. Nothing is written to disk: the learner's file changes only when she saves it.

Enabled by ``jupyter-config/jupyter_server_config.d/roofline_lessons.json``, which the package
installs into the environment's ``etc/jupyter``.
"""

from __future__ import annotations

import inspect


def kernel_language_info() -> dict:
    """The ``language_info`` this environment's IPython kernel reports (ipykernel's own dict)."""
    from ipykernel.ipkernel import IPythonKernel

    return dict(IPythonKernel.language_info)


def fill_language_info(model: dict | None, language_info: dict | None = None) -> dict | None:
    """``model`` (a contents-API model) with its notebook's missing ``language_info`` filled in, for a
    notebook whose kernelspec is this environment's ``python3`` (or that names none). Anything else
    — a file, a directory, a notebook that has its own ``language_info`` or another kernel — is
    returned as it came. Changes the model in place and returns it."""
    if not isinstance(model, dict) or model.get("type") != "notebook" or not isinstance(model.get("content"), dict):
        return model
    metadata = model["content"].setdefault("metadata", {})
    kernel = (metadata.get("kernelspec") or {}).get("name", "python3")
    if "language_info" not in metadata and kernel == "python3":
        metadata["language_info"] = language_info or kernel_language_info()
    return model


def _wrap(get):
    """The contents manager's ``get``, filling ``language_info`` into what it returns."""
    info = kernel_language_info()
    if inspect.iscoroutinefunction(get):
        async def filled(*args, **kwargs):
            return fill_language_info(await get(*args, **kwargs), info)
    else:
        def filled(*args, **kwargs):
            return fill_language_info(get(*args, **kwargs), info)
    filled.__wrapped__ = get
    return filled


def _jupyter_server_extension_points():
    return [{"module": "roofline_lessons.course.lab"}]


def _load_jupyter_server_extension(serverapp) -> None:
    manager = serverapp.contents_manager
    if not getattr(manager.get, "__wrapped__", None):
        manager.get = _wrap(manager.get)
    serverapp.log.info("roofline_lessons: lessons open with this kernel's language_info (no spurious 'modified')")
