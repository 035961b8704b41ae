# Sourced by the e2e scripts: PY = a python3 that imports numpy, pydicom and nibabel (Debian's python3-pydicom and
# python3-nibabel, installed by installer/install-deps.sh; a python3 first on PATH, e.g. pyenv's, may lack them).
# None found is a failure, not a skip.
PY=""
for cand in python3 /usr/bin/python3; do
  if command -v "$cand" >/dev/null && "$cand" -c "import numpy, pydicom, nibabel" 2>/dev/null; then PY=$(command -v "$cand"); break; fi
done
[[ -n $PY ]] || { echo "FAIL: no python3 with numpy, pydicom and nibabel (installer/install-deps.sh installs python3-pydicom python3-nibabel)" >&2; exit 1; }
export PYTHONPATH="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)${PYTHONPATH:+:$PYTHONPATH}"
