# Shared by the malformed_*.sh runners: the refusal rule every bad input must follow.
# Source it after setting `burst` (the binary) and `work` (a scratch directory); it keeps
# the counters `checked` and `failures`, and refusal_summary prints the verdict and exits.
#
# The rule: exit code exactly 2, nothing on stdout, and exactly one non-empty line on
# stderr starting with "burst: error: " (no sanitizer report, no abort, no internal error),
# within 20 seconds.

checked=0
failures=0
prefix="burst: error: "

# refused LABEL ARGS...: runs `burst ARGS...` and checks the refusal rule.
refused() {
  local label=$1
  shift
  checked=$((checked + 1))
  timeout -k 5 20 "$burst" "$@" >"$work/stdout" 2>"$work/stderr" </dev/null
  local rc=$?
  local problems=()
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    problems+=("did not finish within 20 s (timeout exit $rc)")
  elif [ "$rc" -ne 2 ]; then
    problems+=("exit code $rc, expected 2")
  fi
  if [ -s "$work/stdout" ]; then
    problems+=("wrote $(wc -c <"$work/stdout") bytes to stdout")
  fi
  local bytes newlines first
  bytes=$(wc -c <"$work/stderr")
  newlines=$(tr -cd '\n' <"$work/stderr" | wc -c)
  first=$(head -n 1 "$work/stderr")
  if [ "$bytes" -eq 0 ]; then
    problems+=("stderr is empty")
  elif [ "$newlines" -ne 1 ] || [ "$(tail -c 1 "$work/stderr" | od -An -tx1 | tr -d ' ')" != "0a" ]; then
    problems+=("stderr is not exactly one line ($newlines newlines in $bytes bytes)")
  fi
  if [ "$bytes" -ne 0 ]; then
    case $first in
      "$prefix"?*) ;;
      *) problems+=("stderr does not start with '$prefix' followed by a message") ;;
    esac
  fi
  local marker
  for marker in AddressSanitizer LeakSanitizer "runtime error" terminate Aborted "Segmentation fault" "core dumped" "internal error"; do
    if grep -qF -- "$marker" "$work/stderr"; then
      problems+=("stderr mentions '$marker'")
    fi
  done
  if [ ${#problems[@]} -ne 0 ]; then
    failures=$((failures + 1))
    echo "FAIL: $label"
    echo "  command: burst $*"
    local problem
    for problem in "${problems[@]}"; do echo "  - $problem"; done
    echo "  stderr (first 5 lines):"
    head -n 5 "$work/stderr" | cut -c 1-300 | sed 's/^/    | /'
    if [ -s "$work/stdout" ]; then
      echo "  stdout (first 5 lines):"
      head -n 5 "$work/stdout" | cut -c 1-300 | sed 's/^/    | /'
    fi
  fi
}


# refusal_summary: prints how many inputs were checked and exits 1 if any broke the rule.
refusal_summary() {
  if [ "$failures" -ne 0 ]; then
    echo "$failures of $checked malformed inputs were not refused with exit 2 and one line"
    exit 1
  fi
  echo "$checked malformed inputs refused with exit 2 and one line"
  exit 0
}
