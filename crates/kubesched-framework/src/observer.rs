//! [`PluginObserver`]: an optional hook that times each plugin call, for
//! kube-scheduler's `scheduler_plugin_execution_duration_seconds`.
//!
//! A [`Framework`](crate::Framework) with no observer (the simulator) times nothing. With
//! one, only the cycles whose [`CycleState`] holds [`RecordPluginMetrics`] are timed:
//! kube-scheduler samples a fraction of its cycles the same way
//! (`pluginMetricsSamplePercent`, 10 %).

use std::time::{Duration, Instant};

use crate::cycle_state::CycleState;
use crate::status::Code;

/// Receives the duration of each plugin call of a sampled cycle.
pub trait PluginObserver: Send + Sync {
    /// `plugin` ran at `extension_point` (kube-scheduler's names: `PreFilter`,
    /// `Filter`, `PostFilter`, `PreScore`, `Score`, `ScoreExtensionNormalize`,
    /// `Reserve`, `Unreserve`, `Permit`, `PreBind`, `Bind`, `PostBind`) and returned
    /// `code` after `took`.
    fn observe(&self, plugin: &str, extension_point: &'static str, code: Code, took: Duration);
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

/// Runs `f`, timing it when `observer` is set.
#[inline]
pub(crate) fn timed<T>(
    observer: Option<&dyn PluginObserver>,
    plugin: &str,
    extension_point: &'static str,
    code: impl FnOnce(&T) -> Code,
    f: impl FnOnce() -> T,
) -> T {
    match observer {
        None => f(),
        Some(o) => {
            let start = Instant::now();
            let r = f();
            o.observe(plugin, extension_point, code(&r), start.elapsed());
            r
        }
    }
}
