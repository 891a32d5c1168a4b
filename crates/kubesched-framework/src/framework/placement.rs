//! PlacementGenerate and PlacementScore: the placements a PodGroup is tried on, and how
//! the ones it fits rank (kube-scheduler v1.36's `RunPlacementGeneratePlugins` and
//! `RunPlacementScorePlugins`).

use super::Framework;
use crate::placement::{Placement, PodGroupAssignments, PodGroupRef};
use crate::plugin::{MAX_NODE_SCORE, MIN_NODE_SCORE};
use crate::snapshot::Snapshot;
use crate::status::Status;

impl Framework {
    /// Whether the profile has PlacementGenerate plugins: its PodGroup cycles then try
    /// each placement they make.
    pub fn has_placement_generate_plugins(&self) -> bool {
        !self.placement_generate.is_empty()
    }

    /// The placements of `group`: the whole cluster, split by each PlacementGenerate
    /// plugin in turn. The first failure ends it, with the plugin's name.
    pub fn run_placement_generate_plugins(
        &self,
        group: PodGroupRef<'_>,
        snapshot: &Snapshot,
    ) -> Result<Vec<Placement>, Status> {
        let mut placements = vec![Placement::whole_cluster(snapshot)];
        for wired in &self.placement_generate {
            let mut next = Vec::new();
            for parent in &placements {
                let generated = wired
                    .plugin
                    .generate_placements(group, parent, snapshot)
                    .map_err(|s| s.with_plugin(wired.name.clone()))?;
                next.extend(generated);
            }
            placements = next;
        }
        Ok(placements)
    }

    /// Each placement's total score: every PlacementScore plugin's score, normalised
    /// and in range, times its weight, summed, in the order of `assignments`.
    pub fn run_placement_score_plugins(
        &self,
        group: PodGroupRef<'_>,
        assignments: &[PodGroupAssignments],
        snapshot: &Snapshot,
    ) -> Result<Vec<i64>, Status> {
        let mut totals = vec![0; assignments.len()];
        for (wired, weight) in &self.placement_score {
            let mut scores = assignments
                .iter()
                .map(|a| wired.plugin.score_placement(group, a, snapshot))
                .collect::<Result<Vec<i64>, Status>>()
                .map_err(|s| s.with_plugin(wired.name.clone()))?;
            wired
                .plugin
                .normalize_placement_scores(group, &mut scores)
                .map_err(|s| s.with_plugin(wired.name.clone()))?;
            for (total, score) in totals.iter_mut().zip(scores) {
                if !(MIN_NODE_SCORE..=MAX_NODE_SCORE).contains(&score) {
                    return Err(Status::error(format!(
                        "plugin {:?} returns an invalid score {score}, it should in the range of [{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing",
                        &*wired.name
                    )));
                }
                *total += score * weight;
            }
        }
        Ok(totals)
    }
}
