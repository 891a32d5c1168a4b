//! Placements: the extension points kube-scheduler v1.36 added for a PodGroup's cycle
//! under the `TopologyAwareWorkloadScheduling` gate (KEP-5732). A PlacementGenerate
//! plugin splits the cluster's nodes into placements (the nodes of one rack, say); the
//! PodGroup cycle tries the group on each placement alone, and PlacementScore plugins
//! rank the placements the group fits (`podGroupSchedulingPlacementAlgorithm` and
//! `findBestPlacement` in pkg/scheduler/schedule_one_podgroup.go).

use std::sync::Arc;

use crate::plugin::Plugin;
use crate::pod_info::PodInfo;
use crate::snapshot::Snapshot;
use crate::status::Status;

/// A set of nodes a PodGroup is tried on alone (`fwk.Placement`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    /// Its name: the topology domain for TopologyPlacementGenerator's placements, empty
    /// for the whole cluster.
    pub name: String,
    /// Its nodes, as indices into the snapshot, in node order.
    pub nodes: Vec<usize>,
}

impl Placement {
    /// Every node of `snapshot`: the placement a PodGroup cycle starts from.
    pub fn whole_cluster(snapshot: &Snapshot) -> Placement {
        Placement {
            name: String::new(),
            nodes: (0..snapshot.num_nodes()).collect(),
        }
    }
}

/// The PodGroup a placement cycle is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PodGroupRef<'a> {
    /// The PodGroup's namespace.
    pub namespace: &'a str,
    /// The PodGroup's name.
    pub name: &'a str,
}

/// What the group's cycle did on one placement it fits (`fwk.PodGroupAssignments`):
/// the nodes found for its pods, which the snapshot no longer holds when the
/// placements are scored.
#[derive(Clone, Debug)]
pub struct PodGroupAssignments {
    /// The placement.
    pub placement: Placement,
    /// Each pod of the cycle that found a node in it, with that node's index.
    pub proposed: Vec<(Arc<PodInfo>, usize)>,
}

/// PlacementGenerate: splits a placement into the placements a PodGroup is tried on.
pub trait PlacementGeneratePlugin: Plugin {
    /// The placements of `parent` for `group` (none: the group fits nowhere). An error
    /// ends the cycle with it.
    fn generate_placements(
        &self,
        group: PodGroupRef<'_>,
        parent: &Placement,
        snapshot: &Snapshot,
    ) -> Result<Vec<Placement>, Status>;
}

/// PlacementScore: how good a placement the group fits is.
pub trait PlacementScorePlugin: Plugin {
    /// The placement's score before normalisation.
    fn score_placement(
        &self,
        group: PodGroupRef<'_>,
        assignments: &PodGroupAssignments,
        snapshot: &Snapshot,
    ) -> Result<i64, Status>;

    /// Brings this plugin's scores of every placement into
    /// [`MIN_NODE_SCORE`](crate::MIN_NODE_SCORE)..=[`MAX_NODE_SCORE`](crate::MAX_NODE_SCORE)
    /// (`NormalizePlacementScore`). The default leaves them.
    fn normalize_placement_scores(
        &self,
        _group: PodGroupRef<'_>,
        _scores: &mut [i64],
    ) -> Result<(), Status> {
        Ok(())
    }
}

/// Written in the cycle state of a pod attempted in a generated placement (one with a
/// name), so that DefaultPreemption can decline, as kube-scheduler v1.36's does for
/// placement-based PodGroup cycles.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InPlacement {
    /// The placement's name.
    pub name: String,
}
