//! `--explain` names what stopped each node beside kube-scheduler's reason (which stays
//! word for word): the untolerated taint, the node selector or affinity term the node's
//! labels miss, the host port in use and who holds it, and for each resource the node
//! is short of the pod's request, what is already requested and the allocatable. It
//! also says when equal best totals were split by node order. The JSON Lines of both
//! scenarios are kube-scheduler's (checked with the v1.35 and v1.36 oracles when the
//! files were written) and carry none of this.

mod common;
use common::{data, kubesched, stdout};

fn explain(file: &str, pod: &str) -> String {
    let o = kubesched(&["simulate", &data(file), "--explain", pod]);
    assert_eq!(o.status.code(), Some(0), "{}", common::stderr(&o));
    stdout(&o)
}

#[test]
fn taint_selector_port_and_resources_are_named() {
    assert_eq!(
        explain("explain-filters.yaml", "web"),
        "Pod default/web (scheduler default-scheduler)
  scheduled on free
  tainted  rejected by TaintToleration: node(s) had untolerated taint(s)
             taint dedicated=gpu:NoSchedule is not tolerated by the pod
  hdd      rejected by NodeAffinity: node(s) didn't match Pod's node affinity/selector
             nodeSelector disk=ssd: the node has disk=hdd
  ports    rejected by NodePorts: node(s) didn't have free ports for the requested pod ports
             host port TCP/8080 on 0.0.0.0 is in use on this node by pod infra/proxy
  busy     rejected by NodeResourcesFit: Insufficient cpu; Insufficient memory
             Insufficient cpu: the pod requests 1500m; 3200m of the node's 4 allocatable is requested, 800m free
             Insufficient memory: the pod requests 512Mi; 768Mi of the node's 1Gi allocatable is requested, 256Mi free
  free     feasible (the only one: no scoring)  <- chosen
"
    );
}

#[test]
fn each_required_affinity_term_names_the_requirement_the_node_fails() {
    let text = explain("explain-filters.yaml", "zoned");
    assert!(
        text.contains(
            "  hdd      rejected by NodeAffinity: node(s) didn't match Pod's node affinity/selector
             required node affinity, term 0: zone In (a, c): the node has zone=b
             required node affinity, term 1: zone DoesNotExist: the node has zone=b
"
        ),
        "{text}"
    );
    // Distinct totals: no tie to report.
    assert!(!text.contains("tie:"), "{text}");
}

#[test]
fn a_request_larger_than_the_node_says_preemption_cannot_help() {
    let text = explain("explain-filters.yaml", "huge");
    assert!(
        text.contains(
            "  busy     rejected by NodeResourcesFit: Insufficient cpu
             Insufficient cpu: the pod requests 8; 3200m of the node's 4 allocatable is requested, 800m free (more than the whole node has: preemption cannot help)
"
        ),
        "{text}"
    );
}

#[test]
fn a_tie_between_equal_best_totals_is_marked() {
    assert_eq!(
        explain("explain-tie.yaml", "app"),
        "Pod default/app (scheduler default-scheduler)
  scheduled on a1
  a1     feasible, score 462 = TaintToleration 300 + NodeResourcesFit 87 + DynamicResources 0 + NodeResourcesBalancedAllocation 75 + ImageLocality 0  <- chosen
  a2     feasible, score 462 = TaintToleration 300 + NodeResourcesFit 87 + DynamicResources 0 + NodeResourcesBalancedAllocation 75 + ImageLocality 0
  small  feasible, score 452 = TaintToleration 300 + NodeResourcesFit 81 + DynamicResources 0 + NodeResourcesBalancedAllocation 71 + ImageLocality 0
  tie: 2 nodes share the best total 462 (a1, a2); a1 won as the first of them in node order (kube-scheduler picks one of them at random)
"
    );
}

#[test]
fn the_table_and_the_json_lines_do_not_change() {
    let o = kubesched(&[
        "simulate",
        &data("explain-filters.yaml"),
        "--format",
        "jsonl",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", common::stderr(&o));
    let lines: Vec<serde_json::Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(
        lines[0]["rejected"],
        serde_json::json!({
            "busy": ["Insufficient cpu", "Insufficient memory"],
            "hdd": ["node(s) didn't match Pod's node affinity/selector"],
            "ports": ["node(s) didn't have free ports for the requested pod ports"],
            "tainted": ["node(s) had untolerated taint(s)"],
        })
    );
    for file in ["explain-filters.yaml", "explain-tie.yaml"] {
        for format in ["jsonl", "table"] {
            let o = kubesched(&["simulate", &data(file), "--format", format]);
            let text = stdout(&o);
            for note in ["taint ", "nodeSelector", "host port", "requests", "tie:"] {
                assert!(!text.contains(note), "{file} {format}: {text}");
            }
        }
    }
}
