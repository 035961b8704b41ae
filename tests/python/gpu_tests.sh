#!/usr/bin/env bash
# gpu.python: tests/python/test_gpu.py on the CUDA backend, with pytest where it is installed, else with
# run_without_pytest.py. Skips (SKIP: line, exit 77) only where larmor imports and lists no CUDA device; an import
# that fails is a failure.
#   gpu_tests.sh PYTHON   (PYTHONPATH names the build's python/ folder; LARMOR_CLI the larmor-cli to compare with)
set -u -o pipefail
py=${1:-python3}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
"$py" -c "import larmor" || { echo "gpu_tests: import larmor failed (PYTHONPATH=${PYTHONPATH:-})" >&2; exit 1; }
if ! "$py" -c "import larmor, sys; sys.exit(0 if any(d['gpu'] for d in larmor.devices()) else 1)"; then
  echo "SKIP: no CUDA device ($("$py" -c 'import larmor; print(larmor.why_no_gpu())'))"
  exit 77
fi
if "$py" -c "import pytest" 2>/dev/null; then
  exec "$py" -m pytest -q -s -p no:cacheprovider "$here/test_gpu.py"
fi
exec "$py" "$here/run_without_pytest.py" "$here/test_gpu.py"
