#!/usr/bin/env bash
# The corpus evaluation (docs/evaluation.md): every case of tests/evaluate/cases.py made with BART, the ISMRMRD
# generator and ../shared/data, reconstructed by Larmor (defaults and a lambda sweep) and BART (a sweep of its own
# parameter), scored against the truth; results.json, results.md, evaluation.md and figure.png in the output folder.
#   evaluate.sh LARMOR_CLI [--out DIR (build/evaluate)] [--subset e2e] [--quick] [--cases id,id] [--doc]
# --doc then copies evaluation.md to docs/evaluation.md and figure.png to docs/images/evaluation-corpus.png.
# Runs with 2 OpenMP threads (the 2-core machine's budget: the whole corpus in under 30 minutes).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cli=${1:?usage: evaluate.sh LARMOR_CLI [options]}; shift
doc=0 args=() out=$repo/build/evaluate
while (($#)); do
  case $1 in
    --doc) doc=1 ;;
    --out) out=$2; args+=(--out "$2"); shift ;;
    *) args+=("$1") ;;
  esac
  shift
done
PY=""
for cand in python3 /usr/bin/python3; do  # a python3 first on PATH (pyenv's) may lack Debian's numpy and scipy
  if command -v "$cand" >/dev/null && "$cand" -c "import numpy, scipy" 2>/dev/null; then PY=$(command -v "$cand"); break; fi
done
[[ -n $PY ]] || { echo "evaluate: no python3 with numpy and scipy (Debian: python3-numpy python3-scipy)" >&2; exit 1; }
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} OMP_WAIT_POLICY=PASSIVE PYTHONDONTWRITEBYTECODE=1  # no __pycache__ in the tree
"$PY" "$here/run.py" --cli "$cli" "${args[@]}"
if ((doc)); then
  cp "$out/evaluation.md" "$repo/docs/evaluation.md"
  [[ -f $out/figure.png ]] && cp "$out/figure.png" "$repo/docs/images/evaluation-corpus.png"
  echo "evaluate: docs/evaluation.md and docs/images/evaluation-corpus.png refreshed from $out"
fi
