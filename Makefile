# Quickstart: `make run` (demo tenant + server on SQLite) and `make test` (the whole suite).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install browser run test test-fast lint typecheck openapi-client bench bench-tools clean

install: $(STAMP)

$(STAMP): requirements.lock pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -r requirements.lock
	$(BIN)/python -m pip install -q --no-deps -e .
	$(BIN)/python -m pip install -q --no-deps -e sdk/python
	touch $(STAMP)

# The browser tests drive Debian's Chromium (Playwright with executable_path); no browser is ever downloaded.
browser:
	command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq chromium)

# The local demo runs in dev mode (docs/decisions/0420): `marketsync dev listen` can receive its webhooks on loopback.
# `make run MARKETSYNC_DEV_MODE=false` turns it off.
MARKETSYNC_DEV_MODE ?= true
run: install
	$(BIN)/marketsync demo
	MARKETSYNC_DEV_MODE=$(MARKETSYNC_DEV_MODE) $(BIN)/marketsync serve

lint: install
	$(BIN)/ruff check marketsync tests bench examples sdk
	$(BIN)/ruff format --check marketsync tests bench examples sdk

typecheck: install
	$(BIN)/mypy

# A client generated from /openapi.json (openapi-python-client, its own venv under var/) passes mypy --strict with
# typed calls to every operation (docs/decisions/0228); OPENAPI_CLIENT_ARGS=--call also runs them on a demo server.
OPENAPI_CLIENT_ARGS ?= --call
openapi-client: install
	timeout 300 $(BIN)/python -m bench.conformance.openapi_client $(OPENAPI_CLIENT_ARGS)

# The suite mostly waits (servers, workers, subprocesses), so it runs on more pytest-xdist workers than cores; groups
# marked xdist_group stay on one worker. A plain `python -m pytest tests/x.py` still runs in one process.
PYTEST_WORKERS ?= 4
test: install browser lint typecheck openapi-client
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadgroup

# The inner loop: pure rules, the auth/jobs/kit cores, and every other test on SQLite only (no lint, no mypy).
test-fast: install
	$(BIN)/python -m pytest -q -x -p no:randomly -k "not postgresql" tests/unit tests/kit tests/auth tests/jobs tests/orders tests/inventory

# wrk drives the fixed-cost figures; py-spy samples the service for the profiles in docs/perf (--profile DIR).
bench-tools: install
	command -v wrk >/dev/null || (apt-get update -qq && apt-get install -y -qq wrk)
	test -x $(BIN)/py-spy || $(BIN)/python -m pip install -q py-spy==0.4.3

# Every hot-path figure next to its floor (issue 15), both databases; rewrites docs/performance.md.
bench: install bench-tools
	$(BIN)/python -m bench.all

clean:
	rm -rf $(VENV) var .pytest_cache .mypy_cache .ruff_cache
