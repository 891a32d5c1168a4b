#!/usr/bin/env python3
"""A benchmark scenario of gangs: kube-scheduler v1.36's PodGroups over a large cluster.

Writes one JSON `List` (no KubeSchedulerConfiguration: the default profile, which has
GangScheduling when the gates are on) with NODES nodes in 10 zones (4 cpu, 32Gi, 110
pods each) and GANGS gangs of SIZE pending pods. Each gang is a
`scheduling.k8s.io/v1alpha2` PodGroup with `gang.minCount: SIZE`, its pods naming it in
`spec.schedulingGroup.podGroupName`; the pods' requests take turns over four shapes
(100m-500m cpu, 256Mi-1Gi). With `--without-gangs` the same pods are written without
the PodGroups and without `schedulingGroup`: the baseline issue 39's "within 2x" is
measured against. docs/gangs-and-quotas.md's figures come from

    scripts/gen-gang-bench.py 5000 1 1000 /tmp/gang-1x1000.json
    scripts/gen-gang-bench.py 5000 1 1000 /tmp/pods-1x1000.json --without-gangs
    kubesched bench /tmp/gang-1x1000.json --feature-gates GenericWorkload=true,GangScheduling=true
    kubesched bench /tmp/pods-1x1000.json --feature-gates GenericWorkload=true,GangScheduling=true

usage: gen-gang-bench.py NODES GANGS SIZE OUT [--without-gangs]   (Python 3 alone)
"""
import json
import sys

SHAPES = [("100m", "256Mi"), ("250m", "512Mi"), ("500m", "1Gi"), ("200m", "256Mi")]
NAMESPACE = "default"


def node(i: int) -> dict:
    name = f"node-{i:05d}"
    resources = {"cpu": "4", "memory": "32Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "topology.kubernetes.io/zone": f"zone-{i % 10}",
            },
        },
        "status": {
            "capacity": resources,
            "allocatable": resources,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def pod_group(gang: int, size: int) -> dict:
    return {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": f"gang-{gang:04d}", "namespace": NAMESPACE},
        "spec": {"schedulingPolicy": {"gang": {"minCount": size}}},
    }


def pod(gang: int, index: int, with_gangs: bool) -> dict:
    cpu, memory = SHAPES[index % len(SHAPES)]
    spec = {
        "containers": [
            {
                "name": "worker",
                "image": "registry.k8s.io/pause:3.10",
                "resources": {"requests": {"cpu": cpu, "memory": memory}},
            }
        ]
    }
    if with_gangs:
        spec["schedulingGroup"] = {"podGroupName": f"gang-{gang:04d}"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"gang-{gang:04d}-{index:04d}",
            "namespace": NAMESPACE,
            "labels": {"job": f"gang-{gang:04d}"},
        },
        "spec": spec,
    }


def main() -> None:
    args = [a for a in sys.argv[1:] if a != "--without-gangs"]
    with_gangs = len(args) == len(sys.argv) - 1
    if len(args) != 4:
        sys.exit(__doc__)
    try:
        nodes, gangs, size = (int(a) for a in args[:3])
    except ValueError:
        sys.exit(f"NODES, GANGS and SIZE must be whole numbers\n{__doc__}")
    if min(nodes, gangs, size) < 1:
        sys.exit(f"NODES, GANGS and SIZE must be at least 1\n{__doc__}")
    items = [node(i) for i in range(nodes)]
    for g in range(gangs):
        if with_gangs:
            items.append(pod_group(g, size))
        items.extend(pod(g, i, with_gangs) for i in range(size))
    with open(args[3], "w") as f:
        json.dump({"apiVersion": "v1", "kind": "List", "items": items}, f)


if __name__ == "__main__":
    main()
