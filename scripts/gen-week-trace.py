#!/usr/bin/env python3
"""A synthetic week of a cluster as a kubesched trace (docs/replay.md), seeded.

    scripts/gen-week-trace.py [--nodes 5000] [--events 1000000] [--seed 1] > week.jsonl
    kubesched replay week.jsonl

The nodes (a few machine shapes, spread over three zones) are applied at time 0. Pods
then arrive over seven days as a Poisson process whose rate follows the day (busier by
day than by night), in a handful of shapes from a web tier to batch jobs, each with a
run time drawn from a log-normal distribution (its `duration`), so the replay frees
them. Node churn: now and then a node is drained and comes back (uncordoned) an hour
later, or is deleted and replaced by a new one. Arrivals are sized so that the cluster
runs busy but not full. The same seed gives the same trace, byte for byte.
"""

import argparse
import json
import math
import random
import sys

WEEK = 7 * 24 * 3600

MACHINES = [  # (name, cpu millicores, memory MiB, share)
    ("general", 16000, 65536, 0.6),
    ("large", 64000, 262144, 0.3),
    ("small", 4000, 16384, 0.1),
]

PODS = [  # (name, cpu millicores, memory MiB, mean run time in seconds, share)
    ("web", 500, 1024, 6 * 3600, 0.35),
    ("api", 1000, 2048, 3 * 3600, 0.25),
    ("worker", 2000, 4096, 1800, 0.2),
    ("batch", 4000, 16384, 900, 0.15),
    ("train", 16000, 65536, 4 * 3600, 0.05),
]


def pick(rng, table, weight_index):
    x = rng.random() * sum(row[weight_index] for row in table)
    for row in table:
        x -= row[weight_index]
        if x <= 0:
            return row
    return table[-1]


def node(name, shape, zone):
    _, cpu, mem, _ = shape
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "topology.kubernetes.io/zone": zone,
                "node.kubernetes.io/instance-type": shape[0],
            },
        },
        "status": {"allocatable": {"cpu": f"{cpu}m", "memory": f"{mem}Mi", "pods": "110"}},
    }


def pod(name, shape):
    kind, cpu, mem, _, _ = shape
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": kind}},
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "image": kind,
                    "resources": {"requests": {"cpu": f"{cpu}m", "memory": f"{mem}Mi"}},
                }
            ]
        },
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    out = sys.stdout
    zones = ["zone-a", "zone-b", "zone-c"]

    def emit(event):
        out.write(json.dumps(event, separators=(",", ":")))
        out.write("\n")

    emit({"kubeschedTrace": 1, "description": f"synthetic week: {args.nodes} nodes, seed {args.seed}"})
    names = []
    for i in range(args.nodes):
        name = f"node-{i:05d}"
        names.append(name)
        emit({"time": 0, "apply": node(name, pick(rng, MACHINES, 3), zones[i % 3])})

    # Arrivals: about 85% of the events (each pod is one event; its finish is its
    # duration), the rest node churn.
    arrivals = int(args.events * 0.85)
    churn = args.events - args.nodes - arrivals
    mean_gap = WEEK / max(arrivals, 1)
    events = []
    t = 0.0
    for i in range(arrivals):
        # The day's rhythm: twice the rate at 14:00 as at 02:00.
        hour = (t % 86400) / 3600
        rate = 1.0 + 0.33 * math.sin((hour - 8) / 24 * 2 * math.pi)
        t += rng.expovariate(1.0) * mean_gap / rate
        shape = pick(rng, PODS, 4)
        duration = rng.lognormvariate(math.log(shape[3]), 0.8)
        events.append((t, {"time": round(t, 3), "apply": pod(f"{shape[0]}-{i:07d}", shape), "duration": round(duration, 3)}))
    next_node = args.nodes
    live = list(names)
    for _ in range(max(churn, 0) // 2):
        when = rng.random() * WEEK
        name = rng.choice(live)
        if rng.random() < 0.7:
            events.append((when, {"time": round(when, 3), "drain": name}))
            back = when + 3600
            events.append((back, {"time": round(back, 3), "uncordon": name}))
        else:
            live.remove(name)
            events.append((when, {"time": round(when, 3), "delete": {"kind": "Node", "name": name}}))
            new = f"node-{next_node:05d}"
            next_node += 1
            live.append(new)
            later = when + 600
            events.append((later, {"time": round(later, 3), "apply": node(new, pick(rng, MACHINES, 3), rng.choice(zones))}))
    # Stable by time. Churn was drawn at random times: a drain, uncordon or delete of a
    # node that does not exist at that time (deleted before, or added after) is dropped,
    # and so is the replacement of a delete that was dropped.
    events.sort(key=lambda e: e[0])
    exists = set(names)
    for _, e in events:
        if "apply" in e and e["apply"]["kind"] == "Node":
            exists.add(e["apply"]["metadata"]["name"])
        elif "delete" in e:
            if e["delete"]["name"] not in exists:
                continue
            exists.discard(e["delete"]["name"])
        elif e.get("drain", e.get("uncordon")) is not None and e.get("drain", e.get("uncordon")) not in exists:
            continue
        emit(e)


if __name__ == "__main__":
    main()
