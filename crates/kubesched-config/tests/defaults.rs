//! The default configuration: kube-scheduler v1.35's default profile, plugin order and
//! weights, default args, and top-level defaults.

use std::time::Duration;

use kubesched_config::{
    DEFAULT_SCHEDULER_NAME, KubeSchedulerConfiguration, PluginRef, in_tree_plugin_names,
};

fn expected_multi_point() -> Vec<PluginRef> {
    vec![
        PluginRef::new("SchedulingGates"),
        PluginRef::new("PrioritySort"),
        PluginRef::new("NodeUnschedulable"),
        PluginRef::new("NodeName"),
        PluginRef::weighted("TaintToleration", 3),
        PluginRef::weighted("NodeAffinity", 2),
        PluginRef::new("NodePorts"),
        PluginRef::weighted("NodeResourcesFit", 1),
        PluginRef::new("VolumeRestrictions"),
        PluginRef::new("NodeVolumeLimits"),
        PluginRef::new("VolumeBinding"),
        PluginRef::new("VolumeZone"),
        PluginRef::weighted("PodTopologySpread", 2),
        PluginRef::weighted("InterPodAffinity", 2),
        PluginRef::weighted("DynamicResources", 2),
        PluginRef::new("DefaultPreemption"),
        PluginRef::weighted("NodeResourcesBalancedAllocation", 1),
        PluginRef::weighted("ImageLocality", 1),
        PluginRef::new("DefaultBinder"),
    ]
}

#[test]
fn default_profile_plugins() {
    let c = KubeSchedulerConfiguration::default_config();
    assert_eq!(c.profiles.len(), 1);
    let p = &c.profiles[0];
    assert_eq!(p.scheduler_name, DEFAULT_SCHEDULER_NAME);
    assert_eq!(p.plugins.multi_point.enabled, expected_multi_point());
    assert!(p.plugins.multi_point.disabled.is_empty());
    for (name, set) in p.plugins.extension_points() {
        if name != "multiPoint" {
            assert!(set.enabled.is_empty() && set.disabled.is_empty(), "{name}");
        }
    }
    assert_eq!(p.percentage_of_nodes_to_score, None);
}

#[test]
fn default_plugin_config_is_sorted_default_args() {
    let c = KubeSchedulerConfiguration::default_config();
    let p = c.profile("default-scheduler").unwrap();
    let names: Vec<&str> = p.plugin_config.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "DefaultPreemption",
            "DynamicResources",
            "InterPodAffinity",
            "NodeAffinity",
            "NodeResourcesBalancedAllocation",
            "NodeResourcesFit",
            "PodTopologySpread",
            "VolumeBinding",
        ]
    );
    let fit = p.plugin_args("NodeResourcesFit").unwrap();
    assert_eq!(
        fit,
        &serde_json::json!({"scoringStrategy": {"type": "LeastAllocated", "resources": [
            {"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]}})
    );
    assert_eq!(
        p.plugin_args("DefaultPreemption").unwrap(),
        &serde_json::json!({"minCandidateNodesPercentage": 10, "minCandidateNodesAbsolute": 100})
    );
    assert_eq!(
        p.plugin_args("InterPodAffinity").unwrap(),
        &serde_json::json!({"hardPodAffinityWeight": 1, "ignorePreferredTermsOfExistingPods": false})
    );
    assert_eq!(
        p.plugin_args("PodTopologySpread").unwrap(),
        &serde_json::json!({"defaultingType": "System"})
    );
    assert_eq!(
        p.plugin_args("VolumeBinding").unwrap(),
        &serde_json::json!({"bindTimeoutSeconds": 600})
    );
    assert_eq!(
        p.plugin_args("NodeAffinity").unwrap(),
        &serde_json::json!({})
    );
    assert_eq!(
        p.plugin_args("NodeResourcesBalancedAllocation").unwrap(),
        &serde_json::json!({"resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]})
    );
    assert!(p.plugin_args("ImageLocality").is_none());
}

#[test]
fn top_level_defaults() {
    let c = KubeSchedulerConfiguration::default_config();
    assert_eq!(c.parallelism, 16);
    assert_eq!(c.percentage_of_nodes_to_score, None);
    assert_eq!(c.pod_initial_backoff_seconds, 1);
    assert_eq!(c.pod_max_backoff_seconds, 10);
    let le = &c.leader_election;
    assert!(le.leader_elect);
    assert_eq!(le.lease_duration, Duration::from_secs(15));
    assert_eq!(le.renew_deadline, Duration::from_secs(10));
    assert_eq!(le.retry_period, Duration::from_secs(2));
    assert_eq!(le.resource_lock, "leases");
    assert_eq!(le.resource_name, "kube-scheduler");
    assert_eq!(le.resource_namespace, "kube-system");
    let cc = &c.client_connection;
    assert_eq!(cc.content_type, "application/vnd.kubernetes.protobuf");
    assert_eq!(cc.qps, 50.0);
    assert_eq!(cc.burst, 100);
    assert!(c.enable_profiling && c.enable_contention_profiling);
    assert!(!c.delay_cache_until_active);
}

#[test]
fn empty_document_equals_default_config() {
    let text = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n";
    let loaded = KubeSchedulerConfiguration::from_yaml_str(text, "empty.yaml").unwrap();
    assert!(loaded.warnings.is_empty());
    assert_eq!(loaded.config, KubeSchedulerConfiguration::default_config());
    let json = r#"{"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration", "profiles": null}"#;
    let loaded = KubeSchedulerConfiguration::from_json_str(json, "empty.json").unwrap();
    assert_eq!(loaded.config, KubeSchedulerConfiguration::default());
}

#[test]
fn top_level_fields_are_read() {
    let text = r#"
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
parallelism: 4
percentageOfNodesToScore: 50
podInitialBackoffSeconds: 2
podMaxBackoffSeconds: 20
delayCacheUntilActive: true
enableProfiling: false
leaderElection:
  leaderElect: false
  leaseDuration: 1m30s
  renewDeadline: 100ms
  retryPeriod: 0s
  resourceNamespace: other
clientConnection:
  kubeconfig: /etc/kube.conf
  qps: 5.5
  burst: 7
extenders: []
"#;
    let c = KubeSchedulerConfiguration::from_yaml_str(text, "t.yaml")
        .unwrap()
        .config;
    assert_eq!(c.parallelism, 4);
    assert_eq!(c.percentage_of_nodes_to_score, Some(50));
    assert_eq!(
        (c.pod_initial_backoff_seconds, c.pod_max_backoff_seconds),
        (2, 20)
    );
    assert!(c.delay_cache_until_active);
    assert!(!c.enable_profiling && !c.enable_contention_profiling);
    assert!(!c.leader_election.leader_elect);
    assert_eq!(c.leader_election.lease_duration, Duration::from_secs(90));
    assert_eq!(c.leader_election.renew_deadline, Duration::from_millis(100));
    assert_eq!(c.leader_election.retry_period, Duration::from_secs(2));
    assert_eq!(c.leader_election.resource_namespace, "other");
    assert_eq!(c.client_connection.kubeconfig, "/etc/kube.conf");
    assert_eq!(c.client_connection.qps, 5.5);
    assert_eq!(c.client_connection.burst, 7);
}

#[test]
fn in_tree_names_cover_default_profile() {
    let names = in_tree_plugin_names();
    for p in expected_multi_point() {
        assert!(names.contains(&p.name.as_str()), "{}", p.name);
    }
    let mut sorted = names.to_vec();
    sorted.sort();
    assert_eq!(sorted, names);
}

#[test]
fn gang_scheduling_joins_the_default_profile_last_when_its_gate_is_on() {
    let gates = kubesched_config::DefaultPluginGates {
        node_declared_features: true,
        gang_scheduling: true,
        ..Default::default()
    };
    let names: Vec<String> = kubesched_config::default_plugins_for(gates)
        .multi_point
        .enabled
        .iter()
        .map(|p| p.name.clone())
        .collect();
    // kube-scheduler v1.36.1 with both gates lists them in this order.
    assert_eq!(
        names[names.len() - 3..],
        ["DefaultBinder", "NodeDeclaredFeatures", "GangScheduling"]
    );
    let off =
        kubesched_config::default_plugins_for(kubesched_config::DefaultPluginGates::default());
    assert!(
        off.multi_point
            .enabled
            .iter()
            .all(|p| p.name != "GangScheduling")
    );
    let config = KubeSchedulerConfiguration::default_config();
    let plugins = config.profiles[0].plugins_for(gates);
    assert_eq!(
        plugins.multi_point.enabled.last().map(|p| p.name.as_str()),
        Some("GangScheduling")
    );
}
