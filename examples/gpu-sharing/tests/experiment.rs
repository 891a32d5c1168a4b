//! The experiment over the shipped openb trace: one seed per policy, each run's per-GPU
//! state checked against an independent count (the GPU milli of the pods the
//! scheduler's snapshot has on each node), and the paper's ranking at the end.
//!
//! The CSVs are in `data/` (see `data/README.md`); `GPU_SHARING_DATA` points elsewhere.
//! Without them the test says `skipped: ...` on stderr (past libtest's capture) and
//! passes.

use std::io::Write as _;
use std::path::PathBuf;

use gpu_sharing::experiment::{Policy, Trace, run_all};

fn skipped(why: &str) {
    let _ = writeln!(std::io::stderr(), "skipped: {why}");
}

fn trace() -> Option<Trace> {
    let dir = std::env::var_os("GPU_SHARING_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data"));
    let nodes = dir.join("openb_node_list_gpu_node.csv");
    let pods = dir.join("openb_pod_list_default.csv");
    let (Ok(n), Ok(p)) = (
        std::fs::read_to_string(&nodes),
        std::fs::read_to_string(&pods),
    ) else {
        skipped(&format!(
            "the openb CSVs are not in {} (put openb_node_list_gpu_node.csv and \
             openb_pod_list_default.csv of alibaba/clusterdata's cluster-trace-gpu-v2023 \
             there, or set GPU_SHARING_DATA)",
            dir.display()
        ));
        return None;
    };
    Some(Trace::load(&n, "nodes.csv", &p, "pods.csv").expect("the trace loads"))
}

#[test]
fn every_policy_keeps_the_gpu_state_in_step_and_fgd_leaves_the_fewest_gpus_unallocated() {
    let Some(trace) = trace() else { return };
    assert_eq!(
        (trace.nodes(), trace.gpus, trace.pods()),
        (1213, 6212, 8152)
    );
    let runs = run_all(&trace, &Policy::ALL, &[42], 1.3).unwrap();
    let mut unallocated = Vec::new();
    for r in &runs {
        assert!(
            r.state_problems.is_empty(),
            "{}: {:?}",
            r.policy.name(),
            r.state_problems
        );
        assert_eq!(r.allocated_milli, r.placed_milli, "{}", r.policy.name());
        // 1.3 × capacity arrives: a point for every percent up to 130.
        let arrived: Vec<u32> = r.points.iter().map(|p| p.arrived).collect();
        assert_eq!(
            arrived,
            (0..=130).collect::<Vec<_>>(),
            "{}",
            r.policy.name()
        );
        let at100 = r.at(100).unwrap();
        unallocated.push((r.policy, 100.0 - at100.allocated));
        // Before the cluster fills, every pod fits whatever the policy.
        assert!(
            (r.at(50).unwrap().allocated - 50.0).abs() < 0.5,
            "{}",
            r.policy.name()
        );
    }
    let of = |p: Policy| unallocated.iter().find(|(q, _)| *q == p).unwrap().1;
    for p in Policy::ALL {
        if p != Policy::Fgd {
            assert!(of(Policy::Fgd) < of(p), "{unallocated:?}");
        }
        if p != Policy::Random {
            assert!(of(Policy::Random) > of(p), "{unallocated:?}");
        }
    }
    assert!(of(Policy::Fgd) < of(Policy::BestFit) && of(Policy::BestFit) < of(Policy::DotProduct));

    // The page of `--html`: both charts, and a row per policy beside the paper's figure.
    let page = gpu_sharing::html::page(&runs);
    assert_eq!(page.matches("<svg ").count(), 2);
    for (p, paper) in gpu_sharing::html::PAPER {
        let u = of(p);
        let row = format!(
            "<tr><td>{}</td><td>1</td><td>{u:.2}</td><td>{paper:.2}</td></tr>",
            p.name()
        );
        assert!(page.contains(&row), "{row}");
    }
}
