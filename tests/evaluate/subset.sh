#!/usr/bin/env bash
# The corpus evaluation's `make test` subset (ctest e2e.evaluate_subset): the cases marked e2e in
# tests/evaluate/cases.py with 3-point sweeps, then check_subset.py checks the harness itself (every run scored or
# recorded as an error, the metrics' self-test, BART's best reconstructing the truth, the outputs written). It does
# not assert Larmor's targets: docs/evaluation.md reports them from the whole corpus (`make evaluate`).
#   subset.sh LARMOR_CLI OUT_DIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cli=${1:?usage: subset.sh LARMOR_CLI OUT_DIR} out=${2:?usage: subset.sh LARMOR_CLI OUT_DIR}
for tool in bart ismrmrd_generate_cartesian_shepp_logan h5dump; do
  command -v $tool >/dev/null || { echo "evaluate_subset: $tool is not installed (installer/install-deps.sh installs it)" >&2; exit 1; }
done
rm -rf "$out"
bash "$here/evaluate.sh" "$cli" --out "$out" --subset e2e --quick
PY=python3; python3 -c "import numpy" 2>/dev/null || PY=/usr/bin/python3
PYTHONDONTWRITEBYTECODE=1 "$PY" "$here/check_subset.py" "$out"
