# Two commands: `make demo` answers the demo question on the embedded model,
# `make test` runs the whole suite (unit and integration; the Postgres tests need
# $REACTGRAPH_TEST_DATABASE_URL, which .ci/run sets up). Both create .venv first.
# The .venv `make demo` makes also serves the page (`.venv/bin/reactgraph serve`): the
# README's whole tour runs in it. The package is installed in editable mode, so code
# changes need no reinstall: each set of extras is installed again only when
# pyproject.toml changes (a stamp file per set in .venv).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
QUESTION ?= CNC-003 상태 확인해줘

.PHONY: demo test bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed-%: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[$(subst +,$(comma),$*)]"
	touch $@

comma := ,

demo: $(VENV)/.installed-local+server
	$(BIN)/reactgraph run --max-iterations 6 "$(QUESTION)"

test: $(VENV)/.installed-local+dev+postgres
	$(BIN)/python -m pytest

bench: $(VENV)/.installed-dev+postgres
	$(BIN)/python bench/overhead.py
	$(BIN)/python bench/import_time.py
	$(BIN)/python bench/tool_tokens.py
	$(BIN)/python bench/guard_cost.py
	$(BIN)/python bench/load.py
	$(BIN)/python bench/checkpoint_overhead.py
	$(BIN)/python bench/renderer.py

clean:
	rm -rf $(VENV) build site *.egg-info .pytest_cache .hypothesis
