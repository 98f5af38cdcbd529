# Two commands on a fresh machine: `make demo` and `make test`.
# uv (from the package index, into the project's own .venv) installs in seconds what pip
# takes minutes for; each target installs only what it needs. --compile-bytecode: Dask's
# worker processes are spawned with -B (no .pyc written), so without compiled bytecode
# every worker would compile scikit-learn, Dask and friends from source at each start.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
UV     := $(BIN)/uv
UVPIP  := $(UV) pip install --quiet --compile-bytecode --python $(BIN)/python

.PHONY: demo test test-all test-slow test-sklearn-min test-cost bench clean

$(UV):
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check uv

# the package alone: what the demo needs
$(VENV)/.core: $(UV) pyproject.toml
	$(UVPIP) -e .
	touch $@

# with the test, object-store and Kubernetes extras
$(VENV)/.test: $(UV) pyproject.toml
	$(UVPIP) -e ".[test,s3,kubernetes]"
	touch $@ $(VENV)/.core

demo: $(VENV)/.core
	$(BIN)/bbc-dask demo --store runs/demo.zarr --out runs/demo_report

# The suites run in PYTEST_WORKERS pytest processes (pytest-xdist; 0: this one), a test
# file each at a time (--dist loadfile: a module's fixtures are built once, its tests stay
# in order). One process keeps ~1.2 of 2 cores busy; measured back to back on a fresh
# clone of a 2-core machine, two processes ran CI's three runs in 1,487 s against 1,990 in
# one, for 4% more CPU (docs/performance.md, "The test suite"). 2, not the core
# count: what is measured, and os.cpu_count() in a container can name the host's cores.
PYTEST_WORKERS ?= 2
# $(call xdist,MODE): the options for pytest-xdist's --dist MODE, none with 0 workers;
# --dist load shares one file's tests out among them (scikit-learn's search tests)
xdist = $(if $(filter-out 0,$(PYTEST_WORKERS)),-n $(PYTEST_WORKERS) --dist $(1))

# the default suite (statistical calibration and long scale checks are marked slow).
# exec: make's shell becomes pytest, so that the SIGTERM make forwards to its child reaches
# pytest (through /bin/sh -c it killed the shell and left pytest and its clusters running;
# tests/conftest.py ends the session on it as on Ctrl-C). A terminal's Ctrl-C goes to the
# whole process group, pytest included; make itself forwards no SIGINT
test: $(VENV)/.test
	exec $(BIN)/python -m pytest $(call xdist,loadfile) -m "not slow" $(PYTEST_ARGS)

# only the slow ones; test-all = test + test-slow
test-slow: $(VENV)/.test
	exec $(BIN)/python -m pytest $(call xdist,loadfile) -m slow $(PYTEST_ARGS)

test-all: $(VENV)/.test
	exec $(BIN)/python -m pytest $(call xdist,loadfile) $(PYTEST_ARGS)

# the scikit-learn-facing tests against the lowest scikit-learn pyproject.toml allows (the
# newest is the one `make test` installs); its private names are read in
# bbc_dask/_sklearn_compat.py alone
SKLEARN_MIN   := $(shell sed -n 's/.*"scikit-learn>=\([0-9.]*\)".*/\1/p' pyproject.toml)
MIN_VENV      := .venv-sklearn-min
SKLEARN_TESTS := tests/test_dropin.py tests/test_search.py tests/test_scorers.py \
                 tests/test_fit_scores.py tests/test_metrics.py tests/test_validation.py \
                 tests/test_intervals.py tests/test_architecture.py

$(MIN_VENV)/.test: $(UV) pyproject.toml
	$(UV) venv --quiet --python $(BIN)/python $(MIN_VENV)
	$(UV) pip install --quiet --compile-bytecode --python $(MIN_VENV)/bin/python -e ".[test,s3]" \
		"scikit-learn==$(SKLEARN_MIN).*"
	touch $@

test-sklearn-min: $(MIN_VENV)/.test
	$(MIN_VENV)/bin/python -c "import sklearn; print('scikit-learn', sklearn.__version__)"
	exec $(MIN_VENV)/bin/python -m pytest $(call xdist,loadfile) -m "not slow" $(SKLEARN_TESTS) $(PYTEST_ARGS)
	# scikit-learn's own search tests of that version, with the searches swapped in (slow)
	exec $(MIN_VENV)/bin/python -m pytest $(call xdist,load) tests/test_sklearn_search.py $(PYTEST_ARGS)

# what each test file costs in the three runs CI makes (wall and CPU seconds, children
# included; local clusters and subprocesses started), tables in .test-cost/, totals last
COST := .test-cost
test-cost: $(VENV)/.test $(MIN_VENV)/.test
	rm -rf $(COST)
	BBC_TEST_COST=$(COST)/default.json $(BIN)/python -m pytest -p _cost -m "not slow" $(PYTEST_ARGS)
	BBC_TEST_COST=$(COST)/slow.json $(BIN)/python -m pytest -p _cost -m slow $(PYTEST_ARGS)
	BBC_TEST_COST=$(COST)/sklearn-min.json $(MIN_VENV)/bin/python -m pytest -p _cost -m "not slow" $(SKLEARN_TESTS) $(PYTEST_ARGS)
	BBC_TEST_COST=$(COST)/sklearn-min-search.json $(MIN_VENV)/bin/python -m pytest -p _cost tests/test_sklearn_search.py $(PYTEST_ARGS)
	$(BIN)/python tests/_cost.py $(COST)/default.json $(COST)/slow.json $(COST)/sklearn-min.json $(COST)/sklearn-min-search.json

# with the benchmarks' peers (mlxtend); the other benchmarks run as python benchmarks/X.py
$(VENV)/.bench: $(UV) pyproject.toml
	$(UVPIP) -e ".[test,s3,kubernetes,bench]"
	touch $@ $(VENV)/.test $(VENV)/.core

bench: $(VENV)/.bench
	$(BIN)/python benchmarks/bench_bbc.py

clean:
	rm -rf $(VENV) $(MIN_VENV) build *.egg-info
