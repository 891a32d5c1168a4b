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

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use kubesched_config::{PluginSet, Plugins, Profile};
use rayon::prelude::*;

use crate::cycle_state::CycleState;
use crate::events::ClusterEvent;
use crate::node_info::NodeInfo;
use crate::observer::{PluginObserver, evaluated, sampled, timed, timed_extension_point};
use crate::plugin::*;
use crate::pod_info::PodInfo;
use crate::registry::{Handle, Registry};
use crate::snapshot::Snapshot;
use crate::status::{Code, Status};

/// Below this many nodes, Filter and Score run on the calling thread: fork/join costs
/// more than a short loop. Results never depend on it.
pub const PARALLEL_THRESHOLD: usize = 1024;

/// A profile could not be turned into a framework.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameworkError {
    /// A plugin named in the profile is not in the registry.
    #[error("profile {profile:?}: plugins.{point}.enabled: plugin {plugin:?} does not exist{hint}")]
    UnknownPlugin {
        /// The profile's scheduler name.
        profile: String,
        /// The extension point where the profile enables it (`multiPoint`, `filter`, ...).
        point: &'static str,
        /// The unknown name.
        plugin: String,
        /// ", did you mean X?" when a registered name is close.
        hint: String,
    },
    /// A plugin is enabled at a point it does not implement.
    #[error(
        "profile {profile:?}: plugins.{}.enabled: plugin {plugin:?} is not a {} plugin: it does not implement the {} extension point",
        point_field(point),
        point.trim_end_matches("Plugin"),
        point.trim_end_matches("Plugin")
    )]
    NotImplemented {
        /// The profile's scheduler name.
        profile: String,
        /// The extension point.
        point: &'static str,
        /// The plugin.
        plugin: String,
    },
    /// A plugin is enabled twice at one point.
    #[error("profile {profile:?}: plugin {plugin:?} already registered as {point:?}")]
    Duplicate {
        /// The profile's scheduler name.
        profile: String,
        /// The extension point.
        point: &'static str,
        /// The plugin.
        plugin: String,
    },
    /// A factory rejected its args.
    #[error("profile {profile:?}: initializing plugin {plugin:?}: {message}")]
    Init {
        /// The profile's scheduler name.
        profile: String,
        /// The plugin.
        plugin: String,
        /// The factory's message.
        message: String,
    },
    /// The profile does not have exactly one QueueSort plugin.
    #[error(
        "only one queue sort plugin required for profile with scheduler name {profile:?}, but got {count}"
    )]
    QueueSortCount {
        /// The profile's scheduler name.
        profile: String,
        /// How many it has.
        count: usize,
    },
    /// The profile has no Bind plugin.
    #[error("at least one bind plugin is needed for profile with scheduler name {profile:?}")]
    NoBind {
        /// The profile's scheduler name.
        profile: String,
    },
    /// A score weight is out of range.
    #[error("profile {profile:?}: score plugin {plugin:?}: weight {weight} must be positive")]
    Weight {
        /// The profile's scheduler name.
        profile: String,
        /// The plugin.
        plugin: String,
        /// The weight given.
        weight: i64,
    },
}

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

/// The feasible nodes' final scores: every plugin's score on every node, normalised and
/// multiplied by its weight, and each node's total. Stored as one flat column-major
/// table (no allocation per node; each plugin's scores are contiguous, as the plugins
/// compute them).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScoreTable {
    /// The Score plugins that ran, in the profile's order (one column each).
    pub plugins: Vec<Arc<str>>,
    /// The scored nodes' positions in node order (one row each).
    pub node_indices: Vec<usize>,
    /// `scores[column * node_indices.len() + row]`: column `c` is plugin `c`'s scores.
    pub scores: Vec<i64>,
    /// Each row's total.
    pub totals: Vec<i64>,
}

impl ScoreTable {
    /// A table where every node gets total `total` and no plugin score (a profile
    /// without Score plugins: kube-scheduler gives every node 1).
    pub fn uniform(node_indices: Vec<usize>, total: i64) -> ScoreTable {
        let totals = vec![total; node_indices.len()];
        ScoreTable {
            plugins: Vec::new(),
            node_indices,
            scores: Vec::new(),
            totals,
        }
    }

    /// The number of scored nodes.
    pub fn len(&self) -> usize {
        self.node_indices.len()
    }

    /// `true` when no node was scored.
    pub fn is_empty(&self) -> bool {
        self.node_indices.is_empty()
    }

    /// Plugin `column`'s scores, one per row.
    pub fn column(&self, column: usize) -> &[i64] {
        let rows = self.len();
        &self.scores[column * rows..(column + 1) * rows]
    }

    /// The scores of row `row`, one per plugin, in [`ScoreTable::plugins`]' order.
    pub fn row(&self, row: usize) -> impl Iterator<Item = i64> + '_ {
        (0..self.plugins.len()).map(move |c| self.column(c)[row])
    }

    /// `(node index, [(plugin, score)], total)` for every row.
    pub fn rows(&self) -> impl Iterator<Item = (usize, Vec<(&str, i64)>, i64)> {
        (0..self.len()).map(move |r| {
            let scores = self
                .plugins
                .iter()
                .zip(self.row(r))
                .map(|(p, s)| (&**p, s))
                .collect();
            (self.node_indices[r], scores, self.totals[r])
        })
    }
}

/// What [`Framework::run_pre_filter_plugins`] found.
#[derive(Clone, Debug, Default)]
pub struct PreFilterOutcome {
    /// The merged node subset (all nodes when no plugin narrowed it).
    pub result: PreFilterResult,
    /// Success, or the rejection that ends the attempt.
    pub status: Status,
    /// The plugins that narrowed the node set.
    pub narrowing_plugins: BTreeSet<String>,
}

/// Pods nominated to nodes by an earlier preemption and not bound yet: kube-scheduler's
/// `PodNominator`. While victims terminate, a nominated pod waits for its node; meanwhile
/// the Filter plugins treat it as already there when they check a pod of lower or equal
/// priority on that node ([`Framework::run_filter_plugins_with_nominated_pods`]), so the
/// space preemption freed is not taken by a less important pod.
///
/// Pods are identified by UID ([`PodInfo::uid`]); a pod is nominated to one node at a
/// time, and the pods of a node keep their nomination order.
#[derive(Clone, Debug, Default)]
pub struct NominatedPods {
    by_node: BTreeMap<String, Vec<Arc<PodInfo>>>,
    node_of: BTreeMap<String, String>,
}

impl NominatedPods {
    /// No nominated pods.
    pub fn new() -> NominatedPods {
        NominatedPods::default()
    }

    /// Nominates `pod` to `node`, replacing any earlier nomination of the same pod.
    pub fn add(&mut self, pod: Arc<PodInfo>, node: &str) {
        self.remove(pod.uid());
        self.node_of.insert(pod.uid().to_string(), node.to_string());
        self.by_node.entry(node.to_string()).or_default().push(pod);
    }

    /// Removes the nomination of the pod with this UID (when it is bound, deleted, or
    /// its nomination is cleared); returns the node it was nominated to.
    pub fn remove(&mut self, uid: &str) -> Option<String> {
        let node = self.node_of.remove(uid)?;
        if let Some(pods) = self.by_node.get_mut(&node) {
            pods.retain(|p| p.uid() != uid);
            if pods.is_empty() {
                self.by_node.remove(&node);
            }
        }
        Some(node)
    }

    /// The node the pod with this UID is nominated to.
    pub fn node_of(&self, uid: &str) -> Option<&str> {
        self.node_of.get(uid).map(String::as_str)
    }

    /// The pods nominated to `node`, in nomination order.
    pub fn for_node(&self, node: &str) -> &[Arc<PodInfo>] {
        self.by_node.get(node).map_or(&[], Vec::as_slice)
    }

    /// The number of nominated pods.
    pub fn len(&self) -> usize {
        self.node_of.len()
    }

    /// `true` when no pod is nominated.
    pub fn is_empty(&self) -> bool {
        self.node_of.is_empty()
    }
}

/// One profile: its plugins at each extension point.
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
    observer: Option<Arc<dyn PluginObserver>>,
    events_by_plugin: BTreeMap<String, Vec<ClusterEvent>>,
    /// The PreFilter, Filter, PreScore and Score plugins, each once, in that order:
    /// the plugins that sign a pod (kube-scheduler's `batchablePlugins`).
    signers: Vec<Arc<dyn Plugin>>,
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

/// Builds one extension point's list by kube-scheduler's rules (`updatePluginList`
/// then `expandMultiPointPlugins`).
struct PointBuilder<'a> {
    profile: &'a str,
    plugins: &'a BTreeMap<String, Arc<dyn Plugin>>,
    registry: &'a Registry,
    multi_point: &'a PluginSet,
}

impl PointBuilder<'_> {
    fn build<T: ?Sized>(
        &self,
        point: &'static str,
        set: &PluginSet,
        cast: impl Fn(Arc<dyn Plugin>) -> Option<Arc<T>>,
    ) -> Result<Vec<Wired<T>>, FrameworkError> {
        let wire = |name: &str| -> Result<Option<Wired<T>>, FrameworkError> {
            let plugin = self.lookup(point, name)?;
            Ok(cast(plugin).map(|plugin| Wired {
                name: Arc::from(name),
                plugin,
            }))
        };
        let mut explicit: Vec<Wired<T>> = Vec::new();
        for entry in &set.enabled {
            let wired = wire(&entry.name)?.ok_or_else(|| FrameworkError::NotImplemented {
                profile: self.profile.to_string(),
                point,
                plugin: entry.name.clone(),
            })?;
            if explicit.iter().any(|w| *w.name == *entry.name) {
                return Err(self.duplicate(point, &entry.name));
            }
            explicit.push(wired);
        }
        if self.multi_point.enabled.is_empty() || set.disabled.iter().any(|d| d.name == "*") {
            return Ok(explicit);
        }
        let disabled: BTreeSet<&str> = set.disabled.iter().map(|d| d.name.as_str()).collect();
        let mut overrides: BTreeSet<&str> = BTreeSet::new();
        let mut from_multi_point: Vec<Wired<T>> = Vec::new();
        for entry in &self.multi_point.enabled {
            let Some(wired) = wire(&entry.name)? else {
                continue;
            };
            if disabled.contains(entry.name.as_str()) {
                continue;
            }
            if explicit.iter().any(|w| *w.name == *entry.name) {
                overrides.insert(entry.name.as_str());
                continue;
            }
            if from_multi_point.iter().any(|w| *w.name == *entry.name) {
                return Err(self.duplicate(point, &entry.name));
            }
            from_multi_point.push(wired);
        }
        let (overridden, rest): (Vec<_>, Vec<_>) = explicit
            .into_iter()
            .partition(|w| overrides.contains(&*w.name));
        Ok(overridden
            .into_iter()
            .chain(from_multi_point)
            .chain(rest)
            .collect())
    }

    fn lookup(&self, point: &'static str, name: &str) -> Result<Arc<dyn Plugin>, FrameworkError> {
        // Every enabled name was instantiated (or rejected as unknown) before the points
        // are built, so a miss here can only be a name that is not in the registry.
        self.plugins
            .get(name)
            .cloned()
            .ok_or_else(|| FrameworkError::UnknownPlugin {
                profile: self.profile.to_string(),
                point,
                plugin: name.to_string(),
                hint: closest_name(self.registry, name),
            })
    }

    fn duplicate(&self, point: &'static str, plugin: &str) -> FrameworkError {
        FrameworkError::Duplicate {
            profile: self.profile.to_string(),
            point,
            plugin: plugin.to_string(),
        }
    }
}

impl Framework {
    /// Builds the framework of one profile (already defaulted by kubesched-config)
    /// from the plugins of `registry`.
    pub fn new(
        profile: &Profile,
        registry: &Registry,
        handle: &Handle,
    ) -> Result<Framework, FrameworkError> {
        let name = profile.scheduler_name.clone();
        let gated = profile.plugins_gated(handle.features.enabled("NodeDeclaredFeatures"));
        let p: &Plugins = &gated;
        let mut handle = handle.clone();
        handle.profile_name = name.clone();
        let mut plugins: BTreeMap<String, Arc<dyn Plugin>> = BTreeMap::new();
        for (point, set) in p.extension_points() {
            for entry in &set.enabled {
                if plugins.contains_key(&entry.name) {
                    continue;
                }
                let Some(factory) = registry.get(&entry.name) else {
                    return Err(FrameworkError::UnknownPlugin {
                        profile: name,
                        point,
                        plugin: entry.name.clone(),
                        hint: closest_name(registry, &entry.name),
                    });
                };
                {
                    let plugin =
                        factory(profile.plugin_args(&entry.name), &handle).map_err(|e| {
                            FrameworkError::Init {
                                profile: name.clone(),
                                plugin: entry.name.clone(),
                                message: e.message,
                            }
                        })?;
                    plugins.insert(entry.name.clone(), plugin);
                }
            }
        }
        let b = PointBuilder {
            profile: &name,
            plugins: &plugins,
            registry,
            multi_point: &p.multi_point,
        };
        let pre_enqueue = b.build("PreEnqueuePlugin", &p.pre_enqueue, |x| x.as_pre_enqueue())?;
        let mut queue_sort = b.build("QueueSortPlugin", &p.queue_sort, |x| x.as_queue_sort())?;
        let pre_filter = b.build("PreFilterPlugin", &p.pre_filter, |x| x.as_pre_filter())?;
        let filter = b.build("FilterPlugin", &p.filter, |x| x.as_filter())?;
        let post_filter = b.build("PostFilterPlugin", &p.post_filter, |x| x.as_post_filter())?;
        let pre_score = b.build("PreScorePlugin", &p.pre_score, |x| x.as_pre_score())?;
        let score = b.build("ScorePlugin", &p.score, |x| x.as_score())?;
        let reserve = b.build("ReservePlugin", &p.reserve, |x| x.as_reserve())?;
        let permit = b.build("PermitPlugin", &p.permit, |x| x.as_permit())?;
        let pre_bind = b.build("PreBindPlugin", &p.pre_bind, |x| x.as_pre_bind())?;
        let bind = b.build("BindPlugin", &p.bind, |x| x.as_bind())?;
        let post_bind = b.build("PostBindPlugin", &p.post_bind, |x| x.as_post_bind())?;
        if queue_sort.len() != 1 {
            return Err(FrameworkError::QueueSortCount {
                profile: name,
                count: queue_sort.len(),
            });
        }
        if bind.is_empty() {
            return Err(FrameworkError::NoBind { profile: name });
        }
        let score = score_weights(&name, p, score)?;
        let events_by_plugin = plugins
            .iter()
            .map(|(name, plugin)| (name.clone(), plugin.events_to_register()))
            .collect();
        let mut signers: Vec<Arc<dyn Plugin>> = Vec::new();
        let names = (pre_filter.iter().map(|w| &w.name))
            .chain(filter.iter().map(|w| &w.name))
            .chain(pre_score.iter().map(|w| &w.name))
            .chain(score.iter().map(|w| &w.wired.name));
        for n in names {
            if let Some(p) = plugins.get(&**n)
                && !signers.iter().any(|s| s.name() == &**n)
            {
                signers.push(p.clone());
            }
        }
        Ok(Framework {
            profile_name: name,
            percentage_of_nodes_to_score: profile.percentage_of_nodes_to_score,
            plugins,
            pre_enqueue,
            queue_sort: queue_sort.remove(0),
            pre_filter,
            filter,
            post_filter,
            pre_score,
            score,
            reserve,
            permit,
            pre_bind,
            bind,
            post_bind,
            observer: None,
            events_by_plugin,
            signers,
        })
    }

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

    /// Runs PreEnqueue plugins; the first that does not succeed keeps the pod out.
    pub fn run_pre_enqueue_plugins(&self, pod: &PodInfo) -> Status {
        self.timed_point("PreEnqueue", Status::code, || self.pre_enqueue_untimed(pod))
    }

    fn pre_enqueue_untimed(&self, pod: &PodInfo) -> Status {
        for w in &self.pre_enqueue {
            let s = w.plugin.pre_enqueue(pod);
            if !s.is_success() {
                return s.with_plugin(w.name.clone());
            }
        }
        Status::success()
    }

    /// `true` when `a` goes before `b` in the queue.
    pub fn queue_less(&self, a: &QueuedPodInfo, b: &QueuedPodInfo) -> bool {
        self.queue_sort.plugin.less(a, b)
    }

    /// Runs PreFilter plugins in order, as kube-scheduler's `RunPreFilterPlugins`:
    /// Skip marks the plugin's Filter to be skipped; UnschedulableAndUnresolvable stops
    /// at once; Unschedulable is remembered while the others still run; node subsets
    /// are intersected, and an empty intersection rejects every node.
    pub fn run_pre_filter_plugins(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> PreFilterOutcome {
        self.timed_point(
            "PreFilter",
            |o: &PreFilterOutcome| o.status.code(),
            || self.pre_filter_untimed(state, pod, snapshot),
        )
    }

    fn pre_filter_untimed(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> PreFilterOutcome {
        let mut result = PreFilterResult::all_nodes();
        let mut narrowing = BTreeSet::new();
        let mut skip = BTreeSet::new();
        let mut returned = Status::success();
        let obs = sampled(&self.observer, state);
        for w in &self.pre_filter {
            evaluated(&self.observer, &self.profile_name, &w.name, "PreFilter", 1);
            let (r, s) = timed(
                obs,
                &w.name,
                "PreFilter",
                |r: &(_, Status)| r.1.code(),
                || w.plugin.pre_filter(state, pod, snapshot),
            );
            if s.is_skip() {
                skip.insert(w.name.to_string());
                continue;
            }
            if !s.is_success() {
                let s = s.with_plugin(w.name.clone());
                match s.code() {
                    Code::UnschedulableAndUnresolvable => {
                        self.set_skip_filter(state, skip);
                        return PreFilterOutcome {
                            result: PreFilterResult::all_nodes(),
                            status: s,
                            narrowing_plugins: BTreeSet::new(),
                        };
                    }
                    Code::Unschedulable => {
                        returned = s;
                        continue;
                    }
                    _ => {
                        self.set_skip_filter(state, skip);
                        let status = Status::error(format!(
                            "running PreFilter plugin {:?}: {}",
                            &*w.name,
                            s.message()
                        ))
                        .with_plugin(w.name.clone());
                        return PreFilterOutcome {
                            result: PreFilterResult::all_nodes(),
                            status,
                            narrowing_plugins: BTreeSet::new(),
                        };
                    }
                }
            }
            let r = r.unwrap_or_default();
            if !r.is_all_nodes() {
                narrowing.insert(w.name.to_string());
            }
            result = result.merge(r);
            if result.node_names.as_ref().is_some_and(BTreeSet::is_empty) {
                let message = if narrowing.len() == 1 {
                    format!(
                        "node(s) didn't satisfy plugin {}",
                        narrowing.first().unwrap()
                    )
                } else {
                    format!(
                        "node(s) didn't satisfy plugin(s) [{}] simultaneously",
                        narrowing.iter().cloned().collect::<Vec<_>>().join(" ")
                    )
                };
                self.set_skip_filter(state, skip);
                return PreFilterOutcome {
                    result,
                    status: Status::new(Code::UnschedulableAndUnresolvable, message),
                    narrowing_plugins: narrowing,
                };
            }
        }
        self.set_skip_filter(state, skip);
        PreFilterOutcome {
            result,
            status: returned,
            narrowing_plugins: narrowing,
        }
    }

    /// Records the plugins whose PreFilter skipped, by name and as flags over the Filter
    /// list.
    fn set_skip_filter(&self, state: &mut CycleState, skip: BTreeSet<String>) {
        let mask = self
            .filter
            .iter()
            .map(|w| skip.contains(&*w.name))
            .collect();
        state.set_skip_filter_plugins(skip, mask);
    }

    /// Runs the PreFilter AddPod extensions (preemption's what-if evaluation).
    pub fn run_pre_filter_extension_add_pod(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        pod_to_add: &PodInfo,
        node: &NodeInfo,
    ) -> Status {
        self.run_pre_filter_extensions(state, "AddPod", |ext, state| {
            ext.add_pod(state, pod, pod_to_add, node)
        })
    }

    /// Runs the PreFilter RemovePod extensions (preemption's what-if evaluation).
    pub fn run_pre_filter_extension_remove_pod(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        pod_to_remove: &PodInfo,
        node: &NodeInfo,
    ) -> Status {
        self.run_pre_filter_extensions(state, "RemovePod", |ext, state| {
            ext.remove_pod(state, pod, pod_to_remove, node)
        })
    }

    /// Calls one PreFilter extension of every PreFilter plugin that did not skip this
    /// cycle; the first failure is an error naming the plugin.
    fn run_pre_filter_extensions(
        &self,
        state: &mut CycleState,
        operation: &str,
        call: impl Fn(&dyn PreFilterExtensions, &mut CycleState) -> Status,
    ) -> Status {
        for w in &self.pre_filter {
            if state.skip_filter_plugins().contains(&*w.name) {
                continue;
            }
            if let Some(ext) = w.plugin.pre_filter_extensions() {
                let s = call(ext, state);
                if !s.is_success() {
                    return Status::error(format!(
                        "running {operation} on PreFilter plugin {:?}: {}",
                        &*w.name,
                        s.message()
                    ));
                }
            }
        }
        Status::success()
    }

    /// Runs the Filter plugins on one node, stopping at the first that does not
    /// succeed; its status carries the plugin's name.
    pub fn run_filter_plugins(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        let obs = sampled(&self.observer, state);
        for (i, w) in self.filter.iter().enumerate() {
            if state.skips_filter(i) {
                continue;
            }
            evaluated(&self.observer, &self.profile_name, &w.name, "Filter", 1);
            let s = timed(obs, &w.name, "Filter", Status::code, || {
                w.plugin.filter(state, pod, node)
            });
            if !s.is_success() {
                let s = rejection_or_error(s, || format!("running {:?} filter plugin", &*w.name));
                return s.with_plugin(w.name.clone());
            }
        }
        Status::success()
    }

    /// Runs the Filter plugins on a run of nodes: pushes `(i, status)` onto `rejected`
    /// for each `nodes[i]` that [`Framework::run_filter_plugins`] rejects, with the
    /// status it gives, in increasing `i`; the nodes not listed are feasible.
    ///
    /// Plugin by plugin rather than node by node: each plugin sees, in one call, the
    /// nodes that every plugin before it let through
    /// ([`FilterPlugin::filter_nodes`](crate::FilterPlugin::filter_nodes)). Filters
    /// are independent per node, so each node's status is the same as node by node. In
    /// a sampled cycle (an observer timing each plugin call) it runs node by node.
    pub fn run_filter_plugins_on_nodes(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        rejected: &mut Vec<(usize, Status)>,
    ) {
        let first = rejected.len();
        if sampled(&self.observer, state).is_some() {
            for (i, node) in nodes.iter().enumerate() {
                let status = self.run_filter_plugins(state, pod, node);
                if !status.is_success() {
                    rejected.push((i, status));
                }
            }
            return;
        }
        // The nodes still feasible, with their positions in `nodes`.
        let mut alive: Vec<&NodeInfo> = nodes.to_vec();
        let mut positions: Vec<usize> = (0..nodes.len()).collect();
        let mut verdicts = Vec::new();
        for (i, w) in self.filter.iter().enumerate() {
            if alive.is_empty() {
                break;
            }
            if state.skips_filter(i) {
                continue;
            }
            evaluated(
                &self.observer,
                &self.profile_name,
                &w.name,
                "Filter",
                alive.len(),
            );
            w.plugin.filter_nodes(state, pod, &alive, &mut verdicts);
            if verdicts.is_empty() {
                continue;
            }
            let mut dropped = verdicts.drain(..).peekable();
            let mut kept = 0;
            for j in 0..alive.len() {
                if let Some((_, status)) = dropped.next_if(|(at, _)| *at == j) {
                    let status = rejection_or_error(status, || {
                        format!("running {:?} filter plugin", &*w.name)
                    });
                    rejected.push((positions[j], status.with_plugin(w.name.clone())));
                } else {
                    alive[kept] = alive[j];
                    positions[kept] = positions[j];
                    kept += 1;
                }
            }
            debug_assert!(
                dropped.next().is_none(),
                "{} rejected nodes out of order or out of range",
                w.name
            );
            drop(dropped);
            alive.truncate(kept);
            positions.truncate(kept);
        }
        rejected[first..].sort_by_key(|(i, _)| *i);
    }

    /// Runs the Filter plugins on one node with the pods nominated to it, as
    /// kube-scheduler's `RunFilterPluginsWithNominatedPods`. When pods of priority
    /// greater than or equal to `pod`'s are nominated to the node, the filters run
    /// first with those pods added (to a copy of the node and of `state`, through the
    /// PreFilter AddPod extensions) and, if that passes, again without them: the pod
    /// must fit whether or not the nominated pods end up there. Without such pods this
    /// is [`Framework::run_filter_plugins`].
    pub fn run_filter_plugins_with_nominated_pods(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
        nominated: &NominatedPods,
    ) -> Status {
        let more_important: Vec<&Arc<PodInfo>> = nominated
            .for_node(node.name())
            .iter()
            .filter(|p| p.priority() >= pod.priority() && p.uid() != pod.uid())
            .collect();
        if more_important.is_empty() {
            return self.run_filter_plugins(state, pod, node);
        }
        let mut state_with = state.clone();
        let mut node_with = node.clone();
        for p in more_important {
            let added = if p.node_name() == Some(node.name()) {
                p.clone()
            } else {
                Arc::new(p.bound_to(node.name()))
            };
            node_with.add_pod(added.clone());
            let s = self.run_pre_filter_extension_add_pod(&mut state_with, pod, &added, &node_with);
            if !s.is_success() {
                return s;
            }
        }
        let s = self.run_filter_plugins(&state_with, pod, &node_with);
        if !s.is_success() {
            return s;
        }
        self.run_filter_plugins(state, pod, node)
    }

    /// Runs the PostFilter plugins, as kube-scheduler's `RunPostFilterPlugins`: the
    /// first success or UnschedulableAndUnresolvable ends the run; otherwise the
    /// reasons of all are joined.
    ///
    /// The plugins get a [`PostFilterContext`] with this framework, `snapshot` and
    /// `nominated`.
    pub fn run_post_filter_plugins(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
        nominated: &NominatedPods,
        filtered: &NodeToStatus,
    ) -> (Option<PostFilterResult>, Status) {
        self.timed_point(
            "PostFilter",
            |r: &(_, Status)| r.1.code(),
            || self.post_filter_untimed(state, pod, snapshot, nominated, filtered),
        )
    }

    fn post_filter_untimed(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
        nominated: &NominatedPods,
        filtered: &NodeToStatus,
    ) -> (Option<PostFilterResult>, Status) {
        let ctx = PostFilterContext {
            framework: self,
            snapshot,
            nominated_pods: nominated,
        };
        let mut result = None;
        let mut reasons = Vec::new();
        let mut rejector: Option<Arc<str>> = None;
        let obs = sampled(&self.observer, state);
        for w in &self.post_filter {
            let (r, s) = timed(
                obs,
                &w.name,
                "PostFilter",
                |r: &(_, Status)| r.1.code(),
                || w.plugin.post_filter(&ctx, state, pod, filtered),
            );
            if s.is_success() {
                return (r, s);
            }
            if s.code() == Code::UnschedulableAndUnresolvable {
                return (r, s.with_plugin(w.name.clone()));
            }
            if !s.is_rejected() {
                return (None, s.with_plugin(w.name.clone()));
            }
            if r.is_some() {
                result = r;
            }
            reasons.extend(s.reasons().iter().cloned());
            rejector.get_or_insert_with(|| w.name.clone());
        }
        let mut status = Status::with_reasons(Code::Unschedulable, reasons);
        if let Some(r) = rejector {
            status.set_plugin(r);
        }
        (result, status)
    }

    /// Runs the PreScore plugins; Skip leaves the plugin's Score out of this cycle.
    pub fn run_pre_score_plugins(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        snapshot: &Snapshot,
    ) -> Status {
        self.timed_point("PreScore", Status::code, || {
            self.pre_score_untimed(state, pod, nodes, snapshot)
        })
    }

    fn pre_score_untimed(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        snapshot: &Snapshot,
    ) -> Status {
        let mut skip = BTreeSet::new();
        let obs = sampled(&self.observer, state);
        for w in &self.pre_score {
            evaluated(&self.observer, &self.profile_name, &w.name, "PreScore", 1);
            let s = timed(obs, &w.name, "PreScore", Status::code, || {
                w.plugin.pre_score(state, pod, nodes, snapshot)
            });
            if s.is_skip() {
                skip.insert(w.name.to_string());
                continue;
            }
            if !s.is_success() {
                return Status::error(format!(
                    "running PreScore plugin {:?}: {}",
                    &*w.name,
                    s.message()
                ))
                .with_plugin(w.name.clone());
            }
        }
        state.set_skip_score_plugins(skip);
        Status::success()
    }

    /// Runs the Score plugins on the feasible nodes (given with their node-order
    /// indices), normalises each plugin's scores, checks they are in 0..=100 and applies
    /// the weights. The result is in the order of `nodes`.
    pub fn run_score_plugins(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[(usize, &NodeInfo)],
    ) -> Result<ScoreTable, Status> {
        self.timed_point(
            "Score",
            |r: &Result<ScoreTable, Status>| {
                r.as_ref().map_or_else(Status::code, |_| Code::Success)
            },
            || self.score_untimed(state, pod, nodes),
        )
    }

    fn score_untimed(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[(usize, &NodeInfo)],
    ) -> Result<ScoreTable, Status> {
        let obs = sampled(&self.observer, state);
        let skip = state.skip_score_plugins();
        let active: Vec<&WeightedScore> = self
            .score
            .iter()
            .filter(|s| skip.is_empty() || !skip.contains(&*s.wired.name))
            .collect();
        let width = active.len();
        let rows = nodes.len();
        for s in &active {
            evaluated(
                &self.observer,
                &self.profile_name,
                &s.wired.name,
                "Score",
                rows,
            );
        }
        let mut table = ScoreTable {
            plugins: active.iter().map(|s| s.wired.name.clone()).collect(),
            node_indices: nodes.iter().map(|&(i, _)| i).collect(),
            scores: vec![0; rows * width],
            totals: vec![0; rows],
        };
        if width == 0 || rows == 0 {
            return Ok(table);
        }
        let failed = |s: &WeightedScore, e: Status| {
            Status::error(format!(
                "plugin {:?} failed with: {}",
                &*s.wired.name,
                e.message()
            ))
        };
        // Checks a plugin's final scores on a run of nodes, multiplies them by its
        // weight and adds them to the nodes' totals.
        let weigh = |s: &WeightedScore, column: &mut [i64], totals: &mut [i64]| {
            for (cell, total) in column.iter_mut().zip(totals) {
                if !(MIN_NODE_SCORE..=MAX_NODE_SCORE).contains(cell) {
                    return Err(Status::error(format!(
                        "plugin {:?} returns an invalid score {cell}, it should in the range of [{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing",
                        &*s.wired.name
                    )));
                }
                *cell *= s.weight;
                *total += *cell;
            }
            Ok(())
        };
        // Scores for a run of nodes, given each plugin's column and the totals for the
        // run: one plugin at a time over the run (one call per plugin, not per node),
        // or, in a sampled cycle, one call per node and plugin so that each is timed.
        let score_run =
            |columns: &mut [&mut [i64]], totals: &mut [i64], run: &[(usize, &NodeInfo)]| {
                let run_nodes: Vec<&NodeInfo> = run.iter().map(|&(_, node)| node).collect();
                for (column, s) in columns.iter_mut().zip(&active) {
                    if obs.is_some() {
                        for (cell, &(_, node)) in column.iter_mut().zip(run) {
                            *cell = timed(
                                obs,
                                &s.wired.name,
                                "Score",
                                |r: &Result<i64, Status>| {
                                    r.as_ref().map_or_else(Status::code, |_| Code::Success)
                                },
                                || s.wired.plugin.score(state, pod, node),
                            )
                            .map_err(|e| failed(s, e))?;
                        }
                    } else {
                        s.wired
                            .plugin
                            .score_nodes(state, pod, &run_nodes, column)
                            .map_err(|e| failed(s, e))?;
                    }
                    // Scores normalised over all nodes are weighed once normalised, below.
                    if s.wired.plugin.score_extensions().is_none() {
                        weigh(s, column, totals)?;
                    }
                }
                Ok::<(), Status>(())
            };
        // A few contiguous runs per thread for large clusters (one rayon task per node
        // costs more than scoring the node), else one run.
        let piece = if rows >= PARALLEL_THRESHOLD {
            rows.div_ceil(rayon::current_num_threads() * 4)
        } else {
            rows
        };
        let mut runs: Vec<(Vec<&mut [i64]>, &mut [i64])> = table
            .totals
            .chunks_mut(piece)
            .map(|totals| (Vec::with_capacity(width), totals))
            .collect();
        for column in table.scores.chunks_mut(rows) {
            for ((run, _), part) in runs.iter_mut().zip(column.chunks_mut(piece)) {
                run.push(part);
            }
        }
        if runs.len() > 1 {
            runs.into_par_iter()
                .zip(nodes.par_chunks(piece))
                .try_for_each(|((mut columns, totals), run)| {
                    score_run(&mut columns, totals, run)
                })?;
        } else {
            for ((mut columns, totals), run) in runs.into_iter().zip(nodes.chunks(piece)) {
                score_run(&mut columns, totals, run)?;
            }
        }
        for (column, s) in table.scores.chunks_mut(rows).zip(&active) {
            let Some(ext) = s.wired.plugin.score_extensions() else {
                continue;
            };
            let mut normalized: Vec<NodeScore> = nodes
                .iter()
                .zip(column.iter())
                .map(|(&(node_index, _), &score)| NodeScore { node_index, score })
                .collect();
            let status = timed(
                obs,
                &s.wired.name,
                "ScoreExtensionNormalize",
                Status::code,
                || ext.normalize_score(state, pod, &mut normalized),
            );
            if !status.is_success() {
                return Err(failed(s, status));
            }
            for (cell, ns) in column.iter_mut().zip(&normalized) {
                *cell = ns.score;
            }
            weigh(s, column, &mut table.totals)?;
        }
        Ok(table)
    }

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
    ) -> (Status, Option<Duration>) {
        let mut wait: Option<Duration> = None;
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
                wait = Some(wait.map_or(timeout, |t| t.min(timeout)));
                continue;
            }
            let s = rejection_or_error(s, || format!("running Permit plugin {:?}", &*w.name));
            return (s.with_plugin(w.name.clone()), None);
        }
        match wait {
            Some(t) => (Status::with_code(Code::Wait), Some(t)),
            None => (Status::success(), None),
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

/// A plugin's non-success status as the framework reports it: a rejection stays as it
/// is; any other code becomes an `Error` whose message is `context` then the plugin's.
fn rejection_or_error(status: Status, context: impl FnOnce() -> String) -> Status {
    if status.is_rejected() {
        status
    } else {
        Status::error(format!("{}: {}", context(), status.message()))
    }
}

/// ", did you mean X?" for the registered name closest to `name`, if one is close.
/// The configuration field of an extension point: `PreFilterPlugin` is `preFilter`.
fn point_field(point: &str) -> String {
    let bare = point.trim_end_matches("Plugin");
    let mut chars = bare.chars();
    chars.next().map_or_else(String::new, |first| {
        first.to_lowercase().chain(chars).collect()
    })
}

fn closest_name(registry: &Registry, name: &str) -> String {
    registry
        .names()
        .map(|known| (strsim::jaro_winkler(known, name), known))
        .filter(|(score, _)| *score > 0.85)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, known)| format!(", did you mean {known}?"))
        .unwrap_or_default()
}

/// Score weights as kube-scheduler's `getScoreWeights`: the `score` list's entries
/// first, then `multiPoint`'s; the first entry for a plugin wins; absent or zero is 1.
fn score_weights(
    profile_name: &str,
    plugins: &Plugins,
    score: Vec<Wired<dyn ScorePlugin>>,
) -> Result<Vec<WeightedScore>, FrameworkError> {
    let entries: Vec<_> = plugins
        .score
        .enabled
        .iter()
        .chain(&plugins.multi_point.enabled)
        .collect();
    score
        .into_iter()
        .map(|wired| {
            let weight = entries
                .iter()
                .find(|e| *e.name == *wired.name)
                .and_then(|e| e.weight)
                .map(i64::from)
                .unwrap_or(0);
            let weight = if weight == 0 { 1 } else { weight };
            if weight < 1 {
                return Err(FrameworkError::Weight {
                    profile: profile_name.to_string(),
                    plugin: wired.name.to_string(),
                    weight,
                });
            }
            Ok(WeightedScore { wired, weight })
        })
        .collect()
}
