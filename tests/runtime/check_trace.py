"""Checks a `burst train --trace` file and its log (see trace.sh and docs/runtime.md).

usage: check_trace.py TRACE LOG --ranks N --steps S [--mixed]
Plain Python (json only). Exits 1 with one line per problem.
"""
import argparse
import collections
import json
import re
import sys

parser = argparse.ArgumentParser()
parser.add_argument("trace")
parser.add_argument("log")
parser.add_argument("--ranks", type=int, required=True)
parser.add_argument("--steps", type=int, required=True)
parser.add_argument("--mixed", action="store_true",
                    help="the plan re-shards (recv/send events) and rank 1 waits on rank 0 (idle)")
args = parser.parse_args()
problems = []

with open(args.trace) as f:
    document = json.load(f)  # valid JSON, or this raises
events = document["traceEvents"]
LANES = {0: "step", 1: "compute", 2: "recv", 3: "send", 4: "allreduce", 5: "idle"}

process_names = {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
for rank in range(args.ranks):
    if process_names.get(rank) != f"rank {rank}":
        problems.append(f"no process_name metadata 'rank {rank}' for pid {rank}")
thread_names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
                if e["ph"] == "M" and e["name"] == "thread_name"}
for rank in range(args.ranks):
    for tid, lane in LANES.items():
        if thread_names.get((rank, tid)) != lane:
            problems.append(f"rank {rank}: lane {tid} not named '{lane}'")

complete = [e for e in events if e["ph"] == "X"]
by_rank = collections.defaultdict(list)
for e in complete:
    missing = [k for k in ("name", "ph", "ts", "dur", "pid", "tid") if k not in e]
    if missing:
        problems.append(f"event {e} lacks {missing}")
        continue
    if not isinstance(e["ts"], (int, float)) or not isinstance(e["dur"], (int, float)):
        problems.append(f"event {e['name']}: ts/dur not numbers")
    elif e["dur"] < 0 or e["ts"] < 0:
        problems.append(f"event {e['name']} on rank {e['pid']}: negative ts or dur ({e['ts']}, {e['dur']})")
    if e["tid"] not in LANES:
        problems.append(f"event {e['name']}: unknown tid {e['tid']}")
    by_rank[e["pid"]].append(e)

if sorted(by_rank) != list(range(args.ranks)):
    problems.append(f"events from ranks {sorted(by_rank)}, expected 0..{args.ranks - 1}")
for rank, rank_events in sorted(by_rank.items()):
    names = [e["name"] for e in rank_events]
    if not any(n.endswith(" forward") for n in names):
        problems.append(f"rank {rank}: no layer forward events")
    if not any(n.endswith(" backward") for n in names):
        problems.append(f"rank {rank}: no backward events")
    steps = [e for e in rank_events if e["tid"] == 0]
    if len(steps) != args.steps:
        problems.append(f"rank {rank}: {len(steps)} step events, expected {args.steps}")
    # Every event of a step lies within that step's span (1 us of rounding).
    spans = {e["args"]["step"]: (e["ts"], e["ts"] + e["dur"]) for e in steps}
    for e in rank_events:
        span = spans.get(e["args"].get("step"))
        if span and not (span[0] - 1 <= e["ts"] and e["ts"] + e["dur"] <= span[1] + 1):
            problems.append(f"rank {rank}: '{e['name']}' lies outside step {e['args']['step']}")
    # One thread: below the step lane, events follow each other (vgg_like has no split
    # BatchNorm, whose statistics all-reduces would nest inside its layer's events).
    timeline = sorted((e for e in rank_events if e["tid"] != 0), key=lambda e: e["ts"])
    for before, after in zip(timeline, timeline[1:]):
        if after["ts"] < before["ts"] + before["dur"] - 0.01:
            problems.append(f"rank {rank}: '{after['name']}' starts inside '{before['name']}'")
    lanes = collections.Counter(LANES.get(e["tid"]) for e in rank_events)
    if lanes["allreduce"] == 0:
        problems.append(f"rank {rank}: no all-reduce events")
    if args.mixed:
        if lanes["send"] == 0:
            problems.append(f"rank {rank}: no send events in a re-sharding plan")
        if rank == 0 and lanes["recv"] == 0:
            problems.append("rank 0: no recv events in a re-sharding plan")
        if rank == 1 and not any(e["tid"] == 5 and e["name"].startswith("recv ") for e in rank_events):
            problems.append("rank 1: its wait for rank 0's layers is not an idle recv event")
    print(f"rank {rank}: " + ", ".join(f"{lane} {lanes[lane]}" for lane in LANES.values()))

# The log: one line per step with every rank's compute/comm/idle.
pattern = re.compile(r"^step +(\d+) +loss [0-9.]+ +[0-9.]+ samples/s +([0-9.]+) ms/iter +(?:data ([0-9.]+) ms +)?compute/comm/idle ms:(.*)$")
lines = [m for m in map(pattern.match, open(args.log).read().splitlines()) if m]
if len(lines) != args.steps:
    problems.append(f"{len(lines)} step log lines with compute/comm/idle, expected {args.steps}")
for m in lines:
    triples = re.findall(r" r(\d+) ([0-9.]+)/([0-9.]+)/([0-9.]+)", m.group(4))
    if [int(t[0]) for t in triples] != list(range(args.ranks)):
        problems.append(f"step {m.group(1)}: ranks {[t[0] for t in triples]} in the log line")
        continue
    # Rank 0's three parts and its data wait add up to its ms/iter (the log rounds each to
    # 0.01); the log's data time is the longest of any rank's, so at least rank 0's.
    total = sum(float(x) for x in triples[0][1:])
    if not -0.05 <= float(m.group(2)) - total <= float(m.group(3) or 0) + 0.05:
        problems.append(f"step {m.group(1)}: rank 0's {total:.2f} ms != {m.group(2)} ms/iter")
    if args.mixed and float(triples[1][3]) <= 0:
        problems.append(f"step {m.group(1)}: rank 1 shows no idle time in the mixed plan")

for p in problems:
    print("FAIL:", p)
sys.exit(1 if problems else 0)
