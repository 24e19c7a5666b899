# The two commands a new user types: `make demo` and `make test`. Both set up what is missing first.
SHELL := /bin/bash
PY := .venv/bin/python
CHROMIUM := /usr/bin/chromium
STAMP := .venv/.installed
NODE_DIR := benchmarks/node
NODE_PEERS := $(NODE_DIR)/node_modules/.installed

.PHONY: setup demo test test-fast lint typecheck codegen codegen-check bench protocol-data protocol-refresh clean

setup: $(STAMP) $(CHROMIUM) $(NODE_PEERS)

# The benchmark's Node peers (Puppeteer, chrome-remote-interface): Debian's nodejs and npm if missing (needs
# root), the packages into benchmarks/node/node_modules from its lock file, never globally. No browser
# download: the peers launch /usr/bin/chromium like every other client.
$(NODE_PEERS): $(NODE_DIR)/package.json $(NODE_DIR)/package-lock.json
	@command -v node >/dev/null && command -v npm >/dev/null || \
		{ echo "installing Debian's nodejs and npm (needs root)"; apt-get update && apt-get install -y nodejs npm; }
	cd $(NODE_DIR) && PUPPETEER_SKIP_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error
	@touch $@

$(CHROMIUM):
	@echo "installing Debian's chromium (needs root)"
	apt-get update && apt-get install -y chromium

$(STAMP): pyproject.toml
	@test -x $(PY) || python3 -m venv .venv
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'  # dev pulls the codegen, bench and playwright extras
	@touch $(STAMP)

demo: setup
	$(PY) -m compileall -q -j 2 cdp engine
	$(PY) -m engine.demo

# Byte-compiled once here: the suite starts about a hundred Python processes (CLI, packaging), and where
# PYTHONDONTWRITEBYTECODE is set each one compiled the generated bindings again (a CLI run: 1.1 s -> 0.5 s).
# On both cores: one test at a time took 16-20 min on a 2-core VM (mostly the browser tests' waits). A file
# goes to one worker whole (loadfile), so a module's costly fixture (the benchmark smoke run, the wheel
# build) is made once, not once per worker.
test: setup
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy
	$(PY) -m codegen --check
	$(PY) -m compileall -q -j 2 cdp engine codegen benchmarks
	$(PY) -m pytest -q -n 2 --dist loadfile

# The unit tests alone (no browser, no wheel build), on both cores: for the edit-test loop.
test-fast: setup
	$(PY) -m pytest -q -n 2 tests/unit

lint: setup
	$(PY) -m ruff check . && $(PY) -m ruff format --check .

typecheck: setup
	$(PY) -m mypy

codegen: setup
	$(PY) -m codegen

codegen-check: setup
	$(PY) -m codegen --check

# The full suite; it refuses to run while the load is above the core count (add ARGS=--force to insist).
bench: setup
	$(PY) -m benchmarks --readme README.md $(ARGS)

# Pin the newest devtools-protocol from npm into protocol-json/ and regenerate cdp/.
protocol-refresh: setup
	@set -e; tmp=$$(mktemp -d); \
	version=$$(cd $$tmp && npm view devtools-protocol version); \
	(cd $$tmp && npm pack --silent devtools-protocol@$$version >/dev/null && tar xzf devtools-protocol-$$version.tgz); \
	cp $$tmp/package/json/browser_protocol.json $$tmp/package/json/js_protocol.json protocol-json/; \
	echo $$version > protocol-json/VERSION; rm -rf $$tmp; \
	echo "pinned devtools-protocol $$version"
	$(MAKE) protocol-data
	$(PY) -m codegen

# The pinned JSON as package data, so `cdp-engine drift` works from an installed wheel. `gzip -n` stores
# no name and no time: the same JSON gives the same bytes. tests/test_packaging.py checks they match.
PROTOCOL_DATA := engine/_protocol
protocol-data:
	@mkdir -p $(PROTOCOL_DATA)
	@for name in browser_protocol.json js_protocol.json; do \
		gzip -9 -n -c protocol-json/$$name > $(PROTOCOL_DATA)/$$name.gz; \
	done
	cp protocol-json/VERSION $(PROTOCOL_DATA)/VERSION
	@echo "$(PROTOCOL_DATA): protocol-json $$(cat protocol-json/VERSION), gzipped"

clean:
	rm -rf .venv .mypy_cache .ruff_cache .pytest_cache .hypothesis *.egg-info
