#!/usr/bin/env bash
# Prepare a development checkout: .venv, dev and demo dependencies, the native module.
#
# Idempotent: each step records a stamp and is skipped while its inputs are
# unchanged, so `make test` / `make demo` pay for a step only when needed.
#
#   scripts/setup.sh              venv + dependencies + `maturin develop --release`
#   scripts/setup.sh --deps-only  venv + dependencies (enough for ruff / pytest tooling)
#
# Stamps (inside .venv, so a fresh venv always starts from scratch):
#   .venv/.deps-stamp   sha256 of requirements-dev.txt and requirements-demo.txt
#   .venv/.build-stamp  sha256 over every file under crates/ (minus target/),
#                       Cargo.toml, Cargo.lock and pyproject.toml
#
# Python sources under python/ are not hashed: `maturin develop` installs the
# package in editable mode (a .pth file pointing at python/, with the compiled
# _rustgrad*.so copied next to __init__.py), so edits there need no rebuild.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

VENV="$ROOT/.venv"
PY="$VENV/bin/python"
DEPS_STAMP="$VENV/.deps-stamp"
BUILD_STAMP="$VENV/.build-stamp"

deps_only=0
case "${1:-}" in
    "") ;;
    --deps-only) deps_only=1 ;;
    *) echo "usage: $0 [--deps-only]" >&2; exit 2 ;;
esac

log() { printf '[setup] %s\n' "$*"; }

# Runs "$@" and reports how long it took.
timed() {
    local label=$1 start=$SECONDS
    shift
    "$@"
    log "$label: done in $((SECONDS - start))s"
}

# One hash over the contents and names of everything that feeds the native build.
build_inputs_hash() {
    {
        find crates -type f -not -path '*/target/*' -print0
        for f in Cargo.toml Cargo.lock pyproject.toml; do
            [[ -f $f ]] && printf '%s\0' "$f"
        done
    } | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1
}

# --- 1. virtual environment ---------------------------------------------------
if [[ -x $PY ]] && "$PY" -c 'import sys' 2>/dev/null; then
    log "venv: .venv exists, skipping"
else
    if [[ -e $VENV ]]; then
        log "venv: .venv is broken (no working python), recreating"
        rm -rf "$VENV"
    fi
    timed "venv: created .venv" python3 -m venv "$VENV"
fi

# --- 2. development and demo dependencies ------------------------------------
# requirements-demo.txt: what examples/demo_finetune.py (`make demo`) and its test need.
pip_install() {
    "$PY" -m pip install --quiet --disable-pip-version-check "$@"
}

# Make sure Cargo.lock exists before hashing: the first build would otherwise
# create it and change the hash, costing one needless rebuild. A manifest that
# does not parse yet is reported by the build below, with cargo's own message.
build_wanted() {
    cargo metadata --format-version 1 --offline >/dev/null 2>&1 ||
        cargo metadata --format-version 1 >/dev/null 2>&1 || true
    build_hash=$(build_inputs_hash)
    ! compgen -G 'python/rustgrad/_rustgrad*.so' >/dev/null ||
        [[ ! -f $BUILD_STAMP || $(<"$BUILD_STAMP") != "$build_hash" ]]
}

deps_hash=$(cat requirements-dev.txt requirements-demo.txt | sha256sum | cut -d' ' -f1)
deps_pid=""
if [[ -f $DEPS_STAMP && $(<"$DEPS_STAMP") == "$deps_hash" ]]; then
    log "deps: requirements-dev.txt and requirements-demo.txt unchanged, skipping"
else
    # New tools (a new maturin, say) may build differently: rebuild.
    rm -f "$BUILD_STAMP"
    if [[ $deps_only == 0 ]]; then
        # The build needs only maturin: install it first, then the rest in the
        # background while the extension compiles (downloads overlap the compiler).
        timed "deps: installed maturin" pip_install "$(grep -E '^maturin' requirements-dev.txt)"
        log "deps: installing requirements-dev.txt and requirements-demo.txt in the background"
        deps_log="$VENV/.deps-log"
        pip_install -r requirements-dev.txt -r requirements-demo.txt >"$deps_log" 2>&1 &
        deps_pid=$!
        # If the build fails, do not leave pip writing into the venv after we exit.
        trap '[[ -z $deps_pid ]] || kill "$deps_pid" 2>/dev/null || true' EXIT
    else
        timed "deps: installed requirements-dev.txt and requirements-demo.txt" \
            pip_install -r requirements-dev.txt -r requirements-demo.txt
        printf '%s\n' "$deps_hash" >"$DEPS_STAMP"
    fi
fi

[[ $deps_only == 1 ]] && exit 0

# --- 3. native module ----------------------------------------------------------
# maturin develop installs into $VIRTUAL_ENV; a conda env alongside confuses it.
maturin_develop() {
    env -u CONDA_PREFIX VIRTUAL_ENV="$VENV" PATH="$VENV/bin:$PATH" \
        "$VENV/bin/maturin" develop --release "$@"
}

if ! build_wanted; then
    log "build: crates/ and manifests unchanged, skipping maturin develop"
elif [[ -n $deps_pid ]]; then
    # Compile into python/rustgrad/ now; the install into .venv (which runs pip for
    # numpy) waits for the background pip, so that two pips never share the venv.
    timed "build: maturin develop --release --skip-install" maturin_develop --skip-install
else
    timed "build: maturin develop --release" maturin_develop
    printf '%s\n' "$build_hash" >"$BUILD_STAMP"
fi

if [[ -n $deps_pid ]]; then
    start=$SECONDS
    if ! wait "$deps_pid"; then
        cat "$deps_log" >&2
        log "deps: pip install -r requirements-dev.txt -r requirements-demo.txt failed"
        exit 1
    fi
    deps_pid=""
    log "deps: background install done ($((SECONDS - start))s after the build)"
    printf '%s\n' "$deps_hash" >"$DEPS_STAMP"
    # Nothing to compile any more: this installs the package (editable) into .venv.
    timed "build: maturin develop --release (install)" maturin_develop
    printf '%s\n' "$build_hash" >"$BUILD_STAMP"
fi
