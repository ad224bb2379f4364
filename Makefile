# rustgrad developer entry points. On a fresh machine:
#   make demo   # build everything, run examples/demo_finetune.py
#   make test   # lint, Rust tests, Python tests, wheel check
# See README.md for what each target does.

SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help
# The steps share .venv and ./target and are ordered: never run them in parallel.
.NOTPARALLEL:

PYTHON := .venv/bin/python
RUFF := .venv/bin/ruff
# PyTorch for `make bench` lives in its own venv (see README.md); its
# site-packages is appended to sys.path of the .venv interpreter.
TORCH_SITE := $(firstword $(wildcard .torch-venv/lib/python3*/site-packages))
BENCH_ARGS ?=
# `make fuzz` runs random programs for this many seconds.
FUZZ_SECONDS ?= 600

# Each step prints its name and wall time; `make test` also records them in
# $(TIMINGS) (via RECORD_TIMINGS) and prints the table at the end.
TIMINGS := target/.make-timings
# $(call run,NAME,COMMAND): run COMMAND, print and record its wall time.
# (No commas in NAME or COMMAND: make would split the arguments there.)
define run
	@printf '\n==> %s\n' '$(1)'
	@start=$${EPOCHREALTIME/./}; \
	  record() { \
	    local us=$$(( $${EPOCHREALTIME/./} - start )); \
	    local secs=$$(printf '%d.%01d' $$((us / 1000000)) $$((us / 100000 % 10))); \
	    printf '<== %s: %ss%s\n' '$(1)' "$$secs" "$$1"; \
	    [[ -z '$(RECORD_TIMINGS)' ]] || printf '%-28s %7ss%s\n' '$(1)' "$$secs" "$$1" >> $(TIMINGS); \
	  }; \
	  ( $(2) ) || { rc=$$?; record " FAILED (exit $$rc)"; exit $$rc; }; \
	  record ""
endef

.PHONY: help setup demo lint test test-rust test-python check-wheel memcheck bench fuzz vectors clean distclean

help:
	@echo 'make demo         set up, then run examples/demo_finetune.py (DEMO_ARGS=...)'
	@echo 'make test         set up, lint, cargo test, pytest, wheel check (what CI runs)'
	@echo 'make setup        .venv + requirements-dev/-demo.txt + maturin develop --release (skips what is done)'
	@echo 'make lint         cargo fmt --check, clippy -D warnings, cargo doc -D warnings, ruff check, ruff format --check'
	@echo 'make memcheck     the engine unit, safety and autograd tests under Valgrind memcheck'
	@echo 'make bench        benchmarks/bench_chain.py (with PyTorch when .torch-venv exists)'
	@echo 'make fuzz         random programs against the numpy model for FUZZ_SECONDS (default 600)'
	@echo 'make vectors      regenerate tests/vectors/*.json with PyTorch from .torch-venv'
	@echo 'make clean        remove build outputs and caches (keeps .venv)'
	@echo 'make distclean    clean, and remove .venv too'

setup:
	$(call run,setup,./scripts/setup.sh)

# The fine-tuning demo (README.md); `make demo DEMO_ARGS="--epochs 5"` passes flags.
DEMO_ARGS ?=
demo: setup
	$(call run,demo,$(PYTHON) examples/demo_finetune.py $(DEMO_ARGS))

lint:
	$(call run,setup (deps),./scripts/setup.sh --deps-only)
	$(call run,cargo fmt --check,cargo fmt --all --check)
	$(call run,cargo clippy,cargo clippy --workspace --all-targets -- -D warnings)
	$(call run,cargo doc,RUSTDOCFLAGS='-D warnings' cargo doc -q -p rustgrad -p rustgrad-derive --no-deps)
	$(call run,ruff check,$(RUFF) check .)
	$(call run,ruff format --check,$(RUFF) format --check .)

# Only the engine: the binding crate is a cdylib built for `extension-module`
# (no libpython at link time), so it is exercised through pytest instead.
test-rust:
	$(call run,cargo test -p rustgrad,cargo test -p rustgrad)

# pytest exits 5 when it collects no test; say so loudly instead of failing.
test-python: setup
	$(call run,pytest,$(PYTHON) -m pytest -q || { rc=$$?; [[ $$rc == 5 ]] || exit $$rc; echo 'WARNING: pytest collected no tests'; })

check-wheel:
	$(call run,wheel check,./scripts/check_wheel.sh)

test:
	@mkdir -p target; : > $(TIMINGS)
	@$(MAKE) --no-print-directory RECORD_TIMINGS=1 setup lint test-rust test-python check-wheel || { \
	  rc=$$?; printf '\n== timings (make test FAILED) ==\n'; cat $(TIMINGS); exit $$rc; }
	@printf '\n== timings (make test passed) ==\n'; cat $(TIMINGS)

# The engine's unit tests (kernels, layout, tensor, format, ...), tests/safety.rs and
# tests/autograd.rs, each test binary run by Valgrind (cargo's target runner). Leaks are
# not checked: the arena and the rayon pool are process-lifetime statics. The
# four-thread lock-order stress test is skipped: Valgrind serialises threads, so it only
# costs time there. See BENCHMARKS.md for how long it takes.
VALGRIND := valgrind --error-exitcode=1 --leak-check=no --quiet --trace-children=no
memcheck:
	@command -v valgrind >/dev/null || { echo 'valgrind not found: install it with `apt-get install valgrind` (Debian/Ubuntu) or your package manager' >&2; exit 1; }
	$(call run,memcheck,CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUNNER='$(VALGRIND)' RUSTGRAD_NUM_THREADS=2 cargo test -p rustgrad --lib --test safety --test autograd --test foundation --test shared_memory -- --skip concurrent_cross_in_place_ops --skip odd_sizes_match_the_definition --skip every_plan_gives_the_same_bits)

bench: setup
	$(call run,bench,$(PYTHON) benchmarks/bench_chain.py $(if $(TORCH_SITE),--torch-site $(TORCH_SITE)) $(BENCH_ARGS))

# Random programs (tests/python/fuzz_programs.py) for FUZZ_SECONDS; prints how many ran
# and every finding as a shrunk reproducer; fails when it found something.
fuzz: setup
	$(call run,fuzz,$(PYTHON) tests/python/fuzz_programs.py --seconds $(FUZZ_SECONDS))

# Needs PyTorch in its own venv, never in .venv: see README.md.
vectors:
	@[[ -x .torch-venv/bin/python ]] || { echo 'no .torch-venv: python3 -m venv .torch-venv && .torch-venv/bin/pip install torch numpy' >&2; exit 1; }
	$(call run,vectors,.torch-venv/bin/python tests/vectors/generate.py)

clean:
	cargo clean || rm -rf target
	rm -f python/rustgrad/_rustgrad*.so .venv/.build-stamp
	rm -rf .pytest_cache .ruff_cache .hypothesis dist
	find . -name __pycache__ -type d -not -path './.venv/*' -not -path './.torch-venv/*' -prune -exec rm -rf {} +

distclean: clean
	rm -rf .venv
