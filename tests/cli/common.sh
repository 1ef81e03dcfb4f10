# Shared by the tests/cli/*.sh scripts. Source it, then call
#   cli_setup "USAGE" N "$@"
# which checks the argument count (N), sets `burst` (the binary, argument 1), `python`,
# `work` (a scratch directory removed on exit) and the counters `checks` and `failures`.
# Good input goes through `ok`/`quiet`/`contains`, bad input through `refused`; `finish`
# prints the verdict and exits 1 if any check failed.

cli_setup() {
  local usage=$1 count=$2
  shift 2
  if [ $# -ne "$count" ]; then
    echo "usage: $usage" >&2
    exit 64
  fi
  burst=$1
  if [ ! -x "$burst" ]; then
    echo "FAIL: $burst is not an executable" >&2
    exit 1
  fi
  # The Python with torch, torchvision and onnx: BURST_PYTHON, else the project's .venv
  # (scripts/setup.sh), else whatever python3 is on PATH (enough for the JSON checks).
  python=${BURST_PYTHON:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/.venv/bin/python}
  if [ ! -x "$python" ]; then
    python=$(command -v python3) || { echo "FAIL: python3 not found" >&2; exit 1; }
  fi
  export LC_ALL=C
  work=$(mktemp -d "${TMPDIR:-/tmp}/burst-cli-test.XXXXXX") || exit 1
  trap 'rm -rf "$work"' EXIT
  checks=0
  failures=0
}

# corpus_files DIR MIN: sets `files` to DIR/*.json; fails unless there are at least MIN.
corpus_files() {
  if [ ! -d "$1" ]; then
    echo "FAIL: $1 is not a directory" >&2
    exit 1
  fi
  shopt -s nullglob
  files=("$1"/*.json)
  shopt -u nullglob
  if [ ${#files[@]} -lt "$2" ]; then
    echo "FAIL: only ${#files[@]} *.json files in $1, expected at least $2" >&2
    exit 1
  fi
}

fail() {
  failures=$((failures + 1))
  echo "FAIL: $*"
}

# ok NAME ARGS...: runs `burst ARGS...` (stdout to $work/NAME.out, stderr to NAME.err);
# it must exit 0.
ok() {
  local name=$1
  shift
  checks=$((checks + 1))
  timeout -k 5 120 "$burst" "$@" >"$work/$name.out" 2>"$work/$name.err" </dev/null
  local rc=$?
  if [ "$rc" -ne 0 ]; then
    fail "burst $* exited with $rc"
    head -n 5 "$work/$name.err" | sed 's/^/    | /'
    return 1
  fi
  return 0
}

# quiet NAME ARGS...: like ok, and stderr must stay empty.
quiet() {
  local name=$1
  ok "$@" || return 1
  if [ -s "$work/$name.err" ]; then
    fail "burst ${*:2} wrote to stderr"
    head -n 5 "$work/$name.err" | sed 's/^/    | /'
  fi
  return 0
}

# py_check DESCRIPTION PYTHON_CODE [ARGS...]: runs the code (sys.argv[1:] = ARGS); it must
# exit 0 (a failed assert fails the check, its message quoted).
py_check() {
  local description=$1 code=$2
  shift 2
  checks=$((checks + 1))
  local message
  if ! message=$("$python" -c "$code" "$@" 2>&1); then
    fail "$description: $(echo "$message" | tail -n 1)"
  fi
}

# contains NAME TEXT: the output of run NAME holds TEXT.
contains() {
  checks=$((checks + 1))
  grep -qF -- "$2" "$work/$1.out" || fail "output of '$1' lacks '$2'"
}

# The refusal rule for bad input: exit code exactly 2, nothing on stdout, and exactly one
# non-empty line on stderr starting with "burst: error: " (no sanitizer report, no abort,
# no internal error), within 20 seconds.
prefix="burst: error: "

# refused LABEL ARGS...: runs `burst ARGS...` and checks the refusal rule.
refused() {
  local label=$1
  shift
  checks=$((checks + 1))
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


# contains_error TEXT: the stderr of the latest `refused` run holds TEXT.
contains_error() {
  checks=$((checks + 1))
  grep -qF -- "$1" "$work/stderr" || fail "the refusal lacks '$1': $(head -c 300 "$work/stderr")"
}

# finish WHAT: prints "N WHAT" or the failures, and exits accordingly.
finish() {
  if [ "$failures" -ne 0 ]; then
    echo "$failures of $checks checks failed ($1)"
    exit 1
  fi
  echo "$checks $1"
  exit 0
}
