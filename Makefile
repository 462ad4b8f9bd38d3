# Two commands do all set-up:
#   make lab   — create .venv, install the course, open JupyterLab on lesson 1 (localhost, with its token)
#   make test  — create .venv if needed, install the test extras, run unit tests + every notebook
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# Sessions and CI machines run as root, where jupyter lab insists on --allow-root.
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root,)
LESSON1 := notebooks/01_the_concept.ipynb
NOTEBOOK_DIRS := notebooks exercises solutions

.PHONY: lab test install install-test browser-deps sync exercises bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml $(VENV)/.installed
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test

lab: $(VENV)/.installed
	$(BIN)/jupyter lab --ServerApp.ip=127.0.0.1 --ServerApp.root_dir=$(CURDIR) $(ROOT_FLAG) $(LESSON1)

# Two workers, each file whole on one worker (a notebook's cells share one kernel; the browser tests
# share one JupyterLab): about 3 minutes instead of 4 on a 2-core machine.
test: $(VENV)/.installed-test
	$(BIN)/python -m pytest -q -n 2 --dist loadfile tests $(NOTEBOOK_DIRS) --nbval-lax --nbval-current-env

# The browser tests drive Debian's Chromium (never a downloaded browser). Installs it via apt when
# missing; needs root (CI) or sudo. Without it the browser tests skip locally and fail under CI=true.
browser-deps:
	@if command -v chromium >/dev/null 2>&1; then echo "chromium: $$(command -v chromium)"; \
	elif [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; \
	else sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; fi

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

clean:
	rm -rf $(VENV)
