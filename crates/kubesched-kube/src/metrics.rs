//! kube-scheduler's metrics, with its names and labels, in Prometheus text
//! (prometheus-client's OpenMetrics encoding).

use std::sync::Mutex;
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

fn rest_client_histogram() -> Histogram {
    // client-go's rest_client_request_duration_seconds and
    // rest_client_rate_limiter_duration_seconds buckets.
    Histogram::new([
        0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0,
    ])
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

impl Metrics {
    /// Registers every metric.
    pub fn new() -> Metrics {
        let mut registry = Registry::default();
        let schedule_attempts = Family::<Labels, Counter>::default();
        registry.register(
            "scheduler_schedule_attempts",
            "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be scheduled, while 'error' means an internal scheduler problem",
            schedule_attempts.clone(),
        );
        let attempt_duration = HistogramFamily::new_with_constructor(attempt_histogram);
        registry.register(
            "scheduler_scheduling_attempt_duration_seconds",
            "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
            attempt_duration.clone(),
        );
        let algorithm_duration = attempt_histogram();
        registry.register(
            "scheduler_scheduling_algorithm_duration_seconds",
            "Scheduling algorithm latency in seconds",
            algorithm_duration.clone(),
        );
        let pending_pods = Family::<Labels, Gauge>::default();
        registry.register(
            "scheduler_pending_pods",
            "Number of pending pods, by the queue type. 'active' means number of pods in activeQ; 'backoff' means number of pods in backoffQ; 'unschedulable' means number of pods in unschedulablePods that the scheduler attempted to schedule and failed; 'gated' is the number of unschedulable pods that the scheduler never attempted to schedule because they are gated",
            pending_pods.clone(),
        );
        let extension_point_duration =
            HistogramFamily::new_with_constructor(extension_point_histogram);
        registry.register(
            "scheduler_framework_extension_point_duration_seconds",
            "Latency for running all plugins of a specific extension point",
            extension_point_duration.clone(),
        );
        let plugin_duration = HistogramFamily::new_with_constructor(plugin_histogram);
        registry.register(
            "scheduler_plugin_execution_duration_seconds",
            "Duration for running a plugin at a specific extension point",
            plugin_duration.clone(),
        );
        let incoming_pods = Family::<Labels, Counter>::default();
        registry.register(
            "scheduler_queue_incoming_pods",
            "Number of pods added to scheduling queues by event and queue type",
            incoming_pods.clone(),
        );
        let leader = Gauge::default();
        registry.register(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master",
            leader.clone(),
        );
        let rest_requests = Family::<Labels, Counter>::default();
        registry.register(
            "rest_client_requests",
            "Number of HTTP requests, partitioned by status code, method, and host.",
            rest_requests.clone(),
        );
        let rest_duration = HistogramFamily::new_with_constructor(rest_client_histogram);
        registry.register(
            "rest_client_request_duration_seconds",
            "Request latency in seconds. Broken down by verb, and host.",
            rest_duration.clone(),
        );
        let rest_rate_limiter = HistogramFamily::new_with_constructor(rest_client_histogram);
        registry.register(
            "rest_client_rate_limiter_duration_seconds",
            "Client side rate limiter latency in seconds. Broken down by verb, and host.",
            rest_rate_limiter.clone(),
        );
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
        }
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

    /// The Prometheus text exposition.
    pub fn encode(&self) -> String {
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
}
