# Hookline developer commands. `make test` is what CI runs (through .ci/run).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The embedded AWS emulator (ministack and the SAM transform) lives in its own venv: it pins botocore and
# pydantic below what Hookline resolves. `make run` and the template e2e tests deploy template.yaml onto it.
EMU_VENV := .venv-emu
EMU_STAMP := $(EMU_VENV)/.installed

.PHONY: all install lint types template docs test test-unit test-integration test-cluster test-e2e test-chaos run sam-check bench clean

all: test

$(STAMP): pyproject.toml client/pyproject.toml localstack/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e './client[cli]' -e '.[dev]' -e ./localstack
	touch $(STAMP)

$(EMU_STAMP): localstack/emulator-requirements.txt
	$(PYTHON) -m venv $(EMU_VENV)
	$(EMU_VENV)/bin/pip install --quiet --upgrade pip
	$(EMU_VENV)/bin/pip install --quiet -r localstack/emulator-requirements.txt
	touch $(EMU_STAMP)

install: $(STAMP) $(EMU_STAMP)  ## create .venv (Hookline and its tools) and .venv-emu (the AWS emulator)

lint: $(STAMP)  ## ruff (lint and formatting) and the layering contracts (.importlinter)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

types: $(STAMP)  ## mypy strict on layers/ and functions/
	$(BIN)/mypy

template: $(STAMP)  ## cfn-lint on template.yaml
	$(BIN)/cfn-lint template.yaml

# The documentation site: --strict turns every warning into an error, and mkdocs.yml's validation makes a
# link to a missing page or anchor a warning. `make test` builds it too (tests/docs).
docs: $(STAMP)  ## the documentation site (docs/, mkdocs.yml) into site/; warnings and broken links fail it
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

test: lint types template $(EMU_STAMP)  ## everything: lint, types, template, unit, integration, e2e and fault tests, then the cluster pass
	$(BIN)/pytest
	$(MAKE) test-cluster

# The Lua table tests and the lifecycle tests again, against a real 3-master Redis Cluster (started by the
# tests on free loopback ports) with jobs spread over 4 shards; a command spanning slots fails the test.
CLUSTER_TESTS := tests/integration/lua tests/integration/test_lifecycle.py tests/integration/test_recovery.py \
	tests/integration/test_consumers.py

test-cluster: $(STAMP)  ## the cluster pass alone (needs redis-server and redis-cli)
	HOOKLINE_TEST_REDIS=cluster $(BIN)/pytest $(CLUSTER_TESTS)

test-unit: $(STAMP)
	$(BIN)/pytest tests/unit

test-integration: $(STAMP)
	$(BIN)/pytest tests/integration

test-e2e: $(STAMP) $(EMU_STAMP)  ## the stacks `make run` starts, driven over HTTP
	$(BIN)/pytest tests/e2e

test-chaos: $(STAMP)  ## the fault suite: handler processes killed, Redis flushed, AWS cut (HOOKLINE_CHAOS_SCALE)
	$(BIN)/pytest tests/chaos

# make passes nothing after its targets to a command: `make run -- --port 3001` would start on 3000 and
# then fail on a target named --port. Options go in variables, and any other goal beside run is refused.
ifneq ($(filter run,$(MAKECMDGOALS)),)
ifneq ($(filter-out run,$(MAKECMDGOALS)),)
$(error make run takes no other arguments ($(filter-out run,$(MAKECMDGOALS))): use make run PORT=3001 ARGS='--refuse-loopback')
endif
endif

run: $(STAMP) $(EMU_STAMP)  ## template.yaml deployed on the embedded emulator; API on 127.0.0.1:3000 (PORT=N, ARGS='...')
	$(BIN)/hookline dev $(if $(PORT),--port $(PORT)) $(ARGS)

# SAM CLI lives in its own venv: aws-sam-translator pins a pydantic that Hookline's dependencies outgrow.
SAM_VENV := .venv-sam
SAM := $(SAM_VENV)/bin/sam

$(SAM):
	$(PYTHON) -m venv $(SAM_VENV)
	$(SAM_VENV)/bin/pip install --quiet --upgrade pip
	$(SAM_VENV)/bin/pip install --quiet aws-sam-cli

sam-check: $(SAM)  ## sam validate --lint and sam build (no Docker needed); not part of `make test`
	$(SAM) validate --lint
	$(SAM) build

# `make bench` compares Hookline with Celery, RQ, arq and Dramatiq in one run (bench/compare); the peers live
# in their own virtualenvs at pinned versions so they never touch .venv. BENCH_SCALE=0.2 for a quick run.
BENCH_VENV := .venv-bench
BENCH_ARQ_VENV := .venv-bench-arq

$(BENCH_VENV)/.installed: pyproject.toml client/pyproject.toml localstack/pyproject.toml bench/requirements.txt
	$(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/pip install --quiet --upgrade pip
	$(BENCH_VENV)/bin/pip install --quiet -e './client[cli]' -e . -e ./localstack -r bench/requirements.txt
	touch $@

$(BENCH_ARQ_VENV)/.installed: bench/requirements-arq.txt
	$(PYTHON) -m venv $(BENCH_ARQ_VENV)
	$(BENCH_ARQ_VENV)/bin/pip install --quiet --upgrade pip
	$(BENCH_ARQ_VENV)/bin/pip install --quiet -r bench/requirements-arq.txt
	touch $@

bench: $(BENCH_VENV)/.installed $(BENCH_ARQ_VENV)/.installed  ## Hookline side by side with Celery, RQ, arq, Dramatiq
	$(BENCH_VENV)/bin/python -m bench.compare.run

clean:
	rm -rf site $(VENV) $(EMU_VENV) $(BENCH_VENV) $(BENCH_ARQ_VENV) .mypy_cache .ruff_cache .pytest_cache .aws-sam
