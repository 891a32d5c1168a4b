//! v1.36's PodGroup placements in the scheduler (`podGroupSchedulingPlacementAlgorithm`):
//! a PodGroup cycle tries each placement a PlacementGenerate plugin makes, its pods
//! seeing only the placement's nodes; the PlacementScore plugins' best is submitted,
//! equal scores going to the first placement in name order; a plugin's failure turns
//! every pod down and the condition is `SchedulerError`.

use std::collections::BTreeMap;
use std::sync::Arc;

use kubesched_config::{KubeSchedulerConfiguration, PluginRef};
use kubesched_framework::build::NodeBuilder;
use kubesched_framework::*;

/// Splits the nodes by their `rack` label (or fails), and scores each placement from
/// `scores` (by name).
struct Racks {
    fail_generate: bool,
    scores: BTreeMap<&'static str, i64>,
}

impl Plugin for Racks {
    fn name(&self) -> &str {
        "Racks"
    }
    extension_points!(QueueSort, Filter, Bind, PlacementGenerate, PlacementScore);
}

impl QueueSortPlugin for Racks {
    fn less(&self, a: &QueuedPodInfo, b: &QueuedPodInfo) -> bool {
        a.timestamp < b.timestamp
    }
}

impl FilterPlugin for Racks {
    fn filter(&self, _: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        if pod.requests().milli_cpu <= node.allocatable().milli_cpu - node.requested().milli_cpu {
            Status::success()
        } else {
            Status::new(Code::Unschedulable, "Insufficient cpu")
        }
    }
}

impl BindPlugin for Racks {
    fn bind(&self, _: &mut CycleState, _: &PodInfo, _: &str) -> Status {
        Status::success()
    }
}

impl PlacementGeneratePlugin for Racks {
    fn generate_placements(
        &self,
        _: PodGroupRef<'_>,
        parent: &Placement,
        snapshot: &Snapshot,
    ) -> Result<Vec<Placement>, Status> {
        if self.fail_generate {
            return Err(Status::error("no racks today"));
        }
        let mut racks: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        for &i in &parent.nodes {
            let labels = snapshot.node_at(i).node().metadata.labels.clone();
            if let Some(rack) = labels.and_then(|l| l.get("rack").cloned()) {
                racks.entry(rack).or_default().push(i);
            }
        }
        // Out of name order, as a Go map may hand them over.
        Ok(racks
            .into_iter()
            .rev()
            .map(|(name, nodes)| Placement { name, nodes })
            .collect())
    }
}

impl PlacementScorePlugin for Racks {
    fn score_placement(
        &self,
        _: PodGroupRef<'_>,
        assignments: &PodGroupAssignments,
        _: &Snapshot,
    ) -> Result<i64, Status> {
        Ok(self.scores[assignments.placement.name.as_str()])
    }
}

fn scheduler(racks: Racks, nodes: &[(&str, &str, i64)]) -> Scheduler {
    let mut registry = Registry::new();
    let plugin = Arc::new(racks);
    registry
        .register("Racks", move |_, _| Ok(plugin.clone() as Arc<dyn Plugin>))
        .unwrap();
    let mut config = KubeSchedulerConfiguration::default_config();
    let profile = &mut config.profiles[0];
    profile.user_plugins = None;
    profile.plugins = Default::default();
    for set in [
        &mut profile.plugins.queue_sort,
        &mut profile.plugins.filter,
        &mut profile.plugins.bind,
        &mut profile.plugins.placement_generate,
        &mut profile.plugins.placement_score,
    ] {
        set.enabled.push(PluginRef::new("Racks"));
    }
    let framework = Framework::new(profile, &registry, &Handle::default()).unwrap();
    let nodes = nodes.iter().map(|(name, rack, cpu)| {
        NodeBuilder::new(*name)
            .label("rack", *rack)
            .cpu_millis(*cpu)
            .node()
    });
    let (snapshot, _) = Snapshot::new(nodes, []).unwrap();
    Scheduler::new(vec![framework], snapshot, SchedulerOptions::default()).unwrap()
}

/// A one-cpu pod of PodGroup `g`.
fn member(name: &str) -> Arc<PodInfo> {
    let pod: k8s_openapi::api::core::v1::Pod = serde_json::from_value(serde_json::json!({
        "metadata": {"name": name, "namespace": "default", "uid": name},
        "spec": {
            "schedulingGroup": {"podGroupName": "g"},
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
        },
    }))
    .unwrap();
    Arc::new(PodInfo::new(Arc::new(pod)).unwrap())
}

/// Each pod's node, or its message.
fn outcomes(cycle: &PodGroupCycle) -> Vec<String> {
    cycle
        .outcomes
        .iter()
        .map(|(_, o)| match o {
            Outcome::Scheduled { node, .. } => node.clone(),
            Outcome::Unschedulable { error, .. } => error.to_string(),
            other => format!("{other:?}"),
        })
        .collect()
}

#[test]
fn the_best_placement_is_taken_and_ties_go_to_the_first_by_name() {
    let nodes = [("a1", "ra", 2000), ("b1", "rb", 2000), ("c1", "rc", 2000)];
    let scores = BTreeMap::from([("ra", 10), ("rb", 70), ("rc", 70)]);
    let mut s = scheduler(
        Racks {
            fail_generate: false,
            scores,
        },
        &nodes,
    );
    let cycle = s.schedule_pod_group(&[member("g-1"), member("g-2")]);
    assert_eq!(outcomes(&cycle), ["b1", "b1"]);
    assert_eq!(cycle.condition, Some(PodGroupCondition::scheduled()));
}

#[test]
fn a_pod_sees_only_its_placement_s_nodes() {
    // rb has two nodes of one cpu; the three-cpu node of ra is never tried.
    let nodes = [("a1", "ra", 3000), ("b1", "rb", 1000), ("b2", "rb", 1000)];
    let scores = BTreeMap::from([("ra", 0), ("rb", 100)]);
    let mut s = scheduler(
        Racks {
            fail_generate: false,
            scores,
        },
        &nodes,
    );
    let cycle = s.schedule_pod_group(&[member("g-1"), member("g-2"), member("g-3")]);
    // Both racks fit (a Permit succeeded: there is no Permit plugin), rb scores best;
    // its third pod finds neither of rb's nodes free.
    assert_eq!(
        outcomes(&cycle),
        ["0/2 nodes are available: 2 Insufficient cpu.", "b1", "b2"]
    );
}

#[test]
fn a_placement_plugin_s_failure_turns_every_pod_down() {
    let nodes = [("a1", "ra", 2000), ("b1", "rb", 2000)];
    let mut s = scheduler(
        Racks {
            fail_generate: true,
            scores: BTreeMap::new(),
        },
        &nodes,
    );
    let cycle = s.schedule_pod_group(&[member("g-1"), member("g-2")]);
    assert_eq!(outcomes(&cycle), ["no racks today", "no racks today"]);
    assert_eq!(
        cycle.condition,
        Some(PodGroupCondition::scheduler_error("no racks today"))
    );
    // A score out of 0..=100 is the framework's error.
    let scores = BTreeMap::from([("ra", 101), ("rb", 5)]);
    let mut s = scheduler(
        Racks {
            fail_generate: false,
            scores,
        },
        &nodes,
    );
    let cycle = s.schedule_pod_group(&[member("g-1")]);
    let message = "plugin \"Racks\" returns an invalid score 101, it should in the range of [0, 100] after normalizing";
    assert_eq!(outcomes(&cycle), [message]);
    assert_eq!(
        cycle.condition,
        Some(PodGroupCondition::scheduler_error(message))
    );
}
