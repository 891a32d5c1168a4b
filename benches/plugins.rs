//! One criterion benchmark per plugin of kube-scheduler's default profile: its Filter
//! and its Score on one prepared node, so that a regression in one plugin shows by
//! name (`plugin_filter/NodeAffinity`, `plugin_score/PodTopologySpread`, ...).
//!
//! The cluster is 100 nodes in 10 zones, half of them running three pods labelled
//! `app=web`; the pod asks for cpu, memory and a host port, tolerates a taint, requires
//! and prefers zones, spreads over zones and nodes, requires a zone with `app=web` and
//! prefers a node without, so that every plugin has something to compute. PreFilter and PreScore run once, as in a scheduling cycle;
//! the benchmarks time the per-node calls. Plugins that skip themselves for this pod
//! (a PreFilter or PreScore `Skip`, such as the volume plugins for a pod without
//! volumes) are left out: the framework never calls them.
//!
//! `cargo bench --bench plugins`; CI only proves they build (`cargo bench --no-run`).

use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::Arc;

mod support;

use criterion::{Criterion, criterion_group, criterion_main};
use k8s_openapi::api::core::v1::{
    Affinity, Container, ContainerPort, Node, NodeAffinity, NodeSelector, NodeSelectorRequirement,
    NodeSelectorTerm, NodeSpec, Pod, PodAffinity, PodAffinityTerm, PodAntiAffinity, PodSpec,
    PreferredSchedulingTerm, ResourceRequirements, Taint, Toleration, TopologySpreadConstraint,
    WeightedPodAffinityTerm,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use kubesched::config::KubeSchedulerConfiguration;
use kubesched::framework::{CycleState, Framework, Handle, NodeInfo, PodInfo, Snapshot};

const NODES: usize = 100;
/// The node the per-node calls run on: one with pods on it.
const PREPARED_NODE: usize = 42;

fn node(i: usize) -> Arc<Node> {
    let taints = i.is_multiple_of(3).then(|| {
        vec![Taint {
            key: "dedicated".into(),
            value: Some("batch".into()),
            effect: "PreferNoSchedule".into(),
            ..Default::default()
        }]
    });
    Arc::new(support::basic_node(
        i,
        NodeSpec {
            taints,
            ..Default::default()
        },
    ))
}

fn web_labels() -> BTreeMap<String, String> {
    BTreeMap::from([("app".to_string(), "web".to_string())])
}

fn requests(cpu: &str, memory: &str) -> Option<ResourceRequirements> {
    Some(ResourceRequirements {
        requests: Some(support::quantities(&[("cpu", cpu), ("memory", memory)])),
        ..Default::default()
    })
}

fn bound_pod(node: usize, n: usize) -> Arc<PodInfo> {
    let pod = Pod {
        metadata: ObjectMeta {
            name: Some(format!("web-{node}-{n}")),
            namespace: Some("default".into()),
            uid: Some(format!("web-{node}-{n}")),
            labels: Some(web_labels()),
            ..Default::default()
        },
        spec: Some(PodSpec {
            node_name: Some(format!("node-{node}")),
            containers: vec![Container {
                name: "app".into(),
                image: Some("nginx:1.25.3".into()),
                resources: requests("250m", "512Mi"),
                ..Default::default()
            }],
            ..Default::default()
        }),
        status: None,
    };
    Arc::new(PodInfo::new(Arc::new(pod)).expect("valid pod"))
}

fn pending_pod() -> Arc<PodInfo> {
    let web = LabelSelector {
        match_labels: Some(web_labels()),
        ..Default::default()
    };
    let pod = Pod {
        metadata: ObjectMeta {
            name: Some("incoming".into()),
            namespace: Some("default".into()),
            uid: Some("incoming".into()),
            labels: Some(web_labels()),
            ..Default::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "app".into(),
                image: Some("nginx:1.25.3".into()),
                resources: requests("500m", "1Gi"),
                ports: Some(vec![ContainerPort {
                    container_port: 8080,
                    host_port: Some(8080),
                    ..Default::default()
                }]),
                ..Default::default()
            }],
            tolerations: Some(vec![Toleration {
                key: Some("dedicated".into()),
                operator: Some("Equal".into()),
                value: Some("batch".into()),
                effect: Some("NoSchedule".into()),
                ..Default::default()
            }]),
            affinity: Some(Affinity {
                node_affinity: Some(NodeAffinity {
                    required_during_scheduling_ignored_during_execution: Some(NodeSelector {
                        node_selector_terms: vec![NodeSelectorTerm {
                            match_expressions: Some(vec![NodeSelectorRequirement {
                                key: "topology.kubernetes.io/zone".into(),
                                operator: "Exists".into(),
                                values: None,
                            }]),
                            ..Default::default()
                        }],
                    }),
                    preferred_during_scheduling_ignored_during_execution: Some(vec![
                        PreferredSchedulingTerm {
                            weight: 10,
                            preference: NodeSelectorTerm {
                                match_expressions: Some(vec![NodeSelectorRequirement {
                                    key: "topology.kubernetes.io/zone".into(),
                                    operator: "In".into(),
                                    values: Some(vec!["zone-1".into(), "zone-2".into()]),
                                }]),
                                ..Default::default()
                            },
                        },
                    ]),
                }),
                pod_affinity: Some(PodAffinity {
                    required_during_scheduling_ignored_during_execution: Some(vec![
                        PodAffinityTerm {
                            label_selector: Some(web.clone()),
                            topology_key: "topology.kubernetes.io/zone".into(),
                            ..Default::default()
                        },
                    ]),
                    ..Default::default()
                }),
                pod_anti_affinity: Some(PodAntiAffinity {
                    preferred_during_scheduling_ignored_during_execution: Some(vec![
                        WeightedPodAffinityTerm {
                            weight: 50,
                            pod_affinity_term: PodAffinityTerm {
                                label_selector: Some(web.clone()),
                                topology_key: "kubernetes.io/hostname".into(),
                                ..Default::default()
                            },
                        },
                    ]),
                    ..Default::default()
                }),
            }),
            topology_spread_constraints: Some(vec![
                TopologySpreadConstraint {
                    max_skew: 1,
                    topology_key: "topology.kubernetes.io/zone".into(),
                    when_unsatisfiable: "ScheduleAnyway".into(),
                    label_selector: Some(web.clone()),
                    ..Default::default()
                },
                TopologySpreadConstraint {
                    max_skew: 5,
                    topology_key: "kubernetes.io/hostname".into(),
                    when_unsatisfiable: "DoNotSchedule".into(),
                    label_selector: Some(web),
                    ..Default::default()
                },
            ]),
            ..Default::default()
        }),
        status: None,
    };
    Arc::new(PodInfo::new(Arc::new(pod)).expect("valid pod"))
}

/// The default profile, the cluster, the pod and the cycle state after PreFilter and
/// PreScore.
struct Prepared {
    framework: Framework,
    snapshot: Snapshot,
    pod: Arc<PodInfo>,
    state: CycleState,
}

fn prepare() -> Prepared {
    let config = KubeSchedulerConfiguration::default_config();
    let registry = kubesched::plugins::in_tree_registry();
    let framework = Framework::new(&config.profiles[0], &registry, &Handle::default())
        .expect("the default profile");
    let bound = (0..NODES)
        .filter(|n| n % 2 == 0)
        .flat_map(|n| (0..3).map(move |k| bound_pod(n, k)));
    let (snapshot, _) = Snapshot::new((0..NODES).map(node), bound).expect("snapshot");
    let pod = pending_pod();
    let mut state = CycleState::new();
    let pre = framework.run_pre_filter_plugins(&mut state, &pod, &snapshot);
    assert!(pre.status.is_success(), "PreFilter: {}", pre.status);
    let nodes: Vec<&NodeInfo> = snapshot.nodes().iter().collect();
    let status = framework.run_pre_score_plugins(&mut state, &pod, &nodes, &snapshot);
    assert!(status.is_success(), "PreScore: {status}");
    Prepared {
        framework,
        snapshot,
        pod,
        state,
    }
}

fn plugin_filter(c: &mut Criterion) {
    let p = prepare();
    let node = p.snapshot.node_at(PREPARED_NODE);
    let mut group = c.benchmark_group("plugin_filter");
    for w in p.framework.filter_plugins() {
        if p.state.skip_filter_plugins().contains(&*w.name) {
            continue;
        }
        group.bench_function(&*w.name, |b| {
            b.iter(|| black_box(w.plugin.filter(&p.state, &p.pod, black_box(node))))
        });
    }
    group.finish();
}

fn plugin_score(c: &mut Criterion) {
    let p = prepare();
    let node = p.snapshot.node_at(PREPARED_NODE);
    let mut group = c.benchmark_group("plugin_score");
    for s in p.framework.score_plugins() {
        let w = &s.wired;
        if p.state.skip_score_plugins().contains(&*w.name) {
            continue;
        }
        group.bench_function(&*w.name, |b| {
            b.iter(|| black_box(w.plugin.score(&p.state, &p.pod, black_box(node))))
        });
    }
    group.finish();
}

criterion_group!(benches, plugin_filter, plugin_score);
criterion_main!(benches);
