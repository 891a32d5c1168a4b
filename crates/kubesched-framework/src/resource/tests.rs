//! The resource arithmetic's tests: requests of containers, init containers, sidecars,
//! overhead and pod-level resources, and what a node has left.

use super::*;
use serde_json::{Value, json};

const MI: i64 = 1024 * 1024;
const GI: i64 = 1024 * MI;

fn pod(spec: Value) -> Pod {
    pod_with_status(spec, json!({}))
}

fn pod_with_status(spec: Value, status: Value) -> Pod {
    serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": { "name": "p", "namespace": "default" },
        "spec": spec,
        "status": status,
    }))
    .expect("test pod")
}

fn container(name: &str, requests: Value) -> Value {
    json!({ "name": name, "image": "pause", "resources": { "requests": requests } })
}

fn bare(name: &str) -> Value {
    json!({ "name": name, "image": "pause" })
}

fn sidecar(name: &str, requests: Value) -> Value {
    json!({ "name": name, "image": "pause", "restartPolicy": "Always",
            "resources": { "requests": requests } })
}

fn list(entries: &[(&str, &str)]) -> ResourceList {
    entries
        .iter()
        .map(|(k, v)| (k.to_string(), Quantity::parse(v).unwrap()))
        .collect()
}

/// Cases after component-helpers' TestPodRequests / TestPodResourceRequests.
#[test]
fn test_pod_requests() {
    struct Case {
        name: &'static str,
        spec: Value,
        opts: PodRequestOptions,
        want: ResourceList,
    }
    let cases = vec![
        Case {
            name: "no containers",
            spec: json!({ "containers": [] }),
            opts: PodRequestOptions::default(),
            want: list(&[]),
        },
        Case {
            name: "two container resources",
            spec: json!({ "containers": [
                container("a", json!({"cpu": "2", "memory": "1Gi"})),
                container("b", json!({"cpu": "1500m"})),
            ]}),
            opts: PodRequestOptions::default(),
            want: list(&[("cpu", "3500m"), ("memory", "1Gi")]),
        },
        Case {
            name: "init container max",
            spec: json!({
                "initContainers": [
                    container("i1", json!({"cpu": "2"})),
                    container("i2", json!({"cpu": "1", "memory": "2Gi"})),
                ],
                "containers": [container("a", json!({"cpu": "1", "memory": "1Gi"}))],
            }),
            opts: PodRequestOptions::default(),
            want: list(&[("cpu", "2"), ("memory", "2Gi")]),
        },
        Case {
            name: "pod overhead excluded",
            spec: json!({
                "containers": [container("a", json!({"cpu": "1"}))],
                "overhead": {"cpu": "250m", "memory": "120Mi"},
            }),
            opts: PodRequestOptions {
                exclude_overhead: true,
                ..Default::default()
            },
            want: list(&[("cpu", "1")]),
        },
        Case {
            name: "pod overhead included",
            spec: json!({
                "containers": [container("a", json!({"cpu": "1"}))],
                "overhead": {"cpu": "250m", "memory": "120Mi"},
            }),
            opts: PodRequestOptions::default(),
            want: list(&[("cpu", "1250m"), ("memory", "120Mi")]),
        },
        Case {
            name: "restartable init container",
            // sidecar 1 cpu runs alongside the main container (1 cpu): 2; the init
            // container before it (1 cpu) alone is less.
            spec: json!({
                "initContainers": [
                    container("i1", json!({"cpu": "1"})),
                    sidecar("s1", json!({"cpu": "1"})),
                ],
                "containers": [container("a", json!({"cpu": "1"}))],
            }),
            opts: PodRequestOptions::default(),
            want: list(&[("cpu", "2")]),
        },
        Case {
            name: "multiple restartable init containers",
            spec: json!({
                "initContainers": [
                    container("i1", json!({"cpu": "10"})),
                    sidecar("s1", json!({"cpu": "1"})),
                    sidecar("s2", json!({"cpu": "2"})),
                    sidecar("s3", json!({"cpu": "3"})),
                ],
                "containers": [container("a", json!({"cpu": "1"}))],
            }),
            opts: PodRequestOptions::default(),
            want: list(&[("cpu", "10")]),
        },
        Case {
            name: "multiple restartable and regular init containers",
            // i2 runs with s1 and s2 (1 + 2 + 5 = 8) > sidecars + main (1+2+3+1 = 7).
            spec: json!({
                "initContainers": [
                    container("i1", json!({"cpu": "5"})),
                    sidecar("s1", json!({"cpu": "1"})),
                    sidecar("s2", json!({"cpu": "2"})),
                    container("i2", json!({"cpu": "5"})),
                    sidecar("s3", json!({"cpu": "3"})),
                ],
                "containers": [container("a", json!({"cpu": "1"}))],
            }),
            opts: PodRequestOptions::default(),
            want: list(&[("cpu", "8")]),
        },
        Case {
            name: "restartable init container regular init container larger",
            spec: json!({
                "initContainers": [
                    sidecar("s1", json!({"cpu": "1"})),
                    container("i1", json!({"cpu": "5"})),
                ],
                "containers": [container("a", json!({"cpu": "1"}))],
            }),
            opts: PodRequestOptions::default(),
            want: list(&[("cpu", "6")]),
        },
        Case {
            name: "extended resource and hugepages",
            spec: json!({ "containers": [
                container("a", json!({"example.com/gpu": "1", "hugepages-2Mi": "4Mi"})),
                container("b", json!({"example.com/gpu": "2"})),
            ]}),
            opts: PodRequestOptions::default(),
            want: list(&[("example.com/gpu", "3"), ("hugepages-2Mi", "4Mi")]),
        },
        Case {
            name: "pod-level resources replace cpu and memory",
            spec: json!({
                "resources": { "requests": {"cpu": "2", "memory": "1Gi"} },
                "containers": [
                    container("a", json!({"cpu": "500m", "memory": "100Mi", "example.com/gpu": "1"})),
                    container("b", json!({"cpu": "500m"})),
                ],
                "overhead": {"cpu": "100m"},
            }),
            opts: PodRequestOptions::default(),
            want: list(&[
                ("cpu", "2100m"),
                ("memory", "1Gi"),
                ("example.com/gpu", "1"),
            ]),
        },
        Case {
            name: "pod-level resources only cpu set",
            spec: json!({
                "resources": { "requests": {"cpu": "2"} },
                "containers": [container("a", json!({"cpu": "500m", "memory": "100Mi"}))],
            }),
            opts: PodRequestOptions::default(),
            want: list(&[("cpu", "2"), ("memory", "100Mi")]),
        },
        Case {
            name: "pod-level resources skipped",
            spec: json!({
                "resources": { "requests": {"cpu": "2", "memory": "1Gi"} },
                "containers": [container("a", json!({"cpu": "500m"}))],
            }),
            opts: PodRequestOptions {
                skip_pod_level_resources: true,
                ..Default::default()
            },
            want: list(&[("cpu", "500m")]),
        },
        Case {
            name: "pod-level resources with only unsupported names are not set",
            spec: json!({
                "resources": { "requests": {"example.com/gpu": "4"} },
                "containers": [container("a", json!({"example.com/gpu": "1"}))],
            }),
            opts: PodRequestOptions::default(),
            want: list(&[("example.com/gpu", "1")]),
        },
        Case {
            name: "non-missing container requests",
            spec: json!({
                "initContainers": [bare("i1"), sidecar("s1", json!({"memory": "1Mi"}))],
                "containers": [
                    bare("a"),
                    container("b", json!({"cpu": "0", "memory": "0"})),
                    container("c", json!({"cpu": "1"})),
                ],
            }),
            opts: PodRequestOptions {
                non_missing_container_requests: Some(list(&[("cpu", "100m"), ("memory", "200Mi")])),
                ..Default::default()
            },
            // containers: cpu 100m + 0 + 1 + sidecar 100m; memory 200Mi + 0 + 200Mi + 1Mi.
            // init i1 with s1 before it? s1 comes after, so i1 alone: 100m / 200Mi.
            want: list(&[("cpu", "1200m"), ("memory", "401Mi")]),
        },
    ];
    for case in cases {
        let got = pod_requests(&pod(case.spec), &case.opts).unwrap();
        assert_eq!(got, case.want, "{}", case.name);
    }
}

/// Go adds quantities, then converts: two containers asking memory 128m make 1 byte.
#[test]
fn test_sum_before_rounding() {
    let p = pod(json!({ "containers": [
        container("a", json!({"memory": "128m", "cpu": "0.1m"})),
        container("b", json!({"memory": "128m", "cpu": "0.1m"})),
    ]}));
    let r = pod_resources(&p).unwrap();
    assert_eq!(r.requests.memory, 1);
    assert_eq!(r.requests.milli_cpu, 2);
    assert_eq!(r.non_zero_memory, 1);
    assert_eq!(r.non_zero_milli_cpu, 2);
}

/// After kube-scheduler's TestCalculateResource / NodeInfo tests: defaults for missing
/// requests go to every container, init and sidecar included; explicit zero stays zero.
#[test]
fn test_calculate_resource() {
    struct Case {
        name: &'static str,
        spec: Value,
        requests: Resource,
        non0_cpu: i64,
        non0_mem: i64,
    }
    let res = |cpu: i64, mem: i64| Resource {
        milli_cpu: cpu,
        memory: mem,
        ..Default::default()
    };
    let cases = vec![
        Case {
            name: "requestless container",
            spec: json!({ "containers": [bare("a")] }),
            requests: res(0, 0),
            non0_cpu: 100,
            non0_mem: 200 * MI,
        },
        Case {
            name: "1X container with requests",
            spec: json!({ "containers": [container("a", json!({"cpu": "250m", "memory": "1Gi"}))] }),
            requests: res(250, GI),
            non0_cpu: 250,
            non0_mem: GI,
        },
        Case {
            name: "explicit zero requests",
            spec: json!({ "containers": [container("a", json!({"cpu": "0", "memory": "0"}))] }),
            requests: res(0, 0),
            non0_cpu: 0,
            non0_mem: 0,
        },
        Case {
            name: "2X container, one without requests",
            spec: json!({ "containers": [
                container("a", json!({"cpu": "1", "memory": "1Gi"})),
                bare("b"),
            ]}),
            requests: res(1000, GI),
            non0_cpu: 1100,
            non0_mem: GI + 200 * MI,
        },
        Case {
            name: "init container without requests takes the max",
            spec: json!({
                "initContainers": [bare("i")],
                "containers": [container("a", json!({"cpu": "50m", "memory": "10Mi"}))],
            }),
            requests: res(50, 10 * MI),
            non0_cpu: 100,
            non0_mem: 200 * MI,
        },
        Case {
            name: "sidecar without requests adds defaults",
            spec: json!({
                "initContainers": [sidecar("s", json!({}))],
                "containers": [container("a", json!({"cpu": "50m", "memory": "10Mi"}))],
            }),
            requests: res(50, 10 * MI),
            non0_cpu: 150,
            non0_mem: 210 * MI,
        },
        Case {
            name: "overhead counts in both",
            spec: json!({
                "containers": [bare("a")],
                "overhead": {"cpu": "10m", "memory": "1Mi"},
            }),
            requests: res(10, MI),
            non0_cpu: 110,
            non0_mem: 201 * MI,
        },
        Case {
            name: "pod-level resources set for cpu and memory",
            spec: json!({
                "resources": { "requests": {"cpu": "2", "memory": "1Gi"} },
                "containers": [bare("a"), bare("b")],
            }),
            requests: res(2000, GI),
            non0_cpu: 2000,
            non0_mem: GI,
        },
        Case {
            name: "pod-level resources set for cpu only",
            // memory named nowhere: every container gets 200Mi.
            spec: json!({
                "resources": { "requests": {"cpu": "2"} },
                "containers": [bare("a"), bare("b")],
            }),
            requests: res(2000, 0),
            non0_cpu: 2000,
            non0_mem: 400 * MI,
        },
        Case {
            name: "pod-level resources set, memory in one container only",
            // memory is in the requests, so no default at all: b adds nothing.
            spec: json!({
                "resources": { "requests": {"cpu": "2"} },
                "containers": [container("a", json!({"memory": "10Mi"})), bare("b")],
            }),
            requests: res(2000, 10 * MI),
            non0_cpu: 2000,
            non0_mem: 10 * MI,
        },
        Case {
            name: "pod-level hugepages only still sets pod-level resources",
            spec: json!({
                "resources": { "requests": {"hugepages-2Mi": "2Mi"} },
                "containers": [container("a", json!({"cpu": "1"})), bare("b")],
            }),
            requests: Resource {
                milli_cpu: 1000,
                scalar_resources: [("hugepages-2Mi".to_string(), 2 * MI)].into(),
                ..Default::default()
            },
            non0_cpu: 1000,
            non0_mem: 400 * MI,
        },
    ];
    for case in cases {
        let got = pod_resources(&pod(case.spec)).unwrap();
        assert_eq!(got.requests, case.requests, "{} requests", case.name);
        assert_eq!(
            got.non_zero_milli_cpu, case.non0_cpu,
            "{} non0 cpu",
            case.name
        );
        assert_eq!(got.non_zero_memory, case.non0_mem, "{} non0 mem", case.name);
    }
}

/// After kube-scheduler's TestCalculatePodResourcesWithResize: max of spec, status
/// resources and allocated resources per container, status only when infeasible.
#[test]
fn test_calculate_pod_resources_with_resize() {
    let spec = json!({ "containers": [
        container("c1", json!({"cpu": "500m", "memory": "100Mi"})),
        container("c2", json!({"cpu": "100m"})),
    ]});
    let statuses = |conditions: Value| {
        json!({
            "conditions": conditions,
            "containerStatuses": [{
                "name": "c1", "image": "pause", "imageID": "", "ready": true, "restartCount": 0,
                "allocatedResources": {"cpu": "700m", "memory": "50Mi"},
                "resources": { "requests": {"cpu": "300m", "memory": "100Mi"} },
            }],
        })
    };
    let cases = [
        ("resize in progress", json!([]), 800, 100 * MI),
        (
            "resize infeasible",
            json!([{"type": "PodResizePending", "status": "True", "reason": "Infeasible"}]),
            800,
            100 * MI,
        ),
        (
            "resize deferred",
            json!([{"type": "PodResizePending", "status": "True", "reason": "Deferred"}]),
            800,
            100 * MI,
        ),
    ];
    for (name, conditions, cpu, mem) in cases {
        let p = pod_with_status(spec.clone(), statuses(conditions));
        let r = pod_resources(&p).unwrap();
        assert_eq!(
            (r.requests.milli_cpu, r.requests.memory),
            (cpu, mem),
            "{name}"
        );
        // Spec-only PodRequests ignores the status.
        let spec_only = pod_requests(&p, &PodRequestOptions::default()).unwrap();
        assert_eq!(
            spec_only,
            list(&[("cpu", "600m"), ("memory", "100Mi")]),
            "{name}"
        );
    }

    // Infeasible drops the (larger) spec request: status 300m vs allocated 200m.
    let p = pod_with_status(
        json!({ "containers": [container("c1", json!({"cpu": "1"}))] }),
        json!({
            "conditions": [{"type": "PodResizePending", "status": "True", "reason": "Infeasible"}],
            "containerStatuses": [{
                "name": "c1", "image": "pause", "imageID": "", "ready": true, "restartCount": 0,
                "allocatedResources": {"cpu": "200m"},
                "resources": { "requests": {"cpu": "300m"} },
            }],
        }),
    );
    assert_eq!(pod_resources(&p).unwrap().requests.milli_cpu, 300);
    let with_status = pod_requests_with_status(&p, &PodRequestOptions::default()).unwrap();
    assert_eq!(with_status, list(&[("cpu", "300m")]));

    // No status.resources: the status is not looked at, even with allocated resources.
    let p = pod_with_status(
        json!({ "containers": [container("c1", json!({"cpu": "1"}))] }),
        json!({ "containerStatuses": [{
            "name": "c1", "image": "pause", "imageID": "", "ready": true, "restartCount": 0,
            "allocatedResources": {"cpu": "5"},
        }]}),
    );
    assert_eq!(pod_resources(&p).unwrap().requests.milli_cpu, 1000);

    // Regular init containers ignore their status; sidecars use it.
    let p = pod_with_status(
        json!({
            "initContainers": [container("i", json!({"cpu": "1"})), sidecar("s", json!({"cpu": "1"}))],
            "containers": [container("c", json!({"cpu": "1"}))],
        }),
        json!({ "initContainerStatuses": [
            { "name": "i", "image": "pause", "imageID": "", "ready": true, "restartCount": 0,
              "resources": { "requests": {"cpu": "9"} } },
            { "name": "s", "image": "pause", "imageID": "", "ready": true, "restartCount": 0,
              "resources": { "requests": {"cpu": "3"} } },
        ]}),
    );
    // sidecar 3 + main 1 = 4; i (spec 1) alone = 1.
    assert_eq!(pod_resources(&p).unwrap().requests.milli_cpu, 4000);
}

#[test]
fn test_resource_from_list() {
    let l = list(&[
        ("cpu", "1500m"),
        ("memory", "128m"),
        ("ephemeral-storage", "1Gi"),
        ("pods", "110"),
        ("example.com/gpu", "2"),
        ("hugepages-2Mi", "0"),
        ("kubernetes.io/batch", "3"),
        ("attachable-volumes-csi-x", "39"),
        ("storage", "5"),
        ("requests.example.com/gpu", "7"),
        ("foo", "8"),
    ]);
    let r = Resource::from_list(&l);
    assert_eq!(r.milli_cpu, 1500);
    assert_eq!(r.memory, 1);
    assert_eq!(r.ephemeral_storage, GI);
    assert_eq!(r.allowed_pod_number, 110);
    let scalars: Vec<(&str, i64)> = r
        .scalar_resources
        .iter()
        .map(|(k, v)| (k.as_str(), *v))
        .collect();
    assert_eq!(
        scalars,
        vec![
            ("attachable-volumes-csi-x", 39),
            ("example.com/gpu", 2),
            ("hugepages-2Mi", 0),
            ("kubernetes.io/batch", 3),
        ]
    );
    assert_eq!(r.scalar("example.com/gpu"), 2);
    assert_eq!(r.scalar("nvidia.com/gpu"), 0);
}

#[test]
fn test_resource_add_sub() {
    let a = Resource::from_list(&list(&[
        ("cpu", "1"),
        ("memory", "1Gi"),
        ("example.com/gpu", "1"),
    ]));
    let b = Resource::from_list(&list(&[
        ("cpu", "250m"),
        ("pods", "1"),
        ("nvidia.com/gpu", "2"),
    ]));
    let mut sum = a.clone();
    sum.add(&b);
    assert_eq!(sum.milli_cpu, 1250);
    assert_eq!(sum.memory, GI);
    assert_eq!(sum.allowed_pod_number, 1);
    assert_eq!(sum.scalar("example.com/gpu"), 1);
    assert_eq!(sum.scalar("nvidia.com/gpu"), 2);
    sum.sub(&b);
    assert_eq!(sum.milli_cpu, a.milli_cpu);
    assert_eq!(sum.scalar("nvidia.com/gpu"), 0);
    assert!(sum.scalar_resources.contains_key("nvidia.com/gpu"));
    sum.sub(&a);
    assert_eq!(
        (sum.milli_cpu, sum.memory, sum.allowed_pod_number),
        (0, 0, 0)
    );
}

/// After apimachinery's TestIsExtendedResourceName / scheduler's IsScalarResourceName.
#[test]
fn test_resource_names() {
    let table: &[(&str, bool, bool, bool)] = &[
        // name, extended, hugepage, scalar
        ("cpu", false, false, false),
        ("memory", false, false, false),
        ("pods", false, false, false),
        ("ephemeral-storage", false, false, false),
        ("example.com/gpu", true, false, true),
        ("nvidia.com/gpu", true, false, true),
        ("example.com/dongle_1.x", true, false, true),
        ("kubernetes.io/foo", false, false, true),
        ("foo.kubernetes.io/bar", false, false, true),
        ("hugepages-2Mi", false, true, true),
        ("hugepages-1Gi", false, true, true),
        ("attachable-volumes-aws-ebs", false, false, true),
        ("requests.example.com/gpu", false, false, false),
        ("Example.com/gpu", false, false, false),
        ("example.com/", false, false, false),
        ("/gpu", false, false, false),
        ("a/b/c", false, false, false),
        ("example.com/-gpu", false, false, false),
        ("example..com/gpu", false, false, false),
        ("example.com/GPU", true, false, true),
        ("foo", false, false, false),
    ];
    for &(name, ext, huge, scalar) in table {
        assert_eq!(is_extended_resource_name(name), ext, "{name} extended");
        assert_eq!(is_hugepage_resource_name(name), huge, "{name} hugepage");
        assert_eq!(is_scalar_resource_name(name), scalar, "{name} scalar");
    }
    let long_name = format!("example.com/{}", "a".repeat(64));
    assert!(!is_extended_resource_name(&long_name));
    let ok_name = format!("example.com/{}", "a".repeat(63));
    assert!(is_extended_resource_name(&ok_name));
}

#[test]
fn test_parse_errors_name_the_field() {
    let p = pod(json!({
        "initContainers": [
            container("i0", json!({"memory": "1Gi"})),
            container("i1", json!({"memory": "2Gb"})),
        ],
        "containers": [container("a", json!({"cpu": "1"}))],
    }));
    let err = pod_requests(&p, &PodRequestOptions::default()).unwrap_err();
    assert_eq!(
        err.field,
        "spec.initContainers[1].resources.requests.memory"
    );
    assert_eq!(err.value, "2Gb");
    assert!(err.to_string().starts_with("spec.initContainers[1].resources.requests.memory: invalid quantity \"2Gb\": quantities must match"));

    let cases = [
        (
            json!({"containers": [container("a", json!({"cpu": "1i"}))]}),
            "spec.containers[0].resources.requests.cpu",
        ),
        (
            json!({"containers": [bare("a")], "overhead": {"memory": "x"}}),
            "spec.overhead.memory",
        ),
        (
            json!({"containers": [bare("a")], "resources": {"requests": {"cpu": "1..0"}}}),
            "spec.resources.requests.cpu",
        ),
    ];
    for (spec, field) in cases {
        let err = pod_resources(&pod(spec)).unwrap_err();
        assert_eq!(err.field, field);
    }

    let p = pod_with_status(
        json!({"containers": [bare("a")]}),
        json!({"containerStatuses": [{
            "name": "a", "image": "pause", "imageID": "", "ready": true, "restartCount": 0,
            "resources": { "requests": {"cpu": "bad"} },
        }]}),
    );
    assert_eq!(
        pod_resources(&p).unwrap_err().field,
        "status.containerStatuses[0].resources.requests.cpu"
    );
    // Spec-only requests do not read the status.
    assert!(pod_requests(&p, &PodRequestOptions::default()).is_ok());
}

#[test]
fn test_parse_resource_list() {
    let map: BTreeMap<String, ApiQuantity> = [
        ("cpu".to_string(), ApiQuantity("4".into())),
        ("memory".to_string(), ApiQuantity(" 15896300Ki ".into())),
        ("pods".to_string(), ApiQuantity("110".into())),
    ]
    .into();
    let l = parse_resource_list(&map).unwrap();
    assert_eq!(l["memory"], Quantity::parse("15896300Ki").unwrap());
    let r = Resource::from_list(&l);
    assert_eq!(
        (r.milli_cpu, r.memory, r.allowed_pod_number),
        (4000, 15_896_300 * 1024, 110)
    );

    let bad: BTreeMap<String, ApiQuantity> = [
        ("cpu".to_string(), ApiQuantity("4".into())),
        ("memory".to_string(), ApiQuantity("1 Gi".into())),
    ]
    .into();
    let (name, err) = parse_resource_list(&bad).unwrap_err();
    assert_eq!(name, "memory");
    assert_eq!(err.kind(), crate::quantity::QuantityErrorKind::Format);
}
