# toolscript: build the zipapp, run the tests, run the benchmarks.
#   make run     -> build, then start a gateway with the built-in tools (no config needed)
#   make build   -> dist/toolscript.pyz (reproducible)
#   make plugin  -> plugins/toolscript/bin/toolscript.pyz, the zipapp the plugin bundles
#   make test    -> venv + npm peers installed into the checkout, then the whole suite
#   make bench   -> benchmark figures as JSON (also installs the peer proxy, see peer-proxy)

PYTHON ?= python3
VENV   := .venv
VPY    := $(VENV)/bin/python
PEERS  := tests/peers
# mcp-proxy needs mcp 1.x, the test venv has mcp 2.x: it gets a venv of its own
# (inside .venv/, which .gitignore already covers).
PROXY_VENV := $(VENV)/peers/mcp-proxy
PYTEST_ARGS ?=
# pytest-xdist workers for make test (auto = one per CPU); PYTEST_WORKERS=0 runs serially.
PYTEST_WORKERS ?= auto

# bubblewrap for exec's bubblewrap rung, unpacked from Debian's package (no root install needed).
BWRAP_DIR := $(VENV)/peers/bwrap
BWRAP := $(BWRAP_DIR)/usr/bin/bwrap

.PHONY: build run plugin test venv peers peer-proxy bwrap chromium bench distill-check clean

build:
	$(PYTHON) build_pyz.py

# The plugin carries its own copy so a marketplace install needs only Python 3.
# Commit it after changing toolscript/: a test fails when it is stale.
plugin:
	$(PYTHON) build_pyz.py -o plugins/toolscript/bin/toolscript.pyz

# The main job on the embedded default: a gateway serving the built-in tools (plus any
# servers in ~/.toolscript.json or ./.toolscript.json). It prints how to call a tool.
run: build
	$(PYTHON) dist/toolscript.pyz gateway start

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

# A peer proxy a user might pick instead of the gateway, for bench/gateway.py.
peer-proxy: $(PROXY_VENV)/.installed
$(PROXY_VENV)/.installed:
	$(PYTHON) -m venv $(PROXY_VENV)
	$(PROXY_VENV)/bin/python -m pip install --quiet --disable-pip-version-check mcp-proxy==0.13.0
	touch $@

# Best-effort (apt-get download + dpkg-deb -x, Debian/Ubuntu only): without it the bubblewrap
# rung's tests are skipped with the reason named; TOOLSCRIPT_BWRAP tells the sandbox where it is.
bwrap:
	@test -x $(BWRAP) || (mkdir -p $(BWRAP_DIR) && cd $(BWRAP_DIR) \
	  && apt-get download bubblewrap >/dev/null 2>&1 && dpkg-deb -x bubblewrap_*.deb . && rm -f bubblewrap_*.deb) \
	  || echo "bwrap: could not fetch Debian's bubblewrap package; the bubblewrap rung will not be tested"

# Debian's Chromium for the web page's browser test (tests/gateway/test_ui_browser.py), installed with
# apt-get when we are root (CI); otherwise that test fails under TOOLSCRIPT_REQUIRE_PEERS=1 and says how to get it.
CHROMIUM := /usr/bin/chromium
chromium:
	@test -x $(CHROMIUM) || { [ "$$(id -u)" = 0 ] && export DEBIAN_FRONTEND=noninteractive \
	  && { apt-get install -y -qq --no-install-recommends chromium >/dev/null 2>&1 \
	       || { apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium >/dev/null; }; }; } \
	  || echo "chromium: not installed (as root: apt-get install -y chromium); the page's browser test will fail"

# TOOLSCRIPT_REQUIRE_PEERS=1 turns a missing peer into a failure, never a skip.
# The tests run in parallel (each worker has its own HOME, see tests/conftest.py).
test: venv peers bwrap chromium build
	TOOLSCRIPT_REQUIRE_PEERS=1 TOOLSCRIPT_BWRAP=$(CURDIR)/$(BWRAP) $(VPY) -m pytest -n $(PYTEST_WORKERS) $(PYTEST_ARGS)

bench: venv peers peer-proxy
	$(VPY) bench/mcp_client.py
	$(VPY) bench/gateway.py
	$(VPY) bench/reload.py
	$(VPY) bench/scale.py
	$(VPY) bench/codemode.py
	$(VPY) bench/search.py
	$(VPY) bench/search.py --floors
	$(VPY) bench/vectors.py
	$(VPY) bench/exec_isolation.py
	$(VPY) bench/suggest_hook.py
	$(VPY) bench/suggest_eval.py
	$(VPY) bench/skills_scan.py
	$(VPY) bench/model_backends.py
	$(VPY) bench/memory_store.py
	$(VPY) bench/memory_hooks.py
	$(VPY) bench/hooks_mechanisms.py
	$(VPY) bench/ask_loop.py
	$(VPY) bench/mcp_modern.py
	$(VPY) bench/oauth.py
	$(VPY) bench/hostile.py
	$(VPY) bench/load.py
	$(VPY) bench/upstream_limits.py
	$(PYTHON) bench/plugin.py
	@# The search peers (all-MiniLM-L6-v2, the Deno original's hybrid) need torch: the distill venv.
	@if [ -x "$(DISTILL_PYTHON)" ]; then $(DISTILL_PYTHON) bench/search_peers.py; \
	else echo "bench/search_peers.py skipped: no $(DISTILL_PYTHON) (make one as distill/README.md says)"; fi

# Re-run the distillation (dev-only venv: distill/README.md) and check it gives the committed bytes:
# distill.py makes V3 (requests.py's start), requests.py tunes it into the shipped table.
DISTILL_PYTHON ?= /work/venv-distill/bin/python
distill-check:
	mkdir -p dist
	$(DISTILL_PYTHON) distill/distill.py -o $(CURDIR)/dist/embeddings-v3.rebuilt.bin
	cmp dist/embeddings-v3.rebuilt.bin distill/embeddings-v3.bin && echo "distill-check: V3, the same bytes as committed"
	$(DISTILL_PYTHON) distill/requests.py -o $(CURDIR)/dist/embeddings.rebuilt.bin
	cmp dist/embeddings.rebuilt.bin toolscript/search/data/embeddings.bin && echo "distill-check: the shipped table, the same bytes as committed"
	python3 distill/thesaurus.py --check && echo "distill-check: the thesaurus, compiled from its source"

clean:
	rm -rf dist $(VENV) $(PEERS)/node_modules .pytest_cache
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
