# pmsim: `make demo` and `make test` work on a fresh machine with Python 3.11+ and a C compiler.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
STAMP_DEMO := $(VENV)/.installed-demo
STAMP_TEST := $(VENV)/.installed-test
STAMP_LAB  := $(VENV)/.installed-notebooks
PYTEST_ARGS ?=

.PHONY: demo test sanitize lint bench fuzz-long docs lab clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip "setuptools>=77" wheel

$(STAMP_DEMO): $(PY) pyproject.toml setup.py
	$(PIP) install --quiet -e .
	touch $@

$(STAMP_TEST): $(PY) pyproject.toml setup.py
	$(PIP) install --quiet -e ".[test]"
	touch $@ $(STAMP_DEMO)

# The C core is rebuilt in place whenever its sources change (an editable install does not).
CORE := pmsim/cache/.core-built
$(CORE): $(wildcard pmsim/cache/csrc/*) pmsim/cache/_build.py pmsim/cache/stamp.py
	$(PY) setup.py -q build_ext --inplace 2>&1 | grep -v -i "warning\|deprecat\|^\s*$$\|\*\*\*\|!!" || true
	touch $@

demo: $(STAMP_DEMO) $(CORE)
	$(PY) -m pmsim demo

# --dist worksteal: a worker that runs out of tests takes half of the other's queue, so neither
# waits idle at the end while the other works through a long queue (the default `load` hands
# out large chunks of tests near the end).
test: $(STAMP_TEST) $(CORE)
	$(PY) -m ruff check pmsim crashfuzz tests benchmarks
	$(MAKE) --no-print-directory sanitize
	$(PY) -m pytest -n 2 --dist worksteal -q $(PYTEST_ARGS)

# Rebuild the C core with AddressSanitizer + UBSan in a scratch copy and run the C-core tests
# against it (the sanitizer runtime is preloaded into the Python process).
sanitize: $(STAMP_TEST)
	@bash tools/sanitize.sh $(PY)

lint: $(STAMP_TEST)
	$(PY) -m ruff check pmsim crashfuzz tests benchmarks

bench: $(STAMP_TEST) $(CORE)
	$(PY) benchmarks/run_all.py

fuzz-long: $(STAMP_TEST)
	$(PY) -m pytest -q --runslow -m slow

# The notebooks in JupyterLab: the `notebooks` extra (jupyter, matplotlib) into .venv, then lab.
$(STAMP_LAB): $(STAMP_DEMO)
	$(PIP) install --quiet -e ".[notebooks]"
	touch $@

lab: $(STAMP_LAB) $(CORE)
	$(VENV)/bin/jupyter lab notebooks/

# The documentation site (Sphinx + MyST over docs/*.md), warnings as errors.
docs: $(STAMP_TEST) $(CORE)
	$(PY) -m sphinx -W --keep-going -q -b html docs docs/_build/html

clean:
	rm -rf $(VENV) build *.egg-info pmsim/cache/_pmcore*.so pmsim/cache/_pmcore.c
