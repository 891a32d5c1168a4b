//! The points after a node is chosen: Reserve and Unreserve, Permit, PreBind, Bind and
//! PostBind.

use super::{Framework, rejection_or_error};
use crate::cycle_state::CycleState;
use crate::observer::{sampled, timed};
use crate::pod_info::PodInfo;
use crate::status::{Code, Status};
use crate::waiting::MAX_PERMIT_WAIT;
use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

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
            if state.skip_pre_bind_plugins().contains(&*w.name) {
                continue;
            }
            let s = timed(obs, &w.name, "PreBind", Status::code, || {
                w.plugin.pre_bind(state, pod, node)
            });
            if !s.is_success() && !s.is_skip() {
                return s.with_plugin(w.name.clone());
            }
        }
        Status::success()
    }

    /// The PreBind point as a future that holds no thread while the plugins write or
    /// wait, when every PreBind plugin with work this cycle (not skipped by
    /// [`Framework::run_pre_bind_pre_flights`]) offers one
    /// ([`PreBindPlugin::pre_bind_async`](crate::PreBindPlugin::pre_bind_async));
    /// `None` otherwise (then [`Framework::run_pre_bind_plugins`] runs them, on a
    /// thread that may block). The plugins' futures run one after another, in the
    /// profile's order, and the first failure ends the run: the future resolves to what
    /// `run_pre_bind_plugins` would return, and reports to the observer as it would.
    /// Nothing is written before it is polled.
    pub fn pre_bind_async(
        &self,
        state: &CycleState,
        pod: &Arc<PodInfo>,
        node: &str,
    ) -> Option<Pin<Box<dyn Future<Output = Status> + Send + 'static>>> {
        let skip = state.skip_pre_bind_plugins();
        let mut steps = Vec::with_capacity(self.pre_bind.len());
        for w in &self.pre_bind {
            if !skip.contains(&*w.name) {
                steps.push((w.name.clone(), w.plugin.pre_bind_async(state, pod, node)?));
            }
        }
        let observer = self.observer.clone();
        let sampled = sampled(&self.observer, state).is_some();
        let profile = self.profile_name.clone();
        Some(Box::pin(async move {
            let start = observer.is_some().then(Instant::now);
            let mut result = Status::success();
            for (name, step) in steps {
                let began = sampled.then(Instant::now);
                let s = step.await;
                if let (Some(o), Some(began)) = (&observer, began) {
                    o.observe(&name, "PreBind", s.code(), began.elapsed());
                }
                if !s.is_success() && !s.is_skip() {
                    result = s.with_plugin(name);
                    break;
                }
            }
            if let (Some(o), Some(start)) = (observer, start) {
                o.observe_extension_point(&profile, "PreBind", result.code(), start.elapsed());
            }
            result
        }))
    }

    /// Runs kube-scheduler's `RunPreBindPreFlights`: asks each PreBind plugin whether
    /// it has work for `pod` on `node` ([`PreBindPlugin::pre_bind_pre_flight`](crate::PreBindPlugin::pre_bind_pre_flight)).
    /// `Success` when one has, `Skip` when none has (or there are none), `Error` when
    /// one fails or answers with another code. The plugins that answered `Skip` are
    /// recorded in `state` and not run by [`Framework::run_pre_bind_plugins`].
    pub fn run_pre_bind_pre_flights(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        node: &str,
    ) -> Status {
        self.timed_point("PreBindPreFlight", Status::code, || {
            self.pre_bind_pre_flights_untimed(state, pod, node)
        })
    }

    fn pre_bind_pre_flights_untimed(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        node: &str,
    ) -> Status {
        let obs = sampled(&self.observer, state);
        let mut skip = BTreeSet::new();
        let mut result = Status::skip();
        for w in &self.pre_bind {
            let s = timed(obs, &w.name, "PreBindPreFlight", Status::code, || {
                w.plugin.pre_bind_pre_flight(state, pod, node)
            });
            match s.code() {
                Code::Success => result = Status::success(),
                Code::Skip => {
                    skip.insert(w.name.to_string());
                }
                Code::Error => {
                    let message =
                        format!("running PreBindPreFlight {:?}: {}", &*w.name, s.message());
                    return Status::error(message).with_plugin(w.name.clone());
                }
                other => {
                    let message = format!(
                        "PreBindPreFlight {} returned {:?}, which is unsupported. It is supposed to return Success, Skip, or Error status",
                        w.name,
                        other.as_str()
                    );
                    return Status::error(message).with_plugin(w.name.clone());
                }
            }
        }
        state.set_skip_pre_bind_plugins(skip);
        result
    }

    /// The Bind point as a future that holds no thread while the binding is written,
    /// when the first Bind plugin binds through a [`PodBinder`](crate::PodBinder)
    /// ([`BindPlugin::pod_binder`](crate::BindPlugin::pod_binder)) that writes asynchronously
    /// ([`PodBinder::bind_async`](crate::PodBinder::bind_async)); `None` otherwise
    /// (then [`Framework::run_bind_plugins`] binds). The future resolves to what
    /// `run_bind_plugins` would return and reports to the observer as it would (the
    /// plugin's call in a sampled cycle, the whole point always). Nothing is written
    /// before it is polled.
    pub fn bind_async(
        &self,
        state: &CycleState,
        pod: &Arc<PodInfo>,
        node: &str,
    ) -> Option<Pin<Box<dyn Future<Output = Status> + Send + 'static>>> {
        let first = self.bind.first()?;
        let write = first.plugin.pod_binder()?.bind_async(pod, node)?;
        let name = first.name.clone();
        let observer = self.observer.clone();
        let sampled = sampled(&self.observer, state).is_some();
        let profile = self.profile_name.clone();
        Some(Box::pin(async move {
            let start = observer.is_some().then(Instant::now);
            // As DefaultBinder turns its binder's answer into a status.
            let s = match write.await {
                Ok(()) => Status::success(),
                Err(e) => Status::new(Code::Error, e),
            }
            .with_plugin(name.clone());
            if let (Some(o), Some(start)) = (observer, start) {
                let took = start.elapsed();
                if sampled {
                    o.observe(&name, "Bind", s.code(), took);
                }
                o.observe_extension_point(&profile, "Bind", s.code(), took);
            }
            s
        }))
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
