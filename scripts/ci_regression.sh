#!/usr/bin/env bash
# CI regression guard: run the `ci` experiment (every registered method on the bundled datasets),
# collect, check against treebench/conf/papers/ci.yaml, and write the report. Exits non-zero on any regression
# (a FAIL row), on a run failure, or when the time budget is exceeded. --fail-on-errors also fails
# when any job of the sweep recorded status "failed".
#
#   scripts/ci_regression.sh [--budget SECONDS] [--outputs DIR] [--python PY] [--keep] [--problems-only] [--fail-on-errors]
#
# Defaults: budget 900 s, outputs = a fresh temporary directory (so stored results from earlier runs
# cannot hide a regression; --keep keeps it), python = $TREEBENCH_PYTHON or python.
set -euo pipefail

budget=900
outputs=""
py="${TREEBENCH_PYTHON:-python}"
keep=0
check_args=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --budget) budget="$2"; shift 2 ;;
    --outputs) outputs="$2"; shift 2 ;;
    --python) py="$2"; shift 2 ;;
    --keep) keep=1; shift ;;
    --problems-only) check_args+=(--problems-only); shift ;;
    --fail-on-errors) check_args+=(--fail-on-errors); shift ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
if [[ -z "$outputs" ]]; then
  outputs="$(mktemp -d -t treebench-ci-XXXXXX)"
  [[ $keep == 1 ]] || trap 'rm -rf "$outputs"' EXIT
fi
export TREEBENCH_OUTPUTS="$outputs"
# a regression check runs the code under test: the committed ledger's records neither count as done
# nor enter the check
export TREEBENCH_LEDGER=off
start=$(date +%s)
remaining() { echo $(( budget - ($(date +%s) - start) )); }

echo "== ci regression: outputs $outputs, budget ${budget}s"
# threads=1: the CI machine is shared; the sweep runs jobs one after another (basic launcher).
set +e
timeout "$(remaining)" "$py" -m treebench.cli run experiment=ci threads=1
rc=$?
set -e
if [[ $rc == 124 ]]; then echo "ci regression: run exceeded the ${budget}s budget" >&2; exit 124; fi
if [[ $rc != 0 ]]; then echo "ci regression: run failed (exit $rc)" >&2; exit "$rc"; fi
t=$(remaining); (( t > 0 )) || { echo "ci regression: budget exceeded after the run" >&2; exit 124; }
"$py" -m treebench.cli collect --experiment ci > /dev/null
set +e
timeout "$(remaining)" "$py" -m treebench.cli check --experiment ci "${check_args[@]}"
check_rc=$?
set -e
timeout "$(remaining)" "$py" -m treebench.cli report --experiment ci > /dev/null || true
echo "== ci regression: $(( $(date +%s) - start ))s; report in $outputs/reports/ci/README.md"
exit "$check_rc"
