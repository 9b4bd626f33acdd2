# gossiplab — the two commands that matter: `make demo` and `make test`.
# Everything they need is installed from here: a virtualenv with the Python package
# (whose Rust engine maturin compiles), and the Go testbed module.

SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
INSTALLED := $(VENV)/.installed
RUST_SOURCES := $(shell find crates -name '*.rs' -o -name Cargo.toml) Cargo.toml
DEMO_SCENARIO := scenarios/whiteblock/phase2-series1b.toml
CAMPAIGN := scenarios/whiteblock/phase2.toml

.PHONY: demo campaign test test-rust test-python test-go lint format bench bench-full soak install install-testbed install-chromium install-ebpf go-binaries simnet clean help

help:
	@echo "make demo     install what is needed and run the default experiment"
	@echo "make test     install what is needed and run every test"
	@echo "make campaign run the Whiteblock Phase 2 campaign (resumes if interrupted)"
	@echo "make lint     ruff, rustfmt, clippy and go vet"
	@echo "make bench    quick benchmarks (results appended to bench/RESULTS.md)"
	@echo "make soak     a million messages in aggregate mode, memory sampled (minutes)"

$(PY):
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# Reinstalled whenever the package definition or the engine's sources change.
$(INSTALLED): $(PY) pyproject.toml $(RUST_SOURCES)
	$(PY) -m pip install --quiet -e '.[dev,ray]'
	touch $@

install: $(INSTALLED)

demo: $(INSTALLED) go-binaries
	$(VENV)/bin/gossiplab run $(DEMO_SCENARIO) -o results/demo --force

# All Phase 2 series of the 2019 Whiteblock testbed; run again to resume after a stop.
campaign: $(INSTALLED)
	$(VENV)/bin/gossiplab campaign $(CAMPAIGN) -o results/whiteblock-phase2

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

# The report test opens pages in headless Chromium; as root it is installed when missing,
# otherwise that test is skipped (and says so).
install-chromium:
	@if command -v chromium >/dev/null 2>&1; then exit 0; fi; \
	if [ "$$(id -u)" != 0 ]; then echo "not root: the browser test will be skipped"; exit 0; fi; \
	echo "installing chromium for the browser test"; \
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium

# bench/kernel_eevdf.py builds an eBPF probe: as root, its compilers and library.
install-ebpf:
	@if command -v clang >/dev/null 2>&1 && command -v bpftool >/dev/null 2>&1 \
		&& [ -f /usr/include/bpf/libbpf.h ]; then exit 0; fi; \
	if [ "$$(id -u)" != 0 ]; then echo "not root: install clang, bpftool and libbpf-dev"; exit 1; fi; \
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang bpftool libbpf-dev

test-python: $(INSTALLED) go-binaries install-testbed install-chromium
	$(PY) -m pytest -q

test-go:
	cd testbed && go vet ./... && go test ./...

# The Go binaries of the real-code backends: the testbed's node and the simnet runner
# (a Go test binary, since synctest needs a *testing.T). Built once through the same code
# the backends use, and rebuilt only when their Go sources change. Go is the one extra
# requirement: without it the model still runs, and the real-code tests skip and say so.
go-binaries: $(INSTALLED)
	@if command -v go >/dev/null 2>&1; then \
		$(PY) -c 'from gossiplab.backends.testbed.binary import ensure_binary; \
from gossiplab.backends.simnet.binary import ensure_runner; ensure_binary(); ensure_runner()'; \
	else echo "go not found: the simnet and testbed backends need Go (https://go.dev/dl)"; fi

simnet: go-binaries

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
	$(PY) bench/run.py

bench-full: $(INSTALLED)
	$(PY) bench/run.py --full

# A million messages through 100 nodes in aggregate output mode; fails if memory grows.
soak: $(INSTALLED)
	$(PY) bench/soak.py

clean:
	rm -rf $(VENV) target results
