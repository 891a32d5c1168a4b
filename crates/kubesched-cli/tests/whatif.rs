//! `kubesched simulate --config/--add`, `kubesched capacity` and `kubesched rollout` end
//! to end, on the worked examples of docs/simulating-your-cluster.md (answers computed
//! by hand there), and their bad-input errors (one line, exit status 2).

use std::process::Output;

use serde_json::Value;

mod common;
use common::{data, kubesched, rollout_answer, stderr, stdout};

fn write(name: &str, text: &str) -> String {
    let dir = std::env::temp_dir().join(format!("kubesched-whatif-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write");
    path.to_string_lossy().into_owned()
}

/// Exit 2, nothing on stdout, one error line containing every needle.
fn assert_error(o: &Output, needles: &[&str]) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "stderr: {err}");
    assert!(stdout(o).is_empty(), "stdout: {}", stdout(o));
    let lines: Vec<&str> = err.lines().filter(|l| l.contains("error:")).collect();
    assert_eq!(lines.len(), 1, "{err}");
    for n in needles {
        assert!(lines[0].contains(n), "{:?} lacks {n:?}", lines[0]);
    }
}

#[test]
fn capacity_worked_example() {
    let o = kubesched(&[
        "capacity",
        &data("whatif-worker-pod.yaml"),
        &data("whatif-cluster.yaml"),
        "--format",
        "jsonl",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(stdout(&o).trim()).expect("json");
    // n1: 4 cpu - 1 (web-old-a) - 2 (db) = 1 cpu: 2 copies of 500m; n2: 3 cpu: 6
    // copies; n3 is the tainted control plane.
    assert_eq!(v["count"], 8);
    assert_eq!(v["nodes"], serde_json::json!({"n1": 2, "n2": 6, "n3": 0}));
    assert_eq!(
        v["stop"]["message"],
        "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu."
    );
    assert_eq!(
        v["stop"]["plugins"]["NodeResourcesFit"]["nodes"],
        serde_json::json!(["n1", "n2"])
    );
    assert_eq!(
        v["stop"]["plugins"]["TaintToleration"]["nodes"],
        serde_json::json!(["n3"])
    );
    // The ConfigMap of the dump is noted and ignored.
    assert!(stderr(&o).contains("ConfigMap ignored"), "{}", stderr(&o));

    let text = stdout(&kubesched(&[
        "capacity",
        &data("whatif-worker-pod.yaml"),
        &data("whatif-cluster.yaml"),
    ]));
    assert!(
        text.contains("8 more copies of default/worker fit"),
        "{text}"
    );
    assert!(text.contains("Copy 9 does not fit"), "{text}");

    let limited = kubesched(&[
        "capacity",
        &data("whatif-worker-pod.yaml"),
        &data("whatif-cluster.yaml"),
        "--max-limit",
        "3",
        "--format",
        "jsonl",
    ]);
    let v: Value = serde_json::from_str(stdout(&limited).trim()).expect("json");
    assert_eq!(v["count"], 3);
    assert_eq!(v["stop"]["reason"], "LimitReached");
}

#[test]
fn rollout_worked_examples() {
    // maxSurge 1, maxUnavailable 0, new pods of 2 cpu: completes in 4 steps.
    // With --detail none each attempt is a line of its own, before its step's line.
    let o = kubesched(&[
        "rollout",
        &data("whatif-web-2cpu.yaml"),
        &data("whatif-cluster.yaml"),
        "--format",
        "jsonl",
        "--detail",
        "none",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = rollout_answer(&stdout(&o));
    assert_eq!(v["result"], "Complete");
    let steps = v["steps"].as_array().expect("steps");
    assert_eq!(steps.len(), 4);
    assert_eq!(steps[0]["attempts"][0]["node"], "n2");
    assert_eq!(steps[0]["scheduled"], serde_json::json!({"n2": 1}));
    assert_eq!(steps[1]["deleted"][0]["pod"], "default/web-old-b");
    assert_eq!(steps[2]["attempts"][0]["node"], "n2");
    assert_eq!(steps[3]["deleted"][0]["pod"], "default/web-old-a");
    // The default, summary, has the same steps without a line per pod.
    let o = kubesched(&[
        "rollout",
        &data("whatif-web-2cpu.yaml"),
        &data("whatif-cluster.yaml"),
        "--format",
        "jsonl",
    ]);
    let summary = rollout_answer(&stdout(&o));
    for (s, full) in summary["steps"].as_array().unwrap().iter().zip(steps) {
        assert_eq!(s["attempts"], serde_json::json!([]));
        let mut s = s.clone();
        s["attempts"] = full["attempts"].clone();
        assert_eq!(&s, full);
    }

    // New pods of 3 cpu: the second one finds no room, and with maxUnavailable 0 the
    // last old pod is never deleted: stalls at step 4, exit status 1.
    let o = kubesched(&[
        "rollout",
        &data("whatif-web-3cpu.yaml"),
        &data("whatif-cluster.yaml"),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains("Rollout stalls at step 4: 1 old pod(s) left, 1 of 2 new pod(s) running"),
        "{text}"
    );
    assert!(text.contains("2 Insufficient cpu."), "{text}");

    // Recreate: both old pods go first; the second new pod still does not fit.
    let o = kubesched(&[
        "rollout",
        &data("whatif-web-recreate.yaml"),
        &data("whatif-cluster.yaml"),
        "--format",
        "jsonl",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let v = rollout_answer(&stdout(&o));
    assert_eq!(v["steps"][0]["deleted"].as_array().map(Vec::len), Some(2));
    assert_eq!(v["steps"][1]["created"], 2);
    assert_eq!(v["steps"][1]["attempted"], 2);
    // The second new pod's FailedScheduling message, counted.
    let pending = &v["steps"][1]["pending"];
    assert_eq!(pending.as_array().map(Vec::len), Some(1), "{pending}");
    assert_eq!(pending[0]["pods"], 1);
    assert!(
        pending[0]["message"]
            .as_str()
            .unwrap()
            .starts_with("0/3 nodes are available: "),
        "{pending}"
    );
    assert_eq!(v["result"], "Stalled");
}

#[test]
fn simulate_add_expands_a_deployment() {
    let o = kubesched(&[
        "simulate",
        &data("whatif-cluster.yaml"),
        "--add",
        &data("whatif-web-2cpu.yaml"),
        "--format",
        "jsonl",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let lines: Vec<Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    assert_eq!(lines.len(), 2);
    let name = lines[0]["pod"].as_str().expect("pod");
    assert!(name.starts_with("default/web-"), "{name}");
    assert_eq!(name.len(), "default/web-".len() + 10 + 1 + 5, "{name}");
    assert_eq!(lines[0]["node"], "n2");
    assert_eq!(lines[1]["node"], Value::Null);
}

#[test]
fn simulate_config_replaces_the_scenarios() {
    let o = kubesched(&[
        "simulate",
        &data("whatif-cluster.yaml"),
        "--add",
        &data("whatif-worker-pod.yaml"),
        "--config",
        &data("whatif-config.yaml"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.starts_with("# configuration: "), "{out}");
    assert!(out.contains("whatif-config.yaml"), "{out}");
    assert!(
        stderr(&o).contains("note: configuration: "),
        "{}",
        stderr(&o)
    );
    // Without TaintToleration in the profile, the tainted n3 is a candidate too.
    let o = kubesched(&[
        "simulate",
        &data("whatif-cluster.yaml"),
        "--add",
        &data("whatif-worker-pod.yaml"),
        "--config",
        &data("whatif-config.yaml"),
        "--format",
        "jsonl",
    ]);
    let v: Value = serde_json::from_str(stdout(&o).lines().next().unwrap_or("")).expect("json");
    assert!(v["scores"].get("n3").is_some(), "{v}");
}

#[test]
fn simulate_config_reads_the_lessons_config_map() {
    let repo = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let o = kubesched(&[
        "simulate",
        &data("whatif-cluster.yaml"),
        "--add",
        &format!("{repo}/deploy/example-pods.yaml"),
        "--config",
        &format!("{repo}/deploy/configmap.yaml"),
        "--format",
        "jsonl",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("note: configuration: ") && stderr(&o).contains("configmap.yaml"),
        "{}",
        stderr(&o)
    );
    let lines: Vec<Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    let placed = lines
        .iter()
        .find(|l| l["pod"] == "default/annotation-second-scheduler")
        .expect("my-scheduler's pod");
    assert!(placed["node"].is_string(), "{placed}");
}

/// The lesson: my-scheduler (deploy/configmap.yaml) runs beside kube-scheduler, and
/// each of the lesson's two pods (deploy/example-pods.yaml) goes to its own scheduler.
#[test]
fn simulate_runs_the_lessons_two_schedulers_side_by_side() {
    let repo = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let config_map = format!("{repo}/deploy/configmap.yaml");
    let o = kubesched(&[
        "simulate",
        &data("whatif-cluster.yaml"),
        "--add",
        &format!("{repo}/deploy/example-pods.yaml"),
        "--scheduler",
        &config_map,
        "--format",
        "jsonl",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("note: schedulers side by side: scheduler default-scheduler: kube-scheduler's default configuration; scheduler my-scheduler: "),
        "{err}"
    );
    assert!(
        err.contains("ConfigMap kube-system/my-scheduler-config, data[my-scheduler-config.yaml]"),
        "{err}"
    );
    let lines: Vec<Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    for (pod, scheduler) in [
        ("default/annotation-default-scheduler", "default-scheduler"),
        ("default/annotation-second-scheduler", "my-scheduler"),
    ] {
        let line = lines
            .iter()
            .find(|l| l["pod"] == pod)
            .unwrap_or_else(|| panic!("{pod} missing: {lines:?}"));
        assert_eq!(line["scheduler"], scheduler, "{line}");
        assert!(line["node"].is_string(), "{line}");
        // Both profiles have TaintToleration: the tainted control plane is out.
        assert!(line["rejected"].get("n3").is_some(), "{line}");
    }

    // The same scheduler name from two files is one line naming both.
    assert_error(
        &kubesched(&[
            "simulate",
            &data("whatif-cluster.yaml"),
            "--scheduler",
            &config_map,
            "--scheduler",
            &config_map,
        ]),
        &[
            "--scheduler",
            "profile \"my-scheduler\" is also defined by",
            "my-scheduler-config",
        ],
    );
}

#[test]
fn bad_inputs_are_one_line_errors() {
    let cluster = data("whatif-cluster.yaml");
    let not_a_list = write(
        "not-a-list.yaml",
        "apiVersion: v1\nkind: List\nmetadata: {}\n",
    );
    assert_error(
        &kubesched(&["simulate", &not_a_list]),
        &["not-a-list.yaml", "items", "not a Kubernetes List"],
    );
    let bad_config = write(
        "bad-config.yaml",
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles: [{schedulerNam: x}]\n",
    );
    assert_error(
        &kubesched(&["simulate", &cluster, "--config", &bad_config]),
        &["bad-config.yaml", "schedulerNam"],
    );
    let not_config = write(
        "pod-as-config.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c}]}\n",
    );
    assert_error(
        &kubesched(&["simulate", &cluster, "--config", &not_config]),
        &["pod-as-config.yaml", "not a scheduler configuration"],
    );
    let empty_add = write(
        "nothing.yaml",
        "apiVersion: v1\nkind: Service\nmetadata: {name: s}\n",
    );
    assert_error(
        &kubesched(&["simulate", &cluster, "--add", &empty_add]),
        &["nothing.yaml", "nothing to add"],
    );
    let bad_deploy = write(
        "bad-deploy.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 1\n  selector: {matchLabels: {app: web}}\n  template: {metadata: {labels: {app: api}}, spec: {containers: []}}\n",
    );
    assert_error(
        &kubesched(&["simulate", &cluster, "--add", &bad_deploy]),
        &[
            "bad-deploy.yaml",
            "Deployment default/web",
            "spec.template.metadata.labels",
        ],
    );
    assert_error(
        &kubesched(&["rollout", &data("whatif-worker-pod.yaml"), &cluster]),
        &["whatif-worker-pod.yaml", "no Deployment"],
    );
    assert_error(
        &kubesched(&["capacity", &empty_add, &cluster]),
        &["nothing.yaml", "no Pod"],
    );
    assert_error(
        &kubesched(&[
            "simulate",
            &cluster,
            "--from-cluster",
            "--kubeconfig",
            "/nonexistent/kubeconfig",
        ]),
        &[
            "--from-cluster",
            "kubeconfig /nonexistent/kubeconfig: cannot read",
        ],
    );
}

/// Issue 14, item 2: a huge workload is refused before any pod is built, naming the file,
/// the workload and the field, with the cap and how to raise it.
#[test]
fn huge_workloads_are_refused_not_allocated() {
    let cluster = data("whatif-cluster.yaml");
    let template = "  selector: {matchLabels: {app: big}}\n  template:\n    metadata: {labels: {app: big}}\n    spec: {containers: [{name: c, image: x}]}\n";
    for (kind, api, field) in [
        ("ReplicaSet", "apps/v1", "spec.replicas"),
        ("Deployment", "apps/v1", "spec.replicas"),
        ("StatefulSet", "apps/v1", "spec.replicas"),
    ] {
        let file = write(
            &format!("big-{kind}.yaml"),
            &format!(
                "apiVersion: {api}\nkind: {kind}\nmetadata: {{name: big}}\nspec:\n  replicas: 2147483647\n{template}"
            ),
        );
        let o = kubesched(&["simulate", &cluster, "--add", &file]);
        assert_error(
            &o,
            &[
                &file,
                &format!("{kind} default/big: {field}: 2147483647 pods"),
                "at most 100000",
                "--max-pods",
            ],
        );
        assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
    }
    let job = write(
        "big-job.yaml",
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec:\n  parallelism: 2147483647\n  completions: 2000000\n  template:\n    spec: {restartPolicy: Never, containers: [{name: c, image: x}]}\n",
    );
    assert_error(
        &kubesched(&["simulate", &cluster, "--add", &job]),
        &["Job default/j: spec.completions: 2000000 pods"],
    );
    let job = write(
        "big-job2.yaml",
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec:\n  parallelism: 200001\n  template:\n    spec: {restartPolicy: Never, containers: [{name: c, image: x}]}\n",
    );
    assert_error(
        &kubesched(&["simulate", &cluster, "--add", &job]),
        &["Job default/j: spec.parallelism: 200001 pods"],
    );
    // The cap is the flag's.
    let rs = write(
        "rs-5.yaml",
        &format!(
            "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {{name: big}}\nspec:\n  replicas: 5\n{template}"
        ),
    );
    assert_error(
        &kubesched(&["simulate", &cluster, "--add", &rs, "--max-pods", "4"]),
        &["spec.replicas: 5 pods", "at most 4"],
    );
    let o = kubesched(&["simulate", &cluster, "--add", &rs, "--max-pods", "5"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));

    // rollout: the Deployment itself, and its peak with maxSurge.
    let dep = write(
        "big-dep.yaml",
        &format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: big}}\nspec:\n  replicas: 2147483647\n{template}"
        ),
    );
    assert_error(
        &kubesched(&["rollout", &dep, &cluster]),
        &[
            "Deployment default/big: spec.replicas: 2147483647 pods",
            "--max-pods",
        ],
    );
    let dep = write(
        "surge-dep.yaml",
        &format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: big}}\nspec:\n  replicas: 4\n  strategy: {{rollingUpdate: {{maxSurge: 2}}}}\n{template}"
        ),
    );
    assert_error(
        &kubesched(&["rollout", &dep, &cluster, "--max-pods", "5"]),
        &[
            "spec.strategy.rollingUpdate.maxSurge",
            "peaks at 6 pods",
            "at most 5",
        ],
    );
}

/// `--max-limit N` says where it stopped.
#[test]
fn capacity_limit_is_stated() {
    let o = kubesched(&[
        "capacity",
        &data("whatif-worker-pod.yaml"),
        &data("whatif-cluster.yaml"),
        "--max-limit",
        "2",
    ]);
    assert!(
        stdout(&o).contains("Stopped at the limit of 2 copies (--max-limit N)"),
        "{}",
        stdout(&o)
    );
}

/// Without `--max-limit`, a plain count (nodes filled node by node) has no limit:
/// 120,002 copies, past the 100,000 where copies scheduled one at a time stop.
#[test]
fn capacity_counts_every_copy_without_a_limit() {
    let node = |name: &str| {
        format!(
            "apiVersion: v1\nkind: Node\nmetadata: {{name: {name}}}\nstatus:\n  allocatable: {{cpu: \"1000\", memory: 1000Gi, pods: \"60001\"}}\n"
        )
    };
    let cluster = write(
        "many-pods-cluster.yaml",
        &format!("{}---\n{}", node("a"), node("b")),
    );
    let pod = write(
        "tiny-pod.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: tiny}\nspec:\n  containers:\n  - name: c\n    image: pause\n    resources: {requests: {cpu: 1m, memory: 1Mi}}\n",
    );
    let o = kubesched(&["capacity", &pod, &cluster, "--format", "jsonl"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_str(stdout(&o).trim()).expect("json");
    assert_eq!(v["count"], 120_002, "{v}");
    assert_eq!(v["nodes"]["a"], 60_001);
    assert_eq!(v["placement"]["how"], "NodeByNode");
    assert_eq!(
        v["stop"]["message"],
        "0/2 nodes are available: 2 Too many pods."
    );
}
