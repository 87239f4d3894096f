# make demo: install into .venv, serve the embedded demo site, crawl it into SQLite, report.
# make test: install into .venv and run the whole test suite.
#            The HTML report's browser tests also need playwright (pip) and Chromium (Debian's
#            chromium package): installed where possible, else those tests skip with the reason.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
DEMO_DIR := .demo

BROWSER_STAMP := $(VENV)/.browser-stamp

.PHONY: install bytecode browser demo test test-oldest lint bench clean

$(STAMP): pyproject.toml setup.py $(wildcard visdup/_native/*.c) $(wildcard visdup/_native/*.h)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip setuptools wheel
	$(BIN)/python -m pip install -q -e '.[test]'
	$(BIN)/python -c "import visdup.structure.distance as d; print('visdup kernel:', d.KERNEL)"
	touch $(STAMP)

install: $(STAMP) bytecode

# Bytecode of the package's modules, as pip writes it for an installed wheel: the editable
# install writes none where PYTHONDONTWRITEBYTECODE is set, and then every process (the
# crawl's, the label process, each analysis worker) would compile the sources as it starts.
# Only the modules changed since are compiled again.
bytecode: $(STAMP)
	$(BIN)/python -m compileall -q visdup

# Best effort, never fatal: the playwright wheel (no browser download) and Debian's chromium,
# with apt-get when running as root (or with password-less sudo).
$(BROWSER_STAMP): $(STAMP)
	-$(BIN)/python -m pip install -q -e '.[browser]' || echo "playwright not installed: browser tests will skip"
	-@if command -v chromium >/dev/null 2>&1 || test -x /usr/bin/chromium; then \
		echo "chromium: $$(command -v chromium || echo /usr/bin/chromium)"; \
	elif command -v apt-get >/dev/null 2>&1; then \
		if [ "$$(id -u)" = 0 ]; then SUDO=; elif sudo -n true 2>/dev/null; then SUDO="sudo -n"; \
		else SUDO=none; fi; \
		if [ "$$SUDO" = none ]; then echo "chromium absent (apt-get install chromium as root): browser tests will skip"; \
		else ($$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium) \
			|| echo "chromium not installed: browser tests will skip"; fi; \
	else echo "chromium absent: browser tests will skip"; fi
	touch $(BROWSER_STAMP)

browser: $(BROWSER_STAMP)

demo: $(STAMP) bytecode
	mkdir -p $(DEMO_DIR)
	rm -f $(DEMO_DIR)/visdup.sqlite3 $(DEMO_DIR)/visdup.sqlite3-wal $(DEMO_DIR)/visdup.sqlite3-shm
	$(BIN)/visdup demo --db sqlite:///$(DEMO_DIR)/visdup.sqlite3
	$(BIN)/visdup report --db sqlite:///$(DEMO_DIR)/visdup.sqlite3 \
		--html $(DEMO_DIR)/report.html --pages $(DEMO_DIR)/pages.csv

lint: $(STAMP)
	$(BIN)/ruff check visdup tests bench
	$(BIN)/mypy

test: $(STAMP) $(BROWSER_STAMP) bytecode
	$(BIN)/ruff check visdup tests bench
	$(BIN)/mypy
	$(BIN)/python -m pytest -q

# The oldest releases pyproject.toml allows, in a venv of their own: the store, the index and
# crawls, with Scrapy 2.15 and SQLAlchemy 2.0.
OLDEST := .venv-oldest
test-oldest:
	test -x $(OLDEST)/bin/python || $(PYTHON) -m venv $(OLDEST)
	$(OLDEST)/bin/python -m pip install -q --upgrade pip setuptools wheel
	$(OLDEST)/bin/python -m pip install -q '.[test]' 'scrapy==2.15.*' 'sqlalchemy==2.0.*'
	$(OLDEST)/bin/python -c "import scrapy, sqlalchemy; print('scrapy', scrapy.__version__, 'sqlalchemy', sqlalchemy.__version__)"
	$(OLDEST)/bin/python -m pytest -q tests/test_store.py tests/test_storage_fastpath.py \
		tests/test_index.py tests/test_index_layout.py tests/test_crawl.py tests/test_resume.py \
		tests/test_settle.py tests/test_label_process.py tests/test_addon.py tests/test_responses.py

bench: $(STAMP) bytecode
	$(BIN)/python -m pip install -q -e '.[bench]'
	@echo "Benchmarks: see bench/README.md"

clean:
	rm -rf $(VENV) $(OLDEST) build *.egg-info $(DEMO_DIR) visdup/_native/*.so
