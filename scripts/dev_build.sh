#!/usr/bin/env bash
# Rebuild the native module into python/rustgrad/ after a Rust change, without pip:
# `maturin develop --profile quick --skip-install` (Cargo.toml's quick profile: no LTO, incremental) with the project's .venv (made by
# `make setup`, whose editable install already points .venv at python/). For quick
# iteration; `make setup` remains the way to get a complete, stamped setup.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
VENV="$ROOT/.venv"
exec env -u CONDA_PREFIX VIRTUAL_ENV="$VENV" PATH="$VENV/bin:$PATH" \
    "$VENV/bin/maturin" develop --profile quick --skip-install "$@"
