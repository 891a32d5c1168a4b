//! Every conformance case turned into what `kubectl get nodes,pods -A -o yaml` (and
//! `-o json`) would print for it: one `kind: List` whose items are the case's nodes,
//! pods and other objects, decorated as a live cluster decorates them (uid,
//! resourceVersion, creationTimestamp, managedFields, ownerReferences, a running pod's
//! status with conditions and containerStatuses, a node's addresses and nodeInfo), with
//! the KubeSchedulerConfiguration kept in a file of its own. The simulation of the dump
//! must print exactly the case's expected JSON Lines.
//!
//! The decorations are chosen to change nothing kube-scheduler reads: no labels, taints,
//! images or tolerations are added, a pod's `status.startTime` is only kept (never
//! invented, since preemption reads it), and the owners named in the added
//! ownerReferences are not in the dump (kube-scheduler then ignores them, as it does
//! when the owner is gone). The item order is the nodes first, in the case's order
//! (node order = item order), then every other object in the case's order, so the queue
//! order of pending pods is the case's.

use std::path::{Path, PathBuf};

use kubesched_sim::scenario::{self, Source};
use kubesched_sim::{SimulationOptions, output, simulate, whatif};
use serde::Deserialize;
use serde_json::{Map, Value, json};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// FNV-1a, for deterministic uids and ids.
fn fnv(text: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

fn uid(key: &str) -> String {
    let a = fnv(key);
    let b = fnv(&format!("{key}#"));
    format!(
        "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xfff,
        b >> 52,
        b & 0xffff_ffff_ffff
    )
}

const CREATED: &str = "2025-06-01T10:00:00Z";

fn obj(value: &mut Value) -> &mut Map<String, Value> {
    if !value.is_object() {
        *value = json!({});
    }
    value.as_object_mut().expect("an object")
}

fn metadata(item: &mut Value, key: &str, manager: &str, fields: Value) {
    let meta = obj(obj(item).entry("metadata").or_insert_with(|| json!({})));
    meta.entry("uid").or_insert_with(|| json!(uid(key)));
    meta.entry("resourceVersion")
        .or_insert_with(|| json!((fnv(key) % 900_000 + 100_000).to_string()));
    meta.entry("creationTimestamp")
        .or_insert_with(|| json!(CREATED));
    meta.entry("managedFields").or_insert_with(|| {
        json!([
            {"apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": fields,
             "manager": manager, "operation": "Update", "time": CREATED},
            {"apiVersion": "v1", "fieldsType": "FieldsV1",
             "fieldsV1": {"f:status": {"f:conditions": {".": {}}}},
             "manager": "kubelet", "operation": "Update", "subresource": "status",
             "time": "2025-06-01T10:00:05Z"}
        ])
    });
}

fn decorate_node(item: &mut Value, index: usize) {
    let name = item["metadata"]["name"].as_str().unwrap_or("").to_string();
    metadata(
        item,
        &format!("node/{name}"),
        "kubelet",
        json!({"f:metadata": {"f:annotations": {".": {}, "f:node.alpha.kubernetes.io/ttl": {}}}}),
    );
    let meta = obj(&mut item["metadata"]);
    let annotations = obj(meta.entry("annotations").or_insert_with(|| json!({})));
    annotations
        .entry("node.alpha.kubernetes.io/ttl")
        .or_insert_with(|| json!("0"));
    annotations
        .entry("volumes.kubernetes.io/controller-managed-attach-detach")
        .or_insert_with(|| json!("true"));
    let spec = obj(obj(item).entry("spec").or_insert_with(|| json!({})));
    let cidr = format!("10.244.{index}.0/24");
    spec.entry("podCIDR").or_insert_with(|| json!(cidr));
    spec.entry("podCIDRs").or_insert_with(|| json!([cidr]));
    spec.entry("providerID")
        .or_insert_with(|| json!(format!("kind://docker/kind/{name}")));
    let status = obj(obj(item).entry("status").or_insert_with(|| json!({})));
    status.entry("addresses").or_insert_with(|| {
        json!([{"type": "InternalIP", "address": format!("172.18.0.{}", index + 2)},
               {"type": "Hostname", "address": name}])
    });
    status.entry("conditions").or_insert_with(|| {
        json!([
            {"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory",
             "message": "kubelet has sufficient memory available",
             "lastHeartbeatTime": CREATED, "lastTransitionTime": CREATED},
            {"type": "Ready", "status": "True", "reason": "KubeletReady",
             "message": "kubelet is posting ready status",
             "lastHeartbeatTime": CREATED, "lastTransitionTime": CREATED}
        ])
    });
    status
        .entry("daemonEndpoints")
        .or_insert_with(|| json!({"kubeletEndpoint": {"Port": 10250}}));
    status.entry("nodeInfo").or_insert_with(|| {
        json!({
            "architecture": "amd64", "bootID": uid(&format!("boot/{name}")),
            "containerRuntimeVersion": "containerd://2.1.1", "kernelVersion": "6.8.0-60-generic",
            "kubeProxyVersion": "", "kubeletVersion": "v1.35.4",
            "machineID": fnv(&name).to_string(), "operatingSystem": "linux",
            "osImage": "Debian GNU/Linux 12 (bookworm)", "systemUUID": uid(&format!("sys/{name}"))
        })
    });
}

/// The status of a running container, resources as the kubelet reports them (equal to
/// the spec, so kube-scheduler's max(spec, status) changes nothing).
fn container_status(container: &Value, running: bool, pod_key: &str) -> Value {
    let name = container["name"].as_str().unwrap_or("c");
    let image = container["image"]
        .as_str()
        .unwrap_or("registry.k8s.io/pause:3.10");
    let mut status = json!({
        "name": name,
        "image": image,
        "imageID": format!("docker.io/library/{image}@sha256:{:016x}", fnv(image)),
        "containerID": format!("containerd://{:016x}", fnv(&format!("{pod_key}/{name}"))),
        "lastState": {},
        "restartCount": 0,
    });
    let fields = obj(&mut status);
    if running {
        fields.insert("ready".into(), json!(true));
        fields.insert("started".into(), json!(true));
        fields.insert(
            "state".into(),
            json!({"running": {"startedAt": "2025-06-01T10:00:04Z"}}),
        );
    } else {
        fields.insert("ready".into(), json!(false));
        fields.insert("started".into(), json!(false));
        fields.insert(
            "state".into(),
            json!({"terminated": {"exitCode": 0, "reason": "Completed",
                "startedAt": "2025-06-01T10:00:02Z", "finishedAt": "2025-06-01T10:00:03Z",
                "containerID": format!("containerd://{:016x}", fnv(&format!("{pod_key}/{name}")))}}),
        );
    }
    if let Some(resources) = container.get("resources").filter(|r| r.is_object()) {
        if let Some(requests) = resources.get("requests").filter(|r| r.is_object()) {
            fields.insert("allocatedResources".into(), requests.clone());
        }
        fields.insert("resources".into(), resources.clone());
    }
    status
}

fn qos_class(spec: &Value) -> &'static str {
    let containers = spec["containers"].as_array().cloned().unwrap_or_default();
    let any = containers.iter().any(|c| {
        ["requests", "limits"]
            .iter()
            .any(|k| c["resources"][k].as_object().is_some_and(|m| !m.is_empty()))
    });
    if any { "Burstable" } else { "BestEffort" }
}

fn decorate_pod(item: &mut Value, node_index: Option<usize>) {
    let namespace = item["metadata"]["namespace"]
        .as_str()
        .filter(|n| !n.is_empty())
        .unwrap_or("default")
        .to_string();
    let name = item["metadata"]["name"].as_str().unwrap_or("").to_string();
    let key = format!("pod/{namespace}/{name}");
    metadata(
        item,
        &key,
        "kube-controller-manager",
        json!({"f:metadata": {"f:generateName": {}, "f:ownerReferences": {".": {}}},
               "f:spec": {"f:containers": {}, "f:dnsPolicy": {}, "f:restartPolicy": {}}}),
    );
    let meta = obj(&mut item["metadata"]);
    meta.entry("generateName")
        .or_insert_with(|| json!(format!("{name}-")));
    meta.entry("ownerReferences").or_insert_with(|| {
        // An owner that is not in the dump: kube-scheduler ignores it, as when the owner
        // has been deleted.
        json!([{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                "name": format!("gone-{:08x}", fnv(&key) >> 32),
                "uid": uid(&format!("rs/{key}")), "controller": true,
                "blockOwnerDeletion": true}])
    });
    let spec_value = item.get("spec").cloned().unwrap_or(Value::Null);
    let spec = obj(obj(item).entry("spec").or_insert_with(|| json!({})));
    spec.entry("dnsPolicy")
        .or_insert_with(|| json!("ClusterFirst"));
    spec.entry("restartPolicy")
        .or_insert_with(|| json!("Always"));
    spec.entry("terminationGracePeriodSeconds")
        .or_insert_with(|| json!(30));
    spec.entry("serviceAccountName")
        .or_insert_with(|| json!("default"));
    spec.entry("enableServiceLinks")
        .or_insert_with(|| json!(true));
    spec.entry("securityContext").or_insert_with(|| json!({}));
    if let Some(containers) = spec.get_mut("containers").and_then(Value::as_array_mut) {
        for c in containers.iter_mut().filter(|c| c.is_object()) {
            let c = obj(c);
            c.entry("imagePullPolicy")
                .or_insert_with(|| json!("IfNotPresent"));
            c.entry("terminationMessagePath")
                .or_insert_with(|| json!("/dev/termination-log"));
            c.entry("terminationMessagePolicy")
                .or_insert_with(|| json!("File"));
        }
    }
    let phase = item["status"]["phase"].as_str().map(str::to_string);
    let terminal = matches!(phase.as_deref(), Some("Succeeded" | "Failed"));
    let status = obj(obj(item).entry("status").or_insert_with(|| json!({})));
    status
        .entry("qosClass")
        .or_insert_with(|| json!(qos_class(&spec_value)));
    match node_index {
        Some(index) if !terminal => {
            status.insert("phase".into(), json!("Running"));
            let host = format!("172.18.0.{}", index + 2);
            let ip = format!("10.244.{index}.{}", fnv(&key) % 250 + 2);
            status.entry("hostIP").or_insert_with(|| json!(host));
            status
                .entry("hostIPs")
                .or_insert_with(|| json!([{"ip": host}]));
            status.entry("podIP").or_insert_with(|| json!(ip));
            status
                .entry("podIPs")
                .or_insert_with(|| json!([{"ip": ip}]));
            let conditions = obj_array(status, "conditions");
            for kind in [
                "PodReadyToStartContainers",
                "Initialized",
                "Ready",
                "ContainersReady",
                "PodScheduled",
            ] {
                if !conditions.iter().any(|c| c["type"] == kind) {
                    conditions.push(json!({"type": kind, "status": "True",
                        "lastProbeTime": null, "lastTransitionTime": "2025-06-01T10:00:04Z"}));
                }
            }
            if !status.contains_key("containerStatuses") {
                let statuses: Vec<Value> = spec_value["containers"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|c| container_status(c, true, &key))
                    .collect();
                status.insert("containerStatuses".into(), json!(statuses));
            }
            if !status.contains_key("initContainerStatuses")
                && let Some(init) = spec_value["initContainers"].as_array()
            {
                let statuses: Vec<Value> = init
                    .iter()
                    .map(|c| container_status(c, c["restartPolicy"] == "Always", &key))
                    .collect();
                status.insert("initContainerStatuses".into(), json!(statuses));
            }
        }
        Some(_) => {}
        None => {
            status.entry("phase").or_insert_with(|| json!("Pending"));
            let gated = spec_value["schedulingGates"]
                .as_array()
                .is_some_and(|g| !g.is_empty());
            let conditions = obj_array(status, "conditions");
            if !conditions.iter().any(|c| c["type"] == "PodScheduled") {
                conditions.push(if gated {
                    json!({"type": "PodScheduled", "status": "False", "reason": "SchedulingGated",
                        "message": "Scheduling is blocked due to non-empty scheduling gates",
                        "lastProbeTime": null, "lastTransitionTime": CREATED})
                } else {
                    json!({"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                        "message": "0/1 nodes are available: 1 Insufficient cpu.",
                        "lastProbeTime": null, "lastTransitionTime": CREATED})
                });
            }
        }
    }
}

fn obj_array<'a>(map: &'a mut Map<String, Value>, key: &str) -> &'a mut Vec<Value> {
    let entry = map.entry(key).or_insert_with(|| json!([]));
    if !entry.is_array() {
        *entry = json!([]);
    }
    entry.as_array_mut().expect("an array")
}

/// The documents of a case: (config document, the other documents in order).
fn split_case(text: &str) -> (Option<Value>, Vec<Value>) {
    let mut config = None;
    let mut others = Vec::new();
    for document in serde_norway::Deserializer::from_str(text) {
        let value = Value::deserialize(document).expect("the case parses");
        if value.is_null() {
            continue;
        }
        if value["kind"] == "KubeSchedulerConfiguration" {
            config = Some(value);
        } else {
            others.push(value);
        }
    }
    (config, others)
}

/// The case as a live cluster's `kind: List`.
fn dump(documents: &[Value]) -> Value {
    let nodes: Vec<&Value> = documents.iter().filter(|d| d["kind"] == "Node").collect();
    let node_index = |name: &Value| nodes.iter().position(|n| n["metadata"]["name"] == *name);
    let mut items = Vec::new();
    for (i, node) in nodes.iter().enumerate() {
        let mut node = (*node).clone();
        decorate_node(&mut node, i);
        items.push(node);
    }
    for d in documents.iter().filter(|d| d["kind"] != "Node") {
        let mut d = d.clone();
        if d["kind"] == "Pod" && d["apiVersion"] == "v1" {
            let bound = d["spec"]["nodeName"]
                .as_str()
                .filter(|n| !n.is_empty())
                .map(|n| node_index(&json!(n)).unwrap_or(usize::MAX / 2));
            decorate_pod(&mut d, bound);
        }
        items.push(d);
    }
    json!({"apiVersion": "v1", "kind": "List", "items": items,
           "metadata": {"resourceVersion": ""}})
}

fn expected_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path.with_extension("expected.jsonl"))
        .expect("expected file")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("expected line"))
        .collect()
}

fn actual_lines(
    sources: &[Source],
    config: Option<&Source>,
    preemption: bool,
) -> Result<Vec<Value>, String> {
    let mut scenario = scenario::load(sources).map_err(|e| format!("load: {e}"))?;
    if let Some(config) = config {
        whatif::replace_config(&mut scenario, config).map_err(|e| format!("--config: {e}"))?;
    }
    // The conformance cases' expected lines are kube-scheduler v1.35.4's.
    let options = SimulationOptions {
        preemption,
        features: kubesched_framework::Features::new(kubesched_framework::KubernetesVersion::V1_35),
        ..Default::default()
    };
    let sim = simulate(&scenario, &options).map_err(|e| format!("simulate: {e}"))?;
    Ok(sim.results.iter().map(output::to_json).collect())
}

fn known_failures() -> Vec<String> {
    std::fs::read_to_string(repo_root().join("conformance/known-failures.txt"))
        .unwrap_or_default()
        .lines()
        .map(|l| l.split('#').next().unwrap_or("").trim().to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

#[test]
fn every_case_as_a_kubectl_dump_gives_the_same_lines() {
    let known = known_failures();
    // Cases that do not pass as they are (known-failures.txt) are skipped.
    let folders = [
        ("cases", false),
        ("cases-default", false),
        ("cases-preemption", true),
    ];
    let mut failures = Vec::new();
    let mut checked = 0;
    for (folder, preemption) in folders {
        let dir = repo_root().join("conformance").join(folder);
        let mut cases: Vec<PathBuf> = std::fs::read_dir(&dir)
            .expect("conformance folder")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.extension().is_some_and(|x| x == "yaml")
                    && p.with_extension("expected.jsonl").exists()
            })
            .collect();
        cases.sort();
        for case in cases {
            let stem = case.file_stem().unwrap_or_default().to_string_lossy();
            let name = format!("{folder}/{stem}");
            if known.contains(&name) {
                continue;
            }
            let text = std::fs::read_to_string(&case).expect("case");
            let (config, documents) = split_case(&text);
            let list = dump(&documents);
            let yaml = serde_norway::to_string(&list).expect("yaml");
            let json = serde_json::to_string_pretty(&list).expect("json");
            let config_source = config.map(|c| Source {
                name: "scheduler-config.yaml".into(),
                text: serde_norway::to_string(&c).expect("yaml"),
            });
            let expected = expected_lines(&case);
            // YAML: the configuration as a second file of the scenario.
            let mut sources: Vec<Source> = config_source.iter().cloned().collect();
            sources.push(Source {
                name: "dump.yaml".into(),
                text: yaml,
            });
            // JSON: the configuration given as --config.
            let json_sources = [Source {
                name: "dump.json".into(),
                text: json,
            }];
            for (label, result) in [
                ("yaml", actual_lines(&sources, None, preemption)),
                (
                    "json",
                    actual_lines(&json_sources, config_source.as_ref(), preemption),
                ),
            ] {
                checked += 1;
                match result {
                    Ok(actual) if actual == expected => {}
                    Ok(actual) => {
                        let at = actual
                            .iter()
                            .zip(&expected)
                            .position(|(a, e)| a != e)
                            .unwrap_or(actual.len().min(expected.len()));
                        failures.push(format!(
                            "{name} ({label}): line {}: expected {}, got {}",
                            at + 1,
                            expected.get(at).map_or("nothing".into(), Value::to_string),
                            actual.get(at).map_or("nothing".into(), Value::to_string),
                        ));
                    }
                    Err(e) => failures.push(format!("{name} ({label}): {e}")),
                }
            }
        }
    }
    println!("{checked} dumps agree");
    assert!(checked > 200, "only {checked} dumps checked");
    assert!(
        failures.is_empty(),
        "{} dump(s) disagree with their case:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn a_dump_beside_other_documents_gives_the_same_lines() {
    // The dump of the nodes alone, the pods as documents of their own after it.
    let case = repo_root().join("conformance/cases-default/pts-two-constraints.yaml");
    let text = std::fs::read_to_string(&case).expect("case");
    let (config, documents) = split_case(&text);
    assert!(config.is_none());
    let (nodes, rest): (Vec<Value>, Vec<Value>) =
        documents.into_iter().partition(|d| d["kind"] == "Node");
    let mut node_list = dump(&nodes);
    node_list["kind"] = json!("NodeList");
    for item in node_list["items"].as_array_mut().into_iter().flatten() {
        // A typed list leaves out its items' apiVersion and kind.
        let item = obj(item);
        item.remove("apiVersion");
        item.remove("kind");
    }
    let mut text = serde_norway::to_string(&node_list).expect("yaml");
    for d in &rest {
        text.push_str("---\n");
        text.push_str(&serde_norway::to_string(d).expect("yaml"));
    }
    let actual = actual_lines(
        &[Source {
            name: "mixed.yaml".into(),
            text,
        }],
        None,
        false,
    )
    .expect("simulates");
    assert_eq!(actual, expected_lines(&case));
}
