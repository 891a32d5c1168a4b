//! kube-scheduler's metrics, with its names and labels, in Prometheus text
//! (prometheus-client's OpenMetrics encoding).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

type Labels = Vec<(String, String)>;
type HistogramFamily = Family<Labels, Histogram, fn() -> Histogram>;

fn attempt_histogram() -> Histogram {
    // kube-scheduler: ExponentialBuckets(0.001, 2, 15)
    Histogram::new(exponential_buckets(0.001, 2.0, 15))
}

fn extension_point_histogram() -> Histogram {
    // kube-scheduler: ExponentialBuckets(0.0001, 2, 12)
    Histogram::new(exponential_buckets(0.0001, 2.0, 12))
}

fn plugin_histogram() -> Histogram {
    // kube-scheduler: ExponentialBuckets(0.00001, 1.5, 20)
    Histogram::new(exponential_buckets(0.00001, 1.5, 20))
}

fn batch_histogram() -> Histogram {
    // kube-scheduler: ExponentialBuckets(0.00001, 2, 12), for the batching durations.
    Histogram::new(exponential_buckets(0.00001, 2.0, 12))
}

fn rest_client_histogram() -> Histogram {
    // client-go's rest_client_request_duration_seconds and
    // rest_client_rate_limiter_duration_seconds buckets.
    Histogram::new([
        0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0,
    ])
}

fn sli_histogram() -> Histogram {
    // kube-scheduler's scheduler_pod_scheduling_sli_duration_seconds:
    // ExponentialBuckets(0.01, 2, 20)
    Histogram::new(exponential_buckets(0.01, 2.0, 20))
}

fn attempts_histogram() -> Histogram {
    // scheduler_pod_scheduling_attempts: ExponentialBuckets(1, 2, 5)
    Histogram::new(exponential_buckets(1.0, 2.0, 5))
}

fn victims_histogram() -> Histogram {
    // scheduler_preemption_victims: ExponentialBuckets(1, 2, 7)
    Histogram::new(exponential_buckets(1.0, 2.0, 7))
}

fn labels(pairs: &[(&str, &str)]) -> Labels {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The scheduler's metrics.
pub struct Metrics {
    registry: Mutex<Registry>,
    schedule_attempts: Family<Labels, Counter>,
    attempt_duration: HistogramFamily,
    algorithm_duration: Histogram,
    pending_pods: Family<Labels, Gauge>,
    extension_point_duration: HistogramFamily,
    plugin_duration: HistogramFamily,
    incoming_pods: Family<Labels, Counter>,
    leader: Gauge,
    rest_requests: Family<Labels, Counter>,
    rest_duration: HistogramFamily,
    rest_rate_limiter: HistogramFamily,
    pod_attempts: Histogram,
    sli_duration: HistogramFamily,
    preemption_attempts: Counter,
    preemption_victims: Histogram,
    cache_size: Family<Labels, Gauge>,
    goroutines: Family<Labels, Gauge>,
    permit_wait: HistogramFamily,
    waiting_pods: Gauge,
    unschedulable_pods: Family<Labels, Gauge>,
    plugin_evaluation: Family<Labels, Counter>,
    /// The counters of `plugin_evaluation` by profile, plugin and extension point, so
    /// that counting a Filter run looks them up without building labels.
    evaluation_counters: RwLock<EvaluationCounters>,
    event_handling: HistogramFamily,
    inflight_events: Family<Labels, Gauge>,
    batch_attempts: Family<Labels, Counter>,
    batch_cache_flushed: Family<Labels, Counter>,
    get_node_hint_duration: HistogramFamily,
    store_schedule_results_duration: HistogramFamily,
    /// The series of the two gauges above set so far: set to 0 when they empty.
    queue_series: Mutex<QueueSeries>,
    refresh: Mutex<Option<Refresher>>,
    process: ProcessMetrics,
}

/// The `(profile, plugin)` series of the unschedulable pods and the events in flight.
type QueueSeries = (BTreeSet<(String, String)>, BTreeSet<String>);

type EvaluationCounters = HashMap<String, HashMap<String, HashMap<&'static str, Counter>>>;

/// Sets the gauges read from the scheduler's state when the metrics are encoded.
pub type Refresher = Arc<dyn Fn(&Metrics) + Send + Sync>;

/// process_* as the Prometheus Go client's process collector, read from /proc when
/// the metrics are encoded.
struct ProcessMetrics {
    cpu_seconds: Counter<f64, std::sync::atomic::AtomicU64>,
    resident_memory: Gauge,
    virtual_memory: Gauge,
    open_fds: Gauge,
    max_fds: Gauge,
    start_time: Gauge<f64, std::sync::atomic::AtomicU64>,
}

/// Clock ticks per second of /proc/PID/stat's times (USER_HZ, 100 on Linux).
const CLOCK_TICKS: f64 = 100.0;

impl ProcessMetrics {
    fn register(registry: &mut Registry) -> ProcessMetrics {
        ProcessMetrics {
            cpu_seconds: registered(
                registry,
                "process_cpu_seconds",
                "Total user and system CPU time spent in seconds",
                Counter::default(),
            ),
            resident_memory: registered(
                registry,
                "process_resident_memory_bytes",
                "Resident memory size in bytes",
                Gauge::default(),
            ),
            virtual_memory: registered(
                registry,
                "process_virtual_memory_bytes",
                "Virtual memory size in bytes",
                Gauge::default(),
            ),
            open_fds: registered(
                registry,
                "process_open_fds",
                "Number of open file descriptors",
                Gauge::default(),
            ),
            max_fds: registered(
                registry,
                "process_max_fds",
                "Maximum number of open file descriptors",
                Gauge::default(),
            ),
            start_time: registered(
                registry,
                "process_start_time_seconds",
                "Start time of the process since unix epoch in seconds",
                Gauge::default(),
            ),
        }
    }

    fn refresh(&self) {
        let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
        // The fields after the command name, which is in parentheses.
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.split_whitespace().collect())
            .unwrap_or_default();
        let field = |n: usize| fields.get(n - 3).and_then(|v| v.parse::<f64>().ok());
        if let (Some(utime), Some(stime)) = (field(14), field(15)) {
            let total = (utime + stime) / CLOCK_TICKS;
            let seen = self.cpu_seconds.get();
            if total > seen {
                self.cpu_seconds.inc_by(total - seen);
            }
        }
        if let Some(vsize) = field(23) {
            self.virtual_memory.set(vsize as i64);
        }
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        if let Some(kb) = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next()?.parse::<i64>().ok())
        {
            self.resident_memory.set(kb * 1024);
        }
        if let Ok(dir) = std::fs::read_dir("/proc/self/fd") {
            self.open_fds.set(dir.count() as i64);
        }
        let limits = std::fs::read_to_string("/proc/self/limits").unwrap_or_default();
        if let Some(max) = limits
            .lines()
            .find(|l| l.starts_with("Max open files"))
            .and_then(|l| l.split_whitespace().nth(3)?.parse::<i64>().ok())
        {
            self.max_fds.set(max);
        }
        if self.start_time.get() == 0.0 {
            let boot = std::fs::read_to_string("/proc/stat")
                .unwrap_or_default()
                .lines()
                .find_map(|l| l.strip_prefix("btime "))
                .and_then(|v| v.trim().parse::<f64>().ok());
            if let (Some(boot), Some(start)) = (boot, field(22)) {
                self.start_time.set(boot + start / CLOCK_TICKS);
            }
        }
    }
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

/// The `result` label of an attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttemptResult {
    /// The pod was bound.
    Scheduled,
    /// No node fitted.
    Unschedulable,
    /// A plugin or the API failed.
    Error,
}

impl AttemptResult {
    fn label(self) -> &'static str {
        match self {
            AttemptResult::Scheduled => "scheduled",
            AttemptResult::Unschedulable => "unschedulable",
            AttemptResult::Error => "error",
        }
    }
}

/// Registers `metric` under `name` with its `help` text, and gives it back (a handle to
/// the same series) for the caller to keep.
fn registered<M: prometheus_client::registry::Metric + Clone>(
    registry: &mut Registry,
    name: &str,
    help: &str,
    metric: M,
) -> M {
    registry.register(name, help, metric.clone());
    metric
}

impl Metrics {
    /// Registers every metric.
    pub fn new() -> Metrics {
        let mut registry = Registry::default();
        let schedule_attempts = registered(
            &mut registry,
            "scheduler_schedule_attempts",
            "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be scheduled, while 'error' means an internal scheduler problem",
            Family::<Labels, Counter>::default(),
        );
        let attempt_duration = registered(
            &mut registry,
            "scheduler_scheduling_attempt_duration_seconds",
            "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
            HistogramFamily::new_with_constructor(attempt_histogram),
        );
        let algorithm_duration = registered(
            &mut registry,
            "scheduler_scheduling_algorithm_duration_seconds",
            "Scheduling algorithm latency in seconds",
            attempt_histogram(),
        );
        let pending_pods = registered(
            &mut registry,
            "scheduler_pending_pods",
            "Number of pending pods, by the queue type. 'active' means number of pods in activeQ; 'backoff' means number of pods in backoffQ; 'unschedulable' means number of pods in unschedulablePods that the scheduler attempted to schedule and failed; 'gated' is the number of unschedulable pods that the scheduler never attempted to schedule because they are gated",
            Family::<Labels, Gauge>::default(),
        );
        let extension_point_duration = registered(
            &mut registry,
            "scheduler_framework_extension_point_duration_seconds",
            "Latency for running all plugins of a specific extension point",
            HistogramFamily::new_with_constructor(extension_point_histogram),
        );
        let plugin_duration = registered(
            &mut registry,
            "scheduler_plugin_execution_duration_seconds",
            "Duration for running a plugin at a specific extension point",
            HistogramFamily::new_with_constructor(plugin_histogram),
        );
        let incoming_pods = registered(
            &mut registry,
            "scheduler_queue_incoming_pods",
            "Number of pods added to scheduling queues by event and queue type",
            Family::<Labels, Counter>::default(),
        );
        let leader = registered(
            &mut registry,
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master",
            Gauge::default(),
        );
        let rest_requests = registered(
            &mut registry,
            "rest_client_requests",
            "Number of HTTP requests, partitioned by status code, method, and host",
            Family::<Labels, Counter>::default(),
        );
        let rest_duration = registered(
            &mut registry,
            "rest_client_request_duration_seconds",
            "Request latency in seconds. Broken down by verb, and host",
            HistogramFamily::new_with_constructor(rest_client_histogram),
        );
        let rest_rate_limiter = registered(
            &mut registry,
            "rest_client_rate_limiter_duration_seconds",
            "Client side rate limiter latency in seconds. Broken down by verb, and host",
            HistogramFamily::new_with_constructor(rest_client_histogram),
        );
        let pod_attempts = registered(
            &mut registry,
            "scheduler_pod_scheduling_attempts",
            "Number of attempts to successfully schedule a pod",
            attempts_histogram(),
        );
        let sli_duration = registered(
            &mut registry,
            "scheduler_pod_scheduling_sli_duration_seconds",
            "E2e latency for a pod being scheduled, from the time the pod enters the scheduling queue and might involve multiple scheduling attempts",
            HistogramFamily::new_with_constructor(sli_histogram),
        );
        let preemption_attempts = registered(
            &mut registry,
            "scheduler_preemption_attempts",
            "Total preemption attempts in the cluster till now",
            Counter::default(),
        );
        let preemption_victims = registered(
            &mut registry,
            "scheduler_preemption_victims",
            "Number of selected preemption victims",
            victims_histogram(),
        );
        let cache_size = registered(
            &mut registry,
            "scheduler_cache_size",
            "Number of nodes, pods, and assumed (bound) pods in the scheduler cache",
            Family::<Labels, Gauge>::default(),
        );
        let goroutines = registered(
            &mut registry,
            "scheduler_goroutines",
            "Number of running goroutines split by the work they do such as binding (here: tasks)",
            Family::<Labels, Gauge>::default(),
        );
        goroutines
            .get_or_create(&labels(&[("operation", "binding")]))
            .set(0);
        let permit_wait = registered(
            &mut registry,
            "scheduler_permit_wait_duration_seconds",
            "Duration of waiting on permit",
            HistogramFamily::new_with_constructor(attempt_histogram),
        );
        let waiting_pods = registered(
            &mut registry,
            "kubesched_permit_waiting_pods",
            "Number of pods waiting at Permit, assumed on their nodes (kube-scheduler exports no such gauge)",
            Gauge::default(),
        );
        let unschedulable_pods = registered(
            &mut registry,
            "scheduler_unschedulable_pods",
            "The number of unschedulable pods broken down by plugin name. A pod will increment the gauge for all plugins that caused it to not schedule and so this metric have meaning only when broken down by plugin",
            Family::<Labels, Gauge>::default(),
        );
        let plugin_evaluation = registered(
            &mut registry,
            "scheduler_plugin_evaluation",
            "Number of attempts to schedule pods by each plugin and the extension point (available only in PreFilter, Filter, PreScore, and Score)",
            Family::<Labels, Counter>::default(),
        );
        // kube-scheduler: ExponentialBuckets(0.0001, 2, 12), as the extension points.
        let event_handling = registered(
            &mut registry,
            "scheduler_event_handling_duration_seconds",
            "Event handling latency in seconds",
            HistogramFamily::new_with_constructor(extension_point_histogram),
        );
        let inflight_events = registered(
            &mut registry,
            "scheduler_inflight_events",
            "Number of events currently tracked in the scheduling queue",
            Family::<Labels, Gauge>::default(),
        );
        let batch_attempts = registered(
            &mut registry,
            "scheduler_batch_attempts",
            "Counts of results when we attempt to use batching",
            Family::<Labels, Counter>::default(),
        );
        let batch_cache_flushed = registered(
            &mut registry,
            "scheduler_batch_cache_flushed",
            "Counts of cache flushes by reason",
            Family::<Labels, Counter>::default(),
        );
        let get_node_hint_duration = registered(
            &mut registry,
            "scheduler_get_node_hint_duration_seconds",
            "Latency for getting a node hint",
            HistogramFamily::new_with_constructor(batch_histogram),
        );
        // kube-scheduler v1.35's help text, truncated as it is there.
        let store_schedule_results_duration = registered(
            &mut registry,
            "scheduler_store_schedule_results_duration_seconds",
            "Latency for getting a no",
            HistogramFamily::new_with_constructor(batch_histogram),
        );
        let process = ProcessMetrics::register(&mut registry);
        for q in ["active", "backoff", "unschedulable", "gated"] {
            pending_pods.get_or_create(&labels(&[("queue", q)])).set(0);
        }
        Metrics {
            registry: Mutex::new(registry),
            schedule_attempts,
            attempt_duration,
            algorithm_duration,
            pending_pods,
            extension_point_duration,
            plugin_duration,
            incoming_pods,
            leader,
            rest_requests,
            rest_duration,
            rest_rate_limiter,
            pod_attempts,
            sli_duration,
            preemption_attempts,
            preemption_victims,
            cache_size,
            goroutines,
            permit_wait,
            waiting_pods,
            unschedulable_pods,
            plugin_evaluation,
            evaluation_counters: RwLock::new(HashMap::new()),
            event_handling,
            inflight_events,
            batch_attempts,
            batch_cache_flushed,
            get_node_hint_duration,
            store_schedule_results_duration,
            queue_series: Mutex::new((BTreeSet::new(), BTreeSet::new())),
            refresh: Mutex::new(None),
            process,
        }
    }

    /// A pod was bound after `attempts` attempts, `since_first` after it first entered
    /// the queue (kube-scheduler's PodSchedulingAttempts and PodSchedulingSLIDuration).
    pub fn pod_scheduled(&self, attempts: u32, since_first: Duration) {
        self.pod_attempts.observe(f64::from(attempts));
        self.sli_duration
            .get_or_create(&labels(&[("attempts", &attempts.to_string())]))
            .observe(since_first.as_secs_f64());
    }

    /// PostFilter preempted `victims` pods for one pod.
    pub fn preemption(&self, victims: usize) {
        self.preemption_attempts.inc();
        self.preemption_victims.observe(victims as f64);
    }

    /// The cache holds this many nodes, pods (bound or assumed) and assumed pods.
    pub fn set_cache_size(&self, nodes: usize, pods: usize, assumed: usize) {
        for (t, n) in [("nodes", nodes), ("pods", pods), ("assumed_pods", assumed)] {
            self.cache_size
                .get_or_create(&labels(&[("type", t)]))
                .set(n as i64);
        }
    }

    /// A binding cycle started (`+1`) or ended (`-1`).
    pub fn binding_tasks(&self, delta: i64) {
        self.goroutines
            .get_or_create(&labels(&[("operation", "binding")]))
            .inc_by(delta);
    }

    /// A pod waited `took` at Permit, and was then decided with `code`
    /// (`scheduler_permit_wait_duration_seconds{result}`).
    pub fn permit_wait(&self, code: kubesched_framework::Code, took: Duration) {
        self.permit_wait
            .get_or_create(&labels(&[("result", code.as_str())]))
            .observe(took.as_secs_f64());
    }

    /// How many pods wait at Permit now.
    pub fn set_waiting_pods(&self, n: usize) {
        self.waiting_pods.set(i64::try_from(n).unwrap_or(i64::MAX));
    }

    /// One request to the API server ended (`code` is the HTTP status, or `<error>`
    /// when no response came).
    pub fn rest_request(&self, code: &str, host: &str, method: &str, verb: &str, took: Duration) {
        self.rest_requests
            .get_or_create(&labels(&[
                ("code", code),
                ("host", host),
                ("method", method),
            ]))
            .inc();
        self.rest_duration
            .get_or_create(&labels(&[("host", host), ("verb", verb)]))
            .observe(took.as_secs_f64());
    }

    /// A request waited this long for a token of its client's rate limiter.
    pub fn rate_limiter_wait(&self, host: &str, verb: &str, waited: Duration) {
        self.rest_rate_limiter
            .get_or_create(&labels(&[("host", host), ("verb", verb)]))
            .observe(waited.as_secs_f64());
    }

    /// One scheduling attempt ended.
    pub fn attempt(&self, profile: &str, result: AttemptResult, took: Duration) {
        let l = labels(&[("result", result.label()), ("profile", profile)]);
        self.schedule_attempts.get_or_create(&l).inc();
        self.attempt_duration
            .get_or_create(&l)
            .observe(took.as_secs_f64());
    }

    /// The scheduling algorithm (PreFilter to the choice of a node, with PostFilter
    /// when no node fitted) ran for one pod, as kube-scheduler's
    /// `SchedulingAlgorithmLatency`.
    pub fn algorithm(&self, took: Duration) {
        self.algorithm_duration.observe(took.as_secs_f64());
    }

    /// All plugins of an extension point ran (the [`PluginObserver`] of every
    /// profile's framework reports these).
    ///
    /// [`PluginObserver`]: kubesched_framework::PluginObserver
    pub fn extension_point(&self, point: &str, profile: &str, status: &str, took: Duration) {
        let l = labels(&[
            ("extension_point", point),
            ("profile", profile),
            ("status", status),
        ]);
        self.extension_point_duration
            .get_or_create(&l)
            .observe(took.as_secs_f64());
    }

    /// One plugin ran at an extension point.
    pub fn plugin(&self, plugin: &str, point: &str, status: &str, took: Duration) {
        let l = labels(&[
            ("plugin", plugin),
            ("extension_point", point),
            ("status", status),
        ]);
        self.plugin_duration
            .get_or_create(&l)
            .observe(took.as_secs_f64());
    }

    /// The number of pods in each queue.
    pub fn set_pending(&self, queue: &str, n: usize) {
        self.pending_pods
            .get_or_create(&labels(&[("queue", queue)]))
            .set(n as i64);
    }

    /// A pod entered a queue on an event.
    pub fn incoming(&self, queue: &str, event: &str) {
        self.incoming_pods
            .get_or_create(&labels(&[("queue", queue), ("event", event)]))
            .inc();
    }

    /// Whether this replica leads.
    pub fn set_leader(&self, leading: bool) {
        self.leader.set(i64::from(leading));
    }

    /// A watch event (`event`: kube-scheduler's label, `NodeAdd`, `AssignedPodUpdate`,
    /// `UnschedulablePodDelete`, ...) was handled in `took`.
    pub fn event_handled(&self, event: &str, took: Duration) {
        self.event_handling
            .get_or_create(&labels(&[("event", event)]))
            .observe(took.as_secs_f64());
    }

    /// `plugin` of `profile` ran `n` times at `point`.
    pub fn plugin_evaluated(&self, profile: &str, plugin: &str, point: &'static str, n: u64) {
        let read = self
            .evaluation_counters
            .read()
            .unwrap_or_else(|e| e.into_inner());
        if let Some(c) = read
            .get(profile)
            .and_then(|m| m.get(plugin))
            .and_then(|m| m.get(point))
        {
            c.inc_by(n);
            return;
        }
        drop(read);
        let counter = self
            .plugin_evaluation
            .get_or_create(&labels(&[
                ("plugin", plugin),
                ("extension_point", point),
                ("profile", profile),
            ]))
            .clone();
        counter.inc_by(n);
        self.evaluation_counters
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .entry(profile.to_string())
            .or_default()
            .entry(plugin.to_string())
            .or_default()
            .insert(point, counter);
    }

    /// The queue's unschedulable pods by `(profile, plugin)` that rejected them, and
    /// its in-flight events by label; series that were set before and are not in
    /// these go to 0, as kube-scheduler's gauges do when their pods leave.
    pub fn set_queue_gauges(
        &self,
        unschedulable: &BTreeMap<(String, String), usize>,
        in_flight: &BTreeMap<String, usize>,
    ) {
        let mut seen = self.queue_series.lock().unwrap_or_else(|e| e.into_inner());
        seen.0.extend(unschedulable.keys().cloned());
        seen.1.extend(in_flight.keys().cloned());
        for key in &seen.0 {
            let (profile, plugin) = key;
            self.unschedulable_pods
                .get_or_create(&labels(&[("plugin", plugin), ("profile", profile)]))
                .set(unschedulable.get(key).copied().unwrap_or(0) as i64);
        }
        for event in &seen.1 {
            self.inflight_events
                .get_or_create(&labels(&[("event", event)]))
                .set(in_flight.get(event).copied().unwrap_or(0) as i64);
        }
    }

    /// Calls `refresh` each time the metrics are encoded, before encoding (the gauges
    /// read from the scheduler's state).
    pub fn set_refresher(&self, refresh: Refresher) {
        *self.refresh.lock().unwrap_or_else(|e| e.into_inner()) = Some(refresh);
    }

    /// The Prometheus text exposition.
    pub fn encode(&self) -> String {
        let refresh = self
            .refresh
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if let Some(refresh) = refresh {
            refresh(self);
        }
        self.process.refresh();
        let mut out = String::new();
        let registry = self.registry.lock().unwrap_or_else(|e| e.into_inner());
        // Writing to a String cannot fail.
        let _ = encode(&mut out, &registry);
        out
    }
}

impl kubesched_framework::PluginObserver for Metrics {
    fn observe(
        &self,
        plugin: &str,
        extension_point: &'static str,
        code: kubesched_framework::Code,
        took: Duration,
    ) {
        self.plugin(plugin, extension_point, code.as_str(), took);
    }

    fn observe_extension_point(
        &self,
        profile: &str,
        extension_point: &'static str,
        code: kubesched_framework::Code,
        took: Duration,
    ) {
        self.extension_point(extension_point, profile, code.as_str(), took);
    }

    fn plugin_evaluated(&self, profile: &str, plugin: &str, extension_point: &'static str, n: u64) {
        Metrics::plugin_evaluated(self, profile, plugin, extension_point, n);
    }

    fn observe_node_hint(&self, profile: &str, hinted: bool, took: Duration) {
        let hinted = if hinted { "hint" } else { "no_hint" };
        self.get_node_hint_duration
            .get_or_create(&labels(&[("hinted", hinted), ("profile", profile)]))
            .observe(took.as_secs_f64());
    }

    fn observe_store_schedule_results(&self, profile: &str, took: Duration) {
        self.store_schedule_results_duration
            .get_or_create(&labels(&[("profile", profile)]))
            .observe(took.as_secs_f64());
    }

    fn batch_attempt(&self, profile: &str, result: &'static str) {
        self.batch_attempts
            .get_or_create(&labels(&[("profile", profile), ("result", result)]))
            .inc();
    }

    fn batch_cache_flushed(&self, profile: &str, reason: &'static str) {
        self.batch_cache_flushed
            .get_or_create(&labels(&[("profile", profile), ("reason", reason)]))
            .inc();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kubesched_framework::PluginObserver;

    #[test]
    fn batching_metrics_have_kube_schedulers_names_labels_and_buckets() {
        let m = Metrics::new();
        m.batch_attempt("p", kubesched_framework::batch::attempt::HINT_USED);
        m.batch_cache_flushed("p", kubesched_framework::batch::flush::EXPIRED);
        m.observe_node_hint("p", true, Duration::from_micros(15));
        m.observe_store_schedule_results("p", Duration::from_micros(3));
        let text = m.encode();
        for needle in [
            "scheduler_batch_attempts_total{profile=\"p\",result=\"hint_used\"} 1",
            "scheduler_batch_cache_flushed_total{profile=\"p\",reason=\"expired\"} 1",
            "scheduler_get_node_hint_duration_seconds_bucket{le=\"0.00001\",hinted=\"hint\",profile=\"p\"} 0",
            "scheduler_get_node_hint_duration_seconds_bucket{le=\"0.00002\",hinted=\"hint\",profile=\"p\"} 1",
            "scheduler_get_node_hint_duration_seconds_bucket{le=\"0.02048\",hinted=\"hint\",profile=\"p\"} 1",
            "scheduler_store_schedule_results_duration_seconds_count{profile=\"p\"} 1",
        ] {
            assert!(text.contains(needle), "{needle} missing from:\n{text}");
        }
    }

    #[test]
    fn queue_gauges_are_set_and_go_to_zero_when_their_pods_leave() {
        let m = Metrics::new();
        let mut unschedulable = BTreeMap::new();
        unschedulable.insert(("p".to_string(), "NodeResourcesFit".to_string()), 3);
        let mut in_flight = BTreeMap::new();
        in_flight.insert("PodPopped".to_string(), 2);
        in_flight.insert("NodeAdd".to_string(), 1);
        m.set_queue_gauges(&unschedulable, &in_flight);
        let text = m.encode();
        for needle in [
            "scheduler_unschedulable_pods{plugin=\"NodeResourcesFit\",profile=\"p\"} 3",
            "scheduler_inflight_events{event=\"PodPopped\"} 2",
            "scheduler_inflight_events{event=\"NodeAdd\"} 1",
        ] {
            assert!(text.contains(needle), "{needle} missing from:\n{text}");
        }
        m.set_queue_gauges(&BTreeMap::new(), &BTreeMap::new());
        let text = m.encode();
        for needle in [
            "scheduler_unschedulable_pods{plugin=\"NodeResourcesFit\",profile=\"p\"} 0",
            "scheduler_inflight_events{event=\"PodPopped\"} 0",
        ] {
            assert!(text.contains(needle), "{needle} missing from:\n{text}");
        }
    }
}
