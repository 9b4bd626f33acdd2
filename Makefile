# gossiplab — the two commands that matter: `make demo` and `make test`.
# Everything they need is installed from here: a virtualenv with the Python package
# (whose Rust engine maturin compiles), and the Go testbed module.

SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
INSTALLED := $(VENV)/.installed
RUST_SOURCES := $(shell find crates -name '*.rs' -o -name Cargo.toml) Cargo.toml
DEMO_SCENARIO := scenarios/whiteblock/phase2-series1b.toml

.PHONY: demo test test-rust test-python test-go lint format bench install clean help

help:
	@echo "make demo     install what is needed and run the default experiment"
	@echo "make test     install what is needed and run every test"
	@echo "make lint     ruff, rustfmt, clippy and go vet"
	@echo "make bench    quick benchmarks (results appended to bench/RESULTS.md)"

$(PY):
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# Reinstalled whenever the package definition or the engine's sources change.
$(INSTALLED): $(PY) pyproject.toml $(RUST_SOURCES)
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@

install: $(INSTALLED)

demo: $(INSTALLED)
	$(VENV)/bin/gossiplab run $(DEMO_SCENARIO) -o results/demo --force

test: test-rust test-python test-go

test-rust:
	cargo test --workspace --exclude gossiplab-python --quiet

test-python: $(INSTALLED)
	$(PY) -m pytest -q

test-go:
	cd testbed && go vet ./... && go test ./...

lint: $(INSTALLED)
	$(VENV)/bin/ruff check python tests
	$(VENV)/bin/ruff format --check python tests
	cargo fmt --all --check
	cargo clippy --workspace --all-targets -- -D warnings
	cd testbed && go vet ./...

format: $(INSTALLED)
	$(VENV)/bin/ruff format python tests
	$(VENV)/bin/ruff check --fix python tests
	cargo fmt --all

bench: $(INSTALLED)
	$(PY) bench/run.py --quick

clean:
	rm -rf $(VENV) target results
