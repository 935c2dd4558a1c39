# Set-up and entry points. `make demo` and `make test` are the README's two commands; CI runs
# `make test-all` (.ci/run).
VENV ?= .venv
PYTHON ?= python3
PY := $(VENV)/bin/python
# The pinned CPU wheel of torch; elsewhere add e.g. TORCH_INDEX=https://download.pytorch.org/whl/cpu
TORCH_SPEC ?= torch==2.13.0
TORCH_INDEX ?=
PIP_TORCH_FLAGS := $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX),)
PYTEST_ARGS ?=

.PHONY: install demo test test-all lint clean-outputs

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet $(PIP_TORCH_FLAGS) "$(TORCH_SPEC)"
	$(PY) -m pip install --quiet -e ".[all]"
	touch $@

install: $(VENV)/.installed

# the demo's numba kernels are compiled into the on-disk cache first (once; a minute or two), so the
# sweep's fits are timed without compilation
demo: install
	$(PY) -m treebench.warmup
	$(VENV)/bin/treebench run experiment=demo

# a developer's suite: everything but the tests marked slow or slurm (pyproject.toml's markers);
# `make test-all` (what .ci/run calls) runs those too
TEST_MARKERS ?= not slow and not slurm
test: install
	$(PY) -m pytest -n 2 --dist loadgroup --durations=15 -m "$(TEST_MARKERS)" $(PYTEST_ARGS)

test-all: install
	$(PY) -m pytest -n 2 --dist loadgroup --durations=15 $(PYTEST_ARGS)

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

clean-outputs:
	rm -rf outputs/store outputs/multirun outputs/runs outputs/results outputs/reports
