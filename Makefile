# Hookline developer commands. `make test` is what CI runs (through .ci/run).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: all install lint types template test test-unit test-integration clean

all: test

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)  ## create .venv and install Hookline with its development tools

lint: $(STAMP)  ## ruff: lint and formatting
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

types: $(STAMP)  ## mypy strict on layers/ and functions/
	$(BIN)/mypy

template: $(STAMP)  ## cfn-lint on template.yaml
	$(BIN)/cfn-lint template.yaml

test: lint types template  ## everything: lint, types, template, unit + integration tests
	$(BIN)/pytest

test-unit: $(STAMP)
	$(BIN)/pytest tests/unit

test-integration: $(STAMP)
	$(BIN)/pytest tests/integration

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .aws-sam
