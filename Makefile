# make demo: install into .venv, serve the embedded demo site, crawl it into SQLite, report.
# make test: install into .venv and run the whole test suite.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
DEMO_DIR := .demo

.PHONY: install demo test lint bench clean

$(STAMP): pyproject.toml setup.py $(wildcard visdup/_native/*.c)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip setuptools wheel
	$(BIN)/python -m pip install -q -e '.[test]'
	$(BIN)/python -c "import visdup.structure.distance as d; print('visdup kernel:', d.KERNEL)"
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	mkdir -p $(DEMO_DIR)
	rm -f $(DEMO_DIR)/visdup.sqlite3 $(DEMO_DIR)/visdup.sqlite3-wal $(DEMO_DIR)/visdup.sqlite3-shm
	$(BIN)/visdup demo --db sqlite:///$(DEMO_DIR)/visdup.sqlite3

lint: $(STAMP)
	$(BIN)/ruff check visdup tests bench

test: $(STAMP)
	$(BIN)/ruff check visdup tests bench
	$(BIN)/python -m pytest -q

bench: $(STAMP)
	$(BIN)/python -m pip install -q -e '.[bench]'
	@echo "Benchmarks: see bench/README.md"

clean:
	rm -rf $(VENV) build *.egg-info $(DEMO_DIR) visdup/_native/*.so
