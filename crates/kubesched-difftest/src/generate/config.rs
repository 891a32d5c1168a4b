//! The KubeSchedulerConfiguration of a generated scenario: one or two profiles over the
//! default plugin set, each re-weighing or disabling Score plugins, disabling a Filter
//! plugin, going through `multiPoint` (a weight, a plugin disabled everywhere, or the
//! core set alone after `'*'`), and plugin args: NodeResourcesFit's scoring strategy and
//! ignored resources, PodTopologySpread's default constraints (List or System),
//! InterPodAffinity's weights, NodeAffinity's added affinity and
//! NodeResourcesBalancedAllocation's resources. Only what kube-scheduler's validation
//! accepts (a refused file is counted, not compared).

use serde_json::{Value, json};

use super::GPU;
use crate::rng::Rng;

/// The second profile's scheduler name (pending pods name it now and then).
pub(super) const SECOND_PROFILE: &str = "other-scheduler";

const SCORE_PLUGINS: &[&str] = &[
    "TaintToleration",
    "NodeAffinity",
    "NodeResourcesFit",
    "NodeResourcesBalancedAllocation",
    "ImageLocality",
    "InterPodAffinity",
    "PodTopologySpread",
    "DynamicResources",
];
const FILTER_PLUGINS: &[&str] = &[
    "TaintToleration",
    "NodeAffinity",
    "NodePorts",
    "PodTopologySpread",
    "InterPodAffinity",
    "NodeUnschedulable",
    "VolumeBinding",
    "VolumeZone",
    "NodeVolumeLimits",
    "VolumeRestrictions",
];
/// Plugins that may be switched off at every extension point at once.
const MULTIPOINT_OFF: &[&str] = &[
    "NodeResourcesBalancedAllocation",
    "PodTopologySpread",
    "InterPodAffinity",
    "TaintToleration",
    "ImageLocality",
    "NodeAffinity",
    "VolumeBinding",
    "DynamicResources",
];

fn plugin_args(r: &mut Rng) -> Vec<Value> {
    let mut out = Vec::new();
    if r.chance(40) {
        let mut args = json!({});
        if r.chance(75) {
            args["scoringStrategy"] = match r.below(3) {
                0 => json!({"type": "MostAllocated"}),
                1 => json!({"type": "LeastAllocated", "resources": [
                    {"name": "cpu", "weight": r.range(1, 3)}, {"name": "memory", "weight": 1},
                    {"name": GPU, "weight": 2}]}),
                _ => {
                    json!({"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {"shape": [
                    {"utilization": 0, "score": *r.pick(&[0, 10])},
                    {"utilization": *r.pick(&[50, 100]), "score": *r.pick(&[0, 5, 10])}]}})
                }
            };
        }
        if r.chance(20) {
            args["ignoredResources"] = json!([GPU]);
        } else if r.chance(15) {
            args["ignoredResourceGroups"] = json!(["example.com"]);
        }
        out.push(json!({"name": "NodeResourcesFit", "args": args}));
    }
    if r.chance(20) {
        let args = if r.chance(30) {
            json!({"defaultingType": "System"})
        } else {
            let constraints: Vec<Value> = (0..r.range(0, 2))
                .map(|_| {
                    json!({"maxSkew": r.range(1, 3),
                           "topologyKey": r.pick(&["topology.kubernetes.io/zone", "kubernetes.io/hostname"]),
                           "whenUnsatisfiable": r.pick(&["ScheduleAnyway", "DoNotSchedule"])})
                })
                .collect();
            json!({"defaultingType": "List", "defaultConstraints": constraints})
        };
        out.push(json!({"name": "PodTopologySpread", "args": args}));
    }
    if r.chance(15) {
        out.push(json!({"name": "InterPodAffinity", "args": {
            "hardPodAffinityWeight": r.pick(&[0, 1, 5, 100]),
            "ignorePreferredTermsOfExistingPods": r.chance(50)}}));
    }
    if r.chance(12) {
        let added = if r.chance(50) {
            json!({"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}]}})
        } else {
            json!({"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": r.pick(&[1, 100]), "preference": {"matchExpressions": [
                    {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["zone-a"]}]}}]})
        };
        out.push(json!({"name": "NodeAffinity", "args": {"addedAffinity": added}}));
    }
    if r.chance(12) {
        out.push(json!({"name": "NodeResourcesBalancedAllocation", "args": {"resources": [
            {"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}, {"name": GPU, "weight": 1}]}}));
    }
    out
}

fn profile(r: &mut Rng, name: &str) -> Value {
    let mut plugins = json!({});
    if r.chance(12) {
        // The core set alone, through multiPoint.
        let mut enabled: Vec<Value> = [
            "PrioritySort",
            "NodeUnschedulable",
            "NodeName",
            "TaintToleration",
            "NodeResourcesFit",
            "ImageLocality",
            "DefaultBinder",
        ]
        .iter()
        .map(|p| json!({"name": p}))
        .collect();
        enabled[3]["weight"] = json!(r.range(1, 3));
        if r.chance(50) {
            enabled.insert(5, json!({"name": "DefaultPreemption"}));
        }
        plugins["multiPoint"] = json!({"enabled": enabled, "disabled": [{"name": "*"}]});
        return json!({"schedulerName": name, "plugins": plugins, "pluginConfig": plugin_args(r)});
    }
    let mut score_enabled = Vec::new();
    let mut score_disabled = Vec::new();
    for p in SCORE_PLUGINS {
        match r.below(7) {
            0 => score_enabled.push(json!({"name": p, "weight": r.pick(&[0, 1, 2, 5, 100])})),
            1 => score_disabled.push(json!({"name": p})),
            _ => {}
        }
    }
    if !score_enabled.is_empty() || !score_disabled.is_empty() {
        plugins["score"] = json!({"enabled": score_enabled, "disabled": score_disabled});
    }
    if r.chance(25) {
        plugins["filter"] = json!({"disabled": [{"name": r.pick(FILTER_PLUGINS)}]});
    }
    if r.chance(20) {
        plugins["multiPoint"] = if r.chance(50) {
            json!({"disabled": [{"name": r.pick(MULTIPOINT_OFF)}]})
        } else {
            json!({"enabled": [{"name": r.pick(SCORE_PLUGINS), "weight": r.range(1, 4)}]})
        };
    }
    let mut p = json!({"schedulerName": name, "plugins": plugins});
    let args = plugin_args(r);
    if !args.is_empty() {
        p["pluginConfig"] = json!(args);
    }
    p
}

/// A configuration with one profile, or two (the second named [`SECOND_PROFILE`]).
pub(super) fn config(r: &mut Rng) -> Value {
    let mut profiles = vec![profile(r, "default-scheduler")];
    if r.chance(30) {
        profiles.push(profile(r, SECOND_PROFILE));
    }
    json!({
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": profiles,
    })
}
