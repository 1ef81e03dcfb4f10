"""One row of the own-plan table bench/published_results.sh and bench/torchtitan_runs.sh print:
burst's own plan against a published configuration, from the two `burst plan --json` outputs.
The claimed gain is the pinned time over the own plan's; each term is pinned - own, ms of the
step on the busiest rank (planner::StepTerms: compute, recompute, bubble, exposed communication).

usage: python3 bench/own_plan_gain.py NAME PINNED_JSON OWN_JSON
"""
import json
import os
import sys


def shape_text(p):
    chunks = " (V %d)" % p["virtual_stages"] if p["virtual_stages"] > 1 else ""
    context = " x CP %d" % p["context"] if p.get("context", 1) > 1 else ""
    experts = " (EP %d)" % p["experts"] if p.get("experts", 1) > 1 else ""
    return "TP %d%s%s x PP %d%s x DP %d%s, mbs %d, %s, %s, ZeRO %d" % (
        p["tensor"], " + SP" if p["sequence_parallel"] else "", context, p["pipeline"], chunks, p["data"], experts,
        p["micro_batch"], p["schedule"], p["recompute"], p["zero"])


def main(name, pinned_path, own_path):
    if not (os.path.exists(pinned_path) and os.path.exists(own_path)):
        print("| %s | - | - | - | - | - | - | - |" % name)
        return
    a, b = json.load(open(pinned_path)), json.load(open(own_path))
    ta, tb = a.get("step_terms"), b.get("step_terms")
    keys = ("compute_ms", "recompute_ms", "bubble_ms", "exposed_communication_ms")
    terms = ["%+.0f" % (ta[k] - tb[k]) if ta and tb else "-" for k in keys]
    print("| %s | %s | %.2fx | %s | %s |" % (name, shape_text(b["parallelism"]),
                                            a["iteration_time_ms"] / b["iteration_time_ms"], " | ".join(terms),
                                            "; ".join(b.get("unchecked", [])) or "-"))


if __name__ == "__main__":
    main(*sys.argv[1:4])
