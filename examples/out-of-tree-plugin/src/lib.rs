//! Two out-of-tree plugins for kubesched:
//!
//! - `ZoneAllowlist` (Filter): a pod annotated `example.com/zones: "a,b"` may only go to
//!   nodes whose `topology.kubernetes.io/zone` label is one of those zones; pods without
//!   the annotation may go anywhere.
//! - `PreferSsd` (Score): nodes labelled `disktype=ssd` score `ssdScore` (its args,
//!   0 to 100, default 100), the others 0.
//!
//! Each has a factory of the shape `kubesched::cli::Command::with_plugin` takes, which
//! builds the plugin from its `pluginConfig` args.

use std::sync::Arc;

use kubesched::framework::{
    ActionType, ClusterEvent, Code, CycleState, EventResource, FilterPlugin, Handle, NodeInfo,
    Plugin, PluginError, PodInfo, ScorePlugin, Status, extension_points,
};
use serde::Deserialize;

/// The annotation listing the zones a pod may run in, comma-separated.
pub const ZONES_ANNOTATION: &str = "example.com/zones";
/// The node label naming its zone.
pub const ZONE_LABEL: &str = "topology.kubernetes.io/zone";

/// Keeps pods in the zones their annotation allows.
pub struct ZoneAllowlist;

impl Plugin for ZoneAllowlist {
    fn name(&self) -> &str {
        "ZoneAllowlist"
    }
    extension_points!(Filter);
    // A pod this plugin rejected can only fit once a node is added or relabelled.
    fn events_to_register(&self) -> Vec<ClusterEvent> {
        vec![ClusterEvent::new(
            EventResource::Node,
            ActionType::ADD | ActionType::UPDATE_NODE_LABEL,
        )]
    }
}

impl FilterPlugin for ZoneAllowlist {
    fn filter(&self, _: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        let Some(zones) = pod.annotation(ZONES_ANNOTATION) else {
            return Status::success();
        };
        let zone = node.label(ZONE_LABEL);
        if zones.split(',').map(str::trim).any(|z| Some(z) == zone) {
            Status::success()
        } else {
            Status::new(
                Code::UnschedulableAndUnresolvable,
                "node(s) were not in the pod's example.com/zones",
            )
        }
    }
}

/// `ZoneAllowlist`'s factory (it takes no args).
pub fn zone_allowlist(
    _args: Option<&serde_json::Value>,
    _: &Handle,
) -> Result<Arc<dyn Plugin>, PluginError> {
    Ok(Arc::new(ZoneAllowlist))
}

/// Prefers SSD nodes.
pub struct PreferSsd {
    ssd_score: i64,
}

/// `PreferSsd`'s args, decoded strictly: an unknown field is an error naming it.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct PreferSsdArgs {
    ssd_score: Option<i64>,
}

impl Plugin for PreferSsd {
    fn name(&self) -> &str {
        "PreferSsd"
    }
    extension_points!(Score);
}

impl ScorePlugin for PreferSsd {
    fn score(&self, _: &CycleState, _: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        Ok(if node.label("disktype") == Some("ssd") {
            self.ssd_score
        } else {
            0
        })
    }
}

/// `PreferSsd`'s factory: `ssdScore` must be between 0 and 100.
pub fn prefer_ssd(
    args: Option<&serde_json::Value>,
    _: &Handle,
) -> Result<Arc<dyn Plugin>, PluginError> {
    let args: PreferSsdArgs = kubesched::plugins::decode_args("PreferSsd", args)?;
    let ssd_score = args.ssd_score.unwrap_or(100);
    if !(0..=100).contains(&ssd_score) {
        return Err(PluginError::new(format!(
            "ssdScore: must be between 0 and 100, got {ssd_score}"
        )));
    }
    Ok(Arc::new(PreferSsd { ssd_score }))
}
