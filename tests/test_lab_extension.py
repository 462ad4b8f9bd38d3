"""The server extension that serves a lesson with its kernel's language_info (issue 26, item 4), and
the config that enables it. The browser test (tests/test_browser_second_half.py) shows the effect."""

import asyncio
import json
from pathlib import Path

from roofline_lessons.course import lab

ROOT = Path(__file__).resolve().parents[1]


def _notebook(metadata):
    return {"type": "notebook", "content": {"metadata": metadata, "cells": []}}


def test_a_lesson_without_language_info_gets_the_kernels():
    info = lab.kernel_language_info()
    assert info["name"] == "python" and info["version"]
    model = lab.fill_language_info(_notebook({"kernelspec": {"name": "python3"}}))
    assert model["content"]["metadata"]["language_info"] == info
    # its own language_info, another kernel, a file or a directory: returned as they came
    own = _notebook({"kernelspec": {"name": "python3"}, "language_info": {"name": "python", "version": "3.0"}})
    assert lab.fill_language_info(own)["content"]["metadata"]["language_info"]["version"] == "3.0"
    other = _notebook({"kernelspec": {"name": "ir"}})
    assert "language_info" not in lab.fill_language_info(other)["content"]["metadata"]
    for model in ({"type": "file", "content": "x"}, {"type": "directory", "content": []},
                  _notebook({}) | {"content": None}, None):
        assert lab.fill_language_info(model) == model


def test_the_wrapped_get_fills_for_sync_and_async_managers():
    sync_get = lab._wrap(lambda path, content=True: _notebook({}))
    assert "language_info" in sync_get("x.ipynb")["content"]["metadata"]

    async def aget(path, content=True):
        return _notebook({})
    async_get = lab._wrap(aget)
    assert "language_info" in asyncio.run(async_get("x.ipynb"))["content"]["metadata"]


def test_the_config_enables_the_extension_and_the_makefile_installs_it():
    config = json.loads((ROOT / "jupyter-config" / "jupyter_server_config.d" / "roofline_lessons.json").read_text())
    assert config["ServerApp"]["jpserver_extensions"] == {"roofline_lessons.course.lab": True}
    assert lab._jupyter_server_extension_points() == [{"module": "roofline_lessons.course.lab"}]
    overrides = json.loads((ROOT / "jupyter-config" / "lab-settings" / "overrides.json").read_text())
    assert overrides["@jupyterlab/apputils-extension:notification"]["fetchNews"] == "false"
    makefile = (ROOT / "Makefile").read_text()
    assert "$(JUPYTER_CONFIG_FILES)" in makefile and "jupyter_server_config.d" in makefile
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert 'license = "MIT"' in pyproject  # the SPDX form: no setuptools deprecation warning at install
