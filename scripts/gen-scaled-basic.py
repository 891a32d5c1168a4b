#!/usr/bin/env python3
"""A large benchmark scenario made by repeating a smaller one's nodes and pods.

Reads a scenario in the format of ../shared/conformance/FORMAT.md (by default
../shared/perf/basic-5000n-2000p.yaml) and writes one JSON `List` with its
KubeSchedulerConfiguration, NODES nodes (node-00000, ..., the source's nodes taken in
turn, each with its own name and `kubernetes.io/hostname` label) and PODS pending pods
(bench-000000, ..., the source's pods taken in turn, so the mix of pod shapes is the
source's). docs/architecture.md's 50,000-node / 100,000-pod figures come from

    scripts/gen-scaled-basic.py 50000 100000 /tmp/big-50000n-100000p.json
    target/release/kubesched bench /tmp/big-50000n-100000p.json --mode exact

usage: gen-scaled-basic.py NODES PODS OUT [SOURCE]   (needs PyYAML)
"""
import copy
import json
import sys

import yaml


def main() -> None:
    if len(sys.argv) not in (4, 5):
        sys.exit(__doc__)
    nodes_wanted, pods_wanted, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    source = sys.argv[4] if len(sys.argv) == 5 else "../shared/perf/basic-5000n-2000p.yaml"
    with open(source) as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    configs = [d for d in docs if d.get("kind") == "KubeSchedulerConfiguration"]
    nodes = [d for d in docs if d.get("kind") == "Node"]
    pods = [d for d in docs if d.get("kind") == "Pod"]
    if not nodes or not pods:
        sys.exit(f"{source}: needs at least one Node and one Pod")
    items = list(configs)
    for i in range(nodes_wanted):
        node = copy.deepcopy(nodes[i % len(nodes)])
        name = f"node-{i:05d}"
        node["metadata"]["name"] = name
        node["metadata"].setdefault("labels", {})["kubernetes.io/hostname"] = name
        items.append(node)
    for i in range(pods_wanted):
        pod = copy.deepcopy(pods[i % len(pods)])
        pod["metadata"]["name"] = f"bench-{i:06d}"
        items.append(pod)
    with open(out, "w") as f:
        json.dump({"apiVersion": "v1", "kind": "List", "items": items}, f)


if __name__ == "__main__":
    main()
