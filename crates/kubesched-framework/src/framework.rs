//! [`Framework`]: one profile's plugins wired to their extension points, and the code
//! that runs each point the way kube-scheduler's `frameworkImpl` does.
//!
//! Building follows kube-scheduler exactly, because plugin order decides which Filter
//! rejects a node first and so the reasons users read. Each point's list is, in order:
//! the plugins named both in `multiPoint` and in the point's own list (in the point's
//! order: an explicit entry overrides the multiPoint one), then the other `multiPoint`
//! plugins that implement the point, then the rest of the point's own list. Score
//! weights come from the `score` list first, then from `multiPoint`, with an absent or
//! zero weight meaning 1.
//!
//! The code is split as the cycle runs: `build` (the profile to plugin lists),
//! `filtering` (PreEnqueue to PostFilter), `scoring` (PreScore, Score), `binding`
//! (Reserve to PostBind) and `nominated` (the pods preemption nominated).

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::events::ClusterEvent;
use crate::observer::{PluginObserver, timed_extension_point};
use crate::plugin::*;
use crate::status::{Code, Status};

mod binding;
mod build;
mod filtering;
mod nominated;
mod placement;
mod scoring;

pub use build::FrameworkError;
pub use filtering::PreFilterOutcome;
pub use nominated::NominatedPods;
pub use scoring::ScoreTable;

/// Below this many nodes, Filter and Score run on the calling thread: fork/join costs
/// more than a short loop. Results never depend on it.
pub const PARALLEL_THRESHOLD: usize = 1024;

/// Below this many nodes, one plugin's Filter or Score over a run of nodes (exact
/// incremental scheduling keeps each plugin's answers apart) runs on the calling
/// thread: one plugin costs tens of nanoseconds a node, so fork/join pays only over
/// longer runs than a whole pass does. Results never depend on it.
pub(crate) const PLUGIN_PARALLEL_THRESHOLD: usize = 8 * PARALLEL_THRESHOLD;

/// A plugin at one extension point, with its name cached for statuses.
pub struct Wired<T: ?Sized> {
    /// The plugin's name.
    pub name: Arc<str>,
    /// The plugin, as this point's trait.
    pub plugin: Arc<T>,
}

impl<T: ?Sized> Clone for Wired<T> {
    fn clone(&self) -> Self {
        Wired {
            name: self.name.clone(),
            plugin: self.plugin.clone(),
        }
    }
}

/// A Score plugin and its weight.
#[derive(Clone)]
pub struct WeightedScore {
    /// The plugin.
    pub wired: Wired<dyn ScorePlugin>,
    /// Its weight (≥ 1).
    pub weight: i64,
}

/// One profile: its plugins at each extension point.
///
/// Built once from a configuration's profile and a [`Registry`](crate::Registry); the
/// plugins are wired to their extension points then, never looked up per node.
///
/// ```
/// use kubesched_config::KubeSchedulerConfiguration;
/// use kubesched_framework::{Framework, Handle, Registry};
///
/// let config = KubeSchedulerConfiguration::default_config();
/// // An empty registry knows none of the default profile's plugins.
/// let error = Framework::new(&config.profiles[0], &Registry::new(), &Handle::default()).unwrap_err();
/// assert!(error.to_string().contains("does not exist"), "{error}");
/// // kubesched_plugins::in_tree_registry() knows them all:
/// // let framework = Framework::new(&config.profiles[0], &kubesched_plugins::in_tree_registry(), &Handle::default())?;
/// ```
pub struct Framework {
    profile_name: String,
    percentage_of_nodes_to_score: Option<i32>,
    plugins: BTreeMap<String, Arc<dyn Plugin>>,
    pre_enqueue: Vec<Wired<dyn PreEnqueuePlugin>>,
    queue_sort: Wired<dyn QueueSortPlugin>,
    pre_filter: Vec<Wired<dyn PreFilterPlugin>>,
    filter: Vec<Wired<dyn FilterPlugin>>,
    post_filter: Vec<Wired<dyn PostFilterPlugin>>,
    pre_score: Vec<Wired<dyn PreScorePlugin>>,
    score: Vec<WeightedScore>,
    reserve: Vec<Wired<dyn ReservePlugin>>,
    permit: Vec<Wired<dyn PermitPlugin>>,
    pre_bind: Vec<Wired<dyn PreBindPlugin>>,
    bind: Vec<Wired<dyn BindPlugin>>,
    post_bind: Vec<Wired<dyn PostBindPlugin>>,
    placement_generate: Vec<Wired<dyn crate::placement::PlacementGeneratePlugin>>,
    /// PlacementScore plugins with their weights.
    placement_score: Vec<(Wired<dyn crate::placement::PlacementScorePlugin>, i64)>,
    observer: Option<Arc<dyn PluginObserver>>,
    events_by_plugin: BTreeMap<String, Vec<ClusterEvent>>,
    /// The PreFilter, Filter, PreScore and Score plugins, each once, in that order:
    /// the plugins that sign a pod (kube-scheduler's `batchablePlugins`).
    signers: Vec<Arc<dyn Plugin>>,
    /// The pods waiting at Permit, shared with the plugins through the handle.
    waiting_pods: Arc<crate::waiting::WaitingPods>,
}

impl std::fmt::Debug for Framework {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        fn names<T: ?Sized>(v: &[Wired<T>]) -> Vec<&str> {
            v.iter().map(|w| &*w.name).collect()
        }
        f.debug_struct("Framework")
            .field("profile", &self.profile_name)
            .field("queue_sort", &self.queue_sort.name)
            .field("pre_filter", &names(&self.pre_filter))
            .field("filter", &names(&self.filter))
            .field("post_filter", &names(&self.post_filter))
            .field("pre_score", &names(&self.pre_score))
            .field(
                "score",
                &self
                    .score
                    .iter()
                    .map(|s| (&*s.wired.name, s.weight))
                    .collect::<Vec<_>>(),
            )
            .field("bind", &names(&self.bind))
            .finish()
    }
}

impl Framework {
    /// Reports every extension point's run to `observer`
    /// ([`PluginObserver::observe_extension_point`], on every cycle) and times every
    /// plugin call of the cycles marked with
    /// [`RecordPluginMetrics`](crate::RecordPluginMetrics) ([`PluginObserver::observe`]).
    /// Without an observer nothing is timed.
    pub fn set_plugin_observer(&mut self, observer: Arc<dyn PluginObserver>) {
        self.observer = Some(observer);
    }

    /// Runs `f`, the whole of extension point `point`, reporting its duration and the
    /// code `code` reads from its result to the observer, if any
    /// ([`PluginObserver::observe_extension_point`]): on every cycle, as
    /// kube-scheduler's `Run*Plugins` functions record
    /// `scheduler_framework_extension_point_duration_seconds`.
    ///
    /// Public for the Filter point, which kube-scheduler times around the whole pass
    /// over the nodes (one run per cycle, not per node): the caller of
    /// [`Framework::run_filter_plugins_on_nodes`] times it with `point` `"Filter"`.
    #[inline]
    pub fn timed_point<T>(
        &self,
        point: &'static str,
        code: impl FnOnce(&T) -> Code,
        f: impl FnOnce() -> T,
    ) -> T {
        timed_extension_point(self.observer.as_deref(), &self.profile_name, point, code, f)
    }

    /// The observer, if any.
    pub(crate) fn observer(&self) -> Option<&dyn PluginObserver> {
        self.observer.as_deref()
    }

    /// The plugins that sign pods ([`Framework::sign_pod`]).
    pub(crate) fn signers(&self) -> &[Arc<dyn Plugin>] {
        &self.signers
    }

    /// The profile's scheduler name.
    pub fn profile_name(&self) -> &str {
        &self.profile_name
    }

    /// The pods waiting at Permit (the map the profile's handle shares with its
    /// plugins).
    pub fn waiting_pods(&self) -> &Arc<crate::waiting::WaitingPods> {
        &self.waiting_pods
    }

    /// The profile's `percentageOfNodesToScore`, when set.
    pub fn percentage_of_nodes_to_score(&self) -> Option<i32> {
        self.percentage_of_nodes_to_score
    }

    /// Each plugin's [`Plugin::events_to_register`], by name, asked once when the
    /// profile was built: the queueing hints of this profile
    /// ([`QueueingHints::from_frameworks`](crate::QueueingHints::from_frameworks)).
    pub fn events_by_plugin(&self) -> &BTreeMap<String, Vec<ClusterEvent>> {
        &self.events_by_plugin
    }

    /// A plugin instance by name.
    pub fn plugin(&self, name: &str) -> Option<&Arc<dyn Plugin>> {
        self.plugins.get(name)
    }

    /// The QueueSort plugin.
    pub fn queue_sort(&self) -> &Wired<dyn QueueSortPlugin> {
        &self.queue_sort
    }

    /// The Filter plugins in order.
    pub fn filter_plugins(&self) -> &[Wired<dyn FilterPlugin>] {
        &self.filter
    }

    /// The Score plugins in order, with weights.
    pub fn score_plugins(&self) -> &[WeightedScore] {
        &self.score
    }

    /// The PostFilter plugins in order.
    pub fn post_filter_plugins(&self) -> &[Wired<dyn PostFilterPlugin>] {
        &self.post_filter
    }

    /// The names of the plugins at each extension point, in order, for display.
    pub fn describe(&self) -> Vec<(&'static str, Vec<String>)> {
        fn names<T: ?Sized>(v: &[Wired<T>]) -> Vec<String> {
            v.iter().map(|w| w.name.to_string()).collect()
        }
        vec![
            ("preEnqueue", names(&self.pre_enqueue)),
            ("queueSort", vec![self.queue_sort.name.to_string()]),
            ("preFilter", names(&self.pre_filter)),
            ("filter", names(&self.filter)),
            ("postFilter", names(&self.post_filter)),
            ("preScore", names(&self.pre_score)),
            (
                "score",
                self.score
                    .iter()
                    .map(|s| format!("{} (weight {})", s.wired.name, s.weight))
                    .collect(),
            ),
            ("reserve", names(&self.reserve)),
            ("permit", names(&self.permit)),
            ("preBind", names(&self.pre_bind)),
            ("bind", names(&self.bind)),
            ("postBind", names(&self.post_bind)),
        ]
    }

    /// `true` when the profile has Filter plugins.
    pub fn has_filter_plugins(&self) -> bool {
        !self.filter.is_empty()
    }

    /// `true` when the profile has Score plugins.
    pub fn has_score_plugins(&self) -> bool {
        !self.score.is_empty()
    }

    /// `true` when the profile has PostFilter plugins.
    pub fn has_post_filter_plugins(&self) -> bool {
        !self.post_filter.is_empty()
    }

    /// Whether every PreFilter, Filter, PreScore and Score plugin answers for `pod`
    /// node by node ([`Plugin::node_scoped`]) in `snapshot`.
    pub fn scoped_to_nodes(&self, pod: &crate::PodInfo, snapshot: &crate::Snapshot) -> bool {
        self.signers.iter().all(|p| p.node_scoped(pod, snapshot))
    }

    /// The first plugin that can refuse `pod` or remember it (at PreFilter, Filter,
    /// Reserve, Permit, PreBind, Bind or PostBind) and does not treat it node by node
    /// ([`Plugin::node_local`]); `None` when all do.
    pub fn first_not_node_local(&self, pod: &crate::PodInfo) -> Option<String> {
        fn names<T: ?Sized>(wired: &[Wired<T>]) -> impl Iterator<Item = &Arc<str>> {
            wired.iter().map(|w| &w.name)
        }
        names(&self.pre_filter)
            .chain(names(&self.filter))
            .chain(names(&self.reserve))
            .chain(names(&self.permit))
            .chain(names(&self.pre_bind))
            .chain(names(&self.bind))
            .chain(names(&self.post_bind))
            .find(|name| {
                !self
                    .plugins
                    .get(&***name)
                    .is_some_and(|p| p.node_local(pod))
            })
            .map(|name| name.to_string())
    }
}

/// A plugin's non-success status as the framework reports it: a rejection stays as it
/// is; any other code becomes an `Error` whose message is `context` then the plugin's.
fn rejection_or_error(status: Status, context: impl FnOnce() -> String) -> Status {
    if status.is_rejected() {
        status
    } else {
        Status::error(format!("{}: {}", context(), status.message()))
    }
}
