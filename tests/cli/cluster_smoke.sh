#!/usr/bin/env bash
# Usage: cluster_smoke.sh BURST_BINARY EXAMPLE_CLUSTER_FILE
#
# `burst cluster` on good input: the documented example file and built-in clusters, as
# tables and JSON. The predicted all-reduce times are recomputed here from the formulas of
# docs/cluster-format.md, independently of the C++ code. Exits 1 listing every failed check.
set -u

# shellcheck source=common.sh
source "$(dirname "$0")/common.sh"
cli_setup "$0 BURST_BINARY EXAMPLE_CLUSTER_FILE" 2 "$@"
example=$2

quiet example_table cluster --cluster "$example" && {
  contains example_table "cluster lab-2x8-a100: 16 a100 devices on 2 nodes of 8"
  contains example_table "intra-node link: 300 GB/s (2400 Gb/s) per direction, latency 5 us"
  contains example_table "inter-node link: 25 GB/s (200 Gb/s) per direction, latency 10 us"
  contains example_table "hierarchical"
}
quiet builtin_table cluster --device a100 --devices 12 && {
  contains builtin_table "cluster a100x12: 12 a100 devices on 2 nodes of 8 (the last node holds 4)"
  contains builtin_table "built-in defaults"
}
quiet cpu_table cluster --device cpu --devices 4 && contains cpu_table "4 cpu devices on 1 node"
quiet single cluster --device h200 --devices 1 && contains single "nothing to all-reduce"
quiet help cluster --help && contains help "--cluster"

# JSON: recompute every prediction for the example (A100 numbers) from the formulas.
quiet example_json cluster --cluster "$example" --json && {
  checks=$((checks + 1))
  "$python" - "$work/example_json.out" <<'PY' || fail "JSON of the example file"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["devices"] == 16 and d["builtin"] is False, d
assert d["cluster"]["name"] == "lab-2x8-a100", d["cluster"]
def ring(n, s, b, a):
    return 2 * (n - 1) / n * s / b + 2 * (n - 1) * a
intra = (300e9, 5e-6)
inter = (200e9 / 8, 10e-6)
rows = d["allreduce"]
assert [(r["devices"], r["bytes"]) for r in rows] == [
    (g, s) for g in (2, 8, 16) for s in (1 << 20, 16 << 20, 256 << 20, 1 << 30)], rows
for r in rows:
    g, s = r["devices"], r["bytes"]
    if g <= 8:
        assert r["nodes"] == 1 and r["hierarchical_s"] is None, r
        expected = ring(g, s, *intra)
        assert abs(r["ring_s"] - expected) < 1e-12, (r, expected)
    else:
        assert r["nodes"] == 2, r
        flat = max(ring(16, s, *inter), ring(16, s, *intra))
        hier = ring(8, s, *intra) + ring(2, s / 8, *inter)
        assert abs(r["ring_s"] - flat) < 1e-12, (r, flat)
        assert abs(r["hierarchical_s"] - hier) < 1e-12, (r, hier)
        expected = min(flat, hier)
    assert abs(r["chosen_s"] - expected) < 1e-12, (r, expected)
    assert r["chosen"] == ("hierarchical" if r["hierarchical_s"] is not None and r["hierarchical_s"] < r["ring_s"] else "ring"), r
PY
}

# The "cluster" object of the JSON is a cluster file: it loads back to the same report.
quiet builtin_json cluster --device h100-sxm --devices 20 --json && {
  checks=$((checks + 1))
  "$python" -c 'import json,sys; json.dump(json.load(open(sys.argv[1]))["cluster"], open(sys.argv[2], "w"))' \
    "$work/builtin_json.out" "$work/h100.json" || fail "could not extract the cluster object"
  if ok reloaded_json cluster --cluster "$work/h100.json" --json; then
    checks=$((checks + 1))
    "$python" - "$work/builtin_json.out" "$work/reloaded_json.out" <<'PY' || fail "reloaded cluster differs"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert a["builtin"] is True and b["builtin"] is False
assert a["cluster"] == b["cluster"] and a["allreduce"] == b["allreduce"], (a, b)
assert a["cluster"]["devices"] == 20 and a["cluster"]["nodes"] == 3, a["cluster"]
PY
  fi
}

finish "checks passed"
