# Sourced by the equivalence scripts: every finished run against one reference in one
# Python process (compare_params.py --many; torch loads once).
#
# compare_runs PYTHON REFERENCE TOLERANCE [--elementwise] NAME=FILE...: prints one
# "ok: NAME: ..." or "FAIL: NAME: ..." line per run and sets `compare_failures` to the runs
# that differ (1 when the comparison gave no verdict for some run, e.g. a file it could not
# read).
compare_runs() {
  local python=$1 reference=$2 tolerance=$3
  shift 3
  local runs=0 argument
  for argument in "$@"; do [[ $argument == *=* ]] && runs=$((runs + 1)); done
  compare_failures=0
  [ "$runs" -gt 0 ] || return 0
  local out
  out=$("$python" "$(dirname "${BASH_SOURCE[0]}")/compare_params.py" --many "$reference" "$tolerance" "$@" 2>&1) || true
  echo "$out"
  compare_failures=$(grep -c '^FAIL' <<< "$out" || true)
  if [ "$(grep -c '^ok' <<< "$out" || true)" -ne "$runs" ] && [ "$compare_failures" -eq 0 ]; then
    compare_failures=1
  fi
}
