#!/usr/bin/env bash
# Prove that `pip install .` builds a wheel that works in a clean virtual env.
#
# The two halves of `pip install .` are run separately, for speed:
#   1. `pip wheel .` builds the wheel through the PEP 517 backend (maturin) in an
#      isolated build env, exactly as `pip install .` does. pip (>= 21.3) builds
#      in-tree, so cargo reuses ./target. It is driven by .venv's interpreter on
#      purpose: the binding is not abi3, so pyo3's build script keys its cache on
#      the interpreter path (PYO3_PYTHON), and only the same path as
#      `maturin develop --release` used makes the cargo step a no-op after
#      `make setup`. (A throwaway venv's python would rebuild pyo3 and the
#      binding, with LTO, on every check.)
#   2. The wheel is installed into a fresh venv, and a backward pass runs there
#      from outside the repository.
# maturin (the build backend) and numpy come from the package index / pip cache.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/rustgrad-wheel-check.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

log() { printf '[check-wheel] %s\n' "$*"; }

BUILD_PY="$ROOT/.venv/bin/python"
if [[ ! -x $BUILD_PY ]]; then
    log "no .venv (run make setup): building with python3, without reusing the develop build"
    BUILD_PY=python3
fi

start=$SECONDS
"$BUILD_PY" -m pip wheel --quiet --disable-pip-version-check --no-deps \
    --wheel-dir "$WORK/dist" "$ROOT"
wheels=("$WORK"/dist/rustgrad-*.whl)
[[ ${#wheels[@]} == 1 && -f ${wheels[0]} ]] || { log "expected one wheel, got: ${wheels[*]}"; exit 1; }
log "built $(basename "${wheels[0]}") in $((SECONDS - start))s"

start=$SECONDS
python3 -m venv "$WORK/venv"
"$WORK/venv/bin/python" -m pip install --quiet --disable-pip-version-check "${wheels[0]}"
log "installed it into a clean venv in $((SECONDS - start))s"

# Run from outside the repository so that python/rustgrad in the source tree
# cannot be imported by accident; -I also drops PYTHONPATH and the user site.
cd "$WORK"
"$WORK/venv/bin/python" -I - "$WORK/venv" <<'PY'
import os
import sys

import rustgrad
import rustgrad._rustgrad as native

venv = os.path.realpath(sys.argv[1])
for module in (rustgrad, native):
    where = os.path.realpath(module.__file__)
    assert where.startswith(venv + os.sep), f"{module.__name__} imported from {where}, not the venv"

x = rustgrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
y = (x * x).sum()
y.backward()
grad = x.grad.tolist()
assert grad == [2.0, 4.0, 6.0], grad
print(f"[check-wheel] ok: rustgrad from {os.path.dirname(rustgrad.__file__)}, d(sum x^2)/dx = {grad}")
PY
log "total ${SECONDS}s"
