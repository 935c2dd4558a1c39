# Set-up and entry points. `make demo` and `make test` are the README's two commands.
VENV ?= .venv
PYTHON ?= python3
PY := $(VENV)/bin/python
# The pinned CPU wheel of torch; elsewhere add e.g. TORCH_INDEX=https://download.pytorch.org/whl/cpu
TORCH_SPEC ?= torch==2.13.0
TORCH_INDEX ?=
PIP_TORCH_FLAGS := $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX),)
PYTEST_ARGS ?=

.PHONY: install demo test lint clean-outputs

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet $(PIP_TORCH_FLAGS) "$(TORCH_SPEC)"
	$(PY) -m pip install --quiet -e ".[all]"
	touch $@

install: $(VENV)/.installed

demo: install
	$(VENV)/bin/treebench run experiment=demo

test: install
	$(PY) -m pytest -n 2 --dist loadgroup --durations=15 $(PYTEST_ARGS)

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

clean-outputs:
	rm -rf outputs/store outputs/multirun outputs/runs outputs/results outputs/reports
