//! kube-scheduler v1.36's `podGroupSchedulingPlacementAlgorithm` and
//! `findBestPlacement` (pkg/scheduler/schedule_one_podgroup.go, the
//! `TopologyAwareWorkloadScheduling` gate): the PlacementGenerate plugins split the
//! cluster into placements, the group is tried on each alone and undone, and the
//! PlacementScore plugins rank those it fits. [`choose_placement`] is that choice, for
//! any scheduler that can try a group and undo it ([`PlacementTrials`]): the
//! simulator's PodGroup cycle, and a runtime's, which attempts and reports its pods
//! itself. The caller then attempts the group on the chosen placement and submits that
//! attempt.
//!
//! kube-scheduler tries the placements in a Go map's order, which is random, and
//! breaks equal scores at random; kubesched tries them in name order and breaks ties
//! as [`SchedulerOptions::host_selection`](super::SchedulerOptions::host_selection)
//! breaks them between nodes.

use std::sync::Arc;

use super::Scheduler;
use super::pod_group::PodGroupCondition;
use crate::framework::Framework;
use crate::placement::{Placement, PodGroupAssignments, PodGroupRef};
use crate::pod_info::PodInfo;
use crate::status::{Code, Status};

/// What kube-scheduler v1.36.1 reports for a group no placement was made for.
pub const NO_FEASIBLE_PLACEMENTS: &str = "no feasible placements found";

/// What trying a PodGroup's pods on one placement showed.
#[derive(Clone, Debug, Default)]
pub struct PlacementTrial {
    /// The group fits there: some pod's Permit succeeded (it is placed, or waits for
    /// its preemption) and no pod failed with an error.
    pub fits: bool,
    /// A pod failed with an error, not a rejection: this placement's attempt is the
    /// one submitted, so that every pod reports the error.
    pub failed: bool,
    /// When the group fits: each pod that found a node, with the node's index in the
    /// scheduler's snapshot (what the PlacementScore plugins score).
    pub proposed: Vec<(Arc<PodInfo>, usize)>,
}

/// How [`choose_placement`] reaches the scheduler that runs a PodGroup's pods: it
/// restricts that scheduler to one placement at a time and asks for a try.
pub trait PlacementTrials {
    /// The scheduler the group's pods are attempted in.
    fn scheduler(&mut self) -> &mut Scheduler;

    /// Attempts the group's pods up to Permit, as the PodGroup cycle does, with the
    /// scheduler restricted to the placement being tried, and undoes it all: when it
    /// returns, no pod of the try is assumed, reserved or waiting at Permit, and no
    /// failure has been reported.
    fn try_group(&mut self) -> PlacementTrial;
}

/// The placement a PodGroup's cycle is submitted on ([`choose_placement`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PlacementChoice {
    /// Attempt the group on `placement`, one of `count`, and submit that attempt. The
    /// placement is the best the group fits; when it fits none (or a try failed with an
    /// error) it is the first tried, and a group that does not fit there reports
    /// [`PodGroupCondition::no_placement_available`]`(count)`.
    Attempt {
        /// The placement to attempt the group on.
        placement: Placement,
        /// How many placements there were.
        count: usize,
    },
    /// Attempt nothing: every pod of the group fails with `status`, and the group
    /// gets `condition` (the generators made no placement, or a plugin failed).
    FailAll {
        /// What each pod fails with.
        status: Status,
        /// The group's `PodGroupScheduled` condition.
        condition: PodGroupCondition,
    },
}

/// Chooses the placement for the PodGroup `group`, whose profile is `fwk`
/// (`podGroupSchedulingPlacementAlgorithm` up to its last attempt, and
/// `findBestPlacement`): the PlacementGenerate plugins' placements, sorted by name;
/// with more than one, each is tried ([`PlacementTrials::try_group`]), and of those the
/// group fits, the PlacementScore plugins' best is chosen. The group is not attempted
/// for real here: the caller attempts it on the choice. The scheduler is left
/// unrestricted.
pub fn choose_placement(
    trials: &mut impl PlacementTrials,
    fwk: &Framework,
    group: PodGroupRef<'_>,
) -> PlacementChoice {
    let generated = fwk.run_placement_generate_plugins(group, trials.scheduler().snapshot());
    let mut placements = match generated {
        Ok(p) => p,
        Err(status) => return fail_with_error(status),
    };
    if placements.is_empty() {
        return PlacementChoice::FailAll {
            status: Status::new(Code::Unschedulable, NO_FEASIBLE_PLACEMENTS),
            condition: PodGroupCondition {
                message: NO_FEASIBLE_PLACEMENTS.into(),
                ..PodGroupCondition::unschedulable()
            },
        };
    }
    placements.sort_by(|a, b| a.name.cmp(&b.name));
    let count = placements.len();
    let chosen = if count == 1 {
        Ok(0)
    } else {
        best_placement(trials, fwk, group, &placements)
    };
    match chosen {
        Ok(i) => PlacementChoice::Attempt {
            placement: placements.swap_remove(i),
            count,
        },
        Err(status) => fail_with_error(status),
    }
}

/// A plugin's error: every pod fails with it, the group with `SchedulerError`.
fn fail_with_error(status: Status) -> PlacementChoice {
    let condition = PodGroupCondition::scheduler_error(&status.message());
    PlacementChoice::FailAll { status, condition }
}

/// `findBestPlacement`: each placement tried; of those the group fits, the best by the
/// PlacementScore plugins; when it fits none, or a try fails with an error, that first
/// one.
fn best_placement(
    trials: &mut impl PlacementTrials,
    fwk: &Framework,
    group: PodGroupRef<'_>,
    placements: &[Placement],
) -> Result<usize, Status> {
    let mut fitting: Vec<usize> = Vec::new();
    let mut assignments: Vec<PodGroupAssignments> = Vec::new();
    for (i, placement) in placements.iter().enumerate() {
        trials.scheduler().placement = Some(placement.clone());
        let trial = trials.try_group();
        trials.scheduler().placement = None;
        if trial.failed {
            return Ok(i);
        }
        if trial.fits {
            fitting.push(i);
            assignments.push(PodGroupAssignments {
                placement: placement.clone(),
                proposed: trial.proposed,
            });
        }
    }
    match fitting.len() {
        0 => return Ok(0),
        1 => return Ok(fitting[0]),
        _ => {}
    }
    let sched = trials.scheduler();
    let totals = fwk.run_placement_score_plugins(group, &assignments, sched.snapshot())?;
    Ok(sched.select_best(totals.into_iter().zip(fitting)))
}

impl Scheduler {
    /// Restricts the scheduling cycles that follow to `placement`'s nodes, as a
    /// PodGroup cycle on a placement does: Filter and Score see only those nodes, the
    /// `0/N nodes` message counts them, and the cycle's state carries
    /// [`InPlacement`](crate::InPlacement) (DefaultPreemption then declines). `None`
    /// lifts it. For runtimes that run the cycle's pods themselves, around the attempt
    /// on the placement [`choose_placement`] chose.
    pub fn set_placement(&mut self, placement: Option<Placement>) {
        self.placement = placement;
    }
}

impl PodGroupCondition {
    /// The condition of a group that fits none of the `count` placements: this one
    /// (the first placement's), its message in kube-scheduler v1.36.1's words, `0/N
    /// placements are available, first placement status: ...`.
    pub fn no_placement_available(mut self, count: usize) -> PodGroupCondition {
        self.message = format!(
            "0/{count} placements are available, first placement status: {}",
            self.message
        );
        self
    }
}
