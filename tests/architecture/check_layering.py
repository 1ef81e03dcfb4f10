#!/usr/bin/env python3
"""Checks that burst's libraries include each other only downwards.

Each library is a folder lib/<name> with include/burst/<name>/*.h, src/ and test/. A library's
own code (lib/<x>/src/** and lib/<x>/include/**) may include burst/<y>/... only when y is in
the transitive closure of x's allowed direct dependencies (ALLOWED below), and no two library
folders may include each other. lib/<x>/test/** is not checked: a library's tests may build
their inputs with higher libraries.

  check_layering.py [--root DIR]              check the tree (default: this repository)
  check_layering.py --self-test [--root DIR]  prove the check passes and fails when it should

Exit 0 with a one-line summary when clean, 1 listing every violation otherwise.
"""

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

# The allowed DIRECT dependencies of each library (folder lib/<name>), bottom-up; the check
# takes their transitive closure. docs/architecture.md explains the layering.
ALLOWED = {
    "util": [],
    "graph": ["util"],
    "cluster": ["util"],
    "cost": ["graph", "cluster", "util"],
    # An importer of a published table into cost profiles.
    "deeppool": ["cost", "graph", "util"],
    "plan": ["cost", "graph", "cluster", "util"],
    "program": ["plan", "graph", "cost", "util"],
    "timing": ["program", "plan", "cost", "graph", "cluster", "util"],
    "planner": ["timing", "program", "plan", "cost", "graph", "cluster", "util"],
    # Not planner: the simulator times plans, it does not make them.
    "sim": ["timing", "program", "plan", "cost", "graph", "cluster", "util"],
    # The multi-tenant cluster simulator: traces and measured tables only, no plans.
    "cluster_sim": ["util"],
    "checkpoint": ["graph", "util"],
    "data": ["util"],
    "launch": ["util"],
    # What one training run is (configuration, job file, data, resume): libtorch-free.
    "job": ["plan", "program", "graph", "data", "checkpoint", "cost", "util"],
    "layers": ["cost", "graph", "util"],
    "profiler": ["layers", "cost", "graph", "util"],
    # Not planner, timing or sim: the runtime runs plans, it neither makes nor times them.
    "runtime": ["job", "plan", "program", "layers", "data", "launch", "checkpoint", "cluster", "cost",
                "graph", "util"],
}

SOURCE_SUFFIXES = {".h", ".hh", ".hpp", ".hxx", ".inc", ".inl", ".ipp", ".tpp",
                   ".c", ".cc", ".cpp", ".cxx"}
CHECKED_SUBDIRS = ("include", "src")  # not test/: see the docstring
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*[<"](burst/([A-Za-z0-9_]+)/[^>"]*)[>"]')


def table_closure(table):
    """The transitive closure of the table; raises AssertionError if the table has a cycle
    or names an unknown library."""
    for name, deps in table.items():
        for dep in deps:
            assert dep in table, f"ALLOWED: {name} depends on {dep}, which has no entry"
            assert dep != name, f"ALLOWED: {name} depends on itself"
    closure = {}
    visiting = []

    def visit(name):
        if name in closure:
            return closure[name]
        assert name not in visiting, \
            "ALLOWED has a cycle: " + " -> ".join(visiting[visiting.index(name):] + [name])
        visiting.append(name)
        below = set()
        for dep in table[name]:
            below.add(dep)
            below |= visit(dep)
        visiting.pop()
        closure[name] = below
        return below

    for name in sorted(table):
        visit(name)
    return closure


def strongly_connected(nodes, edges):
    """Tarjan's algorithm; edges: {node: set(node)}. Returns the components, each sorted."""
    index, low, on_stack, stack, result = {}, {}, set(), [], []
    counter = [0]

    def connect(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            result.append(sorted(component))

    for v in sorted(nodes):
        if v not in index:
            connect(v)
    return sorted(result)


def library_folders(lib):
    """The library folders under lib/ that the table knows, and a violation for each it does not."""
    present = sorted(p.name for p in lib.iterdir() if p.is_dir() and not p.name.startswith("."))
    violations = [f"lib/{name}: library folder has no entry in the layering table "
                  f"(ALLOWED in tests/architecture/check_layering.py)"
                  for name in present if name not in ALLOWED]
    return [name for name in present if name in ALLOWED], violations


def library_files(lib, x):
    """Library x's own sources and headers (not its tests)."""
    files = []
    for sub in CHECKED_SUBDIRS:
        folder = lib / x / sub
        if folder.is_dir():
            files += [p for p in folder.rglob("*") if p.is_file() and p.suffix in SOURCE_SUFFIXES]
    return sorted(files)


def include_violations(root, x, closure, first_edge):
    """Violations of library x's includes; records each folder x includes in first_edge.
    Returns (violations, includes checked)."""
    violations, checked = [], 0
    for path in library_files(root / "lib", x):
        rel = path.relative_to(root).as_posix()
        text = path.read_text(encoding="utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), start=1):
            match = INCLUDE_RE.match(line)
            if not match:
                continue
            header, y = match.group(1), match.group(2)
            checked += 1
            if y == x:
                continue
            first_edge.setdefault((x, y), f"{rel}:{number}")
            if y not in ALLOWED:
                violations.append(f"{rel}:{number}: includes {header}, but there is no "
                                  f"library {y} in the layering table")
            elif y not in closure[x]:
                why = f"{x} sits below {y}" if x in closure[y] else f"{x} and {y} are unrelated in the layering table"
                violations.append(f"{rel}:{number}: includes {header}, but {x} may not depend on {y} ({why})")
    return violations, checked


def cycle_violations(first_edge):
    """Library folders that include each other, whatever the table says."""
    edges = {}
    for x, y in first_edge:
        edges.setdefault(x, set()).add(y)
    violations = []
    for component in strongly_connected(set(edges) | {y for _, y in first_edge}, edges):
        if len(component) < 2:
            continue
        if len(component) == 2:
            a, b = component
            violations.append(f"cycle: lib/{a} and lib/{b} include each other "
                              f"({first_edge[(a, b)]} includes burst/{b}/..., "
                              f"{first_edge[(b, a)]} includes burst/{a}/...)")
        else:
            inner = [f"{first_edge[(a, b)]} includes burst/{b}/..."
                     for a in component for b in component if (a, b) in first_edge]
            violations.append("cycle: library folders " + ", ".join(f"lib/{n}" for n in component) +
                              " include each other (" + "; ".join(inner) + ")")
    return violations


LIBRARY_TARGET_RE = re.compile(r"^\s*add_library\(\s*(burst_[A-Za-z0-9_]+)\b(?![^)]*\b(?:INTERFACE|MODULE)\b)", re.M)
TABLE_ROW_RE = re.compile(r"^\|\s*`(burst_[A-Za-z0-9_]+)`\s*\|\s*`lib/([A-Za-z0-9_]+)`\s*\|", re.M)


def library_table_violations(root):
    """docs/architecture.md's library table lists every library target under lib/ with its
    folder, and nothing else (skipped when the tree has no docs/architecture.md)."""
    doc = root / "docs" / "architecture.md"
    if not doc.is_file():
        return []
    built = {}
    for cmake in sorted((root / "lib").glob("*/CMakeLists.txt")):
        for target in LIBRARY_TARGET_RE.findall(cmake.read_text(encoding="utf-8")):
            built[target] = cmake.parent.name
    listed = {target: folder for target, folder in TABLE_ROW_RE.findall(doc.read_text(encoding="utf-8"))}
    violations = [f"docs/architecture.md: the library table lacks {target} (lib/{folder})"
                  for target, folder in sorted(built.items()) if target not in listed]
    violations += [f"docs/architecture.md: the library table lists {target} (lib/{folder}), which lib/ does not build"
                   for target, folder in sorted(listed.items()) if built.get(target) != folder]
    return violations


def check(root):
    """Returns (violations, summary) for the tree at root."""
    lib = root / "lib"
    if not lib.is_dir():
        return [f"{lib}: no lib/ folder"], None
    closure = table_closure(ALLOWED)
    libraries, violations = library_folders(lib)
    includes_checked = 0
    first_edge = {}  # (x, y) -> "file:line" of the first include of burst/y/ in x
    for x in libraries:
        found, checked = include_violations(root, x, closure, first_edge)
        violations += found
        includes_checked += checked
    violations += cycle_violations(first_edge)
    violations += library_table_violations(root)
    summary = (f"layering: {len(libraries)} libraries, {includes_checked} includes checked, "
               f"no upward include")
    return violations, summary


def run(root):
    violations, summary = check(root)
    if violations:
        for violation in violations:
            print(violation)
        print(f"layering: {len(violations)} violation(s) (allowed dependencies: "
              f"tests/architecture/check_layering.py, explained in docs/architecture.md)")
        return 1
    print(summary)
    return 0


def first_file(folder, suffixes):
    files = sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix in suffixes)
    return files[0] if files else None


def check_tree(tree):
    """The check run on `tree` as a separate process, as ctest runs it: (exit code, output)."""
    done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--root", str(tree)],
                          capture_output=True, text=True, check=False)
    return done.returncode, done.stdout + done.stderr


def inject_upward_include(copy):
    """Appends an upward include to a copy of a file of a low library: (file, line, header)."""
    lib = copy / "lib"
    if (lib / "plan" / "src").is_dir():
        low, upward = "plan", "burst/planner/burst_planner.h"
    else:
        low, upward = "graph", "burst/sim/simulator.h"
    low_src = lib / low / "src"
    low_src.mkdir(parents=True, exist_ok=True)
    template = first_file(low_src, SOURCE_SUFFIXES)
    injected = low_src / "layering_self_test_upward.cpp"
    text = template.read_text(encoding="utf-8", errors="replace") if template else ""
    injected.write_text(text.rstrip("\n") + f'\n#include "{upward}"\n', encoding="utf-8")
    line = len(injected.read_text(encoding="utf-8").splitlines())
    return injected.relative_to(copy).as_posix(), line, upward


def inject_cycle(copy, a, b):
    """Folders a and b include each other (the table allows at most one direction)."""
    lib = copy / "lib"
    for name in (a, b):
        (lib / name / "src").mkdir(parents=True, exist_ok=True)
    (lib / a / "src" / "layering_self_test_cycle.cpp").write_text(
        f'#include "burst/{b}/layering_self_test.h"\n', encoding="utf-8")
    (lib / b / "src" / "layering_self_test_cycle.cpp").write_text(
        f'#include <burst/{a}/layering_self_test.h>\n', encoding="utf-8")


def inject_test_include(copy):
    """Tests may include higher libraries: this one must not be reported."""
    (copy / "lib" / "util" / "test").mkdir(parents=True, exist_ok=True)
    (copy / "lib" / "util" / "test" / "layering_self_test.cpp").write_text(
        '#include "burst/runtime/train.h"\n', encoding="utf-8")


def judge_injected(rc, out, upward, cycle):
    """What is wrong with the check's answer on the injected tree (empty: nothing)."""
    injected_rel, injected_line, header = upward
    a, b = cycle
    failures = []
    if rc != 1:
        failures.append(f"with injected violations the check exited {rc}, not 1:\n{out}")
    if not any(line.startswith(f"{injected_rel}:{injected_line}:") and header in line for line in out.splitlines()):
        failures.append(f"the check did not name the injected upward include "
                        f"{injected_rel}:{injected_line} ({header}):\n{out}")
    if not any(line.startswith("cycle:") and f"lib/{a}" in line and f"lib/{b}" in line for line in out.splitlines()):
        failures.append(f"the check did not report the injected cycle lib/{a} <-> lib/{b}:\n{out}")
    if "lib/util/test/" in out:
        failures.append(f"the check reported an include in a test/ folder:\n{out}")
    return failures


def self_test(root):
    """Runs the check on a copy of root's lib/, clean and with injected violations; returns 0
    when the check behaves, 1 otherwise."""
    failures = []
    real_rc, real_out = check_tree(root)
    cycle = ("data", "launch")
    with tempfile.TemporaryDirectory(prefix="burst-layering-") as tmp:
        copy = Path(tmp)
        shutil.copytree(root / "lib", copy / "lib", symlinks=True)
        copy_rc, copy_out = check_tree(copy)  # (a) the copy is judged as the real tree is
        if (copy_rc, copy_out) != (real_rc, real_out):
            failures.append(f"the copy of lib/ was judged differently from {root}:\n"
                            f"--- real tree (exit {real_rc}):\n{real_out}"
                            f"--- copy (exit {copy_rc}):\n{copy_out}")
        upward = inject_upward_include(copy)  # (b) violations the check must report
        inject_cycle(copy, *cycle)
        inject_test_include(copy)
        bad_rc, bad_out = check_tree(copy)
        failures += judge_injected(bad_rc, bad_out, upward, cycle)
    if failures:
        for failure in failures:
            print(f"layering self-test: FAILED: {failure}")
        return 1
    print(f"layering self-test: passed (copy of lib/ judged as the real tree, exit {real_rc}; "
          f"injected upward include {upward[0]}:{upward[1]} and cycle "
          f"lib/{cycle[0]} <-> lib/{cycle[1]} reported, exit {bad_rc})")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[2],
                        help="the tree to check (default: this repository)")
    parser.add_argument("--self-test", action="store_true",
                        help="prove on a copy of ROOT/lib that the check passes and fails")
    args = parser.parse_args()
    root = args.root.resolve()
    return self_test(root) if args.self_test else run(root)


if __name__ == "__main__":
    sys.exit(main())
