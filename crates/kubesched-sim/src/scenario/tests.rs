//! Unit tests of the scenario loader.

use super::*;
use kubesched_framework::quantity::Quantity;

/// The repository's own conformance folder; its absence fails the tests that read it.
fn conformance() -> std::path::PathBuf {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../conformance");
    assert!(
        dir.is_dir(),
        "{}: the repository's conformance folder is missing",
        dir.display()
    );
    dir
}

/// Every scenario file (`*.yaml`) of the repository's conformance case folders
/// (`cases`, `cases-default`, ...).
pub(super) fn conformance_scenarios() -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for dir in std::fs::read_dir(conformance()).unwrap().flatten() {
        if !dir.file_name().to_string_lossy().starts_with("cases") {
            continue;
        }
        for file in std::fs::read_dir(dir.path()).unwrap().flatten() {
            let path = file.path();
            if path.extension().is_some_and(|e| e == "yaml") {
                files.push(path);
            }
        }
    }
    files
}

fn src(name: &str, text: &str) -> Source {
    Source {
        name: name.to_owned(),
        text: text.to_owned(),
    }
}

fn load_one(text: &str) -> Result<Scenario, ScenarioError> {
    load(&[src("x.yaml", text)])
}

fn error(text: &str) -> String {
    match load_one(text) {
        Ok(_) => panic!("expected an error for:\n{text}"),
        Err(e) => e.to_string(),
    }
}

/// A Pod document; without a `spec` in `body`, one with a single container is added (the
/// API server requires a container).
fn pod(name: &str, body: &str) -> String {
    let spec = if body.contains("spec:") {
        ""
    } else {
        "spec:\n  containers:\n  - name: c\n"
    };
    format!("---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n{body}{spec}")
}

fn node(name: &str, body: &str) -> String {
    format!("---\napiVersion: v1\nkind: Node\nmetadata:\n  name: {name}\n{body}")
}

const CONTAINER: &str = "spec:\n  containers:\n  - name: c\n    image: nginx\n";

#[test]
fn loads_every_conformance_case() {
    let mut loaded = 0;
    for path in conformance_scenarios() {
        let text = std::fs::read_to_string(&path).unwrap();
        let name = path.display().to_string();
        let scenario = load(&[Source {
            name: name.clone(),
            text,
        }])
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(!scenario.pods.is_empty(), "{name}: no pods");
        loaded += 1;
    }
    assert!(loaded >= 100, "only {loaded} cases loaded");
}

#[test]
fn conformance_counts() {
    let path = conformance().join("cases/bound-pod-terminal-ignored.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    let scenario = load(&[src("cases/bound-pod-terminal-ignored.yaml", &text)]).unwrap();
    let names: Vec<_> = scenario
        .nodes
        .iter()
        .map(|n| n.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(names, ["n1", "n2"]);
    // "done" (Succeeded) and "crashed" (Failed) are dropped.
    let pods: Vec<_> = scenario
        .pods
        .iter()
        .map(|p| p.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(pods, ["running", "next"]);
    assert!(scenario.objects.is_empty());
    assert!(scenario.warnings.is_empty(), "{:?}", scenario.warnings);
    // The file starts with a comment, then `---`: the configuration is its first document.
    let config = scenario.config.unwrap();
    assert_eq!(
        config.source,
        "cases/bound-pod-terminal-ignored.yaml (document 1)"
    );
    assert_eq!(config.value["kind"], "KubeSchedulerConfiguration");

    let path = conformance().join("cases-preemption/random-4001-default.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    let scenario = load(&[src("p.yaml", &text)]).unwrap();
    assert_eq!(scenario.nodes.len(), 34);
    assert!(scenario.config.is_none());
    let pdb = &scenario.objects[0];
    assert_eq!(
        (pdb.api_version.as_str(), pdb.kind.as_str()),
        ("policy/v1", "PodDisruptionBudget")
    );
    assert_eq!(
        (pdb.namespace.as_deref(), pdb.name.as_str()),
        (Some("prod"), "api-pdb")
    );
    assert_eq!(pdb.value["spec"]["minAvailable"], 3);
    assert!(
        pdb.source.starts_with("p.yaml (document "),
        "{}",
        pdb.source
    );
}

#[test]
fn several_files_make_one_scenario() {
    let a = src("a.yaml", &(node("n1", "") + &pod("p1", CONTAINER)));
    let b = src("b.yaml", &(node("n2", "") + &pod("p2", CONTAINER)));
    let scenario = load(&[a, b]).unwrap();
    let nodes: Vec<_> = scenario
        .nodes
        .iter()
        .map(|n| n.metadata.name.as_deref().unwrap())
        .collect();
    assert_eq!(nodes, ["n1", "n2"]);
    let pods: Vec<_> = scenario
        .pods
        .iter()
        .map(|p| p.metadata.name.as_deref().unwrap())
        .collect();
    assert_eq!(pods, ["p1", "p2"]);
    assert!(load(&[]).unwrap().pods.is_empty());
}

#[test]
fn numbers_are_quantities() {
    let text = node(
        "n1",
        "status:\n  capacity: {cpu: 2, memory: 2e9, pods: 110}\n  allocatable:\n    cpu: 1.5\n    memory: 1e3\n",
    ) + &pod(
        "p",
        "spec:\n  overhead: {cpu: 0.25}\n  resources: {limits: {memory: 4096}}\n  initContainers:\n  - name: i\n    resources: {requests: {cpu: 1}}\n  containers:\n  - name: c\n    resources:\n      requests: {cpu: 2, memory: 2e9, example.com/fpga: 1}\n      limits: {cpu: -1.0}\n",
    );
    let scenario = load_one(&text).unwrap();
    let status = scenario.nodes[0].status.as_ref().unwrap();
    let capacity = status.capacity.as_ref().unwrap();
    assert_eq!(capacity["cpu"].0, "2");
    assert_eq!(capacity["memory"].0, "2000000000");
    assert_eq!(capacity["pods"].0, "110");
    let allocatable = status.allocatable.as_ref().unwrap();
    assert_eq!(allocatable["cpu"].0, "1.5");
    assert_eq!(allocatable["memory"].0, "1000");
    let spec = scenario.pods[0].spec.as_ref().unwrap();
    assert_eq!(spec.overhead.as_ref().unwrap()["cpu"].0, "0.25");
    assert_eq!(
        spec.resources.as_ref().unwrap().limits.as_ref().unwrap()["memory"].0,
        "4096"
    );
    let init = spec.init_containers.as_ref().unwrap()[0]
        .resources
        .as_ref()
        .unwrap();
    assert_eq!(init.requests.as_ref().unwrap()["cpu"].0, "1");
    let resources = spec.containers[0].resources.as_ref().unwrap();
    let requests = resources.requests.as_ref().unwrap();
    assert_eq!(requests["cpu"].0, "2");
    assert_eq!(requests["memory"].0, "2000000000");
    assert_eq!(requests["example.com/fpga"].0, "1");
    assert_eq!(resources.limits.as_ref().unwrap()["cpu"].0, "-1");
}

#[test]
fn pod_defaulting() {
    let text = pod("a", CONTAINER)
        + &pod(
            "b",
            "  namespace: ''\nspec:\n  schedulerName: ''\n  containers: [{name: c}]\n",
        )
        + &pod(
            "c",
            "  namespace: team\nspec:\n  schedulerName: mine\n  containers: [{name: c}]\n",
        )
        + "---\napiVersion: v1\nkind: Pod\nmetadata: {name: d}\nspec: {containers: [{name: c}]}\n";
    let scenario = load_one(&text).unwrap();
    let got: Vec<_> = scenario
        .pods
        .iter()
        .map(|p| {
            let spec = p.spec.as_ref().unwrap();
            (
                p.metadata.namespace.as_deref().unwrap(),
                spec.scheduler_name.as_deref().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("default", "default-scheduler"),
            ("default", "default-scheduler"),
            ("team", "mine"),
            ("default", "default-scheduler")
        ]
    );
    // Everything else is kept.
    assert_eq!(
        scenario.pods[0].spec.as_ref().unwrap().containers[0]
            .image
            .as_deref(),
        Some("nginx")
    );
}

#[test]
fn terminal_pods_are_dropped() {
    let text = pod("ok", "status: {phase: Running}\n")
        + &pod("s", "status: {phase: Succeeded}\n")
        + &pod("f", "status: {phase: Failed}\n")
        + &pod("pending", "status: {phase: Pending}\n")
        + &pod("none", "");
    let scenario = load_one(&text).unwrap();
    let pods: Vec<_> = scenario
        .pods
        .iter()
        .map(|p| p.metadata.name.as_deref().unwrap())
        .collect();
    assert_eq!(pods, ["ok", "pending", "none"]);
    // A dropped pod still takes its name.
    let err = error(&(pod("s", "status: {phase: Succeeded}\n") + &pod("s", "")));
    assert!(
        err.starts_with("x.yaml: Pod default/s: metadata.name: duplicate pod"),
        "{err}"
    );
}

#[test]
fn list_expansion() {
    let text = r#"
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: n1}
- apiVersion: v1
  kind: Pod
  metadata: {name: p1, namespace: ns}
  spec: {nodeName: n1, containers: [{name: c}]}
- apiVersion: v1
  kind: PodList
  items:
  - metadata: {name: p2}
    spec: {containers: [{name: c}]}
  - metadata: {name: p3}
    spec: {containers: [{name: c}]}
- apiVersion: v1
  kind: Service
  metadata: {name: svc, namespace: ns}
- apiVersion: kubescheduler.config.k8s.io/v1
  kind: KubeSchedulerConfiguration
---
apiVersion: v1
kind: NodeList
items:
- metadata: {name: n2}
---
apiVersion: v1
kind: PodList
items: []
"#;
    let scenario = load_one(text).unwrap();
    let nodes: Vec<_> = scenario
        .nodes
        .iter()
        .map(|n| n.metadata.name.as_deref().unwrap())
        .collect();
    assert_eq!(nodes, ["n1", "n2"]);
    let pods: Vec<_> = scenario
        .pods
        .iter()
        .map(|p| p.metadata.name.as_deref().unwrap())
        .collect();
    assert_eq!(pods, ["p1", "p2", "p3"]);
    assert_eq!(scenario.objects.len(), 1);
    assert_eq!(scenario.objects[0].kind, "Service");
    assert_eq!(scenario.objects[0].source, "x.yaml (document 1, items[3])");
    assert_eq!(
        scenario.config.unwrap().source,
        "x.yaml (document 1, items[4])"
    );
    assert!(scenario.warnings.is_empty(), "{:?}", scenario.warnings);

    assert_eq!(
        error("apiVersion: v1\nkind: List\nitems: {a: 1}\n"),
        "x.yaml (document 1): List: items: must be a sequence, found a mapping"
    );
    assert_eq!(
        error("apiVersion: v1\nkind: List\nitems:\n- kind: Pod\n  metadata: {name: p}\n"),
        "x.yaml (document 1, items[0]): apiVersion: missing; every document needs apiVersion and kind"
    );
}

#[test]
fn json_files_are_accepted() {
    let text = r#"{"apiVersion": "v1", "kind": "PodList", "items": [
            {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": 0.5}}}]}}]}"#;
    let scenario = load(&[src("x.json", text)]).unwrap();
    let requests = scenario.pods[0].spec.as_ref().unwrap().containers[0]
        .resources
        .as_ref()
        .unwrap();
    assert_eq!(requests.requests.as_ref().unwrap()["cpu"].0, "0.5");
}

#[test]
fn bound_pod_on_missing_node_is_a_warning() {
    let text = node("n1", "")
        + &pod("on-n1", "spec: {nodeName: n1, containers: [{name: c}]}\n")
        + &pod("on-n9", "spec: {nodeName: n9, containers: [{name: c}]}\n")
        + &pod("late", "spec: {nodeName: n2, containers: [{name: c}]}\n")
        + &node("n2", "");
    let scenario = load_one(&text).unwrap();
    assert_eq!(scenario.pods.len(), 3);
    assert_eq!(
        scenario.warnings,
        [
            "x.yaml: Pod default/on-n9: spec.nodeName: node \"n9\" is not in the scenario; the pod uses no node"
        ]
    );
}

#[test]
fn other_objects_and_config() {
    let text = "# leading comment\n---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: high}\nvalue: 1000\n---\n---\napiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles: [{schedulerName: x, bogus: 1}]\n";
    let scenario = load_one(text).unwrap();
    let pc = &scenario.objects[0];
    assert_eq!(
        (
            pc.api_version.as_str(),
            pc.kind.as_str(),
            pc.namespace.as_deref(),
            pc.name.as_str()
        ),
        ("scheduling.k8s.io/v1", "PriorityClass", None, "high")
    );
    assert_eq!(pc.source, "x.yaml (document 1)");
    let config = scenario.config.unwrap();
    // Kept raw: the config crate does its own strict decoding.
    assert_eq!(config.value["profiles"][0]["bogus"], 1);
    assert_eq!(config.source, "x.yaml (document 3)");

    let only =
        load_one("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n")
            .unwrap();
    assert_eq!(only.config.unwrap().source, "x.yaml");
    // A Pod of another apiVersion is not a pod: kept, with a warning.
    let odd = load_one("apiVersion: v2\nkind: Pod\nmetadata: {name: p}\n").unwrap();
    assert!(odd.pods.is_empty());
    assert_eq!(odd.objects.len(), 1);
    assert_eq!(odd.warnings.len(), 1);
    assert!(
        odd.warnings[0].starts_with("x.yaml (document 1): Pod p: apiVersion: \"v2\""),
        "{:?}",
        odd.warnings
    );
}

#[test]
fn unknown_fields_suggest_the_closest_known_field() {
    assert_eq!(
        error(&pod(
            "p",
            "spec:\n  schdulerName: x\n  containers: [{name: c}]\n"
        )),
        "x.yaml: Pod default/p: spec.schdulerName: unknown field, did you mean schedulerName?"
    );
    assert_eq!(
        error(&pod(
            "p",
            "  namespace: ns\nspec:\n  nodeSelecter: {a: b}\n"
        )),
        "x.yaml: Pod ns/p: spec.nodeSelecter: unknown field, did you mean nodeSelector?"
    );
    assert_eq!(
        error(&pod("p", "spec:\n  tolerration: []\n")),
        "x.yaml: Pod default/p: spec.tolerration: unknown field, did you mean tolerations?"
    );
    assert_eq!(
        error(&pod(
            "p",
            "spec:\n  containers:\n  - name: c\n  - name: d\n    resources:\n      requets: {cpu: 1}\n"
        )),
        "x.yaml: Pod default/p: spec.containers[1].resources.requets: unknown field, did you mean requests?"
    );
    assert_eq!(
        error(&pod(
            "p",
            "spec:\n  tolerations:\n  - {key: a, opertor: Exists}\n"
        )),
        "x.yaml: Pod default/p: spec.tolerations[0].opertor: unknown field, did you mean operator?"
    );
    assert_eq!(
        error(&pod(
            "p",
            "spec:\n  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n        nodeSelectorTerms:\n        - matchExpression: []\n"
        )),
        "x.yaml: Pod default/p: spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpression: unknown field, did you mean matchExpressions?"
    );
    assert_eq!(
        error(&pod("p", "  lables: {app: web}\n")),
        "x.yaml: Pod default/p: metadata.lables: unknown field, did you mean labels?"
    );
    assert_eq!(
        error(&pod("p", "spec:\n  NodeName: n1\n")),
        "x.yaml: Pod default/p: spec.NodeName: unknown field, did you mean nodeName?"
    );
    // Nothing close: no suggestion.
    assert_eq!(
        error(&pod("p", "spec:\n  frobnicate: 1\n")),
        "x.yaml: Pod default/p: spec.frobnicate: unknown field"
    );
    assert_eq!(
        error(&pod("p", "sepc: {}\n")),
        "x.yaml: Pod default/p: sepc: unknown field, did you mean spec?"
    );
    assert_eq!(
        error(&node("n1", "spec:\n  unschedulabel: true\n")),
        "x.yaml: Node n1: spec.unschedulabel: unknown field, did you mean unschedulable?"
    );
    assert_eq!(
        error(&node(
            "n1",
            "status:\n  images:\n  - {names: [a], sizeByte: 1}\n"
        )),
        "x.yaml: Node n1: status.images[0].sizeByte: unknown field, did you mean sizeBytes?"
    );
    // Free-form maps (labels, annotations, resource maps) take any key.
    load_one(&node(
        "n1",
        "  labels: {schdulerName: x}\nstatus:\n  capacity: {anything.example.com/x: '1'}\n",
    ))
    .unwrap();
    // Other kinds are not checked.
    load_one("apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspce: {}\n").unwrap();
}

#[test]
fn invalid_quantities() {
    assert_eq!(
        error(&pod(
            "web",
            "spec:\n  containers:\n  - name: c\n    resources:\n      requests:\n        memory: 2Gb\n"
        )),
        format!(
            "x.yaml: Pod default/web: spec.containers[0].resources.requests.memory: invalid quantity \"2Gb\": {}",
            Quantity::parse("2Gb").unwrap_err()
        )
    );
    let err = error(&node("n1", "status:\n  allocatable: {cpu: 1.5.0}\n"));
    assert!(
        err.starts_with("x.yaml: Node n1: status.allocatable.cpu: invalid quantity \"1.5.0\": "),
        "{err}"
    );
    let err = error(&pod("p", "spec:\n  overhead: {cpu: abc}\n"));
    assert!(
        err.starts_with("x.yaml: Pod default/p: spec.overhead.cpu: invalid quantity \"abc\": "),
        "{err}"
    );
    let err = error(&pod(
        "p",
        "spec:\n  ephemeralContainers:\n  - name: e\n    resources: {limits: {cpu: ''}}\n",
    ));
    assert!(
            err.starts_with("x.yaml: Pod default/p: spec.ephemeralContainers[0].resources.limits.cpu: invalid quantity \"\": "),
            "{err}"
        );
    // The API server trims the white space JSON writes as itself, not escaped characters.
    load_one(&node("n1", "status:\n  allocatable: {cpu: ' 4 '}\n")).unwrap();
    assert_eq!(
        error(&node("n1", "status:\n  allocatable: {cpu: \"4\\n\"}\n")),
        "x.yaml: Node n1: status.allocatable.cpu: invalid quantity \"4\\n\": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    );
    let err = error(&pod("p", "spec:\n  resources: {requests: {cpu: [1]}}\n"));
    assert!(
        err.starts_with("x.yaml: Pod default/p: spec.resources.requests.cpu: invalid type"),
        "{err}"
    );
}

#[test]
fn decode_errors_name_the_field() {
    let err = error(&pod("p", "spec:\n  priority: high\n"));
    assert!(
        err.starts_with("x.yaml: Pod default/p: spec.priority: invalid type: string \"high\""),
        "{err}"
    );
    let err = error(&pod(
        "p",
        "spec:\n  containers:\n  - name: c\n    ports: {containerPort: 80}\n",
    ));
    assert_eq!(
        err,
        "x.yaml: Pod default/p: spec.containers[0].ports: invalid type: map, expected a sequence"
    );
    let err = error(&pod("p", "  creationTimestamp: yesterday\n"));
    assert!(
        err.starts_with("x.yaml: Pod default/p: metadata.creationTimestamp: "),
        "{err}"
    );
    let err = error(&pod("p", "status: 7\n"));
    assert!(
        err.starts_with("x.yaml: Pod default/p: status: invalid type"),
        "{err}"
    );
}

#[test]
fn missing_names_and_type_fields() {
    assert_eq!(
        error(&(node("n1", "") + "---\napiVersion: v1\nkind: Pod\nmetadata: {namespace: x}\n")),
        "x.yaml (document 2): Pod: metadata.name: missing"
    );
    assert_eq!(
        error("apiVersion: v1\nkind: Node\nmetadata: {name: ''}\n"),
        "x.yaml (document 1): Node: metadata.name: missing"
    );
    assert_eq!(
        error("apiVersion: policy/v1\nkind: PodDisruptionBudget\nspec: {}\n"),
        "x.yaml (document 1): PodDisruptionBudget: metadata.name: missing"
    );
    assert_eq!(
        error("kind: Pod\nmetadata: {name: p}\n"),
        "x.yaml (document 1): apiVersion: missing; every document needs apiVersion and kind"
    );
    assert_eq!(
        error("---\n---\napiVersion: v1\nmetadata: {name: p}\n"),
        "x.yaml (document 2): kind: missing; every document needs apiVersion and kind"
    );
    assert_eq!(
        error("apiVersion: v1\nkind: 3\n"),
        "x.yaml (document 1): kind: must be a non-empty string; every document needs apiVersion and kind"
    );
    assert_eq!(
        error("- a\n- b\n"),
        "x.yaml (document 1): not a Kubernetes object: the document is a sequence, not a mapping"
    );
    // A name of the wrong type is a decoding error at metadata.name.
    let err = error("apiVersion: v1\nkind: Pod\nmetadata: {name: 7}\n");
    assert!(
        err.starts_with("x.yaml (document 1): Pod: metadata.name: invalid type: integer `7`"),
        "{err}"
    );
}

#[test]
fn duplicates() {
    let a = src("a.yaml", &node("n1", ""));
    let b = src("b.yaml", &(node("n2", "") + &node("n1", "")));
    assert_eq!(
        load(&[a, b]).unwrap_err().to_string(),
        "b.yaml: Node n1: metadata.name: duplicate node name (first defined in a.yaml)"
    );
    assert_eq!(
        error(&(pod("p", "  namespace: default\n") + &pod("q", "") + &pod("p", ""))),
        "x.yaml: Pod default/p: metadata.name: duplicate pod (first defined in x.yaml (document 1))"
    );
    // Same name, other namespace: fine.
    load_one(&(pod("p", "  namespace: a\n") + &pod("p", "  namespace: b\n"))).unwrap();
    let config =
        "---\napiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n";
    assert_eq!(
        error(&format!("{config}{}{config}", node("n1", ""))),
        "x.yaml (document 3): KubeSchedulerConfiguration: a second configuration document (the first is x.yaml (document 1)); a scenario has at most one"
    );
}

#[test]
fn yaml_syntax_errors_give_line_and_column() {
    let err = error("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n   bad: indentation\n");
    let ScenarioError::Syntax { line, column, .. } =
        load_one("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n   bad: indentation\n")
            .unwrap_err()
    else {
        panic!("{err}")
    };
    assert_eq!((line, column), (5, 7));
    assert_eq!(
        err,
        "x.yaml:5:7: mapping values are not allowed in this context"
    );
    let err = error(&(node("n1", "") + "---\nkind: [Pod\n"));
    assert_eq!(
        err,
        "x.yaml:8:1: did not find expected ',' or ']', while parsing a flow sequence at line 7 column 7"
    );
    let err = load(&[src("<stdin>", "a: \"unterminated\n")])
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("<stdin>:"), "{err}");
}

#[test]
fn duplicate_yaml_keys_are_errors() {
    let err = error("apiVersion: v1\nkind: Node\nmetadata:\n  name: a\n  name: b\n");
    assert_eq!(
        err,
        "x.yaml:4:3: metadata: mapping key \"name\" already defined"
    );
}

#[test]
fn never_panics() {
    let inputs = [
        "",
        "---\n---\n",
        "~",
        "42",
        "'text'",
        "[1, 2]",
        "{apiVersion: v1, kind: Pod}",
        "{apiVersion: v1, kind: Pod, metadata: null, spec: null, status: null}",
        "{apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {containers: null}}",
        "{apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {containers: [null]}}",
        "{apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {containers: [{name: c, resources: {requests: null}}]}}",
        "{apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {containers: [{name: c, resources: {requests: {cpu: null}}}]}}",
        "{apiVersion: v1, kind: Pod, metadata: {name: p, creationTimestamp: 'yesterday'}}",
        "{apiVersion: v1, kind: Pod, metadata: {name: p}, status: {startTime: '2024-01-01T00:00:00Z'}}",
        "{apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {priority: 1e100}}",
        "{apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {containers: [{name: c, resources: {requests: {cpu: .inf}}}]}}",
        "{apiVersion: v1, kind: Node, metadata: {name: n}, status: {capacity: {cpu: 1e400}}}",
        "{apiVersion: v1, kind: Node, metadata: {name: n}, status: {capacity: {cpu: -99999999999999999999}}}",
        "{apiVersion: v1, kind: List, items: [1, [2], {kind: List}]}",
        "{apiVersion: v1, kind: List}",
        "{apiVersion: v1, kind: PodList, items: [{apiVersion: v2}]}",
        "a: &a [*a]",
        "a: *b",
        "!!binary aGVsbG8=",
        "? [a]\n: b\n",
        "\u{feff}apiVersion: v1\nkind: Node\nmetadata: {name: n}\n",
        "\t",
        "%YAML 1.1\n---\n",
    ];
    for input in inputs {
        let _ = load_one(input);
    }
    let mut deep = String::from("apiVersion: v1\nkind: List\nitems:\n");
    for _ in 0..20 {
        deep = deep.replace(
            "items:\n",
            "items:\n- {apiVersion: v1, kind: List, items: []}\n",
        );
    }
    let _ = load_one(&deep);
    let nested = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    let _ = load_one(&nested);
}

/// Numbers JSON cannot hold are refused on the object and field that hold them, in Pods,
/// Nodes, list items and other kinds alike (issue 14, item 5).
#[test]
fn numbers_without_a_json_form_are_errors() {
    let c = "  containers: [{name: c}]\n";
    assert_eq!(
        error(&pod("p", &format!("spec:\n  priority: .inf\n{c}"))),
        "x.yaml: Pod default/p: spec.priority: Invalid value: .inf: not a finite number; JSON, and so the API server, has no infinity or NaN"
    );
    let err = error(&pod(
        "p",
        &format!("spec:\n  nodeSelector: {{a: .nan}}\n{c}"),
    ));
    assert!(
        err.starts_with("x.yaml: Pod default/p: spec.nodeSelector.a: Invalid value: .nan: "),
        "{err}"
    );
    let err = error(&pod("p", &format!("spec:\n  nodeSelector: -.inf\n{c}")));
    assert!(
        err.starts_with("x.yaml: Pod default/p: spec.nodeSelector: Invalid value: -.inf: "),
        "{err}"
    );
    let err = error(&pod(
        "p",
        "spec:\n  overhead: {memory: 1}\n  containers:\n  - name: c\n    resources: {requests: {cpu: .inf}}\n",
    ));
    assert!(
        err.starts_with(
            "x.yaml: Pod default/p: spec.containers[0].resources.requests.cpu: Invalid value: .inf: "
        ),
        "{err}"
    );
    for field in ["capacity", "allocatable"] {
        let err = error(&node("n1", &format!("status:\n  {field}: {{cpu: .inf}}\n")));
        assert!(
            err.starts_with(&format!(
                "x.yaml: Node n1: status.{field}.cpu: Invalid value: .inf"
            )),
            "{err}"
        );
    }
    assert_eq!(
        error(&pod(
            "p",
            &format!("spec:\n  priority: 18446744073709551616\n{c}")
        )),
        "x.yaml: Pod default/p: spec.priority: Invalid value: 18446744073709551616: integer out of range; numbers are read as 64-bit integers (quote a larger quantity: \"18446744073709551616\")"
    );
    let err = error(&pod(
        "p",
        "  namespace: ns\nspec:\n  priority: -99999999999999999999\n  containers: [{name: c}]\n",
    ));
    assert!(
        err.starts_with("x.yaml: Pod ns/p: spec.priority: Invalid value: -99999999999999999999: "),
        "{err}"
    );
    // In a list item: the item is the object.
    let err = error(
        "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Node, metadata: {name: n0}}\n- apiVersion: v1\n  kind: PodList\n  items:\n  - metadata: {name: q}\n    spec: {priority: .nan, containers: [{name: c}]}\n",
    );
    assert!(
        err.starts_with("x.yaml: Pod default/q: spec.priority: Invalid value: .nan"),
        "{err}"
    );
    // Other kinds and nameless objects too.
    let err = error(
        "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: rs}\nspec: {replicas: .inf}\n",
    );
    assert!(
        err.starts_with("x.yaml: ReplicaSet rs: spec.replicas: Invalid value: .inf"),
        "{err}"
    );
    let err = error("apiVersion: v1\nkind: Pod\nspec: {priority: .inf}\n");
    assert!(
        err.starts_with("x.yaml (document 1): Pod: spec.priority: Invalid value: .inf"),
        "{err}"
    );
    // Non-integer floats in integer fields were refused already; they still are.
    let err = error(&pod("p", &format!("spec:\n  priority: 1.5\n{c}")));
    assert!(
        err.starts_with("x.yaml: Pod default/p: spec.priority: "),
        "{err}"
    );
    // A large quantity written as a string is a quantity.
    load_one(&node(
        "n1",
        "status:\n  capacity: {memory: \"18446744073709551616\"}\n",
    ))
    .unwrap();
}

/// Names, namespaces and containers are checked as the API server checks them.
#[test]
fn names_namespaces_and_containers_are_validated() {
    let err = error(&pod("Web_1", ""));
    assert!(
        err.starts_with("x.yaml: Pod default/Web_1: metadata.name: Invalid value: \"Web_1\": a lowercase RFC 1123 subdomain must consist of"),
        "{err}"
    );
    let err = error(&pod("p", "  namespace: \"a\\nb\"\n"));
    assert!(
        err.starts_with("x.yaml: Pod \"a\\nb\"/p: metadata.namespace: Invalid value: \"a\\nb\": a lowercase RFC 1123 label must consist of"),
        "{err}"
    );
    let err = error(&pod("p", "  namespace: a.b\n"));
    assert!(
        err.contains("metadata.namespace: Invalid value: \"a.b\""),
        "{err}"
    );
    let err = error(&node("N1", ""));
    assert!(
        err.starts_with("x.yaml: Node N1: metadata.name: Invalid value: \"N1\": "),
        "{err}"
    );
    let err = error(&node(&"a".repeat(254), ""));
    assert!(err.contains("must be no more than 253 characters"), "{err}");
    assert_eq!(
        error(&pod("p", "spec:\n  containers: []\n")),
        "x.yaml: Pod default/p: spec.containers: Required value"
    );
    assert_eq!(
        error("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"),
        "x.yaml: Pod default/p: spec.containers: Required value"
    );
    assert_eq!(
        error("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: null\n"),
        "x.yaml: Pod default/p: spec.containers: Required value"
    );
    // Valid names of every shape load.
    load_one(&(node("ip-10-0-0-1.ec2.internal", "") + &pod("web-1.x", "  namespace: team-a\n")))
        .unwrap();
}

/// Input strings are quoted in messages, so that each stays one line (item 4).
#[test]
fn echoed_input_is_quoted_on_one_line() {
    let cases = [
        "apiVersion: v1\nkind: \"Po\\nd\"\nmetadata: {name: p}\n",
        "apiVersion: v1\nkind: \"Pod\\u0007\"\n",
        "apiVersion: v1\nkind: \"X\\nList\"\nitems: 3\n",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: \"a\\nb\"}\nspec: {containers: [{name: c}]}\n",
        "apiVersion: v1\nkind: Node\nmetadata: {name: \"a\\rb\"}\n",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {\"bad\\nkey\": 1}\n",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, resources: {requests: {cpu: \"1\\n2\"}}}]}\n",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {priority: \"a\\nb\"}\n",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {nodeSelector: {\"a\\nb\": .inf}}\n",
        "apiVersion: v1\nkind: Service\nmetadata: {namespace: \"x\\ny\"}\n",
    ];
    for text in cases {
        let err = error(text);
        assert!(
            !err.contains(['\n', '\r', '\u{7}']),
            "{text:?} gave a message on several lines: {err}"
        );
    }
    assert_eq!(
        error(
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {\"bad\\nkey\": 1, containers: [{name: c}]}\n"
        ),
        "x.yaml: Pod default/p: spec.\"bad\\nkey\": unknown field"
    );
    let err = error(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, resources: {requests: {cpu: \"1\\n2\"}}}]}\n",
    );
    assert!(
        err.starts_with("x.yaml: Pod default/p: spec.containers[0].resources.requests.cpu: invalid quantity \"1\\n2\": "),
        "{err}"
    );
    // Warnings too.
    let scenario =
        load_one("apiVersion: \"x\\ny/v1\"\nkind: \"Thing\\nA\"\nmetadata: {name: t}\n").unwrap();
    assert_eq!(scenario.warnings.len(), 1);
    assert!(
        !scenario.warnings[0].contains('\n'),
        "{:?}",
        scenario.warnings
    );
}

/// A kind that is a typo of a known one is an error that names it (item 7).
#[test]
fn near_miss_kinds_suggest_the_known_kind() {
    assert_eq!(
        error("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfig\n"),
        "x.yaml (document 1): kind: unknown kind \"KubeSchedulerConfig\", did you mean KubeSchedulerConfiguration? (kinds kubesched does not read are ignored, so a typo would drop the object)"
    );
    let err = error("apiVersion: apps/v1\nkind: Deploymnet\nmetadata: {name: web}\n");
    assert!(
        err.starts_with("x.yaml: kind: unknown kind \"Deploymnet\", did you mean Deployment?"),
        "{err}"
    );
    for (kind, known) in [
        ("pod", "Pod"),
        ("Nodes", "Node"),
        ("ReplicaSets", "ReplicaSet"),
    ] {
        let err = error(&format!(
            "apiVersion: v1\nkind: {kind}\nmetadata: {{name: x}}\n"
        ));
        assert!(err.contains(&format!("did you mean {known}?")), "{err}");
    }
    // Real kinds kubesched does not read are still ignored with a note.
    for kind in [
        "Role",
        "ConfigMap",
        "Secret",
        "Lease",
        "Event",
        "CronJob",
        "DaemonSet",
    ] {
        let scenario = load_one(&format!(
            "apiVersion: v1\nkind: {kind}\nmetadata: {{name: x}}\n"
        ))
        .unwrap();
        assert_eq!(scenario.warnings.len(), 1, "{kind}");
    }
}

/// The API server's v1 defaults that change scheduling decisions (item 6).
#[test]
fn api_server_defaults() {
    let scenario = load_one(
        &(node("n1", "status:\n  capacity: {cpu: 4, memory: 8Gi}\n")
            + &node(
                "n2",
                "status:\n  capacity: {cpu: 4}\n  allocatable: {cpu: 3}\n",
            )
            + &node("n3", "status:\n  capacity: {cpu: 4}\n  allocatable: {}\n")),
    )
    .unwrap();
    let allocatable = |i: usize| {
        scenario.nodes[i]
            .status
            .as_ref()
            .unwrap()
            .allocatable
            .clone()
            .unwrap()
    };
    assert_eq!(allocatable(0)["cpu"].0, "4");
    assert_eq!(allocatable(0)["memory"].0, "8Gi");
    assert_eq!(allocatable(1)["cpu"].0, "3");
    assert!(allocatable(2).is_empty());

    let scenario = load_one(&pod(
        "p",
        "spec:\n  hostNetwork: true\n  initContainers:\n  - name: i\n    resources: {limits: {cpu: 1}}\n  containers:\n  - name: c\n    ports: [{containerPort: 80}, {containerPort: 81, hostPort: 9000}]\n    resources:\n      requests: {memory: 1Gi}\n      limits: {cpu: 2, memory: 2Gi, example.com/gpu: 1}\n",
    ))
    .unwrap();
    let spec = scenario.pods[0].spec.as_ref().unwrap();
    let requests = spec.containers[0]
        .resources
        .as_ref()
        .unwrap()
        .requests
        .clone()
        .unwrap();
    let got: Vec<_> = requests
        .iter()
        .map(|(k, v)| (k.as_str(), v.0.as_str()))
        .collect();
    assert_eq!(
        got,
        [("cpu", "2"), ("example.com/gpu", "1"), ("memory", "1Gi")]
    );
    let init = spec.init_containers.as_ref().unwrap()[0]
        .resources
        .as_ref()
        .unwrap();
    assert_eq!(init.requests.as_ref().unwrap()["cpu"].0, "1");
    let ports: Vec<_> = spec.containers[0]
        .ports
        .as_ref()
        .unwrap()
        .iter()
        .map(|p| p.host_port)
        .collect();
    assert_eq!(ports, [Some(80), Some(9000)]);
    // Without hostNetwork, ports stay as written.
    let scenario = load_one(&pod(
        "p",
        "spec:\n  containers:\n  - name: c\n    ports: [{containerPort: 80}]\n",
    ))
    .unwrap();
    assert_eq!(
        scenario.pods[0].spec.as_ref().unwrap().containers[0]
            .ports
            .as_ref()
            .unwrap()[0]
            .host_port,
        None
    );

    // Pod-level requests: from the containers' aggregate (cpu, memory), else the limits.
    let scenario = load_one(&pod(
        "p",
        "spec:\n  resources:\n    limits: {cpu: 4, memory: 4Gi, hugepages-2Mi: 2Mi}\n  containers:\n  - name: a\n    resources: {requests: {cpu: 500m}}\n  - name: b\n    resources: {requests: {cpu: 1}}\n",
    ))
    .unwrap();
    let requests = scenario.pods[0]
        .spec
        .as_ref()
        .unwrap()
        .resources
        .as_ref()
        .unwrap()
        .requests
        .clone()
        .unwrap();
    let got: Vec<_> = requests
        .iter()
        .map(|(k, v)| (k.as_str(), v.0.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("cpu", "1500m"),
            ("hugepages-2Mi", "2Mi"),
            ("memory", "4Gi")
        ]
    );
    // No pod-level limits: nothing is added.
    let scenario = load_one(&pod(
        "p",
        "spec:\n  resources: {requests: {cpu: 1}}\n  containers: [{name: c}]\n",
    ))
    .unwrap();
    let resources = scenario.pods[0]
        .spec
        .as_ref()
        .unwrap()
        .resources
        .clone()
        .unwrap();
    assert_eq!(resources.requests.unwrap().len(), 1);
}

/// Objects of the other kinds kubesched reads have their names and namespaces checked too.
#[test]
fn other_known_kinds_names_and_namespaces_are_validated() {
    let err = error("apiVersion: v1\nkind: Service\nmetadata: {name: 1web}\n");
    assert!(
        err.starts_with(
            "x.yaml: Service 1web: metadata.name: Invalid value: \"1web\": a DNS-1035 label"
        ),
        "{err}"
    );
    let err = error("apiVersion: v1\nkind: Namespace\nmetadata: {name: a.b}\n");
    assert!(
        err.contains("metadata.name: Invalid value: \"a.b\": a lowercase RFC 1123 label"),
        "{err}"
    );
    let err = error("apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: Web}\n");
    assert!(err.contains("a lowercase RFC 1123 subdomain"), "{err}");
    let err = error("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: \"a\\nb\"}\n");
    assert!(
        err.starts_with(
            "x.yaml: ConfigMap \"a\\nb\"/c: metadata.namespace: Invalid value: \"a\\nb\""
        ),
        "{err}"
    );
    // Names of kinds kubesched does not read follow their own rules.
    load_one("apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: \"system:node\"}\n")
        .unwrap();
    load_one("apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: team-a}\n").unwrap();
}

#[test]
fn declared_features_must_be_as_the_api_server_stores_them() {
    let with = |list: &str| node("n1", &format!("status:\n  declaredFeatures: {list}\n"));
    let s = load_one(&with(
        "[ExtendWebSocketsToKubelet, RestartAllContainersOnContainerExits]",
    ))
    .unwrap();
    assert_eq!(
        s.nodes[0]
            .status
            .as_ref()
            .unwrap()
            .declared_features
            .as_ref()
            .unwrap()
            .len(),
        2
    );
    assert_eq!(
        error(&with(
            "[UserNamespacesHostNetworkSupport, RestartAllContainersOnContainerExits]"
        )),
        "x.yaml: Node n1: status.declaredFeatures[1]: Invalid value: \"RestartAllContainersOnContainerExits\": must be sorted (it sorts before \"UserNamespacesHostNetworkSupport\", the entry above it)"
    );
    assert_eq!(
        error(&with("[A, A]")),
        "x.yaml: Node n1: status.declaredFeatures[1]: Duplicate value: \"A\""
    );
    assert_eq!(
        error(&with("[\"\"]")),
        "x.yaml: Node n1: status.declaredFeatures[0]: Required value"
    );
    let err = error(&with("[1]"));
    assert!(
        err.starts_with("x.yaml: Node n1: status.declaredFeatures"),
        "{err}"
    );
    let err = error(&with("A"));
    assert!(
        err.starts_with("x.yaml: Node n1: status.declaredFeatures"),
        "{err}"
    );
}

#[test]
fn pod_groups_are_decoded_strictly_with_their_crd_checks() {
    let ok = load_one(
        "apiVersion: scheduling.x-k8s.io/v1alpha1\nkind: PodGroup\nmetadata: {name: pg}\nspec: {minMember: 3, scheduleTimeoutSeconds: 10, minResources: {cpu: '2'}}\n",
    )
    .unwrap();
    assert_eq!(ok.objects.len(), 1);
    assert!(ok.warnings.is_empty(), "{:?}", ok.warnings);
    assert_eq!(
        error(
            "apiVersion: scheduling.x-k8s.io/v1alpha1\nkind: PodGroup\nmetadata: {name: pg, namespace: team}\nspec: {minMembers: 3}\n"
        ),
        "x.yaml: PodGroup team/pg: spec.minMembers: unknown field, did you mean minMember?"
    );
    assert_eq!(
        error(
            "apiVersion: scheduling.x-k8s.io/v1alpha1\nkind: PodGroup\nmetadata: {name: pg}\nspec: {minMember: 0}\n"
        ),
        "x.yaml: PodGroup default/pg: spec.minMember: Invalid value: 0: spec.minMember in body should be greater than or equal to 1"
    );
    let err =
        error("apiVersion: scheduling.x-k8s.io/v1alpha1\nkind: PodGroups\nmetadata: {name: pg}\n");
    assert!(err.contains("did you mean PodGroup?"), "{err}");
}

#[test]
fn elastic_quotas_are_decoded_strictly_and_min_above_max_is_refused() {
    let ok = load_one(
        "apiVersion: scheduling.x-k8s.io/v1alpha1\nkind: ElasticQuota\nmetadata: {name: q, namespace: team}\nspec: {min: {cpu: '2'}, max: {cpu: '4', memory: 8Gi}}\nstatus: {used: {cpu: '1'}}\n",
    )
    .unwrap();
    assert_eq!(ok.objects.len(), 1);
    assert!(ok.warnings.is_empty(), "{:?}", ok.warnings);
    assert_eq!(
        error(
            "apiVersion: scheduling.x-k8s.io/v1alpha1\nkind: ElasticQuota\nmetadata: {name: q, namespace: team}\nspec: {mins: {cpu: '2'}}\n"
        ),
        "x.yaml: ElasticQuota team/q: spec.mins: unknown field, did you mean min?"
    );
    assert_eq!(
        error(
            "apiVersion: scheduling.x-k8s.io/v1alpha1\nkind: ElasticQuota\nmetadata: {name: q}\nspec: {min: {cpu: '5'}, max: {cpu: '4'}}\n"
        ),
        "x.yaml: ElasticQuota default/q: spec.min[cpu]: Invalid value: \"5\": must be less than or equal to spec.max[cpu] (4)"
    );
    let err = error(
        "apiVersion: scheduling.x-k8s.io/v1alpha1\nkind: ElasticQuotas\nmetadata: {name: q}\n",
    );
    assert!(err.contains("did you mean ElasticQuota?"), "{err}");
}

/// `load_value` reads an object as `load` reads its JSON text: the same objects, and the
/// same message for a field that is not there, a bad quantity or a float.
#[test]
fn load_value_reads_an_object_as_its_text() {
    let objects = [
        serde_json::json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": 110}}}),
        serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "image": "x",
                "resources": {"requests": {"cpu": "250m"}}}]}}),
        serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"schdulerName": "x", "containers": [{"name": "c", "image": "x"}]}}),
        serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "image": "x",
                "resources": {"requests": {"cpu": "lots"}}}]}}),
        serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"priority": 1.5, "containers": [{"name": "c", "image": "x"}]}}),
    ];
    let mut refused = 0;
    for object in objects {
        let text = load(&[src("t.jsonl line 3", &object.to_string())]);
        let value = load_value("t.jsonl line 3", object);
        match (text, value) {
            (Ok(t), Ok(v)) => {
                assert_eq!(t.nodes, v.nodes);
                assert_eq!(t.pods, v.pods);
            }
            (Err(t), Err(v)) => {
                assert_eq!(t.to_string(), v.to_string());
                refused += 1;
            }
            (t, v) => panic!("text: {t:?}\nvalue: {v:?}"),
        }
    }
    assert_eq!(refused, 3);
}
