//! [`PluginObserver`]: an optional hook that times the framework's work, for two of
//! kube-scheduler's metrics:
//!
//! - `scheduler_framework_extension_point_duration_seconds`: every run of a whole
//!   extension point ([`PluginObserver::observe_extension_point`]), on every cycle, as
//!   kube-scheduler's `Run*Plugins` functions record it;
//! - `scheduler_plugin_execution_duration_seconds`: each plugin call
//!   ([`PluginObserver::observe`]), only in the cycles whose [`CycleState`] holds
//!   [`RecordPluginMetrics`]: kube-scheduler samples a fraction of its cycles the same
//!   way (`pluginMetricsSamplePercent`, 10 %).
//!
//! A [`Framework`](crate::Framework) with no observer (the simulator, `kubesched bench`)
//! times nothing and reads no clock.

use std::time::{Duration, Instant};

use crate::cycle_state::CycleState;
use crate::status::Code;

/// Receives the duration of each extension point's run and of each plugin call of a
/// sampled cycle.
///
/// ```
/// use std::sync::Mutex;
/// use std::time::Duration;
/// use kubesched_framework::{Code, PluginObserver};
///
/// /// Counts the extension points that ran, by name.
/// #[derive(Default)]
/// struct Counter(Mutex<Vec<(String, &'static str, Code)>>);
/// impl PluginObserver for Counter {
///     fn observe(&self, _: &str, _: &'static str, _: Code, _: Duration) {}
///     fn observe_extension_point(&self, profile: &str, point: &'static str, code: Code, _: Duration) {
///         self.0.lock().unwrap().push((profile.to_string(), point, code));
///     }
/// }
/// ```
pub trait PluginObserver: Send + Sync {
    /// `plugin` ran at `extension_point` (kube-scheduler's names: `PreFilter`,
    /// `Filter`, `PostFilter`, `PreScore`, `Score`, `ScoreExtensionNormalize`,
    /// `Reserve`, `Unreserve`, `Permit`, `PreBindPreFlight`, `PreBind`, `Bind`,
    /// `PostBind`, `Sign`) and
    /// returned `code` after `took`. Called only in sampled cycles
    /// ([`RecordPluginMetrics`]), except at `Sign`, which kube-scheduler times on every
    /// cycle that batches.
    fn observe(&self, plugin: &str, extension_point: &'static str, code: Code, took: Duration);

    /// All the plugins of `extension_point` ran once, for one pod of `profile`, and the
    /// extension point returned `code` after `took`: kube-scheduler's
    /// `scheduler_framework_extension_point_duration_seconds`. Called on every cycle,
    /// sampled or not, by the `Framework::run_*` method of the point (its name is one of
    /// `PreEnqueue`, `PreFilter`, `PostFilter`, `PreScore`, `Score`, `Reserve`,
    /// `Unreserve`, `Permit`, `PreBindPreFlight`, `PreBind`, `Bind`, `PostBind`), and
    /// `Filter`, timed by the
    /// caller of the per-node Filter runs around its whole pass over the nodes, as
    /// kube-scheduler's `findNodesThatPassFilters` does.
    /// `ScoreExtensionNormalize` is part of `Score`. `code` is the code of the
    /// status the run returned (`Unreserve` and `PostBind` return none: `Success`).
    ///
    /// The default does nothing, so observers written before this method keep
    /// compiling.
    fn observe_extension_point(
        &self,
        profile: &str,
        extension_point: &'static str,
        code: Code,
        took: Duration,
    ) {
        let _ = (profile, extension_point, code, took);
    }

    /// `plugin` of `profile` was called `n` times at `extension_point` (`PreFilter`,
    /// `Filter` once per node, `PreScore`, `Score` once per node), on every cycle:
    /// kube-scheduler's `scheduler_plugin_evaluation_total`. Filter calls are reported
    /// per run of nodes, so this is called far less often than the plugin.
    ///
    /// The default does nothing.
    fn plugin_evaluated(&self, profile: &str, plugin: &str, extension_point: &'static str, n: u64) {
        let _ = (profile, plugin, extension_point, n);
    }

    /// OpportunisticBatching ([`crate::batch`]) looked for a node hint for a pod of
    /// `profile` (signing it included) and found one or not, in `took`:
    /// kube-scheduler's `scheduler_get_node_hint_duration_seconds`. The default does
    /// nothing.
    fn observe_node_hint(&self, profile: &str, hinted: bool, took: Duration) {
        let _ = (profile, hinted, took);
    }

    /// OpportunisticBatching recorded a cycle's results for `profile` in `took`:
    /// kube-scheduler's `scheduler_store_schedule_results_duration_seconds`. The
    /// default does nothing.
    fn observe_store_schedule_results(&self, profile: &str, took: Duration) {
        let _ = (profile, took);
    }

    /// One batching attempt of `profile` ended with `result` (one of
    /// [`crate::batch::attempt`]): kube-scheduler's `scheduler_batch_attempts_total`.
    /// The default does nothing.
    fn batch_attempt(&self, profile: &str, result: &'static str) {
        let _ = (profile, result);
    }

    /// The kept batch of `profile` could not be used, for `reason` (one of
    /// [`crate::batch::flush`]): kube-scheduler's `scheduler_batch_cache_flushed_total`.
    /// The default does nothing.
    fn batch_cache_flushed(&self, profile: &str, reason: &'static str) {
        let _ = (profile, reason);
    }
}

/// The mark of a sampled cycle: write it into a [`CycleState`] to have the plugin
/// calls of that cycle (and of its binding cycle) timed.
#[derive(Clone, Copy, Debug, Default)]
pub struct RecordPluginMetrics;

/// The observer to use for a cycle, if it is sampled.
#[inline]
pub(crate) fn sampled<'a>(
    observer: &'a Option<std::sync::Arc<dyn PluginObserver>>,
    state: &CycleState,
) -> Option<&'a dyn PluginObserver> {
    let o = observer.as_deref()?;
    state.read::<RecordPluginMetrics>()?;
    Some(o)
}

/// Reports `n` calls of `plugin` at `extension_point` to `observer`, if any.
#[inline]
pub(crate) fn evaluated(
    observer: &Option<std::sync::Arc<dyn PluginObserver>>,
    profile: &str,
    plugin: &str,
    extension_point: &'static str,
    n: usize,
) {
    if let Some(o) = observer.as_deref()
        && n > 0
    {
        o.plugin_evaluated(profile, plugin, extension_point, n as u64);
    }
}

/// Runs `f`, timing it when `observer` is set.
#[inline]
pub(crate) fn timed<T>(
    observer: Option<&dyn PluginObserver>,
    plugin: &str,
    extension_point: &'static str,
    code: impl FnOnce(&T) -> Code,
    f: impl FnOnce() -> T,
) -> T {
    time_for(observer, code, f, |o, code, took| {
        o.observe(plugin, extension_point, code, took)
    })
}

/// Runs `f`, one whole extension point, timing it for
/// [`PluginObserver::observe_extension_point`] when `observer` is set. Without an
/// observer this is a plain call: no clock is read.
#[inline]
pub(crate) fn timed_extension_point<T>(
    observer: Option<&dyn PluginObserver>,
    profile: &str,
    extension_point: &'static str,
    code: impl FnOnce(&T) -> Code,
    f: impl FnOnce() -> T,
) -> T {
    time_for(observer, code, f, |o, code, took| {
        o.observe_extension_point(profile, extension_point, code, took)
    })
}

/// Runs `f`; with an observer, reports its code and duration through `report`.
#[inline]
fn time_for<T>(
    observer: Option<&dyn PluginObserver>,
    code: impl FnOnce(&T) -> Code,
    f: impl FnOnce() -> T,
    report: impl FnOnce(&dyn PluginObserver, Code, Duration),
) -> T {
    match observer {
        None => f(),
        Some(o) => {
            let start = Instant::now();
            let r = f();
            report(o, code(&r), start.elapsed());
            r
        }
    }
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::sync::{Arc, Mutex};

    use k8s_openapi::api::core::v1::Pod;
    use kubesched_config::{PluginRef, PluginSet, Profile};

    use super::*;
    use crate::plugin::{BindPlugin, Plugin, QueueSortPlugin, QueuedPodInfo, ReservePlugin};
    use crate::registry::{Handle, Registry};
    use crate::status::Status;
    use crate::{Framework, PodInfo, Snapshot};

    /// Sorts nothing, binds everything, and refuses to reserve.
    struct Stub;
    impl Plugin for Stub {
        fn name(&self) -> &str {
            "Stub"
        }
        fn as_queue_sort(self: Arc<Self>) -> Option<Arc<dyn QueueSortPlugin>> {
            Some(self)
        }
        fn as_reserve(self: Arc<Self>) -> Option<Arc<dyn ReservePlugin>> {
            Some(self)
        }
        fn as_bind(self: Arc<Self>) -> Option<Arc<dyn BindPlugin>> {
            Some(self)
        }
    }
    impl QueueSortPlugin for Stub {
        fn less(&self, _: &QueuedPodInfo, _: &QueuedPodInfo) -> bool {
            false
        }
    }
    impl ReservePlugin for Stub {
        fn reserve(&self, _: &mut CycleState, _: &PodInfo, _: &str) -> Status {
            Status::new(Code::Unschedulable, "no")
        }
        fn unreserve(&self, _: &mut CycleState, _: &PodInfo, _: &str) {}
    }
    impl BindPlugin for Stub {
        fn bind(&self, _: &mut CycleState, _: &PodInfo, _: &str) -> Status {
            Status::success()
        }
    }

    #[derive(Default)]
    struct Recorder {
        points: Mutex<Vec<(String, &'static str, Code)>>,
        plugin_calls: Mutex<usize>,
    }
    impl PluginObserver for Recorder {
        fn observe(&self, _: &str, _: &'static str, _: Code, _: Duration) {
            *self.plugin_calls.lock().unwrap() += 1;
        }
        fn observe_extension_point(
            &self,
            profile: &str,
            point: &'static str,
            code: Code,
            _: Duration,
        ) {
            self.points
                .lock()
                .unwrap()
                .push((profile.to_string(), point, code));
        }
    }

    fn framework() -> Framework {
        framework_binding_with("Stub")
    }

    /// The Stub at QueueSort and Reserve, and `bind` (`Stub` or `Through`) at Bind.
    fn framework_binding_with(bind: &str) -> Framework {
        let mut registry = Registry::new();
        registry
            .register("Stub", |_, _| Ok(Arc::new(Stub)))
            .unwrap();
        registry
            .register("Through", |_, _| Ok(Arc::new(Through(Arc::new(Refuses)))))
            .unwrap();
        let only = |name: &str| PluginSet {
            enabled: vec![PluginRef {
                name: name.into(),
                ..Default::default()
            }],
            disabled: vec![],
        };
        let mut profile = Profile {
            scheduler_name: "p".into(),
            percentage_of_nodes_to_score: None,
            plugins: Default::default(),
            user_plugins: None,
            plugin_config: vec![],
        };
        profile.plugins.queue_sort = only("Stub");
        profile.plugins.reserve = only("Stub");
        profile.plugins.bind = only(bind);
        let handle = Handle {
            profile_name: String::new(),
            binder: None,
            ..Handle::default()
        };
        Framework::new(&profile, &registry, &handle).unwrap()
    }

    /// Binds through a binder whose asynchronous write refuses every pod.
    struct Through(Arc<dyn crate::PodBinder>);
    impl Plugin for Through {
        fn name(&self) -> &str {
            "Through"
        }
        fn as_bind(self: Arc<Self>) -> Option<Arc<dyn BindPlugin>> {
            Some(self)
        }
    }
    impl BindPlugin for Through {
        fn bind(&self, _: &mut CycleState, pod: &PodInfo, node: &str) -> Status {
            match self.0.bind(pod, node) {
                Ok(()) => Status::success(),
                Err(e) => Status::new(Code::Error, e),
            }
        }
        fn pod_binder(&self) -> Option<&Arc<dyn crate::PodBinder>> {
            Some(&self.0)
        }
    }
    struct Refuses;
    impl crate::PodBinder for Refuses {
        fn bind(&self, _: &PodInfo, _: &str) -> Result<(), String> {
            Err("refused".into())
        }
        fn bind_async(&self, _: &Arc<PodInfo>, _: &str) -> Option<crate::BindFuture> {
            Some(Box::pin(async { Err("refused".to_string()) }))
        }
    }

    #[test]
    fn an_async_bind_answers_and_is_reported_as_run_bind_plugins() {
        let mut fwk = framework_binding_with("Through");
        let recorder = Arc::new(Recorder::default());
        fwk.set_plugin_observer(recorder.clone());
        let mut pod = Pod::default();
        pod.metadata.name = Some("x".into());
        let pod = Arc::new(PodInfo::new(Arc::new(pod)).unwrap());
        let mut state = CycleState::new();
        state.write(RecordPluginMetrics);
        // No PreBind plugin: nothing to do before binding.
        assert!(
            fwk.run_pre_bind_pre_flights(&mut state, &pod, "n")
                .is_skip()
        );
        let sync = fwk.run_bind_plugins(&mut state, &pod, "n");
        let bind = fwk.bind_async(&state, &pod, "n").expect("an async bind");
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        let std::task::Poll::Ready(s) = std::pin::pin!(bind).poll(&mut cx) else {
            panic!("the binder answers at once");
        };
        assert_eq!(
            (s.code(), s.message(), s.plugin()),
            (sync.code(), sync.message(), sync.plugin())
        );
        assert_eq!(s.message(), "refused");
        let points: Vec<_> = recorder
            .points
            .lock()
            .unwrap()
            .iter()
            .map(|p| (p.1, p.2))
            .collect();
        assert_eq!(
            points,
            [
                ("PreBindPreFlight", Code::Skip),
                ("Bind", Code::Error),
                ("Bind", Code::Error)
            ]
        );
        // The sampled cycle timed the plugin in both runs.
        assert_eq!(*recorder.plugin_calls.lock().unwrap(), 2);
        // The Stub binds synchronously only.
        let stub = framework();
        assert!(stub.bind_async(&state, &pod, "n").is_none());
    }

    #[test]
    fn every_extension_point_run_is_reported_with_its_code_unsampled() {
        let recorder = Arc::new(Recorder::default());
        let mut fwk = framework();
        fwk.set_plugin_observer(recorder.clone());
        let mut pod = Pod::default();
        pod.metadata.name = Some("x".into());
        let pod = PodInfo::new(Arc::new(pod)).unwrap();
        let mut state = CycleState::new();
        fwk.run_pre_enqueue_plugins(&pod);
        fwk.run_pre_filter_plugins(&mut state, &pod, &Snapshot::default());
        fwk.run_reserve_plugins_reserve(&mut state, &pod, "n");
        fwk.run_reserve_plugins_unreserve(&mut state, &pod, "n");
        fwk.run_permit_plugins(&mut state, &pod, "n");
        fwk.run_pre_bind_plugins(&mut state, &pod, "n");
        fwk.run_bind_plugins(&mut state, &pod, "n");
        fwk.run_post_bind_plugins(&mut state, &pod, "n");
        let points: Vec<(&'static str, Code)> = recorder
            .points
            .lock()
            .unwrap()
            .iter()
            .map(|(profile, point, code)| {
                assert_eq!(profile, "p");
                (*point, *code)
            })
            .collect();
        assert_eq!(
            points,
            [
                ("PreEnqueue", Code::Success),
                ("PreFilter", Code::Success),
                ("Reserve", Code::Unschedulable),
                ("Unreserve", Code::Success),
                ("Permit", Code::Success),
                ("PreBind", Code::Success),
                ("Bind", Code::Success),
                ("PostBind", Code::Success),
            ]
        );
        // The cycle was not sampled: no plugin call was timed.
        assert_eq!(*recorder.plugin_calls.lock().unwrap(), 0);
    }
}
