//! The seeded scenario generator: one seed gives one FORMAT.md scenario (a list of
//! Kubernetes documents as JSON values), weighted towards the corners where scheduling
//! rules are easy to get wrong: requests that fill a node exactly, equal scores, every
//! node rejected, selectors that match nothing, priorities and start times that tie.
//!
//! Everything depends only on the seed and on this file: changing the generator changes
//! what a seed means, so a seed printed by an older run replays only with that commit.

use serde_json::{Value, json};

use crate::rng::Rng;

mod config;
mod dra;
mod storage;
mod workloads;

pub(crate) const ZONES: &[&str] = &["zone-a", "zone-b", "zone-c"];
pub(crate) const APPS: &[&str] = &["web", "db", "cache"];
pub(crate) const NAMESPACES: &[&str] = &["default", "default", "team"];
const TAINT_KEYS: &[&str] = &["dedicated", "gpu", "maintenance"];
const EFFECTS: &[&str] = &["NoSchedule", "PreferNoSchedule", "NoExecute"];
const IMAGES: &[&str] = &["nginx:1.27", "redis:7", "postgres:16", "busybox:1.36"];
pub(crate) const GPU: &str = "example.com/gpu";
/// Start times of running pods: few, so that victims tie on them (FORMAT.md rule 8).
const START_TIMES: &[&str] = &[
    "2025-01-01T00:00:00Z",
    "2025-01-01T00:00:00Z",
    "2025-01-02T00:00:00Z",
    "2025-01-03T12:00:00Z",
];
const PRIORITIES: &[i64] = &[0, 0, 10, 100, 1000, -5];

/// Shape of a generated node, kept to size pods against it.
pub(crate) struct NodeShape {
    name: String,
    cpu_milli: i64,
    mem_mi: i64,
    labels: Vec<(String, String)>,
    taints: Vec<(String, String, String)>,
}

/// The generated scenario for `seed`, as documents in file order.
pub fn generate(seed: u64) -> Vec<Value> {
    let mut r = Rng::new(seed);
    let mut docs = Vec::new();
    let two_profiles = if r.chance(35) {
        let c = config::config(&mut r);
        let two = c["profiles"].as_array().is_some_and(|p| p.len() > 1);
        docs.push(c);
        two
    } else {
        false
    };
    let node_count = if r.chance(3) {
        0
    } else {
        r.range(1, 7) as usize
    };
    let identical = r.chance(25);
    let mut shapes = Vec::new();
    for i in 0..node_count {
        let (node, shape) = if identical && i > 0 {
            let mut n = node_doc_like(&docs, &shapes, i);
            n.0["metadata"]["name"] = json!(format!("node-{i}"));
            n.0["metadata"]["labels"]["kubernetes.io/hostname"] = json!(format!("node-{i}"));
            n
        } else {
            node(&mut r, i)
        };
        docs.push(node);
        shapes.push(shape);
    }
    let storage = r.chance(25).then(|| storage::storage(&mut r, &shapes));
    let mut dra = r.chance(20).then(|| dra::dra(&mut r, &shapes));
    let mut pods = Vec::new();
    let bound = r.range(0, 8) as usize;
    for i in 0..bound {
        let target = if shapes.is_empty() || r.chance(5) {
            "gone-node".to_string()
        } else {
            r.pick(&shapes).name.clone()
        };
        let mut p = pod(&mut r, &shapes, &format!("run-{i}"), Some(&target));
        if let Some(s) = &storage
            && r.chance(40)
        {
            storage::attach(&mut r, s, &mut p, true);
        }
        if let Some(d) = &mut dra {
            pods.extend(dra::attach(&mut r, d, &mut p));
        }
        pods.push(p);
    }
    let pending = r.range(1, 8) as usize;
    for i in 0..pending {
        let mut p = pod(&mut r, &shapes, &format!("pod-{i}"), None);
        if two_profiles && r.chance(35) {
            p["spec"]["schedulerName"] = json!(config::SECOND_PROFILE);
        }
        if let Some(s) = &storage
            && r.chance(70)
        {
            storage::attach(&mut r, s, &mut p, false);
        }
        if let Some(d) = &mut dra {
            pods.extend(dra::attach(&mut r, d, &mut p));
        }
        pods.push(p);
    }
    if let Some(s) = storage {
        docs.extend(s.docs);
    }
    if let Some(d) = dra {
        docs.extend(d.docs);
    }
    docs.extend(workloads::workloads(&mut r));
    docs.extend(pods);
    docs
}

/// A copy of the first node (for scenarios whose nodes all tie).
fn node_doc_like(docs: &[Value], shapes: &[NodeShape], i: usize) -> (Value, NodeShape) {
    let first = docs
        .iter()
        .find(|d| d["kind"] == "Node")
        .cloned()
        .unwrap_or(Value::Null);
    let s = &shapes[0];
    (
        first,
        NodeShape {
            name: format!("node-{i}"),
            cpu_milli: s.cpu_milli,
            mem_mi: s.mem_mi,
            labels: s.labels.clone(),
            taints: s.taints.clone(),
        },
    )
}

fn node(r: &mut Rng, i: usize) -> (Value, NodeShape) {
    let name = format!("node-{i}");
    let cpu_milli = *r.pick(&[1000, 2000, 2000, 4000, 1500]);
    let mem_mi = *r.pick(&[1024, 2048, 4096, 4096]);
    let mut labels = vec![("kubernetes.io/hostname".to_string(), name.clone())];
    if r.chance(85) {
        labels.push((
            "topology.kubernetes.io/zone".into(),
            r.pick(ZONES).to_string(),
        ));
    }
    if r.chance(50) {
        labels.push(("disk".into(), r.pick(&["ssd", "hdd"]).to_string()));
    }
    if r.chance(40) {
        labels.push(("tier".into(), r.range(1, 3).to_string()));
    }
    let mut taints = Vec::new();
    if r.chance(30) {
        for _ in 0..r.range(1, 2) {
            taints.push((
                r.pick(TAINT_KEYS).to_string(),
                r.pick(&["true", "a", "b"]).to_string(),
                r.pick(EFFECTS).to_string(),
            ));
        }
    }
    let mut alloc = json!({
        "cpu": format!("{cpu_milli}m"),
        "memory": format!("{mem_mi}Mi"),
        "pods": r.pick(&["110", "110", "3", "1"]).to_string(),
    });
    if r.chance(30) {
        alloc[GPU] = json!(r.range(0, 2).to_string());
    }
    if r.chance(20) {
        alloc["ephemeral-storage"] = json!(r.pick(&["1Gi", "10Gi"]).to_string());
    }
    let mut status = json!({"capacity": alloc.clone(), "allocatable": alloc});
    if r.chance(50) {
        let mut images = Vec::new();
        for img in IMAGES {
            if r.chance(40) {
                images.push(json!({"names": [img], "sizeBytes": r.pick(&[10_000_000i64, 300_000_000, 900_000_000, 2_000_000_000])}));
            }
        }
        status["images"] = json!(images);
    }
    let mut spec = json!({});
    if !taints.is_empty() {
        spec["taints"] = json!(
            taints
                .iter()
                .map(|(k, v, e)| json!({"key": k, "value": v, "effect": e}))
                .collect::<Vec<_>>()
        );
    }
    if r.chance(7) {
        spec["unschedulable"] = json!(true);
    }
    let label_map: serde_json::Map<String, Value> =
        labels.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
    let doc = json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": label_map},
        "spec": spec,
        "status": status,
    });
    (
        doc,
        NodeShape {
            name,
            cpu_milli,
            mem_mi,
            labels,
            taints,
        },
    )
}

/// A CPU request in milli-units, often an exact fraction of some node's allocatable.
fn cpu_request(r: &mut Rng, shapes: &[NodeShape]) -> i64 {
    match (r.below(4), shapes.is_empty()) {
        (0, false) => {
            let n = r.pick(shapes).cpu_milli;
            n / *r.pick(&[1, 2, 4]) + *r.pick(&[0, 0, 1, -1])
        }
        _ => *r.pick(&[0, 100, 250, 500, 1000, 1500]),
    }
}

fn mem_request(r: &mut Rng, shapes: &[NodeShape]) -> i64 {
    match (r.below(4), shapes.is_empty()) {
        (0, false) => r.pick(shapes).mem_mi / *r.pick(&[1, 2, 4]),
        _ => *r.pick(&[0, 64, 128, 512, 1024]),
    }
}

fn resources(r: &mut Rng, shapes: &[NodeShape]) -> Value {
    let mut requests = serde_json::Map::new();
    let cpu = cpu_request(r, shapes);
    if cpu > 0 || r.chance(10) {
        requests.insert("cpu".into(), json!(format!("{cpu}m")));
    }
    let mem = mem_request(r, shapes);
    if mem > 0 || r.chance(10) {
        requests.insert("memory".into(), json!(format!("{mem}Mi")));
    }
    if r.chance(12) {
        requests.insert(GPU.into(), json!(r.range(1, 2).to_string()));
    }
    if r.chance(5) {
        requests.insert("ephemeral-storage".into(), json!("2Gi"));
    }
    let mut res = json!({});
    if !requests.is_empty() {
        if r.chance(15) {
            // Limits only where requests equal them: extended resources require it.
            res["limits"] = Value::Object(requests.clone());
        }
        res["requests"] = Value::Object(requests);
    }
    res
}

fn selector_value(r: &mut Rng, key: &str) -> String {
    match key {
        "topology.kubernetes.io/zone" => r.pick(ZONES).to_string(),
        "disk" => r.pick(&["ssd", "hdd"]).to_string(),
        "tier" => r.range(1, 3).to_string(),
        _ => format!("node-{}", r.range(0, 6)),
    }
}

fn node_requirement(r: &mut Rng) -> Value {
    let key = *r.pick(&[
        "topology.kubernetes.io/zone",
        "disk",
        "tier",
        "kubernetes.io/hostname",
    ]);
    match r.below(6) {
        0 | 1 => {
            json!({"key": key, "operator": "In", "values": [selector_value(r, key), selector_value(r, key)]})
        }
        2 => json!({"key": key, "operator": "NotIn", "values": [selector_value(r, key)]}),
        3 => json!({"key": key, "operator": "Exists"}),
        4 => json!({"key": key, "operator": "DoesNotExist"}),
        _ => {
            json!({"key": "tier", "operator": *r.pick(&["Gt", "Lt"]), "values": [r.range(0, 3).to_string()]})
        }
    }
}

fn pod_selector(r: &mut Rng) -> Value {
    match r.below(8) {
        0 => json!({}),
        1 => {
            json!({"matchExpressions": [{"key": "app", "operator": "In", "values": [r.pick(APPS), r.pick(APPS)]}]})
        }
        2 => json!({"matchLabels": {"app": "nothing"}}),
        _ => json!({"matchLabels": {"app": r.pick(APPS)}}),
    }
}

fn topology_key(r: &mut Rng) -> &'static str {
    const KEYS: &[&str] = &[
        "topology.kubernetes.io/zone",
        "kubernetes.io/hostname",
        "disk",
    ];
    KEYS[r.below(KEYS.len() as u64) as usize]
}

fn pod_affinity_term(r: &mut Rng) -> Value {
    let mut term = json!({"labelSelector": pod_selector(r), "topologyKey": topology_key(r)});
    if r.chance(15) {
        term["namespaces"] = json!([r.pick(NAMESPACES)]);
    }
    if r.chance(5) {
        term["namespaceSelector"] = json!({});
    }
    term
}

fn affinity(r: &mut Rng) -> Value {
    let mut aff = json!({});
    if r.chance(35) {
        let mut na = json!({});
        if r.chance(60) {
            let terms: Vec<Value> = (0..r.range(1, 2))
                .map(|_| json!({"matchExpressions": (0..r.range(1, 2)).map(|_| node_requirement(r)).collect::<Vec<_>>()}))
                .collect();
            na["requiredDuringSchedulingIgnoredDuringExecution"] =
                json!({"nodeSelectorTerms": terms});
        }
        if r.chance(60) {
            let prefs: Vec<Value> = (0..r.range(1, 3))
                .map(|_| json!({"weight": r.pick(&[1, 50, 100]), "preference": {"matchExpressions": [node_requirement(r)]}}))
                .collect();
            na["preferredDuringSchedulingIgnoredDuringExecution"] = json!(prefs);
        }
        aff["nodeAffinity"] = na;
    }
    for kind in ["podAffinity", "podAntiAffinity"] {
        if r.chance(25) {
            let mut pa = json!({});
            if r.chance(60) {
                pa["requiredDuringSchedulingIgnoredDuringExecution"] =
                    json!([pod_affinity_term(r)]);
            }
            if r.chance(60) {
                let prefs: Vec<Value> = (0..r.range(1, 2))
                    .map(|_| json!({"weight": r.pick(&[1, 10, 100]), "podAffinityTerm": pod_affinity_term(r)}))
                    .collect();
                pa["preferredDuringSchedulingIgnoredDuringExecution"] = json!(prefs);
            }
            aff[kind] = pa;
        }
    }
    aff
}

fn spread(r: &mut Rng, app: &str) -> Value {
    let mut c = json!({
        "maxSkew": r.pick(&[1, 1, 2]),
        "topologyKey": topology_key(r),
        "whenUnsatisfiable": r.pick(&["DoNotSchedule", "ScheduleAnyway"]),
        "labelSelector": if r.chance(80) { json!({"matchLabels": {"app": app}}) } else { pod_selector(r) },
    });
    if r.chance(15) && c["whenUnsatisfiable"] == "DoNotSchedule" {
        c["minDomains"] = json!(r.range(1, 4));
    }
    if r.chance(15) {
        c["nodeAffinityPolicy"] = json!(r.pick(&["Honor", "Ignore"]));
    }
    if r.chance(15) {
        c["nodeTaintsPolicy"] = json!(r.pick(&["Honor", "Ignore"]));
    }
    if r.chance(10) {
        c["matchLabelKeys"] = json!(["version"]);
    }
    c
}

fn toleration(r: &mut Rng, shapes: &[NodeShape]) -> Value {
    let taint = shapes
        .iter()
        .flat_map(|s| s.taints.iter())
        .nth(r.below(4) as usize)
        .cloned()
        .unwrap_or(("dedicated".into(), "true".into(), "NoSchedule".into()));
    match r.below(5) {
        0 => json!({"operator": "Exists"}),
        1 => json!({"key": taint.0, "operator": "Exists"}),
        2 => json!({"key": taint.0, "operator": "Equal", "value": taint.1}),
        _ => json!({"key": taint.0, "operator": "Equal", "value": taint.1, "effect": taint.2}),
    }
}

fn container(r: &mut Rng, shapes: &[NodeShape], name: &str) -> Value {
    let mut c = json!({"name": name, "image": r.pick(IMAGES), "resources": resources(r, shapes)});
    if r.chance(10) {
        c["ports"] = json!([{
            "containerPort": 80,
            "hostPort": r.pick(&[8080, 8080, 9090]),
            "protocol": r.pick(&["TCP", "TCP", "UDP"]),
        }]);
    }
    c
}

fn pod(r: &mut Rng, shapes: &[NodeShape], name: &str, node: Option<&str>) -> Value {
    let app = *r.pick(APPS);
    let ns = *r.pick(NAMESPACES);
    let mut labels = json!({"app": app});
    if r.chance(30) {
        labels["version"] = json!(r.pick(&["v1", "v2"]));
    }
    let mut containers = vec![container(r, shapes, "main")];
    if r.chance(20) {
        containers.push(container(r, shapes, "helper"));
    }
    let mut spec = json!({"containers": containers});
    if r.chance(20) {
        let mut init = container(r, shapes, "init");
        if r.chance(40) {
            init["restartPolicy"] = json!("Always");
        }
        spec["initContainers"] = json!([init]);
    }
    if r.chance(8) {
        spec["overhead"] = json!({"cpu": r.pick(&["100m", "250m"]), "memory": "64Mi"});
    }
    if r.chance(6) {
        spec["resources"] = json!({"requests": {"cpu": format!("{}m", cpu_request(r, shapes).max(1)), "memory": "256Mi"}});
    }
    let priority = *r.pick(PRIORITIES);
    if priority != 0 || r.chance(30) {
        spec["priority"] = json!(priority);
    }
    if node.is_none() && priority > 0 && r.chance(10) {
        spec["preemptionPolicy"] = json!("Never");
    }
    if node.is_none() {
        if r.chance(20) {
            let key = *r.pick(&["topology.kubernetes.io/zone", "disk", "tier"]);
            spec["nodeSelector"] = json!({key: selector_value(r, key)});
        }
        let aff = affinity(r);
        if aff.as_object().is_some_and(|o| !o.is_empty()) {
            spec["affinity"] = aff;
        }
        if r.chance(25) {
            spec["topologySpreadConstraints"] = json!(
                (0..r.range(1, 2))
                    .map(|_| spread(r, app))
                    .collect::<Vec<_>>()
            );
        }
        if r.chance(4) {
            spec["schedulingGates"] = json!([{"name": "example.com/wait"}]);
        }
        if r.chance(3) {
            spec["schedulerName"] = json!("other-scheduler");
        }
    } else if r.chance(20) {
        // Running pods with anti-affinity constrain later pods (symmetry).
        let aff = affinity(r);
        if aff.as_object().is_some_and(|o| !o.is_empty()) {
            spec["affinity"] = aff;
        }
    }
    if r.chance(30) {
        spec["tolerations"] = json!(
            (0..r.range(1, 2))
                .map(|_| toleration(r, shapes))
                .collect::<Vec<_>>()
        );
    }
    let mut doc = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": labels},
        "spec": spec,
    });
    match node {
        Some(n) => {
            doc["spec"]["nodeName"] = json!(n);
            doc["status"] = json!({"phase": r.pick(&["Running", "Running", "Running", "Succeeded"]), "startTime": r.pick(START_TIMES)});
        }
        None => {
            if r.chance(8) && !shapes.is_empty() {
                doc["status"] = json!({"nominatedNodeName": r.pick(shapes).name});
            }
        }
    }
    doc
}

/// The documents as one multi-document YAML file, with `header` lines as comments.
pub fn to_yaml(docs: &[Value], header: &str) -> String {
    let mut out = String::new();
    for line in header.lines() {
        out.push_str("# ");
        out.push_str(line);
        out.push('\n');
    }
    for d in docs {
        out.push_str("---\n");
        out.push_str(&serde_norway::to_string(d).unwrap_or_else(|_| format!("{d}\n")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_always_gives_the_same_scenario() {
        for seed in 0..50 {
            assert_eq!(generate(seed), generate(seed));
        }
        assert_ne!(generate(1), generate(2));
    }

    #[test]
    fn a_few_hundred_seeds_reach_every_kind_and_corner() {
        let mut kinds = std::collections::BTreeSet::new();
        let mut corners = std::collections::BTreeSet::new();
        for seed in 0..400 {
            for d in generate(seed) {
                kinds.insert(d["kind"].as_str().unwrap_or("").to_string());
                let text = d.to_string();
                for (corner, needle) in [
                    ("multiPoint", "multiPoint"),
                    ("plugin args", "defaultingType"),
                    ("pod claims", "resourceClaimName"),
                    ("claim template", "resourceClaimTemplateName"),
                    ("pod volumes", "claimName"),
                    ("allocated claim", "allocation"),
                    ("network slice", "allNodes"),
                    ("first available", "firstAvailable"),
                    ("attach limit", "allocatable\":{\"count"),
                    ("pending PV", "local-pv"),
                    ("gate", "schedulingGates"),
                    ("nominated", "nominatedNodeName"),
                    ("sidecar", "\"restartPolicy\":\"Always\""),
                ] {
                    if text.contains(needle) {
                        corners.insert(corner);
                    }
                }
                if d["profiles"].as_array().is_some_and(|p| p.len() == 2) {
                    corners.insert("two profiles");
                }
                if d["kind"] == "Pod" && d["spec"]["resources"].is_object() {
                    corners.insert("pod-level resources");
                }
            }
        }
        for kind in [
            "KubeSchedulerConfiguration",
            "Node",
            "Pod",
            "Service",
            "ReplicaSet",
            "StatefulSet",
            "ReplicationController",
            "PodDisruptionBudget",
            "StorageClass",
            "CSIDriver",
            "CSINode",
            "CSIStorageCapacity",
            "PersistentVolume",
            "PersistentVolumeClaim",
            "VolumeAttachment",
            "DeviceClass",
            "ResourceSlice",
            "ResourceClaim",
            "ResourceClaimTemplate",
        ] {
            assert!(kinds.contains(kind), "no {kind} in 400 seeds");
        }
        assert_eq!(corners.len(), 15, "reached only {corners:?}");
    }

    #[test]
    fn every_scenario_has_a_pending_pod_and_reads_back_as_yaml() {
        for seed in 0..200 {
            let docs = generate(seed);
            assert!(
                docs.iter()
                    .any(|d| d["kind"] == "Pod" && d["spec"].get("nodeName").is_none())
            );
            let text = to_yaml(&docs, "seed");
            let back: Vec<Value> = text
                .split("---\n")
                .skip(1)
                .map(|t| serde_norway::from_str(t).unwrap())
                .collect();
            assert_eq!(back, docs, "seed {seed}");
        }
    }
}
