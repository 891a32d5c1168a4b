//! Writes a scheduler_perf-style SchedulingBasic scenario to standard output, for
//! `kubesched bench`: nodes with 4 cpu, 32Gi and 110 pods in 10 zones, pending pods
//! asking 100m-500m cpu and 256Mi-1Gi memory, and the core plugin set.
//!
//! ```sh
//! cargo run --release --example generate_scenario -- 50000 100000 > /tmp/big.yaml
//! target/release/kubesched bench /tmp/big.yaml
//! ```
//! The output is deterministic: the same arguments give the same file.

use std::io::{BufWriter, Write};

const CONFIG: &str = "apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins:
    multiPoint:
      enabled:
      - name: PrioritySort
      - name: NodeUnschedulable
      - name: NodeName
      - name: TaintToleration
        weight: 3
      - name: NodeResourcesFit
        weight: 1
      - name: ImageLocality
        weight: 1
      - name: DefaultBinder
      disabled:
      - name: '*'
";

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let parse = |i: usize, default: usize| -> usize {
        args.get(i).map_or(default, |a| {
            a.parse().unwrap_or_else(|_| {
                eprintln!("usage: generate_scenario [NODES] [PODS] (whole numbers), got {a:?}");
                std::process::exit(2)
            })
        })
    };
    let (nodes, pods) = (parse(0, 5000), parse(1, 2000));
    let mut out = BufWriter::new(std::io::stdout().lock());
    writeln!(out, "# SchedulingBasic: {nodes} nodes, {pods} pending pods")?;
    write!(out, "---\n{CONFIG}")?;
    for i in 0..nodes {
        write!(
            out,
            "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: node-{i}\n  labels:\n    kubernetes.io/hostname: node-{i}\n    topology.kubernetes.io/zone: zone-{}\nstatus:\n  allocatable: {{cpu: '4', memory: 32Gi, pods: '110'}}\n  capacity: {{cpu: '4', memory: 32Gi, pods: '110'}}\n",
            i % 10
        )?;
    }
    for i in 0..pods {
        write!(
            out,
            "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: pod-{i}\n  namespace: default\nspec:\n  containers:\n  - name: app\n    image: registry.k8s.io/pause:3.10\n    resources:\n      requests: {{cpu: {}m, memory: {}Mi}}\n",
            100 + (i * 37) % 401,
            256 + (i * 53) % 769
        )?;
    }
    out.flush()
}
