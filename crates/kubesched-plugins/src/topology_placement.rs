//! TopologyPlacementGenerator: kube-scheduler v1.36's PlacementGenerate plugin
//! (pkg/scheduler/framework/plugins/topologyaware), in the default profile when the
//! `TopologyAwareWorkloadScheduling` gate is on. A PodGroup whose
//! `spec.schedulingConstraints.topology[0].key` names a node label is tried on one
//! placement per value of that label (the nodes without it are in none); once some of
//! its pods are scheduled, only on their domain. A group without a constraint keeps
//! the whole cluster as its one placement.
//!
//! Floor: `kubesched-framework`; the PodGroups come from [`Handle::objects`] in a
//! simulation, and from [`Handle::live_objects`] in a timed replay and in `run`, where
//! the plugin reads them again whenever they change.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use kubesched_framework::{
    ClusterObjects, Handle, LiveCursor, Placement, PlacementGeneratePlugin, Plugin, PluginError,
    PodGroupRef, Snapshot, Status, extension_points,
};

use crate::gang_scheduling::{pod_groups_of, scheduled_pods_of_group};

/// The plugin's name.
pub const NAME: &str = "TopologyPlacementGenerator";

/// Each PodGroup's topology key (`None`: no constraint), by `namespace/name`.
type TopologyKeys = HashMap<String, Option<String>>;

/// The plugin.
pub struct TopologyPlacementGenerator {
    live: LiveCursor,
    keys: Mutex<TopologyKeys>,
}

/// The factory: reads the PodGroups of the handle's objects.
pub fn new(_: Option<&serde_json::Value>, handle: &Handle) -> Result<Arc<dyn Plugin>, PluginError> {
    let (live, objects) = LiveCursor::new(handle);
    let keys = match objects {
        Some(objects) => keys_of(&objects)?,
        None => TopologyKeys::new(),
    };
    Ok(Arc::new(TopologyPlacementGenerator {
        live,
        keys: Mutex::new(keys),
    }))
}

/// The topology key of each PodGroup among `objects`.
fn keys_of(objects: &ClusterObjects) -> Result<TopologyKeys, PluginError> {
    Ok(pod_groups_of(objects)?
        .into_iter()
        .map(|(name, group)| {
            let key = group
                .spec
                .scheduling_constraints
                .as_ref()
                .and_then(|c| c.topology.as_ref())
                .and_then(|t| t.first())
                .map(|t| t.key.clone());
            (name, key)
        })
        .collect())
}

impl TopologyPlacementGenerator {
    /// `group`'s key: `None` for a PodGroup the plugin does not know, `Some(None)` for
    /// one without a constraint. Read again first when the live objects moved.
    fn key_of(&self, group: &str) -> Option<Option<String>> {
        let mut keys = self.keys.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(objects) = self.live.changed()
            && let Ok(fresh) = keys_of(&objects)
        {
            *keys = fresh;
        }
        keys.get(group).cloned()
    }
}

impl Plugin for TopologyPlacementGenerator {
    fn name(&self) -> &str {
        NAME
    }
    extension_points!(PlacementGenerate);
}

impl PlacementGeneratePlugin for TopologyPlacementGenerator {
    fn generate_placements(
        &self,
        group: PodGroupRef<'_>,
        parent: &Placement,
        snapshot: &Snapshot,
    ) -> Result<Vec<Placement>, Status> {
        let full = format!("{}/{}", group.namespace, group.name);
        let Some(key) = self.key_of(&full) else {
            // The lister's NotFound error.
            return Err(Status::error(format!(
                "podgroup.scheduling.k8s.io {:?} not found",
                group.name
            )));
        };
        let Some(key) = key else {
            return Ok(vec![parent.clone()]);
        };
        let key = key.as_str();
        let required = scheduled_domain(key, group, snapshot).map_err(|e| {
            Status::error(format!(
                "cannot determine domain for already scheduled pods: {e}"
            ))
        })?;
        let mut by_domain: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for &i in &parent.nodes {
            let labels = snapshot.node_at(i).node().metadata.labels.as_ref();
            if let Some(domain) = labels.and_then(|l| l.get(key))
                && required.as_deref().is_none_or(|r| r == domain)
            {
                by_domain.entry(domain).or_default().push(i);
            }
        }
        Ok(by_domain
            .into_iter()
            .map(|(name, nodes)| Placement {
                name: name.to_string(),
                nodes,
            })
            .collect())
    }
}

/// The domain of the group's scheduled pods (`getScheduledPodsTopologyDomain`), if it
/// has any; an error when one's node lacks the label or two are in different domains.
fn scheduled_domain(
    key: &str,
    group: PodGroupRef<'_>,
    snapshot: &Snapshot,
) -> Result<Option<String>, String> {
    let mut domain: Option<String> = None;
    for (node, pod) in scheduled_pods_of_group(snapshot, group) {
        let labels = snapshot.node_at(node).node().metadata.labels.as_ref();
        let Some(d) = labels.and_then(|l| l.get(key)) else {
            return Err(format!("no topology domain found for pod {}", pod.key()));
        };
        if let Some(seen) = &domain
            && seen != d
        {
            return Err(format!(
                "more than 1 domain found for pod group: {seen}, {d}"
            ));
        }
        domain = Some(d.clone());
    }
    Ok(domain)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kubesched_framework::build::{NodeBuilder, PodBuilder};

    const GROUP: PodGroupRef<'static> = PodGroupRef {
        namespace: "default",
        name: "g",
    };

    fn generator(key: Option<&str>) -> TopologyPlacementGenerator {
        TopologyPlacementGenerator {
            live: LiveCursor::new(&Handle::default()).0,
            keys: Mutex::new(HashMap::from([(
                "default/g".to_string(),
                key.map(str::to_string),
            )])),
        }
    }

    fn member(name: &str, node: &str) -> Arc<kubesched_framework::PodInfo> {
        let mut pod = (*PodBuilder::new("default", name).bound_to(node).pod()).clone();
        let spec = pod.spec.as_mut().unwrap();
        spec.scheduling_group = Some(k8s_openapi::api::core::v1::PodSchedulingGroup {
            pod_group_name: Some("g".into()),
        });
        Arc::new(kubesched_framework::PodInfo::new(Arc::new(pod)).unwrap())
    }

    fn snapshot(pods: Vec<Arc<kubesched_framework::PodInfo>>) -> Snapshot {
        let nodes = [
            NodeBuilder::new("a1").label("rack", "ra").node(),
            NodeBuilder::new("u1").node(),
            NodeBuilder::new("b1").label("rack", "rb").node(),
            NodeBuilder::new("a2").label("rack", "ra").node(),
        ];
        Snapshot::new(nodes, pods).unwrap().0
    }

    fn names(placements: &[Placement]) -> Vec<(&str, Vec<usize>)> {
        placements
            .iter()
            .map(|p| (p.name.as_str(), p.nodes.clone()))
            .collect()
    }

    #[test]
    fn one_placement_per_domain_of_the_key() {
        let s = snapshot(Vec::new());
        let whole = Placement::whole_cluster(&s);
        let got = generator(Some("rack"))
            .generate_placements(GROUP, &whole, &s)
            .unwrap();
        // u1 has no rack: in no placement.
        assert_eq!(names(&got), [("ra", vec![0, 3]), ("rb", vec![2])]);
        // Without a constraint, the parent placement as it is.
        let got = generator(None)
            .generate_placements(GROUP, &whole, &s)
            .unwrap();
        assert_eq!(got, vec![whole]);
    }

    #[test]
    fn scheduled_pods_keep_the_group_in_their_domain() {
        let s = snapshot(vec![member("g-0", "b1")]);
        let whole = Placement::whole_cluster(&s);
        let got = generator(Some("rack"))
            .generate_placements(GROUP, &whole, &s)
            .unwrap();
        assert_eq!(names(&got), [("rb", vec![2])]);
    }

    #[test]
    fn scheduled_pods_in_two_domains_or_none_are_an_error() {
        let s = snapshot(vec![member("g-0", "b1"), member("g-1", "a1")]);
        let whole = Placement::whole_cluster(&s);
        let e = generator(Some("rack"))
            .generate_placements(GROUP, &whole, &s)
            .unwrap_err();
        assert_eq!(
            e.message(),
            "cannot determine domain for already scheduled pods: more than 1 domain found for pod group: ra, rb"
        );
        let s = snapshot(vec![member("g-0", "u1")]);
        let e = generator(Some("rack"))
            .generate_placements(GROUP, &whole, &s)
            .unwrap_err();
        assert_eq!(
            e.message(),
            "cannot determine domain for already scheduled pods: no topology domain found for pod default/g-0"
        );
    }

    #[test]
    fn a_group_the_plugin_does_not_know_is_an_error() {
        let s = snapshot(Vec::new());
        let other = PodGroupRef {
            namespace: "default",
            name: "h",
        };
        let e = generator(Some("rack"))
            .generate_placements(other, &Placement::whole_cluster(&s), &s)
            .unwrap_err();
        assert_eq!(e.message(), "podgroup.scheduling.k8s.io \"h\" not found");
    }
}
