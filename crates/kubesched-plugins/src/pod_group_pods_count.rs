//! PodGroupPodsCount: kube-scheduler v1.36's PlacementScore plugin
//! (pkg/scheduler/framework/plugins/podgrouppodscount), in the default profile with
//! weight 1 when the `TopologyAwareWorkloadScheduling` gate is on. A placement scores
//! the group's scheduled pods plus the pods that found a node in it, normalised
//! against the best placement: `count * 100 / max`.
//!
//! Floor: `kubesched-framework`.

use kubesched_framework::{
    MAX_NODE_SCORE, MIN_NODE_SCORE, PlacementScorePlugin, Plugin, PodGroupAssignments, PodGroupRef,
    Snapshot, Status, extension_points,
};

use crate::gang_scheduling::scheduled_pods_of_group;

/// The plugin's name.
pub const NAME: &str = "PodGroupPodsCount";

/// The plugin.
#[derive(Clone, Copy, Debug, Default)]
pub struct PodGroupPodsCount;

impl Plugin for PodGroupPodsCount {
    fn name(&self) -> &str {
        NAME
    }
    extension_points!(PlacementScore);
}

impl PlacementScorePlugin for PodGroupPodsCount {
    fn score_placement(
        &self,
        group: PodGroupRef<'_>,
        assignments: &PodGroupAssignments,
        snapshot: &Snapshot,
    ) -> Result<i64, Status> {
        let scheduled = scheduled_pods_of_group(snapshot, group).count();
        Ok((scheduled + assignments.proposed.len()) as i64)
    }

    fn normalize_placement_scores(
        &self,
        _: PodGroupRef<'_>,
        scores: &mut [i64],
    ) -> Result<(), Status> {
        let max = scores.iter().copied().max().unwrap_or(0);
        if max == 0 {
            return Err(Status::error(
                "no pods from pod group are assigned to any of the candidate placements",
            ));
        }
        for s in scores {
            *s = MIN_NODE_SCORE + *s * (MAX_NODE_SCORE - MIN_NODE_SCORE) / max;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalises_against_the_largest_count() {
        // podgrouppodscount_test.go's "distinct scores".
        let mut scores = [10, 50, 110];
        let group = PodGroupRef {
            namespace: "default",
            name: "g",
        };
        PodGroupPodsCount
            .normalize_placement_scores(group, &mut scores)
            .unwrap();
        assert_eq!(scores, [9, 45, 100]);
        let e = PodGroupPodsCount
            .normalize_placement_scores(group, &mut [0, 0])
            .unwrap_err();
        assert_eq!(
            e.message(),
            "no pods from pod group are assigned to any of the candidate placements"
        );
    }
}
