# Two commands do all set-up:
#   make lab   — create .venv, install the course, open JupyterLab on lesson 1 (localhost, with its token)
#   make test  — create .venv if needed, install the test extras, run unit tests + every notebook
#                (no sudo, no Node.js: the workshop-hub tests skip, saying why, unless the tests run as
#                root after `sudo make hub`; the browser tests skip without Chromium; under CI=true
#                both fail instead)
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# Sessions and CI machines run as root, where jupyter lab insists on --allow-root.
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root,)
LESSON1 := notebooks/01_the_concept.ipynb
NOTEBOOK_DIRS := notebooks exercises solutions

.PHONY: lab test test-under-load install install-test browser-deps hub hub-run doctor sync exercises bench clean

# Python may write its compiled modules (some machines set PYTHONDONTWRITEBYTECODE=1): without them
# every one of the dozens of Python processes a test run starts (pytest workers, kernels, JupyterLab,
# the hub) compiles the course package and the test files again; pytest alone spends seconds a worker.
unexport PYTHONDONTWRITEBYTECODE

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# pip byte-compiles what it installs: a fresh clone's first `make test` starts dozens of Python
# processes at once, and without the compiled files each of them would compile the same modules.
# (The upgrade above matters too: the venv's bundled pip 23.2 took 88 s for the test extras, a
# current one 54 s; compiling in parallel afterwards instead measured no faster, 93 s against 91 s.)
PIP_INSTALL := $(BIN)/python -m pip install --quiet

# An editable install does not place pyproject's data-files, so the two JupyterLab config files (the
# server extension that opens lessons unmodified, the settings overrides: no news toast) are copied in.
JUPYTER_CONFIG_FILES = \
	mkdir -p $(VENV)/etc/jupyter/jupyter_server_config.d $(VENV)/share/jupyter/lab/settings && \
	cp jupyter-config/jupyter_server_config.d/roofline_lessons.json $(VENV)/etc/jupyter/jupyter_server_config.d/ && \
	cp jupyter-config/lab-settings/overrides.json $(VENV)/share/jupyter/lab/settings/

$(VENV)/.installed: pyproject.toml jupyter-config/jupyter_server_config.d/roofline_lessons.json jupyter-config/lab-settings/overrides.json | $(BIN)/python
	$(PIP_INSTALL) -e .
	$(JUPYTER_CONFIG_FILES)
	touch $@

# The tests drive the hub (tests/test_hub.py) with the hub extra's clients (requests, websocket,
# psutil); the hub itself runs from its own environment (`make hub`, below).
$(VENV)/.installed-test: pyproject.toml jupyter-config/jupyter_server_config.d/roofline_lessons.json jupyter-config/lab-settings/overrides.json | $(BIN)/python
	$(PIP_INSTALL) -e '.[test,hub]'
	$(JUPYTER_CONFIG_FILES)
	touch $(VENV)/.installed $@

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test

# Where there is no display to open a browser on (a server, a container), say so instead of trying.
NO_BROWSER := $(if $(DISPLAY)$(WAYLAND_DISPLAY)$(filter Darwin,$(shell uname -s)),,--ServerApp.open_browser=False)

lab: $(VENV)/.installed
	$(BIN)/jupyter lab --ServerApp.ip=127.0.0.1 --ServerApp.root_dir=$(CURDIR) $(ROOT_FLAG) $(NO_BROWSER) $(LESSON1)

# Two workers, each file whole on one worker (a notebook's cells share one kernel; each browser-test
# file shares one JupyterLab, and there are two of them so both workers drive a browser).
test: $(VENV)/.installed-test
	$(BIN)/python -m pytest -q -n 2 --dist loadfile tests $(NOTEBOOK_DIRS) --nbval-lax --nbval-current-env

# The flake check: the whole suite RUNS times in a row while one busy process per core competes for
# the CPU, stopping at the first failure (tests/run_under_load.py). About RUNS × 8 minutes on 2 cores.
RUNS ?= 5
test-under-load: $(VENV)/.installed-test
	$(BIN)/python tests/run_under_load.py --runs $(RUNS) -- $(MAKE) --no-print-directory test

# The browser tests drive Debian's Chromium (never a downloaded browser). Installs it via apt when
# missing; needs root (CI) or sudo. Without it the browser tests skip locally and fail under CI=true.
browser-deps:
	@if command -v chromium >/dev/null 2>&1; then echo "chromium: $$(command -v chromium)"; \
	elif [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; \
	else sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; fi

# The workshop JupyterHub (workshop/README.md): JupyterHub, its idle culler and nbgitpuller from PyPI
# (the `hub` extra), configurable-http-proxy from npm into workshop/node_modules (pinned by
# workshop/package-lock.json; needs Node.js >= 18 and npm). Nothing is downloaded when the hub runs.
HUB_PROXY := workshop/node_modules/.bin/configurable-http-proxy

# The hub's own environment, workshop/.venv: the hub AND every learner's server run from it, as the
# learners' own accounts, so its Python must be readable by every account. Debian's /usr/bin/python3
# where there is one (a Python under /root, as pyenv installs it, is not); root-owned and read-only
# to learners (the hub refuses to start otherwise).
HUB_PYTHON ?= $(shell test -x /usr/bin/python3 && echo /usr/bin/python3 || echo python3)
HUB_VENV := workshop/.venv

$(HUB_VENV)/.installed: pyproject.toml
	$(HUB_PYTHON) -m venv $(HUB_VENV)
	$(HUB_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(HUB_VENV)/bin/python -m pip install --quiet -e '.[hub]'
	touch $@

$(HUB_PROXY): workshop/package.json workshop/package-lock.json
	@command -v npm >/dev/null 2>&1 || { echo "npm not found: installing Debian's nodejs and npm"; \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm; \
	  else sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm; fi; }
	npm ci --prefix workshop --no-audit --no-fund
	touch $@

hub: $(HUB_VENV)/.installed $(HUB_PROXY)

# Check this set-up before a workshop (installs nothing); exit status 1 if something is wrong.
doctor:
	@if [ -x $(BIN)/python ]; then $(BIN)/python -m roofline_lessons doctor; \
	else echo "✗ no course environment in $(VENV) — fix: run \`make install\`"; exit 1; fi

# Serve the workshop hub on http://127.0.0.1:8000 (put TLS in front for a room: docs/instructor-guide.md).
hub-run:
	@test -x $(HUB_VENV)/bin/jupyterhub -a -x $(HUB_PROXY) || { echo "the hub is not installed: run \`sudo make hub\` first" >&2; exit 2; }
	@test "$$(id -u)" = 0 || { echo "the hub runs as root (each learner's server as their own account): sudo make hub-run" >&2; exit 2; }
	@test -n "$$WORKSHOP_LEARNERS" || { echo "set WORKSHOP_LEARNERS to the room's learner names, e.g. WORKSHOP_LEARNERS=ada,grace" >&2; exit 2; }
	exec $(HUB_VENV)/bin/jupyterhub -f workshop/jupyterhub_config.py

# For course authors: collapse narration cells, pair every .py script with its .ipynb (jupytext picks
# the newer side),
# then regenerate exercises/ from solutions/ (refuses to overwrite an edited exercise).
sync: $(VENV)/.installed
	$(BIN)/python -c 'from roofline_lessons.course.notebook_files import collapse_narration; collapse_narration()'
	$(BIN)/jupytext --sync py/notebooks/[0-9]*.py py/solutions/[0-9]*.py
	$(BIN)/roofline-lessons exercises

exercises: $(VENV)/.installed
	$(BIN)/roofline-lessons exercises

bench: $(VENV)/.installed-test
	$(BIN)/python benchmarks/widget_update.py
	$(BIN)/python benchmarks/browser_latency.py
	$(BIN)/python benchmarks/decode_vs_bound.py
	$(BIN)/python benchmarks/notebook_times.py
	$(BIN)/python benchmarks/bandwidth_vs_c.py
	$(BIN)/python benchmarks/hub_load.py

clean:
	rm -rf $(VENV)
