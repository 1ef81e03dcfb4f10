#!/usr/bin/env python3
"""Checks burst's function-length rule with lizard.

lizard (scripts/tool-requirements.txt, installed into .venv by scripts/setup.sh) lists every
function of 60 lines or more under apps/ and lib/ (`python -m lizard -L 59 -C 9999 -w apps lib`,
run from the root; a function's length runs from the line lizard names to its closing brace).
The rule (docs/architecture.md, "Small functions"):

  - apps/burst: no function of 60 lines or more, whatever its comment says;
  - elsewhere (lib/): each one says why it is kept whole, in a comment line that starts with
    `// Long:` and a reason, within the 4 lines directly above the line lizard names.

  check_function_length.py [--root DIR] [--lizard PYTHON]              check the tree
  check_function_length.py --self-test [--root DIR] [--lizard PYTHON]  prove the check passes
                                                                       and fails when it should

PYTHON is the interpreter that has lizard (default: ROOT/.venv/bin/python). Exit 0 with a
one-line summary when the rule holds, 1 listing every offending function otherwise.
"""

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

LIMIT = 60                    # a function this long or longer is "long"
STRICT = ("apps/burst/",)     # folders where no long function is allowed, with a reason or not
FOLDERS = ("apps", "lib")     # what lizard reads, relative to the root
REASON_RE = re.compile(r"^\s*// Long:\s*\S")
REASON_WINDOW = 4             # lines directly above lizard's line that may hold the reason
WARNING_RE = re.compile(r"^(?P<file>.+?):(?P<line>\d+): warning: (?P<name>.+?) has \d+ NLOC, "
                        r".*?\b(?P<length>\d+) length\b")
SETUP_HINT = "run scripts/setup.sh (it installs lizard, scripts/tool-requirements.txt, into .venv)"


def run_lizard(root, python):
    """lizard's long functions under root: ([(file, line, name, length)], error or None)."""
    if not Path(python).is_file():
        return [], f"function length: {python} not found: {SETUP_HINT}"
    folders = [folder for folder in FOLDERS if (root / folder).is_dir()]
    if not folders:
        return [], f"function length: {root} has neither of {', '.join(FOLDERS)}"
    done = subprocess.run([str(python), "-m", "lizard", "-L", str(LIMIT - 1), "-C", "9999", "-w"]
                          + folders, cwd=root, capture_output=True, text=True, check=False)
    if "No module named lizard" in done.stderr:
        return [], f"function length: {python} has no lizard: {SETUP_HINT}"
    # With -w lizard prints only warnings and exits 1 when there are any.
    if done.returncode not in (0, 1) or done.stderr.strip():
        return [], (f"function length: lizard failed (exit {done.returncode}): "
                    f"{(done.stderr or done.stdout).strip()}")
    found = []
    for text in done.stdout.splitlines():
        if not text.strip():
            continue
        match = WARNING_RE.match(text)
        if not match:
            return [], f"function length: cannot read lizard's line: {text}"
        length = int(match.group("length"))
        if length < LIMIT:
            continue  # a warning for another threshold (parameters, NLOC), not length
        file = match.group("file").removeprefix("./")
        found.append((file, int(match.group("line")), match.group("name"), length))
    if done.returncode == 1 and not done.stdout.strip():
        return [], "function length: lizard exited 1 without listing a function"
    return found, None


def has_reason(root, file, line):
    """Whether one of the REASON_WINDOW lines directly above `line` of `file` is a // Long: comment."""
    lines = (root / file).read_text(encoding="utf-8", errors="replace").splitlines()
    above = lines[max(0, line - 1 - REASON_WINDOW):line - 1]
    return any(REASON_RE.match(text) for text in above)


def check(root, python):
    """Returns (violations, summary, error) for the tree at root; error is None unless lizard
    could not be run or read."""
    found, error = run_lizard(root, python)
    if error:
        return [], None, error
    violations, reasoned = [], 0
    for file, line, name, length in sorted(found):
        where = f"{file}:{line}: {name}, {length} lines"
        strict = next((folder for folder in STRICT if file.startswith(folder)), None)
        if strict:
            violations.append(f"{where}: no function of {LIMIT} lines or more in "
                              f"{strict.rstrip('/')}; split it")
        elif not has_reason(root, file, line):
            violations.append(f"{where}: no '// Long: <reason>' comment in the "
                              f"{REASON_WINDOW} lines above it; split it or say why it is whole")
        else:
            reasoned += 1
    summary = (f"function length: {reasoned} function(s) of {LIMIT} lines or more, each with a "
               f"// Long: reason; none in {', '.join(s.rstrip('/') for s in STRICT)}")
    return violations, summary, None


def run(root, python):
    violations, summary, error = check(root, python)
    if error:
        print(error)
        return 1
    if violations:
        for violation in violations:
            print(violation)
        print(f"function length: {len(violations)} violation(s) (the rule: docs/architecture.md, "
              f"\"Small functions\"; tests/architecture/check_function_length.py)")
        return 1
    print(summary)
    return 0


def function_lines(name, length, reason=None, gap=0):
    """A C++ function `name` of exactly `length` lines (lizard's count), with a `// Long:`
    comment `gap` lines above its first line when reason is given."""
    lines = []
    if reason is not None:
        lines.append(f"// Long: {reason}")
        lines += ["// (a description of the function)"] * gap
    lines.append(f"int {name}(int x) {{")
    lines += [f"  x += {k};" for k in range(length - 3)]
    lines += ["  return x;", "}", ""]
    return lines


def check_tree(tree, python):
    """The check run on `tree` as a separate process, as ctest runs it: (exit code, output)."""
    done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--root", str(tree),
                           "--lizard", str(python)], capture_output=True, text=True, check=False)
    return done.returncode, done.stdout + done.stderr


# The synthesised trees: (what it shows, {file: [(function, length, reason, gap)]}, the exit
# code the check must give, the functions it must name). Each runs alone in a fresh tree.
CASES = [
    ("a long function in lib/ with a reason, and one of 59 lines without",
     {"lib/util/src/kept_whole.cpp": [("kept_whole", 75, "one table, one line a row", 3),
                                      ("just_short", 59, None, 0)]},
     0, []),
    ("a function of 60 lines in lib/ without a reason, and one whose reason is 5 lines above",
     {"lib/util/src/no_reason.cpp": [("no_reason", 60, None, 0),
                                     ("reason_too_far", 70, "too far above", 4)]},
     1, ["no_reason", "reason_too_far"]),
    ("a long function in apps/burst, even with a reason",
     {"apps/burst/long_command.cpp": [("long_command", 64, "a reason is not enough here", 0)],
      "lib/util/src/kept_whole.cpp": [("kept_whole", 61, "one table, one line a row", 0)]},
     1, ["long_command"]),
]


def judge(case, rc, out):
    """What is wrong with the check's answer on one synthesised tree (empty: nothing)."""
    what, files, expected_rc, named = case
    failures = []
    if rc != expected_rc:
        failures.append(f"{what}: the check exited {rc}, not {expected_rc}:\n{out}")
    listed = [line for line in out.splitlines() if " lines: " in line]
    for file, functions in files.items():
        for name, length, _, _ in functions:
            hits = [line for line in listed if line.startswith(f"{file}:") and f" {name}, " in line]
            if name in named and not any(f"{length} lines" in line for line in hits):
                failures.append(f"{what}: the check did not name {file} {name} ({length} lines):\n{out}")
            if name not in named and hits:
                failures.append(f"{what}: the check named {file} {name}, which keeps the rule:\n{out}")
    return failures


def self_test(python):
    """Runs the check on synthesised trees; returns 0 when it behaves, 1 otherwise."""
    failures = []
    if not Path(python).is_file():
        print(f"function length self-test: {python} not found: {SETUP_HINT}")
        return 1
    for case in CASES:
        with tempfile.TemporaryDirectory(prefix="burst-function-length-") as tmp:
            tree = Path(tmp)
            for file, functions in case[1].items():
                lines = []
                for name, length, reason, gap in functions:
                    lines += function_lines(name, length, reason, gap)
                (tree / file).parent.mkdir(parents=True, exist_ok=True)
                (tree / file).write_text("\n".join(lines), encoding="utf-8")
            rc, out = check_tree(tree, python)
            failures += judge(case, rc, out)
    if failures:
        for failure in failures:
            print(f"function length self-test: FAILED: {failure}")
        return 1
    print(f"function length self-test: passed ({len(CASES)} synthesised trees: a reasoned long "
          f"function in lib/ passes, one without a reason or in apps/burst fails)")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[2],
                        help="the tree to check (default: this repository)")
    parser.add_argument("--lizard", type=Path, default=None,
                        help="the Python that has lizard (default: ROOT/.venv/bin/python)")
    parser.add_argument("--self-test", action="store_true",
                        help="prove on synthesised trees that the check passes and fails")
    args = parser.parse_args()
    root = args.root.resolve()
    # absolute() and not resolve(): a virtual environment's python is a link that must stay one.
    python = (args.lizard if args.lizard is not None else root / ".venv" / "bin" / "python").absolute()
    return self_test(python) if args.self_test else run(root, python)


if __name__ == "__main__":
    sys.exit(main())
