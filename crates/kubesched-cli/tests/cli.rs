//! The `kubesched` binary end to end: the demo, the output formats, `--explain`, and a
//! one-line error with exit status 2 for every kind of bad input.

use std::path::{Path, PathBuf};

mod common;
use common::{data, kubesched, stderr, stdout, with_stdin};

fn case(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../conformance/cases")
        .join(name)
}

const NODE: &str = "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: '2', memory: 4Gi, pods: '110'}}\n";
const CORE_CONFIG: &str = "apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins:
    multiPoint:
      enabled: [{name: PrioritySort}, {name: NodeResourcesFit}, {name: DefaultBinder}]
      disabled: [{name: '*'}]
";

/// Runs a bad input and checks: exit 2, nothing on stdout, one error line with `needles`.
fn assert_input_error(input: &str, needles: &[&str]) {
    let o = with_stdin(&["simulate", "-", "--format", "jsonl"], input);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "stderr: {err}");
    assert!(
        stdout(&o).is_empty(),
        "printed as if scheduled: {}",
        stdout(&o)
    );
    let lines: Vec<&str> = err.lines().filter(|l| l.contains("error")).collect();
    assert_eq!(lines.len(), 1, "expected one error line, got: {err}");
    for n in needles {
        assert!(lines[0].contains(n), "error {:?} lacks {n:?}", lines[0]);
    }
}

#[test]
fn demo_runs_with_no_file() {
    let o = kubesched(&["simulate"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("default/annotation-default-scheduler"),
        "{out}"
    );
    assert!(out.contains("my-scheduler"), "{out}");
    assert!(out.contains("not ours"), "{out}");
    let o = kubesched(&["simulate", "--format", "jsonl"]);
    let lines: Vec<serde_json::Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    // The control plane's NoSchedule taint keeps both lesson pods off it.
    for l in &lines[..2] {
        assert_ne!(l["node"], "controlplane");
        assert_eq!(
            l["rejected"]["controlplane"][0], "node(s) had untolerated taint(s)",
            "{l}"
        );
    }
    assert_eq!(lines[2]["ignored"], true);
}

/// The demo runs kube-scheduler's default configuration as default-scheduler and the
/// lesson's my-scheduler beside it: the lines are kube-scheduler v1.36.1's (the oracle)
/// for the demo's cluster with two default profiles, default-scheduler and my-scheduler.
#[test]
fn the_demo_is_the_lesson_with_the_real_default_profile() {
    let o = kubesched(&["simulate", "--format", "jsonl"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let expected = [
        r#"{"node":"node01","pod":"default/annotation-default-scheduler","rejected":{"controlplane":["node(s) had untolerated taint(s)"]},"scheduler":"default-scheduler","scores":{"node01":{"DynamicResources":0,"ImageLocality":0,"NodeResourcesFit":97,"TaintToleration":300},"node02":{"DynamicResources":0,"ImageLocality":0,"NodeResourcesFit":78,"TaintToleration":300}}}"#,
        r#"{"node":"node01","pod":"default/annotation-second-scheduler","rejected":{"controlplane":["node(s) had untolerated taint(s)"]},"scheduler":"my-scheduler","scores":{"node01":{"DynamicResources":0,"ImageLocality":0,"NodeResourcesFit":95,"TaintToleration":300},"node02":{"DynamicResources":0,"ImageLocality":0,"NodeResourcesFit":78,"TaintToleration":300}}}"#,
        r#"{"ignored":true,"pod":"default/annotation-missing-scheduler","scheduler":"scheduler-that-is-not-running"}"#,
    ];
    assert_eq!(stdout(&o).lines().collect::<Vec<_>>(), expected);
    let err = stderr(&o);
    assert!(
        err.contains("schedulers side by side: scheduler default-scheduler: kube-scheduler's default configuration; scheduler my-scheduler: <built-in demo> my-scheduler-config.yaml"),
        "{err}"
    );
    assert!(err.contains("--show-scenario prints them"), "{err}");
    // The table says which scheduler placed each pod.
    let table = stdout(&kubesched(&["simulate"]));
    assert!(
        table.starts_with("# schedulers side by side: scheduler default-scheduler: kube-scheduler's default configuration; scheduler my-scheduler: "),
        "{table}"
    );
    assert!(
        table.contains(
            "default/annotation-second-scheduler   my-scheduler                   node01"
        ),
        "{table}"
    );
}

#[test]
fn show_scenario_prints_the_files_before_the_answer() {
    let o = kubesched(&["simulate", "--show-scenario"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let cluster = out
        .find("# --- <built-in demo>\n")
        .expect("the demo's cluster");
    let mine = out
        .find("# --- <built-in demo> my-scheduler-config.yaml\n")
        .expect("the lesson's my-scheduler");
    let table = out.find("POD ").expect("the table");
    assert!(cluster < mine && mine < table, "{out}");
    assert!(out.contains("  - schedulerName: my-scheduler\n"), "{out}");
    assert!(out.contains("name: annotation-second-scheduler\n"), "{out}");
    assert!(!stderr(&o).contains("--show-scenario prints them"));
    // A file is shown as it was read, and the --config file after it.
    let cluster = data("whatif-cluster.yaml");
    let config = data("whatif-config.yaml");
    let o = kubesched(&["simulate", &cluster, "--config", &config, "--show-scenario"]);
    let out = stdout(&o);
    let text = std::fs::read_to_string(&cluster).unwrap();
    assert!(
        out.starts_with(&format!("# --- {cluster}\n{text}")),
        "{out}"
    );
    assert!(out.contains(&format!("# --- {config}\n")), "{out}");
}

#[test]
fn jsonl_matches_the_expected_file() {
    let path = case("two-profiles-basic.yaml");
    let o = kubesched(&["simulate", path.to_str().unwrap(), "--format", "jsonl"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let expected = std::fs::read_to_string(case("two-profiles-basic.expected.jsonl")).unwrap();
    let parse = |t: &str| -> Vec<serde_json::Value> {
        t.lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    assert_eq!(parse(&stdout(&o)), parse(&expected));
}

#[test]
fn explain_names_the_rejecting_filter_and_the_scores() {
    let path = case("all-rejected-mixed-reasons.yaml");
    let jsonl = stdout(&kubesched(&[
        "simulate",
        path.to_str().unwrap(),
        "--format",
        "jsonl",
    ]));
    let first: serde_json::Value = serde_json::from_str(jsonl.lines().next().unwrap()).unwrap();
    let pod = first["pod"].as_str().unwrap();
    let o = kubesched(&["simulate", path.to_str().unwrap(), "--explain", pod]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains(&format!("Pod {pod}")), "{out}");
    assert!(out.contains("rejected by "), "{out}");
    let o = kubesched(&[
        "simulate",
        path.to_str().unwrap(),
        "--explain",
        "nope/missing",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("nope/missing"));
}

#[test]
fn explain_shows_scores_and_the_choice() {
    let o = kubesched(&[
        "simulate",
        "--explain",
        "default/annotation-default-scheduler",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("<- chosen"), "{out}");
    assert!(out.contains("TaintToleration"), "{out}");
    assert!(out.contains("rejected by TaintToleration"), "{out}");
}

#[test]
fn missing_file() {
    let o = kubesched(&["simulate", "no/such/file.yaml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no/such/file.yaml"), "{}", stderr(&o));
    assert!(stdout(&o).is_empty());
}

#[test]
fn yaml_that_does_not_parse_gives_line_and_column() {
    assert_input_error(
        &format!("{NODE}---\nkind: Pod\nmetadata: {{name: [x\n"),
        &["<stdin>:", ":"],
    );
}

#[test]
fn bad_quantities_name_the_object_and_field() {
    for q in ["2Gb", "1.5.0"] {
        let pod = format!(
            "{NODE}---\napiVersion: v1\nkind: Pod\nmetadata: {{name: web}}\nspec:\n  containers:\n  - name: app\n    image: nginx\n    resources: {{requests: {{memory: '{q}'}}}}\n"
        );
        assert_input_error(
            &pod,
            &[
                "<stdin>",
                "Pod default/web",
                "spec.containers[0].resources.requests.memory",
                q,
            ],
        );
    }
}

#[test]
fn bound_pod_on_a_missing_node_is_a_warning_not_an_error() {
    // FORMAT.md rule 1: such a pod uses no node. It is reported, and the run goes on.
    let input = format!(
        "{CORE_CONFIG}---\n{NODE}---\napiVersion: v1\nkind: Pod\nmetadata: {{name: ghost}}\nspec: {{nodeName: gone, containers: [{{name: a, image: x}}]}}\n---\napiVersion: v1\nkind: Pod\nmetadata: {{name: new}}\nspec: {{containers: [{{name: a, image: x}}]}}\n"
    );
    let o = with_stdin(&["simulate", "-", "--format", "jsonl"], &input);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("warning") && err.contains("default/ghost") && err.contains("gone"),
        "{err}"
    );
    assert!(stdout(&o).contains("\"node\":\"n1\""));
}

#[test]
fn duplicate_node_names() {
    assert_input_error(&format!("{NODE}---\n{NODE}"), &["Node n1", "metadata.name"]);
}

#[test]
fn unknown_plugin_suggests_the_close_name() {
    let config = CORE_CONFIG.replace("{name: NodeResourcesFit}", "{name: NodeResourceFit}");
    assert_input_error(
        &format!("{config}---\n{NODE}"),
        &["NodeResourceFit", "does not exist", "NodeResourcesFit"],
    );
}

#[test]
fn duplicate_profile() {
    let config = format!("{CORE_CONFIG}- schedulerName: default-scheduler\n");
    assert_input_error(
        &format!("{config}---\n{NODE}"),
        &["profiles[1].schedulerName", "default-scheduler"],
    );
}

#[test]
fn typo_in_the_configuration_suggests_the_field() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/bad-config-typo.yaml");
    let o = kubesched(&["simulate", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("bad-config-typo.yaml"), "{err}");
    assert!(err.contains("profiles[0].schdulerName"), "{err}");
    assert!(err.contains("did you mean schedulerName?"), "{err}");
}

#[test]
fn typo_in_a_pod_suggests_the_field() {
    let pod = format!(
        "{NODE}---\napiVersion: v1\nkind: Pod\nmetadata: {{name: web}}\nspec:\n  schdulerName: my-scheduler\n  containers: [{{name: a, image: x}}]\n"
    );
    assert_input_error(
        &pod,
        &["Pod default/web", "spec.schdulerName", "schedulerName"],
    );
}

#[test]
fn args_for_the_wrong_plugin() {
    let config = format!(
        "{CORE_CONFIG}  pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      hardPodAffinityWeight: 2\n"
    );
    assert_input_error(
        &format!("{config}---\n{NODE}"),
        &[
            "pluginConfig[0].args.hardPodAffinityWeight",
            "unknown field",
        ],
    );
    let config = format!(
        "{CORE_CONFIG}  pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      kind: InterPodAffinityArgs\n"
    );
    assert_input_error(
        &format!("{config}---\n{NODE}"),
        &["InterPodAffinityArgs", "NodeResourcesFit"],
    );
}

const PREEMPTION_SCENARIO: &str = "apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins:
    multiPoint:
      enabled: [{name: PrioritySort}, {name: NodeResourcesFit}, {name: DefaultPreemption}, {name: DefaultBinder}]
      disabled: [{name: '*'}]
---
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: '2', memory: 4Gi, pods: '110'}}
---
apiVersion: v1
kind: Node
metadata: {name: n2}
status: {allocatable: {cpu: '2', memory: 4Gi, pods: '110'}}
---
apiVersion: v1
kind: Pod
metadata: {name: batch-old}
spec: {priority: 10, nodeName: n1, containers: [{name: app, image: busybox, resources: {requests: {cpu: '2'}}}]}
status: {phase: Running, startTime: '2025-03-01T08:00:00Z'}
---
apiVersion: v1
kind: Pod
metadata: {name: batch-new}
spec: {priority: 10, nodeName: n2, containers: [{name: app, image: busybox, resources: {requests: {cpu: '2'}}}]}
status: {phase: Running, startTime: '2025-03-01T09:00:00Z'}
---
apiVersion: v1
kind: Pod
metadata: {name: web}
spec: {priority: 1000, containers: [{name: app, image: nginx, resources: {requests: {cpu: '1'}}}]}
";

#[test]
fn preemption_nominates_evicts_and_retries() {
    let o = with_stdin(
        &["simulate", "-", "--preemption", "--format", "jsonl"],
        PREEMPTION_SCENARIO,
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let lines: Vec<serde_json::Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{}", stdout(&o));
    // Both nodes need one victim of priority 10; the later start time picks n2.
    assert_eq!(lines[0]["node"], serde_json::Value::Null);
    assert_eq!(
        lines[0]["message"],
        "0/2 nodes are available: 2 Insufficient cpu."
    );
    assert_eq!(lines[0]["nominated"], "n2");
    assert_eq!(
        lines[0]["victims"],
        serde_json::json!(["default/batch-new"])
    );
    assert_eq!(lines[1]["pod"], "default/web");
    assert_eq!(lines[1]["node"], "n2");
    assert!(lines[1].get("nominated").is_none());

    let o = with_stdin(
        &["simulate", "-", "--preemption", "--explain", "default/web"],
        PREEMPTION_SCENARIO,
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    for needle in [
        "preemption nominated n2; victims: default/batch-new",
        "n1: evict default/batch-old",
        "n2: evict default/batch-new",
        "n2 won: latest start time of its highest-priority victims",
        "scheduled on n2",
    ] {
        assert!(out.contains(needle), "missing {needle:?} in:\n{out}");
    }
}

#[test]
fn without_preemption_flag_nothing_is_evicted() {
    let o = with_stdin(&["simulate", "-", "--format", "jsonl"], PREEMPTION_SCENARIO);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert_eq!(out.lines().count(), 1, "{out}");
    assert!(!out.contains("nominated"), "{out}");
    assert!(
        out.contains("\"message\":\"0/2 nodes are available: 2 Insufficient cpu.\""),
        "{out}"
    );
}

/// Issue 14: each reproducer is refused with exit 2 and exactly one line on stderr that
/// names the object and the field.
#[test]
fn issue_14_inputs_are_one_line_errors() {
    let pod = |spec: &str| {
        format!("{NODE}---\napiVersion: v1\nkind: Pod\nmetadata: {{name: p1}}\nspec: {spec}\n")
    };
    let cases = [
        (
            pod("{priority: .inf, containers: [{name: c}]}"),
            vec!["Pod default/p1", "spec.priority", ".inf"],
        ),
        (
            pod("{nodeSelector: {a: .nan}, containers: [{name: c}]}"),
            vec!["spec.nodeSelector.a", ".nan"],
        ),
        (
            pod("{containers: [{name: c, resources: {limits: {memory: .inf}}}]}"),
            vec!["spec.containers[0].resources.limits.memory"],
        ),
        (
            pod("{priority: 18446744073709551616, containers: [{name: c}]}"),
            vec!["Pod default/p1", "spec.priority", "out of range"],
        ),
        (
            pod("{containers: []}"),
            vec!["Pod default/p1", "spec.containers: Required value"],
        ),
        (
            format!("{NODE}---\napiVersion: v1\nkind: Pod\nmetadata: {{name: p1}}\n"),
            vec!["spec.containers: Required value"],
        ),
        (
            format!(
                "{NODE}---\napiVersion: v1\nkind: Pod\nmetadata: {{name: p1, namespace: \"a\\nb\"}}\nspec: {{containers: [{{name: c}}]}}\n"
            ),
            vec!["metadata.namespace", "RFC 1123 label"],
        ),
        (
            format!("{NODE}---\napiVersion: v1\nkind: \"Po\\nd\"\nmetadata: {{name: p1}}\n"),
            vec!["kind"],
        ),
        (
            format!(
                "{NODE}---\napiVersion: v1\nkind: Pod\nmetadata: {{name: p1}}\nspec: {{\"x\\ny\": 1, containers: [{{name: c}}]}}\n"
            ),
            vec!["spec.\"x\\ny\": unknown field"],
        ),
        (
            format!(
                "{NODE}---\napiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfig\n"
            ),
            vec!["unknown kind \"KubeSchedulerConfig\", did you mean KubeSchedulerConfiguration?"],
        ),
        (
            format!("{NODE}---\napiVersion: apps/v1\nkind: Deploymnet\nmetadata: {{name: web}}\n"),
            vec!["did you mean Deployment?"],
        ),
    ];
    for (input, needles) in cases {
        let o = with_stdin(&["simulate", "-"], &input);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{input}\nstderr: {err}");
        assert!(stdout(&o).is_empty(), "{}", stdout(&o));
        assert_eq!(err.lines().count(), 1, "{input}\nnot one line: {err}");
        for n in needles {
            assert!(err.contains(n), "{err:?} lacks {n:?}");
        }
    }
}

/// Issue 14, item 6: a node with capacity but no allocatable is read as the API server
/// stores it (allocatable = capacity), and requests default to limits.
#[test]
fn objects_are_read_as_the_api_server_stores_them() {
    let input = "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {capacity: {cpu: '2', memory: 4Gi, pods: '110'}}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: small}\nspec: {containers: [{name: c, resources: {requests: {cpu: 500m}}}]}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: big}\nspec: {containers: [{name: c, resources: {limits: {cpu: '3'}}}]}\n";
    let o = with_stdin(&["simulate", "-", "--format", "jsonl"], input);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let lines: Vec<serde_json::Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["pod"], "default/small");
    assert_eq!(lines[0]["node"], "n1");
    // 3 CPUs of limits are 3 CPUs of requests: more than the node has.
    assert_eq!(lines[1]["pod"], "default/big");
    assert!(lines[1]["node"].is_null(), "{}", lines[1]);
}

const WFFC_CLASS: &str = "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: local}\nprovisioner: kubernetes.io/no-provisioner\nvolumeBindingMode: WaitForFirstConsumer\n";

#[test]
fn a_pv_with_an_invalid_node_affinity_is_an_input_error() {
    let pv = "apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: pv1}\nspec:\n  capacity: {storage: 1Gi}\n  accessModes: [ReadWriteOnce]\n  storageClassName: local\n  local: {path: /mnt}\n  nodeAffinity:\n    required:\n      nodeSelectorTerms:\n      - matchExpressions:\n        - {key: kubernetes.io/hostname, operator: Equals, values: [n1]}\n";
    assert_input_error(
        &format!("{NODE}---\n{WFFC_CLASS}---\n{pv}"),
        &[
            "<stdin>",
            "PersistentVolume pv1",
            "spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].operator",
            "Equals",
        ],
    );
}

#[test]
fn a_claim_with_a_bad_quantity_is_an_input_error() {
    let claim = "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data}\nspec:\n  accessModes: [ReadWriteOnce]\n  storageClassName: local\n  resources: {requests: {storage: 10GB}}\n";
    assert_input_error(
        &format!("{NODE}---\n{WFFC_CLASS}---\n{claim}"),
        &[
            "PersistentVolumeClaim default/data",
            "spec.resources.requests.storage",
            "10GB",
        ],
    );
}

#[test]
fn a_storage_class_with_an_unknown_binding_mode_is_an_input_error() {
    let class = "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: lazy}\nprovisioner: example.com/csi\nvolumeBindingMode: Lazy\n";
    assert_input_error(
        &format!("{NODE}---\n{class}"),
        &["StorageClass lazy", "volumeBindingMode", "Lazy"],
    );
}

#[test]
fn a_typo_in_a_pv_suggests_the_field() {
    let pv = "apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: pv1}\nspec:\n  capacity: {storage: 1Gi}\n  storageClasName: local\n";
    assert_input_error(
        &format!("{NODE}---\n{pv}"),
        &[
            "PersistentVolume pv1",
            "spec.storageClasName",
            "storageClassName",
        ],
    );
}

#[test]
fn a_claim_of_a_missing_class_is_a_warning_and_counts_as_immediate() {
    let claim = "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data}\nspec:\n  accessModes: [ReadWriteOnce]\n  storageClassName: no-such-class\n  resources: {requests: {storage: 1Gi}}\n";
    let pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: db}\nspec:\n  containers: [{name: a, image: x}]\n  volumes: [{name: d, persistentVolumeClaim: {claimName: data}}]\n";
    let o = with_stdin(
        &["simulate", "-", "--format", "jsonl"],
        &format!("{NODE}---\n{claim}---\n{pod}"),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("PersistentVolumeClaim default/data")
            && err.contains("spec.storageClassName")
            && err.contains("no-such-class"),
        "{err}"
    );
    assert!(
        stdout(&o).contains("pod has unbound immediate PersistentVolumeClaims"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn a_wffc_claim_follows_its_local_pv() {
    let pv = "apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: pv2}\nspec:\n  capacity: {storage: 5Gi}\n  accessModes: [ReadWriteOnce]\n  storageClassName: local\n  local: {path: /mnt}\n  nodeAffinity:\n    required:\n      nodeSelectorTerms:\n      - matchExpressions:\n        - {key: kubernetes.io/hostname, operator: In, values: [n2]}\nstatus: {phase: Available}\n";
    let n2 = NODE.replace("n1", "n2");
    let n2 = n2.replace(
        "metadata: {name: n2}",
        "metadata: {name: n2, labels: {kubernetes.io/hostname: n2}}",
    );
    let claim = "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data}\nspec:\n  accessModes: [ReadWriteOnce]\n  storageClassName: local\n  resources: {requests: {storage: 1Gi}}\n";
    let pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: db}\nspec:\n  containers: [{name: a, image: x}]\n  volumes: [{name: d, persistentVolumeClaim: {claimName: data}}]\n";
    let o = with_stdin(
        &["simulate", "-", "--format", "jsonl"],
        &format!("{NODE}---\n{n2}---\n{WFFC_CLASS}---\n{pv}---\n{claim}---\n{pod}"),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("\"node\":\"n2\""), "{out}");
    assert!(
        out.contains("node(s) didn't find available persistent volumes to bind"),
        "{out}"
    );
}

#[test]
fn a_statefulset_gets_its_claims_and_each_replica_its_volume() {
    // The worked example of docs/simulating-your-cluster.md.
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let cluster = data.join("volumes-cluster.yaml");
    let sts = data.join("volumes-statefulset.yaml");
    let o = kubesched(&[
        "simulate",
        cluster.to_str().unwrap(),
        "--add",
        sts.to_str().unwrap(),
        "--format",
        "jsonl",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let nodes: Vec<serde_json::Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["node"].clone())
        .collect();
    assert_eq!(
        nodes,
        [
            serde_json::json!("a1"),
            serde_json::json!("b1"),
            serde_json::json!("a2"),
            serde_json::Value::Null
        ]
    );
    assert!(
        stdout(&o).contains("3 node(s) didn't find available persistent volumes to bind"),
        "{}",
        stdout(&o)
    );
}

const GPU_CLASS: &str = "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: gpu}\nspec:\n  selectors:\n  - cel: {expression: \"device.driver == 'gpu.example.com'\"}\n";
const GPU_SLICE: &str = "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: n1-gpus}\nspec:\n  driver: gpu.example.com\n  nodeName: n1\n  pool: {name: n1, generation: 1, resourceSliceCount: 1}\n  devices:\n  - name: gpu-0\n    capacity:\n      memory: {value: 80Gi}\n";

#[test]
fn a_resource_slice_without_a_driver_is_an_input_error() {
    let slice = GPU_SLICE.replace("  driver: gpu.example.com\n", "");
    assert_input_error(
        &format!("{NODE}---\n{GPU_CLASS}---\n{slice}"),
        &["<stdin>", "ResourceSlice n1-gpus", "spec.driver", "missing"],
    );
    let slice = GPU_SLICE.replace("driver: gpu.example.com", "driver: ''");
    assert_input_error(
        &format!("{NODE}---\n{GPU_CLASS}---\n{slice}"),
        &["ResourceSlice n1-gpus", "spec.driver", "missing"],
    );
}

#[test]
fn a_malformed_cel_selector_is_an_input_error() {
    let class = GPU_CLASS.replace("device.driver == 'gpu.example.com'", "device.driver ==");
    assert_input_error(
        &format!("{NODE}---\n{class}"),
        &[
            "<stdin>",
            "DeviceClass gpu",
            "spec.selectors[0].cel.expression",
            "compilation failed",
        ],
    );
    let claim = "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: big-gpu, namespace: ml}\nspec:\n  devices:\n    requests:\n    - name: gpu\n      exactly:\n        deviceClassName: gpu\n        selectors:\n        - cel: {expression: \"device.capacity['gpu.example.com'].memory.compareTo(quantity('40Gi') >= 0\"}\n";
    assert_input_error(
        &format!("{NODE}---\n{GPU_CLASS}---\n{claim}"),
        &[
            "ResourceClaim ml/big-gpu",
            "spec.devices.requests[0].exactly.selectors[0].cel.expression",
            "compilation failed",
        ],
    );
}

#[test]
fn quantities_of_storage_and_devices_that_do_not_parse_are_input_errors() {
    let slice = GPU_SLICE.replace("value: 80Gi", "value: 80 GiB");
    assert_input_error(
        &format!("{NODE}---\n{GPU_CLASS}---\n{slice}"),
        &[
            "ResourceSlice n1-gpus",
            "spec.devices[0].capacity.memory.value",
            "80 GiB",
        ],
    );
    let capacity = "apiVersion: storage.k8s.io/v1\nkind: CSIStorageCapacity\nmetadata: {name: fast-a, namespace: kube-system}\nstorageClassName: fast\ncapacity: 10Tb\n";
    assert_input_error(
        &format!("{NODE}---\n{capacity}"),
        &["CSIStorageCapacity kube-system/fast-a", "capacity", "10Tb"],
    );
    let pv = "apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: pv1}\nspec:\n  capacity: {storage: ten}\n";
    assert_input_error(
        &format!("{NODE}---\n{pv}"),
        &["PersistentVolume pv1", "spec.capacity.storage", "ten"],
    );
}

/// A claim naming a DeviceClass that does not exist is not malformed: kube-scheduler
/// (the oracles of v1.35.4 and v1.36) rejects the pod with "request gpu: device class nosuch does not
/// exist", and so does kubesched, after a warning naming the file, the claim and the
/// field.
#[test]
fn a_resource_claim_of_a_missing_device_class_is_a_scheduling_outcome() {
    let claim = "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: c}\nspec:\n  devices:\n    requests:\n    - name: gpu\n      exactly: {deviceClassName: nosuch}\n";
    let pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, image: x}]\n  resourceClaims: [{name: g, resourceClaimName: c}]\n";
    let o = with_stdin(
        &["simulate", "-", "--format", "jsonl"],
        &format!("{NODE}---\n{claim}---\n{pod}"),
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "{\"message\":\"0/1 nodes are available: request gpu: device class nosuch does not exist.\",\"node\":null,\"pod\":\"default/p\",\"rejected\":{\"n1\":[\"request gpu: device class nosuch does not exist\"]},\"scheduler\":\"default-scheduler\",\"scores\":{}}\n"
    );
    assert_eq!(
        stderr(&o),
        "kubesched: warning: <stdin>: ResourceClaim default/c: spec.devices.requests[0]: device class \"nosuch\" is not in the scenario; pods using the claim cannot be scheduled\n\
         kubesched: note: kube-scheduler v1.36.1 behaviour (the default)\n"
    );
}

/// Pods in runs of a few shapes over a few nodes: exact incremental scheduling keeps
/// their verdicts, so how much memory it may keep must change nothing of the answer.
fn repeated_shapes_scenario() -> String {
    let mut yaml = String::new();
    for n in 0..12 {
        yaml += &format!(
            "---\napiVersion: v1\nkind: Node\nmetadata: {{name: node-{n:02}, labels: {{kubernetes.io/hostname: node-{n:02}}}}}\nstatus: {{allocatable: {{cpu: '{}', memory: 8Gi, pods: '110'}}}}\n",
            2 + n % 3
        );
    }
    for p in 0..40 {
        let cpu = [100, 250, 400][p % 3];
        yaml += &format!(
            "---\napiVersion: v1\nkind: Pod\nmetadata: {{name: pod-{p:02}, namespace: default}}\nspec:\n  containers:\n  - name: app\n    image: nginx\n    resources: {{requests: {{cpu: {cpu}m, memory: 256Mi}}}}\n"
        );
    }
    yaml
}

#[test]
fn cache_memory_changes_no_answer_and_zero_turns_the_cache_off() {
    let scenario = repeated_shapes_scenario();
    let answer = |extra: &[&str]| {
        let mut args = vec!["simulate", "-", "--format", "jsonl"];
        args.extend_from_slice(extra);
        let o = with_stdin(&args, &scenario);
        assert!(o.status.success(), "{extra:?}: {}", stderr(&o));
        stdout(&o)
    };
    let default = answer(&[]);
    assert_eq!(default.lines().count(), 40);
    for size in ["0", "1", "64Ki", "1Gi"] {
        assert_eq!(
            answer(&["--cache-memory", size]),
            default,
            "--cache-memory {size}"
        );
    }
    // bench reports what the cache kept: nothing with 0.
    let dir = std::env::temp_dir().join(format!("kubesched-cache-memory-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("shapes.yaml");
    std::fs::write(&file, &scenario).unwrap();
    let bench = |size: &str| {
        let o = kubesched(&[
            "bench",
            "--mode",
            "exact",
            "--cache-memory",
            size,
            file.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        stdout(&o)
    };
    assert!(!bench("0").contains("incremental:"), "{}", bench("0"));
    let kept = bench("1Gi");
    assert!(
        kept.contains("incremental: ") && !kept.contains("incremental: 0 of"),
        "{kept}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn cache_memory_errors_name_the_flag() {
    let o = kubesched(&["simulate", "--cache-memory", "512MB"]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains("--cache-memory") && err.contains("such as 512Mi"),
        "{err}"
    );
    let o = kubesched(&["simulate", "--cache-memory=-1Gi"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("negative"), "{}", stderr(&o));
    let o = kubesched(&[
        "bench",
        "--mode",
        "upstream",
        "--cache-memory",
        "1Gi",
        "missing.yaml",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("--cache-memory: only --mode exact"), "{err}");
}
