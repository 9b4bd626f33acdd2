# gossiplab — the two commands that matter: `make demo` and `make test`.
# Everything they need is installed from here: a virtualenv with the Python package
# (whose Rust engine maturin compiles), and the Go testbed module.

SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
INSTALLED := $(VENV)/.installed
RUST_SOURCES := $(shell find crates -name '*.rs' -o -name Cargo.toml) Cargo.toml
DEMO_SCENARIO := scenarios/whiteblock/phase2-series1b.toml

.PHONY: demo test test-rust test-python test-go lint format bench install install-testbed clean help

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

# The testbed backend needs iproute2 (ip, tc) and iptables, and root for namespaces. As
# root, whatever is missing is installed here, so a fresh machine runs the testbed tests;
# otherwise they are skipped (and say so).
install-testbed:
	@if [ "$$(id -u)" != 0 ]; then echo "not root: the testbed tests will be skipped"; exit 0; fi; \
	missing=""; \
	command -v ip >/dev/null 2>&1 || missing="$$missing iproute2"; \
	command -v tc >/dev/null 2>&1 || missing="$$missing iproute2"; \
	command -v iptables >/dev/null 2>&1 || missing="$$missing iptables"; \
	if [ -n "$$missing" ]; then \
		echo "installing$$missing for the testbed"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

test-python: $(INSTALLED) install-testbed
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
