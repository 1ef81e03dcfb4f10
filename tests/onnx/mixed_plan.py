"""Writes a burst plan for 2 workers that is not data parallelism: every third layer (and
its samples) on one rank, alternating ranks 0 and 1; the others split 4/4 of 8.

usage: python3 tests/onnx/mixed_plan.py DP_PLAN OUT_PLAN
DP_PLAN is `burst plan --strategy dp --devices 2` of the model; the layers and the global
batch come from it. Prints the share of layers on one rank.
"""
import json
import sys

plan = json.load(open(sys.argv[1]))
batch = plan["global_batch"]
single = 0
for index, layer in enumerate(plan["layers"]):
    if index % 3 == 2:
        layer["shards"] = [[(index // 3) % 2, 0, batch]]
        single += 1
plan["strategy"] = "hand"
json.dump(plan, open(sys.argv[2], "w"))
print(f"{single} of {len(plan['layers'])} layers on one rank ({100 * single / len(plan['layers']):.0f}%)")
