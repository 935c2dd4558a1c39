#!/usr/bin/env bash
# CI's install check: the wheel in a fresh venv without extras, then with [torch,optimal]; one tiny job per
# registered method (the ci experiment's fast settings, iris, seed 0) from a directory outside the checkout.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
python="${PYTHON:-python3}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
start=$(date +%s)
step() { echo "== wheel: $1 ($(( $(date +%s) - start ))s)"; }

# the working tree's package sources, copied so that the build leaves nothing in the checkout
mkdir "$work/src"
cp "$repo/pyproject.toml" "$repo/README.md" "$work/src/"
for pkg in treebench hydra_plugins; do
  (cd "$repo" && find "$pkg" -name __pycache__ -prune -o -type f ! -name '*.pyc' -print) |
    (cd "$repo" && xargs -d '\n' cp --parents -t "$work/src")
done
"$python" -m venv "$work/venv"
pip=("$work/venv/bin/python" -m pip install --quiet)
"${pip[@]}" --upgrade pip setuptools wheel
"$work/venv/bin/python" -m pip wheel --quiet --no-deps -w "$work/dist" "$work/src"
wheel="$(ls "$work"/dist/treebench-*.whl)"
"${pip[@]}" "$wheel"
step "installed $(basename "$wheel") without extras"

cd "$work"  # outside the checkout: configs come from the installed package
export TREEBENCH_OUTPUTS="$work/out"
tb="$work/venv/bin/treebench"
# registered methods, and those whose config requires a module this venv lacks (torch)
read -r -a plain < <("$work/venv/bin/python" -c '
from treebench.config import compose
from treebench.methods._catalog import method_names
from treebench.methods._requires import missing_requirements
print(" ".join(n for n in method_names() if not missing_requirements(compose([f"method={n}"]).method)))')
read -r -a needs < <("$work/venv/bin/python" -c '
from treebench.config import compose
from treebench.methods._catalog import method_names
from treebench.methods._requires import missing_requirements
print(" ".join(n for n in method_names() if missing_requirements(compose([f"method={n}"]).method)))')
echo "without extras: ${#plain[@]} methods run, ${#needs[@]} need an extra (${needs[*]})"
[ "${#plain[@]}" -gt 0 ] && [ "${#needs[@]}" -gt 0 ]

join() { local IFS=,; echo "$*"; }
sweep=(run -m experiment=ci dataset=iris seed=0)
# a method needing an extra is refused while planning, with its install line, and nothing runs
set +e
out="$("$tb" "${sweep[@]}" "method=$(join "${needs[@]}")" 2>&1)"
rc=$?
set -e
[ "$rc" -eq 2 ] || { echo "$out"; echo "expected exit 2 for methods needing an extra, got $rc"; exit 1; }
for m in "${needs[@]}"; do
  grep -qE "method '$m' needs [a-z_, ]+, which is not installed: pip install 'treebench\[(torch|optimal)\]'" <<<"$out" ||
    { echo "$out"; echo "no install hint for $m"; exit 1; }
done
grep -qF "no job launched" <<<"$out"
# the others run (a sweep with a failed job exits non-zero)
"$tb" "${sweep[@]}" "method=$(join "${plain[@]}")" >"$work/plain.log" 2>&1 ||
  { cat "$work/plain.log"; exit 1; }
step "${#plain[@]} methods ran, ${#needs[@]} refused with the install hint"

"${pip[@]}" "treebench[torch,optimal] @ file://$wheel"
step "installed [torch,optimal]"
"$tb" "${sweep[@]}" >"$work/all.log" 2>&1 || { cat "$work/all.log"; exit 1; }
# every registered method has exactly one ok record
"$work/venv/bin/python" - "${plain[@]}" "${needs[@]}" <<'EOF'
import os, sys
from treebench.results import collect

df = collect(os.path.join(os.environ["TREEBENCH_OUTPUTS"], "store"))
want = sorted(sys.argv[1:])
got = sorted(df.loc[df["status"] == "ok", "method"])
if got != want:
    sys.exit(f"ok records per method: {got}, expected one each of {want}")
print(f"{len(got)} registered methods, one ok record each")
EOF
step "done"
