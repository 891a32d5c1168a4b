#!/usr/bin/env python3
"""Benchmark scenarios where a third of the pods have claims, and the same without.

Writes two scenario files in the format of ../shared/conformance/FORMAT.md (and
FORMAT-volumes.md) for `kubesched bench`, both with the same nodes and the same pending
pods, in the same order, with the same CPU and memory requests:

  claims-<N>n-<P>p.yaml    every third pod has a claim:
                           - half of those are StatefulSet-like replicas (`db-S-I`, in
                             sets of 10) whose claim `data-db-S-I` asks for a
                             WaitForFirstConsumer local PV (class `local-ssd`,
                             `kubernetes.io/no-provisioner`) of 50Gi or 100Gi; 40% of
                             the nodes have one or two such PVs, each with node affinity
                             to its node;
                           - a quarter have a WaitForFirstConsumer claim of class
                             `zonal-csi`, provisioned by a CSI driver with storage
                             capacity: one CSIStorageCapacity per zone (the last zone's
                             too small for the larger claims);
                           - a quarter have a ResourceClaim for one or two GPUs of
                             DeviceClass `gpu.example.com` (CEL selectors), published by
                             ResourceSlices on 10% of the nodes (4 GPUs each, two models);
  noclaims-<N>n-<P>p.yaml  the same nodes and pods with no volumes or claims, and none
                           of the storage or resource.k8s.io objects.

Nodes are scheduler_perf SchedulingBasic's (4 cpu, 32Gi, 110 pods) spread over the
zones; no KubeSchedulerConfiguration, so kube-scheduler's default profile runs (all
four volume plugins and DynamicResources). The output depends only on the arguments:
the random choices come from SplitMix64 seeded with --seed, written out here so that
no library's generator can change them.

usage: scripts/gen-claims-bench.py [--nodes 5000] [--pods 2000] [--zones 4] [--seed 1]
                                   [--out-dir DIR]
then:  kubesched bench --mode exact DIR/claims-5000n-2000p.yaml
       kubesched bench --mode exact DIR/noclaims-5000n-2000p.yaml
"""

import argparse
import os
import sys

MASK = (1 << 64) - 1


class SplitMix64:
    """The SplitMix64 generator (Steele, Lea, Flood 2014)."""

    def __init__(self, seed):
        self.state = seed & MASK

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)

    def below(self, n):
        """A number in [0, n) (n small: the modulo bias is negligible)."""
        return self.next() % n

    def pick(self, items):
        return items[self.below(len(items))]


CPUS = ["100m", "200m", "300m", "400m", "500m"]
MEMORY = ["256Mi", "512Mi", "768Mi", "1Gi"]
IMAGES = ["registry.k8s.io/pause:3.10", "docker.io/library/redis:7.2", "postgres:16"]
GPU_MODELS = ["a100", "h100"]


def node(i, zones):
    name = f"node-{i:05d}"
    zone = f"zone-{i % zones}"
    extra = ""
    if is_gpu_node(i):
        extra = "    example.com/gpu-node: 'true'\n"
    return f"""apiVersion: v1
kind: Node
metadata:
  name: {name}
  labels:
    kubernetes.io/arch: amd64
    kubernetes.io/os: linux
    kubernetes.io/hostname: {name}
    topology.kubernetes.io/zone: {zone}
    topology.kubernetes.io/region: region-1
{extra}status:
  capacity: {{cpu: '4', memory: 32Gi, pods: '110'}}
  allocatable: {{cpu: '4', memory: 32Gi, pods: '110'}}
  conditions:
  - {{type: Ready, status: 'True', reason: KubeletReady}}
"""


def is_storage_node(i):
    return i % 5 < 2


def is_gpu_node(i):
    return i % 10 == 7


def storage_objects(nodes, zones, rng):
    docs = [
        """apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: local-ssd}
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: WaitForFirstConsumer
""",
        """apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: zonal-csi}
provisioner: csi.example.com
volumeBindingMode: WaitForFirstConsumer
""",
        """apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata: {name: csi.example.com}
spec: {attachRequired: true, storageCapacity: true}
""",
    ]
    for z in range(zones):
        capacity = "200Gi" if z == zones - 1 and zones > 1 else "50Ti"
        docs.append(f"""apiVersion: storage.k8s.io/v1
kind: CSIStorageCapacity
metadata: {{name: zonal-csi-zone-{z}, namespace: kube-system}}
storageClassName: zonal-csi
capacity: {capacity}
maximumVolumeSize: {"100Gi" if capacity == "200Gi" else "10Ti"}
nodeTopology:
  matchLabels: {{topology.kubernetes.io/zone: zone-{z}}}
""")
    for i in range(nodes):
        if not is_storage_node(i):
            continue
        name = f"node-{i:05d}"
        for d in range(1 + rng.below(2)):
            size = rng.pick(["100Gi", "200Gi"])
            docs.append(f"""apiVersion: v1
kind: PersistentVolume
metadata: {{name: local-{name}-{d}}}
spec:
  capacity: {{storage: {size}}}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: local-ssd
  local: {{path: /mnt/disks/ssd{d}}}
  nodeAffinity:
    required:
      nodeSelectorTerms:
      - matchExpressions:
        - {{key: kubernetes.io/hostname, operator: In, values: [{name}]}}
status: {{phase: Available}}
""")
    return docs


def dra_objects(nodes, rng):
    docs = ["""apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.example.com}
spec:
  selectors:
  - cel: {expression: "device.driver == 'gpu.example.com'"}
"""]
    for i in range(nodes):
        if not is_gpu_node(i):
            continue
        name = f"node-{i:05d}"
        model = rng.pick(GPU_MODELS)
        devices = "".join(
            f"""  - name: gpu-{d}
    attributes:
      model: {{string: {model}}}
      index: {{int: {d}}}
    capacity:
      memory: {{value: {"80Gi" if model == "h100" else "40Gi"}}}
"""
            for d in range(4)
        )
        docs.append(f"""apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {{name: {name}-gpu.example.com}}
spec:
  driver: gpu.example.com
  nodeName: {name}
  pool: {{name: {name}, generation: 1, resourceSliceCount: 1}}
  devices:
{devices}""")
    return docs


def pod(name, ns, labels, cpu, memory, image, volumes, claims):
    label_text = "".join(f"    {k}: {v}\n" for k, v in labels)
    text = f"""apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: {ns}
  labels:
{label_text}spec:
  containers:
  - name: app
    image: {image}
    resources:
      requests: {{cpu: {cpu}, memory: {memory}}}
"""
    if claims:
        text += "      claims: [{name: gpu}]\n"
        text += f"  resourceClaims: [{{name: gpu, resourceClaimName: {claims}}}]\n"
    if volumes:
        text += f"  volumes: [{{name: data, persistentVolumeClaim: {{claimName: {volumes}}}}}]\n"
    return text + "status: {phase: Pending}\n"


def claim(name, ns, class_name, size):
    return f"""apiVersion: v1
kind: PersistentVolumeClaim
metadata: {{name: {name}, namespace: {ns}}}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: {class_name}
  resources: {{requests: {{storage: {size}}}}}
status: {{phase: Pending}}
"""


def resource_claim(name, ns, count, selector):
    sel = ""
    if selector:
        sel = f"""        selectors:
        - cel: {{expression: "{selector}"}}
"""
    return f"""apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {{name: {name}, namespace: {ns}}}
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu.example.com
        count: {count}
{sel}"""


def generate(nodes, pods, zones, seed):
    """(claims text, no-claims text)."""
    rng = SplitMix64(seed)
    node_docs = [node(i, zones) for i in range(nodes)]
    storage_docs = storage_objects(nodes, zones, rng)
    dra_docs = dra_objects(nodes, rng)
    with_claims, without, claim_docs = [], [], []
    stateful = 0
    for i in range(pods):
        cpu, memory, image = rng.pick(CPUS), rng.pick(MEMORY), rng.pick(IMAGES)
        ns = f"team-{i % 8}"
        kind = rng.below(4) if i % 3 == 0 else None
        if kind in (0, 1):
            # A replica of a StatefulSet of 10: its claim from the volumeClaimTemplate.
            s, r = divmod(stateful, 10)
            stateful += 1
            name = f"db-{s}-{r}"
            labels = [("app", f"db-{s}"), ("statefulset.kubernetes.io/pod-name", name)]
            pvc = f"data-{name}"
            claim_docs.append(claim(pvc, ns, "local-ssd", rng.pick(["50Gi", "100Gi"])))
            with_claims.append(pod(name, ns, labels, cpu, memory, image, pvc, None))
        elif kind == 2:
            name = f"cache-{i:05d}"
            labels = [("app", "cache")]
            pvc = f"cache-{i:05d}"
            claim_docs.append(claim(pvc, ns, "zonal-csi", rng.pick(["20Gi", "150Gi"])))
            with_claims.append(pod(name, ns, labels, cpu, memory, image, pvc, None))
        elif kind == 3:
            name = f"train-{i:05d}"
            labels = [("app", "train")]
            rc = f"gpu-{i:05d}"
            selector = rng.pick(
                [None, "device.attributes['gpu.example.com'].model == 'h100'",
                 "device.capacity['gpu.example.com'].memory.compareTo(quantity('40Gi')) >= 0"]
            )
            claim_docs.append(resource_claim(rc, ns, 1 + rng.below(2), selector))
            with_claims.append(pod(name, ns, labels, cpu, memory, image, None, rc))
        else:
            name = f"web-{i:05d}"
            labels = [("app", f"web-{i % 50}")]
            with_claims.append(pod(name, ns, labels, cpu, memory, image, None, None))
        without.append(pod(name, ns, labels, cpu, memory, image, None, None))
    label = f"{nodes}n-{pods}p"
    head = (
        f"# {{}}-{label}: bench; {nodes} nodes in {zones} zones (4 cpu, 32Gi, 110 pods), "
        f"{pods} pending pods, {{}}; default profile; generated by "
        f"scripts/gen-claims-bench.py --nodes {nodes} --pods {pods} --zones {zones} --seed {seed}\n"
    )
    claims_text = head.format(
        "claims",
        "a third with claims (local PVs, provisioned volumes with storage capacity, GPUs)",
    ) + "---\n".join(node_docs + storage_docs + dra_docs + claim_docs + with_claims)
    plain_text = head.format(
        "noclaims", "the same pods without claims"
    ) + "---\n".join(node_docs + without)
    return claims_text, plain_text, label


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--zones", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out-dir", default=".")
    args = parser.parse_args()
    if args.nodes < 1 or args.pods < 0 or args.zones < 1:
        sys.exit("gen-claims-bench.py: --nodes and --zones must be at least 1, --pods at least 0")
    claims_text, plain_text, label = generate(args.nodes, args.pods, args.zones, args.seed)
    os.makedirs(args.out_dir, exist_ok=True)
    for prefix, text in (("claims", claims_text), ("noclaims", plain_text)):
        path = os.path.join(args.out_dir, f"{prefix}-{label}.yaml")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        print(path)


if __name__ == "__main__":
    main()
