//! Importers of public traces into kubesched's trace format.
//!
//! [`openb`]: the Alibaba GPU cluster trace v2023 (`cluster-trace-gpu-v2023` in
//! alibaba/clusterdata, the trace of the USENIX ATC'23 paper "Beware of
//! Fragmentation"): a node list and a pod list, as CSV.
//!
//! A node list row (`sn,cpu_milli,memory_mib,gpu,model`) becomes a Node applied at time
//! 0 with that cpu and memory allocatable, and `pods` as `max_pods` says. Its GPUs
//! are given two ways: as the annotations the paper's simulator reads
//! (`alibabacloud.com/gpu-count`, and the label and annotation
//! `alibabacloud.com/gpu-card-model`), for a GPU-sharing plugin; and as the extended
//! resource `alibabacloud.com/gpu-milli` (1000 per GPU), so that kube-scheduler's own
//! plugins count them too, as fungible thousandths of a GPU.
//!
//! A pod list row (`name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,
//! creation_time,deletion_time,scheduled_time`) becomes a Pod applied at its
//! `creation_time`, requesting its cpu and memory and `num_gpu × gpu_milli` of
//! `alibabacloud.com/gpu-milli`, with the simulator's annotations
//! (`alibabacloud.com/gpu-milli` per GPU, `gpu-count`, `gpu-card-model`). A `gpu_spec`
//! (`V100M16|V100M32`) is also a required node affinity on the model label. The pod
//! runs for `deletion_time - scheduled_time` once bound; a pod the original cluster
//! never scheduled (no `scheduled_time`) is deleted at its `deletion_time`, bound or
//! not. `qos` and `pod_phase` are not used: every pod arrives.

use std::fmt::Write as _;

use serde::Deserialize;
use serde_json::{Value, json};

/// A row of a trace to import that cannot be read: the file, the row and the field.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{file}: line {line}: {problem}")]
pub struct ImportError {
    /// The file, as the user named it.
    pub file: String,
    /// The line, from 1 (the header is line 1).
    pub line: usize,
    /// What is wrong, with the field.
    pub problem: String,
}

/// The extended resource the openb importer gives nodes and pods: thousandths of a GPU.
pub const GPU_MILLI: &str = "alibabacloud.com/gpu-milli";
/// The annotation of the number of GPUs (a node's, a pod's).
pub const GPU_COUNT: &str = "alibabacloud.com/gpu-count";
/// The GPU model: a node's label and annotation; a pod's allowed models, `|`-separated.
pub const GPU_MODEL: &str = "alibabacloud.com/gpu-card-model";

#[derive(Deserialize)]
struct NodeRow {
    sn: String,
    cpu_milli: i64,
    memory_mib: i64,
    gpu: i64,
    #[serde(default)]
    model: String,
}

#[derive(Deserialize)]
struct PodRow {
    name: String,
    cpu_milli: i64,
    memory_mib: i64,
    num_gpu: i64,
    gpu_milli: i64,
    #[serde(default)]
    gpu_spec: String,
    creation_time: f64,
    deletion_time: f64,
    #[serde(default)]
    scheduled_time: Option<f64>,
}

/// How the openb trace is imported.
#[derive(Clone, Debug)]
pub struct OpenbOptions {
    /// The namespace of the pods.
    pub namespace: String,
    /// Each node's `pods` allocatable (the kubelet's default is 110).
    pub max_pods: u32,
}

impl Default for OpenbOptions {
    fn default() -> Self {
        OpenbOptions {
            namespace: "default".into(),
            max_pods: 110,
        }
    }
}

fn rows<T: serde::de::DeserializeOwned>(
    text: &str,
    file: &str,
) -> Result<Vec<(usize, T)>, ImportError> {
    let mut reader = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .from_reader(text.as_bytes());
    let mut out = Vec::new();
    for (i, record) in reader.deserialize::<T>().enumerate() {
        let line = i + 2;
        let row = record.map_err(|e| ImportError {
            file: file.to_string(),
            line: e.position().map_or(line, |p| p.line() as usize),
            problem: match e.kind() {
                csv::ErrorKind::Deserialize { err, .. } => match err.field() {
                    Some(f) => format!("column {}: {}", f + 1, err.kind()),
                    None => err.to_string(),
                },
                _ => e.to_string(),
            },
        })?;
        out.push((line, row));
    }
    Ok(out)
}

/// The openb trace as kubesched trace text (version 1): the nodes of `nodes_csv` at
/// time 0, then the pods of `pods_csv` in creation order (see the module doc). The
/// names are the files' as messages give them.
pub fn openb(
    nodes_csv: &str,
    nodes_name: &str,
    pods_csv: &str,
    pods_name: &str,
    options: &OpenbOptions,
) -> Result<String, ImportError> {
    let nodes: Vec<(usize, NodeRow)> = rows(nodes_csv, nodes_name)?;
    let mut pods: Vec<(usize, PodRow)> = rows(pods_csv, pods_name)?;
    let bad = |file: &str, line: usize, problem: String| ImportError {
        file: file.to_string(),
        line,
        problem,
    };
    for (line, n) in &nodes {
        if n.sn.is_empty() || n.cpu_milli < 0 || n.memory_mib < 0 || n.gpu < 0 {
            return Err(bad(
                nodes_name,
                *line,
                "sn must be set, and cpu_milli, memory_mib and gpu >= 0".into(),
            ));
        }
    }
    for (line, p) in &pods {
        let finite = [p.creation_time, p.deletion_time]
            .iter()
            .all(|t| t.is_finite() && *t >= 0.0);
        if p.name.is_empty()
            || !finite
            || p.cpu_milli < 0
            || p.memory_mib < 0
            || p.num_gpu < 0
            || p.gpu_milli < 0
        {
            return Err(bad(
                pods_name,
                *line,
                "name must be set; cpu_milli, memory_mib, num_gpu, gpu_milli and the times numbers >= 0".into(),
            ));
        }
    }
    pods.sort_by(|a, b| a.1.creation_time.total_cmp(&b.1.creation_time));
    let start = pods.first().map_or(0.0, |(_, p)| p.creation_time);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}",
        json!({"kubeschedTrace": 1, "description": format!("openb: {nodes_name} and {pods_name}")})
    );
    for (_, n) in &nodes {
        let _ = writeln!(out, "{}", json!({"time": 0, "apply": node(n, options)}));
    }
    // Each pod at its creation; one the original cluster never scheduled is deleted at
    // its deletion time (abandoned), one it did runs for as long as it ran there.
    let mut events: Vec<(f64, usize, String)> = Vec::new();
    for (i, (_, p)) in pods.iter().enumerate() {
        let created = p.creation_time - start;
        let apply = pod(p, options);
        match p.scheduled_time.filter(|s| *s >= p.creation_time) {
            Some(scheduled) => {
                let duration = (p.deletion_time - scheduled).max(0.0);
                let line = json!({"time": created, "apply": apply, "duration": duration});
                events.push((created, i, line.to_string()));
            }
            None => {
                let line = json!({"time": created, "apply": apply});
                events.push((created, i, line.to_string()));
                let deleted = (p.deletion_time - start).max(created);
                let target = json!({"kind": "Pod", "namespace": options.namespace, "name": p.name});
                let line = json!({"time": deleted, "delete": target});
                events.push((deleted, pods.len() + i, line.to_string()));
            }
        }
    }
    events.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    for (_, _, line) in events {
        out.push_str(&line);
        out.push('\n');
    }
    Ok(out)
}

fn node(n: &NodeRow, options: &OpenbOptions) -> Value {
    let mut allocatable = json!({
        "cpu": format!("{}m", n.cpu_milli),
        "memory": format!("{}Mi", n.memory_mib),
        "pods": options.max_pods.to_string(),
    });
    let mut labels = json!({"kubernetes.io/hostname": n.sn});
    let mut annotations = json!({});
    if n.gpu > 0 {
        allocatable[GPU_MILLI] = json!((n.gpu * 1000).to_string());
        annotations[GPU_COUNT] = json!(n.gpu.to_string());
    }
    if !n.model.is_empty() && n.model != "nan" {
        labels[GPU_MODEL] = json!(n.model);
        annotations[GPU_MODEL] = json!(n.model);
    }
    json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": n.sn, "labels": labels, "annotations": annotations},
        "status": {"allocatable": allocatable, "capacity": allocatable},
    })
}

fn pod(p: &PodRow, options: &OpenbOptions) -> Value {
    let mut requests = json!({
        "cpu": format!("{}m", p.cpu_milli),
        "memory": format!("{}Mi", p.memory_mib),
    });
    let mut annotations = json!({});
    let mut spec = json!({});
    if p.num_gpu > 0 {
        // The simulator's rule: a share between 0 and 1000, more than 1000 is 1000.
        let per_gpu = p.gpu_milli.clamp(0, 1000);
        annotations[GPU_MILLI] = json!(per_gpu.to_string());
        annotations[GPU_COUNT] = json!(p.num_gpu.to_string());
        requests[GPU_MILLI] = json!((p.num_gpu * per_gpu).to_string());
        let models: Vec<&str> = p
            .gpu_spec
            .split('|')
            .filter(|m| !m.is_empty() && *m != "nan")
            .collect();
        if !models.is_empty() {
            annotations[GPU_MODEL] = json!(models.join("|"));
            spec["affinity"] = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": GPU_MODEL, "operator": "In", "values": models}]}]
            }}});
        }
    }
    // Extended resources are requested with equal limits, as the API server requires.
    let limits = requests.get(GPU_MILLI).map(|v| json!({GPU_MILLI: v}));
    let mut resources = json!({"requests": requests});
    if let Some(limits) = limits {
        resources["limits"] = limits;
    }
    spec["containers"] = json!([{"name": "main", "image": "openb", "resources": resources}]);
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": p.name, "namespace": options.namespace, "annotations": annotations},
        "spec": spec,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const NODES: &str =
        "sn,cpu_milli,memory_mib,gpu,model\nn0,32000,262144,0,\nn1,96000,786432,8,V100M32\n";
    const PODS: &str = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n\
        p1,6000,12288,1,460,,LS,Running,100,400,110\n\
        p0,88000,327680,8,1000,V100M16|V100M32,Burstable,Succeeded,50,90,50\n\
        p2,4000,8192,0,0,,BE,Pending,120,125,\n";

    fn lines(text: &str) -> Vec<Value> {
        text.lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    #[test]
    fn nodes_at_time_0_then_pods_in_creation_order_with_their_run_times() {
        let text = openb(
            NODES,
            "nodes.csv",
            PODS,
            "pods.csv",
            &OpenbOptions::default(),
        )
        .unwrap();
        let l = lines(&text);
        assert_eq!(l.len(), 7);
        assert_eq!(l[0]["kubeschedTrace"], 1);
        let n1 = &l[2]["apply"];
        assert_eq!(n1["status"]["allocatable"][GPU_MILLI], "8000");
        assert_eq!(n1["metadata"]["labels"][GPU_MODEL], "V100M32");
        assert!(
            l[1]["apply"]["status"]["allocatable"]
                .get(GPU_MILLI)
                .is_none()
        );
        let what: Vec<(f64, String)> = l[3..]
            .iter()
            .map(|e| {
                let name = |v: &Value| v.as_str().unwrap_or("").to_string();
                let what = match e["duration"].as_f64() {
                    Some(d) => format!("{} runs {d}", name(&e["apply"]["metadata"]["name"])),
                    None if e["apply"].is_object() => name(&e["apply"]["metadata"]["name"]),
                    None => format!("delete {}", name(&e["delete"]["name"])),
                };
                (e["time"].as_f64().unwrap(), what)
            })
            .collect();
        let expected = [
            (0.0, "p0 runs 40"),
            (50.0, "p1 runs 290"),
            (70.0, "p2"),
            (75.0, "delete p2"),
        ];
        assert_eq!(what, expected.map(|(t, w)| (t, w.to_string())));
        let p0 = &l[3]["apply"];
        assert_eq!(
            p0["spec"]["containers"][0]["resources"]["requests"][GPU_MILLI],
            "8000"
        );
        assert_eq!(
            p0["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
                ["nodeSelectorTerms"][0]["matchExpressions"][0]["values"],
            json!(["V100M16", "V100M32"])
        );
        let p1 = &l[4]["apply"];
        assert_eq!(p1["metadata"]["annotations"][GPU_MILLI], "460");
        assert_eq!(
            p1["spec"]["containers"][0]["resources"]["limits"][GPU_MILLI],
            "460"
        );
    }

    #[test]
    fn a_bad_row_names_the_file_the_line_and_the_column() {
        let bad = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\np,lots,1,0,0,,LS,Running,1,2,1\n";
        let e = openb(
            NODES,
            "nodes.csv",
            bad,
            "pods.csv",
            &OpenbOptions::default(),
        )
        .unwrap_err();
        assert_eq!(e.file, "pods.csv");
        assert_eq!(e.line, 2);
        assert!(e.problem.starts_with("column 2: "), "{e}");
    }
}
