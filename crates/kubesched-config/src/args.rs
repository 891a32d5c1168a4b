//! Typed args of the in-tree plugins (`kubescheduler.config.k8s.io/v1` `*Args` kinds).
//!
//! Each type decodes strictly from camelCase JSON (unknown fields are errors), its
//! [`Default`] is what kube-scheduler's v1 defaulting makes of empty args, and
//! [`PluginArgs::validate`] mirrors `validation_pluginargs.go` with Go's wording.
//!
//! ```
//! use kubesched_config::args::{NodeResourcesFitArgs, PluginArgs, ScoringStrategyType};
//! let args: NodeResourcesFitArgs = kubesched_config::decode_args(
//!     "NodeResourcesFit",
//!     &serde_json::json!({"scoringStrategy": {"type": "MostAllocated"}}),
//! ).unwrap();
//! assert_eq!(args.scoring_strategy.type_, ScoringStrategyType::MostAllocated);
//! assert!(args.validate().is_empty());
//! ```

use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::decode::{index, join};
use crate::error::{FieldError, go_quote};
use crate::k8s_names::{label_value_errors, qualified_name_errors};

/// `MaxCustomPriorityScore`: the highest score of a utilization shape point.
pub const MAX_CUSTOM_PRIORITY_SCORE: i32 = 10;

/// Behaviour shared by every in-tree args type.
pub trait PluginArgs: Serialize + DeserializeOwned + Default {
    /// The plugin these args belong to; the args kind is this name plus `Args`.
    const PLUGIN: &'static str;

    /// kube-scheduler's v1 defaulting (`SetDefaults_<Kind>`) applied to decoded args.
    fn apply_defaults(&mut self) {}

    /// Validation findings, with field paths under `path` (e.g. `profiles[0].pluginConfig[1].args`).
    fn validate_at(&self, path: &str) -> Vec<FieldError>;

    /// Validation findings with paths relative to the args object.
    fn validate(&self) -> Vec<FieldError> {
        self.validate_at("")
    }
}

/// A resource name and its weight (`ResourceSpec`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct ResourceSpec {
    /// Resource name (`cpu`, `memory`, `example.com/gpu`, ...).
    pub name: String,
    /// Weight; v1 defaulting turns 0 into 1.
    pub weight: i64,
}

impl ResourceSpec {
    /// A resource spec.
    pub fn new(name: &str, weight: i64) -> Self {
        ResourceSpec {
            name: name.to_string(),
            weight,
        }
    }
}

fn default_resources() -> Vec<ResourceSpec> {
    vec![ResourceSpec::new("cpu", 1), ResourceSpec::new("memory", 1)]
}

/// One point of a scoring function shape (`UtilizationShapePoint`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct UtilizationShapePoint {
    /// Utilization, 0..=100.
    pub utilization: i32,
    /// Score, 0..=10.
    pub score: i32,
}

/// `ScoringStrategyType` of NodeResourcesFit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ScoringStrategyType {
    /// Prefer nodes with the least allocated resources (the default).
    #[default]
    LeastAllocated,
    /// Prefer nodes with the most allocated resources.
    MostAllocated,
    /// Score by a custom shape of requested/capacity.
    RequestedToCapacityRatio,
}

const SCORING_STRATEGY_TYPES: &[&str] = &[
    "LeastAllocated",
    "MostAllocated",
    "RequestedToCapacityRatio",
];

impl ScoringStrategyType {
    /// The Go name.
    pub fn as_str(self) -> &'static str {
        match self {
            ScoringStrategyType::LeastAllocated => "LeastAllocated",
            ScoringStrategyType::MostAllocated => "MostAllocated",
            ScoringStrategyType::RequestedToCapacityRatio => "RequestedToCapacityRatio",
        }
    }
}

fn unsupported(value: &str, supported: &[&str]) -> String {
    let quoted: Vec<String> = supported.iter().map(|s| go_quote(s)).collect();
    format!(
        "Unsupported value: {}: supported values: {}",
        go_quote(value),
        quoted.join(", ")
    )
}

impl Serialize for ScoringStrategyType {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ScoringStrategyType {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        match s.as_str() {
            "LeastAllocated" => Ok(ScoringStrategyType::LeastAllocated),
            "MostAllocated" => Ok(ScoringStrategyType::MostAllocated),
            "RequestedToCapacityRatio" => Ok(ScoringStrategyType::RequestedToCapacityRatio),
            other => Err(serde::de::Error::custom(unsupported(
                other,
                SCORING_STRATEGY_TYPES,
            ))),
        }
    }
}

/// `RequestedToCapacityRatioParam`: the shape of the RequestedToCapacityRatio strategy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct RequestedToCapacityRatioParam {
    /// Points of the shape, utilization strictly increasing.
    pub shape: Vec<UtilizationShapePoint>,
}

/// `ScoringStrategy` of NodeResourcesFit. When given, `type` is required (Go does not
/// default it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScoringStrategy {
    /// Which strategy.
    #[serde(rename = "type")]
    pub type_: ScoringStrategyType,
    /// Resources and weights; defaulted to cpu 1, memory 1 when empty.
    #[serde(default)]
    pub resources: Vec<ResourceSpec>,
    /// Shape for RequestedToCapacityRatio.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_to_capacity_ratio: Option<RequestedToCapacityRatioParam>,
}

impl Default for ScoringStrategy {
    fn default() -> Self {
        ScoringStrategy {
            type_: ScoringStrategyType::LeastAllocated,
            resources: default_resources(),
            requested_to_capacity_ratio: None,
        }
    }
}

/// `NodeResourcesFitArgs`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct NodeResourcesFitArgs {
    /// Resources the filter ignores (extended resources only).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ignored_resources: Vec<String>,
    /// Resource groups (prefix before `/`) the filter ignores.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ignored_resource_groups: Vec<String>,
    /// Scoring strategy; LeastAllocated with cpu 1, memory 1 when absent.
    pub scoring_strategy: ScoringStrategy,
}

fn validate_resources(resources: &[ResourceSpec], path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, r) in resources.iter().enumerate() {
        if r.weight <= 0 || r.weight > 100 {
            errs.push(FieldError::invalid_raw(
                join(&index(path, i), "weight"),
                r.weight.to_string(),
                format!("resource weight of {} not in valid range (0, 100]", r.name),
            ));
        }
    }
    errs
}

fn shape_json(shape: &[UtilizationShapePoint]) -> String {
    serde_json::to_string(shape).unwrap_or_default()
}

fn validate_function_shape(shape: &[UtilizationShapePoint], path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if shape.is_empty() {
        errs.push(FieldError::required(
            path,
            "at least one point must be specified",
        ));
        return errs;
    }
    for i in 1..shape.len() {
        if shape[i - 1].utilization >= shape[i].utilization {
            errs.push(FieldError::invalid_raw(
                join(&index(path, i), "utilization"),
                shape[i].utilization.to_string(),
                "values must be sorted in increasing order",
            ));
            break;
        }
    }
    for (i, p) in shape.iter().enumerate() {
        if !(0..=100).contains(&p.utilization) {
            errs.push(FieldError::invalid_raw(
                join(&index(path, i), "utilization"),
                p.utilization.to_string(),
                "not in valid range [0, 100]",
            ));
        }
        if !(0..=MAX_CUSTOM_PRIORITY_SCORE).contains(&p.score) {
            errs.push(FieldError::invalid_raw(
                join(&index(path, i), "score"),
                p.score.to_string(),
                format!("not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}]"),
            ));
        }
    }
    errs
}

fn validate_label_name(name: &str, path: &str) -> Vec<FieldError> {
    qualified_name_errors(name)
        .into_iter()
        .map(|m| FieldError::invalid_str(path, name, m))
        .collect()
}

impl PluginArgs for NodeResourcesFitArgs {
    const PLUGIN: &'static str = "NodeResourcesFit";

    fn apply_defaults(&mut self) {
        let s = &mut self.scoring_strategy;
        if s.resources.is_empty() {
            s.resources = default_resources();
        }
        for r in &mut s.resources {
            if r.weight == 0 {
                r.weight = 1;
            }
        }
    }

    fn validate_at(&self, path: &str) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let res_path = join(path, "ignoredResources");
        for (i, r) in self.ignored_resources.iter().enumerate() {
            errs.extend(validate_label_name(r, &index(&res_path, i)));
        }
        let group_path = join(path, "ignoredResourceGroups");
        for (i, g) in self.ignored_resource_groups.iter().enumerate() {
            let p = index(&group_path, i);
            if g.contains('/') {
                errs.push(FieldError::invalid_str(
                    &p,
                    g,
                    "resource group name can't contain '/'",
                ));
            }
            errs.extend(validate_label_name(g, &p));
        }
        let strategy_path = join(path, "scoringStrategy");
        let s = &self.scoring_strategy;
        errs.extend(validate_resources(
            &s.resources,
            &join(&strategy_path, "resources"),
        ));
        if let Some(r) = &s.requested_to_capacity_ratio {
            // Go reports this under scoringStrategy.shape; the real field path is used here.
            errs.extend(validate_function_shape(
                &r.shape,
                &join(&join(&strategy_path, "requestedToCapacityRatio"), "shape"),
            ));
        }
        errs
    }
}

/// `NodeResourcesBalancedAllocationArgs`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct NodeResourcesBalancedAllocationArgs {
    /// Resources to balance; cpu and memory (weight 1) when empty.
    pub resources: Vec<ResourceSpec>,
}

impl Default for NodeResourcesBalancedAllocationArgs {
    fn default() -> Self {
        NodeResourcesBalancedAllocationArgs {
            resources: default_resources(),
        }
    }
}

impl PluginArgs for NodeResourcesBalancedAllocationArgs {
    const PLUGIN: &'static str = "NodeResourcesBalancedAllocation";

    fn apply_defaults(&mut self) {
        if self.resources.is_empty() {
            self.resources = default_resources();
            return;
        }
        for r in &mut self.resources {
            if r.weight == 0 {
                r.weight = 1;
            }
        }
    }

    fn validate_at(&self, path: &str) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let res_path = join(path, "resources");
        for (i, r) in self.resources.iter().enumerate() {
            let p = index(&res_path, i);
            if !seen.insert(r.name.as_str()) {
                errs.push(FieldError::duplicate(join(&p, "name"), &r.name));
            }
            if r.weight != 1 {
                errs.push(FieldError::invalid_raw(
                    join(&p, "weight"),
                    r.weight.to_string(),
                    "must be 1",
                ));
            }
        }
        errs
    }
}

/// `NodeSelectorRequirement` (a match expression or match field).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct NodeSelectorRequirement {
    /// Label key (or field name for matchFields).
    pub key: String,
    /// `In`, `NotIn`, `Exists`, `DoesNotExist`, `Gt` or `Lt`.
    pub operator: String,
    /// Values.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<String>,
}

/// `NodeSelectorTerm`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct NodeSelectorTerm {
    /// Requirements on node labels.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub match_expressions: Vec<NodeSelectorRequirement>,
    /// Requirements on node fields (`metadata.name`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub match_fields: Vec<NodeSelectorRequirement>,
}

/// `NodeSelector`: terms ORed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct NodeSelector {
    /// The terms.
    pub node_selector_terms: Vec<NodeSelectorTerm>,
}

/// `PreferredSchedulingTerm`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct PreferredSchedulingTerm {
    /// Weight, 1..=100.
    pub weight: i32,
    /// The term.
    pub preference: NodeSelectorTerm,
}

/// `NodeAffinity` (core/v1), as used by `NodeAffinityArgs.addedAffinity`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct NodeAffinity {
    /// Hard requirement.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub required_during_scheduling_ignored_during_execution: Option<NodeSelector>,
    /// Soft preferences.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub preferred_during_scheduling_ignored_during_execution: Vec<PreferredSchedulingTerm>,
}

/// `NodeAffinityArgs`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct NodeAffinityArgs {
    /// Affinity every pod must satisfy in addition to its own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub added_affinity: Option<NodeAffinity>,
}

const SELECTOR_OPERATORS: &[&str] = &["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"];
const FIELD_SELECTOR_OPERATORS: &[&str] = &["In", "NotIn"];

/// A string list as Go's `%#v` prints it (`[]string{"a", "b"}`), as field errors show it.
fn values_json(values: &[String]) -> String {
    let quoted: Vec<String> = values.iter().map(|v| go_quote(v)).collect();
    format!("[]string{{{}}}", quoted.join(", "))
}

fn validate_requirements(reqs: &[NodeSelectorRequirement], path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, r) in reqs.iter().enumerate() {
        let p = index(path, i);
        if !SELECTOR_OPERATORS.contains(&r.operator.as_str()) {
            errs.push(FieldError::not_supported(
                join(&p, "operator"),
                &r.operator,
                SELECTOR_OPERATORS,
            ));
            continue;
        }
        let key_path = join(&p, "key");
        let key_errs = qualified_name_errors(&r.key);
        if !key_errs.is_empty() {
            errs.push(FieldError::invalid_str(
                key_path,
                &r.key,
                key_errs.join("; "),
            ));
        }
        let values_path = join(&p, "values");
        match r.operator.as_str() {
            "In" | "NotIn" if r.values.is_empty() => errs.push(FieldError::invalid_raw(
                &values_path,
                values_json(&r.values),
                "for 'in', 'notin' operators, values set can't be empty",
            )),
            "Exists" | "DoesNotExist" if !r.values.is_empty() => {
                errs.push(FieldError::invalid_raw(
                    &values_path,
                    values_json(&r.values),
                    "values set must be empty for exists and does not exist",
                ))
            }
            "Gt" | "Lt" => {
                if r.values.len() != 1 {
                    errs.push(FieldError::invalid_raw(
                        &values_path,
                        values_json(&r.values),
                        "for 'Gt', 'Lt' operators, exactly one value is required",
                    ));
                }
                for (j, v) in r.values.iter().enumerate() {
                    if v.parse::<i64>().is_err() {
                        errs.push(FieldError::invalid_str(
                            index(&values_path, j),
                            v,
                            "for 'Gt', 'Lt' operators, the value must be an integer",
                        ));
                    }
                }
            }
            _ => {}
        }
        for (j, v) in r.values.iter().enumerate() {
            let msgs = label_value_errors(v);
            if !msgs.is_empty() {
                errs.push(FieldError::invalid_str(
                    index(&values_path, j),
                    v,
                    msgs.join("; "),
                ));
            }
        }
    }
    errs
}

fn validate_field_requirements(reqs: &[NodeSelectorRequirement], path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, r) in reqs.iter().enumerate() {
        let p = index(path, i);
        if r.values.len() != 1 {
            errs.push(FieldError::invalid_raw(
                join(&p, "values"),
                values_json(&r.values),
                "must have one element",
            ));
            continue;
        }
        if !FIELD_SELECTOR_OPERATORS.contains(&r.operator.as_str()) {
            errs.push(FieldError::not_supported(
                join(&p, "operator"),
                &r.operator,
                FIELD_SELECTOR_OPERATORS,
            ));
        }
    }
    errs
}

fn validate_term(term: &NodeSelectorTerm, path: &str) -> Vec<FieldError> {
    let mut errs = validate_requirements(&term.match_expressions, &join(path, "matchExpressions"));
    errs.extend(validate_field_requirements(
        &term.match_fields,
        &join(path, "matchFields"),
    ));
    errs
}

impl PluginArgs for NodeAffinityArgs {
    const PLUGIN: &'static str = "NodeAffinity";

    fn validate_at(&self, path: &str) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let Some(a) = &self.added_affinity else {
            return errs;
        };
        let base = join(path, "addedAffinity");
        if let Some(ns) = &a.required_during_scheduling_ignored_during_execution {
            let terms_path = join(
                &join(&base, "requiredDuringSchedulingIgnoredDuringExecution"),
                "nodeSelectorTerms",
            );
            for (i, t) in ns.node_selector_terms.iter().enumerate() {
                errs.extend(validate_term(t, &index(&terms_path, i)));
            }
        }
        let pref_path = join(&base, "preferredDuringSchedulingIgnoredDuringExecution");
        for (i, t) in a
            .preferred_during_scheduling_ignored_during_execution
            .iter()
            .enumerate()
        {
            errs.extend(validate_term(
                &t.preference,
                &join(&index(&pref_path, i), "preference"),
            ));
        }
        errs
    }
}

/// `TopologySpreadConstraint` (core/v1), as used by `PodTopologySpreadArgs.defaultConstraints`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct TopologySpreadConstraint {
    /// Maximum skew, > 0.
    pub max_skew: i32,
    /// Node label key of the topology domain.
    pub topology_key: String,
    /// `DoNotSchedule` or `ScheduleAnyway`.
    pub when_unsatisfiable: String,
    /// Must be absent in default constraints (it is deduced per pod).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<serde_json::Value>,
    /// Minimum number of domains.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_domains: Option<i32>,
    /// `Honor` or `Ignore`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_affinity_policy: Option<String>,
    /// `Honor` or `Ignore`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_taints_policy: Option<String>,
    /// Pod label keys to match on.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub match_label_keys: Vec<String>,
}

/// `PodTopologySpreadConstraintsDefaulting`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum DefaultingType {
    /// kube-scheduler's built-in default constraints.
    #[default]
    System,
    /// The constraints in `defaultConstraints`.
    List,
}

impl Serialize for DefaultingType {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(match self {
            DefaultingType::System => "System",
            DefaultingType::List => "List",
        })
    }
}

impl<'de> Deserialize<'de> for DefaultingType {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        match s.as_str() {
            // Go defaults an empty value to System.
            "System" | "" => Ok(DefaultingType::System),
            "List" => Ok(DefaultingType::List),
            other => Err(serde::de::Error::custom(unsupported(
                other,
                &["System", "List"],
            ))),
        }
    }
}

/// `PodTopologySpreadArgs`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct PodTopologySpreadArgs {
    /// Constraints for pods that define none (requires `defaultingType: List`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub default_constraints: Vec<TopologySpreadConstraint>,
    /// Where default constraints come from.
    pub defaulting_type: DefaultingType,
}

impl PluginArgs for PodTopologySpreadArgs {
    const PLUGIN: &'static str = "PodTopologySpread";

    fn validate_at(&self, path: &str) -> Vec<FieldError> {
        let mut errs = Vec::new();
        if self.defaulting_type == DefaultingType::System && !self.default_constraints.is_empty() {
            errs.push(FieldError::invalid_str(
                join(path, "defaultingType"),
                "System",
                "when .defaultConstraints are not empty",
            ));
        }
        let dc_path = join(path, "defaultConstraints");
        for (i, c) in self.default_constraints.iter().enumerate() {
            let p = index(&dc_path, i);
            if c.max_skew <= 0 {
                errs.push(FieldError::invalid_raw(
                    join(&p, "maxSkew"),
                    c.max_skew.to_string(),
                    "not in valid range (0, inf)",
                ));
            }
            let key_path = join(&p, "topologyKey");
            if c.topology_key.is_empty() {
                errs.push(FieldError::required(key_path, "can not be empty"));
            } else {
                errs.extend(validate_label_name(&c.topology_key, &key_path));
            }
            let wu_path = join(&p, "whenUnsatisfiable");
            if c.when_unsatisfiable.is_empty() {
                errs.push(FieldError::required(wu_path, "can not be empty"));
            } else if !["DoNotSchedule", "ScheduleAnyway"].contains(&c.when_unsatisfiable.as_str())
            {
                errs.push(FieldError::not_supported(
                    wu_path,
                    &c.when_unsatisfiable,
                    &["DoNotSchedule", "ScheduleAnyway"],
                ));
            }
            if c.label_selector.is_some() {
                errs.push(FieldError::forbidden(
                    join(&p, "labelSelector"),
                    "constraint must not define a selector, as they deduced for each pod",
                ));
            }
            let repeated = self.default_constraints[..i].iter().any(|o| {
                o.topology_key == c.topology_key && o.when_unsatisfiable == c.when_unsatisfiable
            });
            if repeated {
                errs.push(FieldError::duplicate(
                    p,
                    &format!("{{{}, {}}}", c.topology_key, c.when_unsatisfiable),
                ));
            }
        }
        errs
    }
}

/// `InterPodAffinityArgs`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct InterPodAffinityArgs {
    /// Score weight of existing pods' required affinity terms matching the incoming pod (0..=100, default 1).
    pub hard_pod_affinity_weight: i32,
    /// Ignore existing pods' preferred terms unless the incoming pod has affinity terms.
    pub ignore_preferred_terms_of_existing_pods: bool,
}

impl Default for InterPodAffinityArgs {
    fn default() -> Self {
        InterPodAffinityArgs {
            hard_pod_affinity_weight: 1,
            ignore_preferred_terms_of_existing_pods: false,
        }
    }
}

impl PluginArgs for InterPodAffinityArgs {
    const PLUGIN: &'static str = "InterPodAffinity";

    fn validate_at(&self, path: &str) -> Vec<FieldError> {
        let w = self.hard_pod_affinity_weight;
        if !(0..=100).contains(&w) {
            return vec![FieldError::invalid_raw(
                join(path, "hardPodAffinityWeight"),
                w.to_string(),
                "not in valid range [0, 100]",
            )];
        }
        Vec::new()
    }
}

/// `DefaultPreemptionArgs`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct DefaultPreemptionArgs {
    /// Minimum candidates as a percentage of the nodes (0..=100, default 10).
    pub min_candidate_nodes_percentage: i32,
    /// Minimum number of candidates (>= 0, default 100).
    pub min_candidate_nodes_absolute: i32,
}

impl Default for DefaultPreemptionArgs {
    fn default() -> Self {
        DefaultPreemptionArgs {
            min_candidate_nodes_percentage: 10,
            min_candidate_nodes_absolute: 100,
        }
    }
}

impl PluginArgs for DefaultPreemptionArgs {
    const PLUGIN: &'static str = "DefaultPreemption";

    fn validate_at(&self, path: &str) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let pct_path = join(path, "minCandidateNodesPercentage");
        let abs_path = join(path, "minCandidateNodesAbsolute");
        let pct = self.min_candidate_nodes_percentage;
        let abs = self.min_candidate_nodes_absolute;
        if !(0..=100).contains(&pct) {
            errs.push(FieldError::invalid_raw(
                &pct_path,
                pct.to_string(),
                "not in valid range [0, 100]",
            ));
        }
        if abs < 0 {
            errs.push(FieldError::invalid_raw(
                &abs_path,
                abs.to_string(),
                "not in valid range [0, inf)",
            ));
        }
        if pct == 0 && abs == 0 {
            errs.push(FieldError::invalid_raw(
                &pct_path,
                "0",
                "cannot be zero at the same time as minCandidateNodesAbsolute",
            ));
            errs.push(FieldError::invalid_raw(
                &abs_path,
                "0",
                "cannot be zero at the same time as minCandidateNodesPercentage",
            ));
        }
        errs
    }
}

/// `VolumeBindingArgs`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct VolumeBindingArgs {
    /// Volume binding timeout in seconds (>= 0, default 600).
    pub bind_timeout_seconds: i64,
    /// Storage capacity scoring shape; only valid with the StorageCapacityScoring feature
    /// gate, which is off by default in v1.35, so a non-empty shape is rejected.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub shape: Vec<UtilizationShapePoint>,
}

impl Default for VolumeBindingArgs {
    fn default() -> Self {
        VolumeBindingArgs {
            bind_timeout_seconds: 600,
            shape: Vec::new(),
        }
    }
}

impl PluginArgs for VolumeBindingArgs {
    const PLUGIN: &'static str = "VolumeBinding";

    fn validate_at(&self, path: &str) -> Vec<FieldError> {
        let mut errs = Vec::new();
        if self.bind_timeout_seconds < 0 {
            errs.push(FieldError::invalid_raw(
                join(path, "bindTimeoutSeconds"),
                self.bind_timeout_seconds.to_string(),
                "invalid BindTimeoutSeconds, should not be a negative value",
            ));
        }
        if !self.shape.is_empty() {
            errs.push(FieldError::invalid_raw(
                join(path, "shape"),
                shape_json(&self.shape),
                "unexpected field `shape`, remove it or turn on the feature gate StorageCapacityScoring",
            ));
        }
        errs
    }
}

/// `DynamicResourcesArgs` (durations written as Go duration strings, e.g. `10s`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct DynamicResourcesArgs {
    /// Per-node filter time limit; zero disables it (default 10s).
    #[serde(
        with = "crate::duration::opt_serde",
        skip_serializing_if = "Option::is_none"
    )]
    pub filter_timeout: Option<Duration>,
    /// How long PreBind waits for device binding conditions, at least 1s (default 10m).
    #[serde(
        with = "crate::duration::opt_serde",
        skip_serializing_if = "Option::is_none"
    )]
    pub binding_timeout: Option<Duration>,
}

impl Default for DynamicResourcesArgs {
    fn default() -> Self {
        DynamicResourcesArgs {
            filter_timeout: Some(Duration::from_secs(10)),
            binding_timeout: Some(Duration::from_secs(600)),
        }
    }
}

impl PluginArgs for DynamicResourcesArgs {
    const PLUGIN: &'static str = "DynamicResources";

    fn validate_at(&self, path: &str) -> Vec<FieldError> {
        let mut errs = Vec::new();
        if let Some(b) = self.binding_timeout
            && b < Duration::from_secs(1)
        {
            errs.push(FieldError::invalid_raw(
                join(path, "bindingTimeout"),
                crate::duration::format_go_duration(crate::duration::from_std(b)),
                "must be at least 1 second",
            ));
        }
        errs
    }
}

#[cfg(test)]
mod tests;
