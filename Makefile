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

.PHONY: demo test test-all test-slow bench clean

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

# the default suite (statistical calibration and long scale checks are marked slow)
test: $(VENV)/.test
	$(BIN)/python -m pytest -m "not slow" $(PYTEST_ARGS)

# only the slow ones; test-all = test + test-slow
test-slow: $(VENV)/.test
	$(BIN)/python -m pytest -m slow $(PYTEST_ARGS)

test-all: $(VENV)/.test
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# with the benchmarks' peers (mlxtend); the other benchmarks run as python benchmarks/X.py
$(VENV)/.bench: $(UV) pyproject.toml
	$(UVPIP) -e ".[test,s3,kubernetes,bench]"
	touch $@ $(VENV)/.test $(VENV)/.core

bench: $(VENV)/.bench
	$(BIN)/python benchmarks/bench_bbc.py

clean:
	rm -rf $(VENV) build *.egg-info
