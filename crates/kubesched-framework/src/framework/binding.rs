//! The points after a node is chosen: Reserve and Unreserve, Permit, PreBind, Bind and
//! PostBind.

use super::{Framework, rejection_or_error};
use crate::cycle_state::CycleState;
use crate::observer::{sampled, timed};
use crate::pod_info::PodInfo;
use crate::status::{Code, Status};
use crate::waiting::MAX_PERMIT_WAIT;
use std::collections::BTreeMap;
use std::time::Duration;

impl Framework {
    /// Runs Reserve plugins in order; on failure the caller must run
    /// [`Framework::run_reserve_plugins_unreserve`].
    pub fn run_reserve_plugins_reserve(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        node: &str,
    ) -> Status {
        self.timed_point("Reserve", Status::code, || {
            self.reserve_untimed(state, pod, node)
        })
    }

    fn reserve_untimed(&self, state: &mut CycleState, pod: &PodInfo, node: &str) -> Status {
        let obs = sampled(&self.observer, state);
        for w in &self.reserve {
            let s = timed(obs, &w.name, "Reserve", Status::code, || {
                w.plugin.reserve(state, pod, node)
            });
            if !s.is_success() {
                let s = rejection_or_error(s, || format!("running Reserve plugin {:?}", &*w.name));
                return s.with_plugin(w.name.clone());
            }
        }
        Status::success()
    }

    /// Runs Unreserve in reverse order.
    pub fn run_reserve_plugins_unreserve(&self, state: &mut CycleState, pod: &PodInfo, node: &str) {
        self.timed_point(
            "Unreserve",
            |_| Code::Success,
            || self.unreserve_untimed(state, pod, node),
        )
    }

    fn unreserve_untimed(&self, state: &mut CycleState, pod: &PodInfo, node: &str) {
        let obs = sampled(&self.observer, state);
        for w in self.reserve.iter().rev() {
            timed(
                obs,
                &w.name,
                "Unreserve",
                |_| Code::Success,
                || w.plugin.unreserve(state, pod, node),
            );
        }
    }

    /// Runs Permit plugins: a rejection ends the run; `Wait` returns the shortest
    /// timeout among the plugins that asked to wait.
    pub fn run_permit_plugins(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        node: &str,
    ) -> (Status, Option<Duration>) {
        let (s, waits) = self.run_permit_plugins_waits(state, pod, node);
        (s, waits.values().min().copied())
    }

    /// Runs Permit plugins as kube-scheduler's `RunPermitPlugins` does: a rejection
    /// ends the run; `Wait` comes with every plugin that asked to wait and its wait,
    /// cut to [`MAX_PERMIT_WAIT`], for the [`WaitingPods`](crate::WaitingPods) map.
    pub fn run_permit_plugins_waits(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        node: &str,
    ) -> (Status, BTreeMap<String, Duration>) {
        self.timed_point(
            "Permit",
            |r: &(Status, _)| r.0.code(),
            || self.permit_untimed(state, pod, node),
        )
    }

    fn permit_untimed(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        node: &str,
    ) -> (Status, BTreeMap<String, Duration>) {
        let mut waits = BTreeMap::new();
        // The first waiting plugin's reasons lead the Wait status (v1.36 reports them
        // with the framework's own, as `waitStatus` does).
        let mut wait_reasons = Vec::new();
        let obs = sampled(&self.observer, state);
        for w in &self.permit {
            let (s, timeout) = timed(
                obs,
                &w.name,
                "Permit",
                |r: &(Status, _)| r.0.code(),
                || w.plugin.permit(state, pod, node),
            );
            if s.is_success() {
                continue;
            }
            if s.is_wait() {
                if waits.is_empty() {
                    wait_reasons = s.reasons().to_vec();
                }
                waits.insert(w.name.to_string(), timeout.min(MAX_PERMIT_WAIT));
                continue;
            }
            let s = rejection_or_error(s, || format!("running Permit plugin {:?}", &*w.name));
            return (s.with_plugin(w.name.clone()), BTreeMap::new());
        }
        if waits.is_empty() {
            (Status::success(), waits)
        } else {
            let message = format!(
                "one or more plugins asked to wait and no plugin rejected pod {:?}",
                pod.name()
            );
            wait_reasons.push(message.into());
            (Status::with_reasons(Code::Wait, wait_reasons), waits)
        }
    }

    /// Runs PreBind plugins in order; the first failure ends the run.
    pub fn run_pre_bind_plugins(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        node: &str,
    ) -> Status {
        self.timed_point("PreBind", Status::code, || {
            self.pre_bind_untimed(state, pod, node)
        })
    }

    fn pre_bind_untimed(&self, state: &mut CycleState, pod: &PodInfo, node: &str) -> Status {
        let obs = sampled(&self.observer, state);
        for w in &self.pre_bind {
            let s = timed(obs, &w.name, "PreBind", Status::code, || {
                w.plugin.pre_bind(state, pod, node)
            });
            if !s.is_success() && !s.is_skip() {
                return s.with_plugin(w.name.clone());
            }
        }
        Status::success()
    }

    /// Runs Bind plugins: the first that does not Skip decides.
    pub fn run_bind_plugins(&self, state: &mut CycleState, pod: &PodInfo, node: &str) -> Status {
        self.timed_point("Bind", Status::code, || self.bind_untimed(state, pod, node))
    }

    fn bind_untimed(&self, state: &mut CycleState, pod: &PodInfo, node: &str) -> Status {
        let obs = sampled(&self.observer, state);
        for w in &self.bind {
            let s = timed(obs, &w.name, "Bind", Status::code, || {
                w.plugin.bind(state, pod, node)
            });
            if s.is_skip() {
                continue;
            }
            return s.with_plugin(w.name.clone());
        }
        Status::skip()
    }

    /// Runs PostBind plugins.
    pub fn run_post_bind_plugins(&self, state: &mut CycleState, pod: &PodInfo, node: &str) {
        self.timed_point(
            "PostBind",
            |_| Code::Success,
            || self.post_bind_untimed(state, pod, node),
        )
    }

    fn post_bind_untimed(&self, state: &mut CycleState, pod: &PodInfo, node: &str) {
        let obs = sampled(&self.observer, state);
        for w in &self.post_bind {
            timed(
                obs,
                &w.name,
                "PostBind",
                |_| Code::Success,
                || w.plugin.post_bind(state, pod, node),
            );
        }
    }
}
