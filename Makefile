# toolscript: build the zipapp, run the tests, run the benchmarks.
#   make build   -> dist/toolscript.pyz (reproducible)
#   make test    -> venv + npm peers installed into the checkout, then the whole suite
#   make bench   -> benchmark figures as JSON

PYTHON ?= python3
VENV   := .venv
VPY    := $(VENV)/bin/python
PEERS  := tests/peers
PYTEST_ARGS ?=

.PHONY: build test venv peers bench clean

build:
	$(PYTHON) build_pyz.py

venv: $(VENV)/.installed
$(VENV)/.installed: tests/requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install --quiet --disable-pip-version-check -r tests/requirements.txt
	touch $@

# Real MCP servers from npm, installed from the committed lock file.
peers: $(PEERS)/node_modules/.installed
$(PEERS)/node_modules/.installed: $(PEERS)/package-lock.json
	npm ci --prefix $(PEERS) --no-audit --no-fund --loglevel=error
	touch $@

# TOOLSCRIPT_REQUIRE_PEERS=1 turns a missing peer into a failure, never a skip.
test: venv peers build
	TOOLSCRIPT_REQUIRE_PEERS=1 $(VPY) -m pytest $(PYTEST_ARGS)

bench: venv peers
	$(VPY) bench/mcp_client.py

clean:
	rm -rf dist $(VENV) $(PEERS)/node_modules .pytest_cache
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
