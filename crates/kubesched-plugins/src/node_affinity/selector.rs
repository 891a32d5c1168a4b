//! Node selectors as component-helpers' `nodeaffinity` evaluates them: parsed label
//! and field requirements, terms (ORed, requirements ANDed), `NodeSelector`, the
//! weighted preferred terms, the pod's required node affinity, and the name and value
//! checks that decide whether a requirement parses.

use k8s_openapi::api::core::v1 as core;
use kubesched_config::args;
use kubesched_framework::{NodeInfo, PodInfo};

use super::{OBJECT_NAME_FIELD, required_terms};

/// One parsed label requirement of a `matchExpressions` list.
#[derive(Clone, Debug, PartialEq, Eq)]
enum LabelRequirement {
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    DoesNotExist(String),
    Gt(String, i64),
    Lt(String, i64),
}

impl LabelRequirement {
    fn matches(&self, node: &NodeInfo) -> bool {
        match self {
            LabelRequirement::In(k, vs) => node.label(k).is_some_and(|v| vs.iter().any(|x| x == v)),
            LabelRequirement::NotIn(k, vs) => {
                node.label(k).is_none_or(|v| !vs.iter().any(|x| x == v))
            }
            LabelRequirement::Exists(k) => node.label(k).is_some(),
            LabelRequirement::DoesNotExist(k) => node.label(k).is_none(),
            LabelRequirement::Gt(k, n) => node
                .label(k)
                .and_then(|v| v.parse::<i64>().ok())
                .is_some_and(|v| v > *n),
            LabelRequirement::Lt(k, n) => node
                .label(k)
                .and_then(|v| v.parse::<i64>().ok())
                .is_some_and(|v| v < *n),
        }
    }

    /// For `--explain`: the requirement and what the node has, e.g. "zone In (a, b):
    /// the node has zone=c".
    fn explain(&self, node: &NodeInfo) -> String {
        let (key, wanted) = match self {
            LabelRequirement::In(k, vs) => (k, format!("{k} In ({})", vs.join(", "))),
            LabelRequirement::NotIn(k, vs) => (k, format!("{k} NotIn ({})", vs.join(", "))),
            LabelRequirement::Exists(k) => (k, format!("{k} Exists")),
            LabelRequirement::DoesNotExist(k) => (k, format!("{k} DoesNotExist")),
            LabelRequirement::Gt(k, n) => (k, format!("{k} Gt {n}")),
            LabelRequirement::Lt(k, n) => (k, format!("{k} Lt {n}")),
        };
        format!("{wanted}: {}", node_has(node, key))
    }

    /// Parses one requirement as apimachinery's `labels.NewRequirement` does; `None` on a
    /// parse error.
    fn parse(key: &str, operator: &str, values: &[String]) -> Option<LabelRequirement> {
        if !is_qualified_name(key) || !values.iter().all(|v| is_label_value(v)) {
            return None;
        }
        let key = key.to_string();
        let int_value = || match values {
            [v] => v.parse::<i64>().ok(),
            _ => None,
        };
        match operator {
            "In" if !values.is_empty() => Some(LabelRequirement::In(key, values.to_vec())),
            "NotIn" if !values.is_empty() => Some(LabelRequirement::NotIn(key, values.to_vec())),
            "Exists" if values.is_empty() => Some(LabelRequirement::Exists(key)),
            "DoesNotExist" if values.is_empty() => Some(LabelRequirement::DoesNotExist(key)),
            "Gt" => int_value().map(|n| LabelRequirement::Gt(key, n)),
            "Lt" => int_value().map(|n| LabelRequirement::Lt(key, n)),
            _ => None,
        }
    }
}

/// One parsed `matchFields` requirement: (field, value, `true` for `In`).
#[derive(Clone, Debug, PartialEq, Eq)]
struct FieldRequirement {
    field: String,
    value: String,
    equal: bool,
}

impl FieldRequirement {
    fn parse(key: &str, operator: &str, values: &[String]) -> Option<FieldRequirement> {
        let equal = match operator {
            "In" => true,
            "NotIn" => false,
            _ => return None,
        };
        match values {
            [v] => Some(FieldRequirement {
                field: key.to_string(),
                value: v.clone(),
                equal,
            }),
            _ => None,
        }
    }

    /// For `--explain`: the requirement and the node's name.
    fn explain(&self, node_name: &str) -> String {
        let op = if self.equal { "In" } else { "NotIn" };
        format!(
            "{} {op} ({}): the node is {node_name}",
            self.field, self.value
        )
    }

    fn matches(&self, node_name: &str) -> bool {
        // A node's only field is metadata.name; a missing field reads as "".
        let actual = if self.field == OBJECT_NAME_FIELD {
            node_name
        } else {
            ""
        };
        (actual == self.value) == self.equal
    }
}

/// A requirement as both API type families spell it: (key, operator, values).
type RawRequirement<'a> = (&'a str, &'a str, &'a [String]);

/// One parsed node selector term.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Term {
    /// `None` when the term has no `matchExpressions`.
    labels: Option<Vec<LabelRequirement>>,
    /// `None` when the term has no `matchFields`.
    fields: Option<Vec<FieldRequirement>>,
    /// Some requirement did not parse: the term matches no node.
    invalid: bool,
}

impl Term {
    fn parse<'a>(
        expressions: impl ExactSizeIterator<Item = RawRequirement<'a>>,
        fields: impl ExactSizeIterator<Item = RawRequirement<'a>>,
    ) -> Term {
        let mut invalid = false;
        let labels = (expressions.len() > 0).then(|| {
            expressions
                .filter_map(|(k, op, v)| {
                    let r = LabelRequirement::parse(k, op, v);
                    invalid |= r.is_none();
                    r
                })
                .collect()
        });
        let fields = (fields.len() > 0).then(|| {
            fields
                .filter_map(|(k, op, v)| {
                    let r = FieldRequirement::parse(k, op, v);
                    invalid |= r.is_none();
                    r
                })
                .collect()
        });
        Term {
            labels,
            fields,
            invalid,
        }
    }

    fn from_api(term: &core::NodeSelectorTerm) -> Term {
        Term::parse(
            raw_api(term.match_expressions.as_deref()),
            raw_api(term.match_fields.as_deref()),
        )
    }

    fn from_config(term: &args::NodeSelectorTerm) -> Term {
        Term::parse(
            raw_config(&term.match_expressions),
            raw_config(&term.match_fields),
        )
    }

    fn matches(&self, node: &NodeInfo) -> bool {
        self.matches_with_name(node, node.name())
    }

    /// Matches with `name` as the node's `metadata.name` (empty: the node has no
    /// fields, so `matchFields` are not checked).
    fn matches_with_name(&self, node: &NodeInfo, name: &str) -> bool {
        if self.invalid {
            return false;
        }
        let labels_match = self
            .labels
            .as_ref()
            .is_none_or(|l| l.iter().all(|r| r.matches(node)));
        // kube-scheduler only checks fields when the node has some (a name).
        let fields_match = name.is_empty()
            || self
                .fields
                .as_ref()
                .is_none_or(|f| f.iter().all(|r| r.matches(name)));
        labels_match && fields_match
    }
}

/// "the node has KEY=VALUE" or "the node has no label KEY".
fn node_has(node: &NodeInfo, key: &str) -> String {
    match node.label(key) {
        Some(v) => format!("the node has {key}={v}"),
        None => format!("the node has no label {key}"),
    }
}

impl Term {
    /// For `--explain`: the first requirement of the term the node fails.
    fn explain(&self, node: &NodeInfo) -> String {
        if self.invalid {
            return "a requirement does not parse, so the term matches no node".into();
        }
        let label = self
            .labels
            .iter()
            .flatten()
            .find(|r| !r.matches(node))
            .map(|r| r.explain(node));
        let field = self
            .fields
            .iter()
            .flatten()
            .find(|r| !r.matches(node.name()))
            .map(|r| r.explain(node.name()));
        label
            .or(field)
            .unwrap_or_else(|| "matches this node".into())
    }
}

fn raw_api(
    reqs: Option<&[core::NodeSelectorRequirement]>,
) -> impl ExactSizeIterator<Item = RawRequirement<'_>> {
    reqs.unwrap_or(&[]).iter().map(|r| {
        (
            r.key.as_str(),
            r.operator.as_str(),
            r.values.as_deref().unwrap_or(&[]),
        )
    })
}

fn raw_config(
    reqs: &[args::NodeSelectorRequirement],
) -> impl ExactSizeIterator<Item = RawRequirement<'_>> {
    reqs.iter()
        .map(|r| (r.key.as_str(), r.operator.as_str(), r.values.as_slice()))
}

/// A parsed `NodeSelector`: its non-empty terms, ORed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeSelector {
    terms: Vec<Term>,
}

impl NodeSelector {
    /// Parses a pod's `NodeSelector`. Empty terms are dropped (they select nothing);
    /// terms that do not parse are kept but never match.
    pub fn from_api(selector: &core::NodeSelector) -> NodeSelector {
        NodeSelector {
            terms: selector
                .node_selector_terms
                .iter()
                .filter(|t| !is_empty_api_term(t))
                .map(Term::from_api)
                .collect(),
        }
    }

    /// Parses a configured `NodeSelector` strictly: any term that does not parse is an
    /// error (kube-scheduler's `NewNodeSelector`).
    pub fn from_config(selector: &args::NodeSelector) -> Result<NodeSelector, String> {
        let mut terms = Vec::new();
        for (i, t) in selector.node_selector_terms.iter().enumerate() {
            if t.match_expressions.is_empty() && t.match_fields.is_empty() {
                continue;
            }
            let term = Term::from_config(t);
            if term.invalid {
                return Err(format!("nodeSelectorTerms[{i}]: invalid requirement"));
            }
            terms.push(term);
        }
        Ok(NodeSelector { terms })
    }

    /// `true` when some term matches the node.
    pub fn matches(&self, node: &NodeInfo) -> bool {
        self.terms.iter().any(|t| t.matches(node))
    }

    /// For `--explain`, when the selector does not match the node: one line per term
    /// naming the requirement the node fails (`what` says whose selector it is).
    pub fn explain(&self, what: &str, node: &NodeInfo) -> Vec<String> {
        match self.terms.as_slice() {
            [] => vec![format!(
                "{what} has no non-empty term, so it matches no node"
            )],
            [term] => vec![format!("{what}: {}", term.explain(node))],
            terms => terms
                .iter()
                .enumerate()
                .map(|(i, t)| format!("{what}, term {i}: {}", t.explain(node)))
                .collect(),
        }
    }

    /// `Some((key, values))` when the selector, read as [`NodeSelector::matches_labels`]
    /// reads it, is exactly "label `key` is one of `values`" (one valid term whose only
    /// label requirement is `In`): callers can then index by label value.
    pub fn single_label_in(&self) -> Option<(&str, &[String])> {
        match self.terms.as_slice() {
            [term] if !term.invalid => match term.labels.as_deref() {
                Some([LabelRequirement::In(key, values)]) => Some((key, values)),
                _ => None,
            },
            _ => None,
        }
    }

    /// `true` when some term matches the node's labels, `matchFields` left unchecked:
    /// how a PersistentVolume's node affinity is checked (component-helpers'
    /// `CheckNodeAffinity` builds a node from the labels alone, without a name).
    pub fn matches_labels(&self, node: &NodeInfo) -> bool {
        self.terms.iter().any(|t| t.matches_with_name(node, ""))
    }
}

fn is_empty_api_term(t: &core::NodeSelectorTerm) -> bool {
    t.match_expressions.as_ref().is_none_or(Vec::is_empty)
        && t.match_fields.as_ref().is_none_or(Vec::is_empty)
}

/// Parsed preferred scheduling terms: (weight, term), without zero-weight or empty
/// terms.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PreferredSchedulingTerms {
    terms: Vec<(i64, Term)>,
}

impl PreferredSchedulingTerms {
    /// Parses a pod's preferred terms; a term that does not parse is an error.
    pub fn from_api(
        terms: &[core::PreferredSchedulingTerm],
    ) -> Result<PreferredSchedulingTerms, String> {
        let mut out = Vec::new();
        for (i, t) in terms.iter().enumerate() {
            if t.weight == 0 || is_empty_api_term(&t.preference) {
                continue;
            }
            let term = Term::from_api(&t.preference);
            if term.invalid {
                return Err(format!("[{i}].preference: invalid requirement"));
            }
            out.push((i64::from(t.weight), term));
        }
        Ok(PreferredSchedulingTerms { terms: out })
    }

    /// Parses configured preferred terms; a term that does not parse is an error.
    pub fn from_config(
        terms: &[args::PreferredSchedulingTerm],
    ) -> Result<PreferredSchedulingTerms, String> {
        let mut out = Vec::new();
        for (i, t) in terms.iter().enumerate() {
            let p = &t.preference;
            if t.weight == 0 || (p.match_expressions.is_empty() && p.match_fields.is_empty()) {
                continue;
            }
            let term = Term::from_config(p);
            if term.invalid {
                return Err(format!("[{i}].preference: invalid requirement"));
            }
            out.push((i64::from(t.weight), term));
        }
        Ok(PreferredSchedulingTerms { terms: out })
    }

    /// The sum of the weights of the terms that match the node.
    pub fn score(&self, node: &NodeInfo) -> i64 {
        self.terms
            .iter()
            .filter(|(_, t)| t.matches(node))
            .map(|(w, _)| w)
            .sum()
    }
}

/// A pod's `nodeSelector` and required node affinity, parsed once
/// (kube-scheduler's `RequiredNodeAffinity`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequiredNodeAffinity {
    /// `nodeSelector` entries; empty means no selector.
    node_selector: Vec<(String, String)>,
    /// The required node affinity, when the pod has one.
    affinity: Option<NodeSelector>,
}

impl RequiredNodeAffinity {
    /// Parses the pod's `nodeSelector` and `requiredDuringSchedulingIgnoredDuringExecution`.
    pub fn from_pod(pod: &PodInfo) -> RequiredNodeAffinity {
        let spec = pod.spec();
        let node_selector = spec
            .node_selector
            .iter()
            .flatten()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let affinity = required_terms(pod).map(NodeSelector::from_api);
        RequiredNodeAffinity {
            node_selector,
            affinity,
        }
    }

    /// `true` when the node satisfies both the node selector and the required terms.
    pub fn matches(&self, node: &NodeInfo) -> bool {
        if !self
            .node_selector
            .iter()
            .all(|(k, v)| node.label(k) == Some(v.as_str()))
        {
            return false;
        }
        self.affinity.as_ref().is_none_or(|a| a.matches(node))
    }

    /// For `--explain`, when [`RequiredNodeAffinity::matches`] is `false`: each
    /// `nodeSelector` entry the node lacks, or each required term and the requirement
    /// the node fails.
    pub fn explain(&self, node: &NodeInfo) -> Vec<String> {
        let selector: Vec<String> = self
            .node_selector
            .iter()
            .filter(|(k, v)| node.label(k) != Some(v.as_str()))
            .map(|(k, v)| format!("nodeSelector {k}={v}: {}", node_has(node, k)))
            .collect();
        if !selector.is_empty() {
            return selector;
        }
        match &self.affinity {
            Some(a) => a.explain("required node affinity", node),
            None => Vec::new(),
        }
    }
}

/// `true` when the node satisfies the pod's `nodeSelector` and required node affinity
/// (not the plugin's `addedAffinity`), as PodTopologySpread's `nodeAffinityPolicy:
/// Honor` reads it. Parses the pod on every call: for many nodes, build a
/// [`RequiredNodeAffinity`] once instead.
pub fn pod_matches_node_selector_and_affinity(pod: &PodInfo, node: &NodeInfo) -> bool {
    RequiredNodeAffinity::from_pod(pod).matches(node)
}

/// apimachinery's `IsQualifiedName`: an optional DNS-1123 subdomain prefix and `/`, then
/// a name of 1..=63 alphanumerics, `-`, `_`, `.`, starting and ending alphanumeric.
pub(super) fn is_qualified_name(value: &str) -> bool {
    let (prefix, name) = match value.split_once('/') {
        None => (None, value),
        Some((p, n)) => (Some(p), n),
    };
    if prefix.is_some_and(|p| p.is_empty() || !is_dns1123_subdomain(p)) {
        return false;
    }
    !name.is_empty() && name.len() <= 63 && is_label_chars(name)
}

/// apimachinery's `IsValidLabelValue`: empty, or up to 63 alphanumerics, `-`, `_`, `.`,
/// starting and ending alphanumeric.
pub(super) fn is_label_value(value: &str) -> bool {
    value.is_empty() || (value.len() <= 63 && is_label_chars(value))
}

fn is_label_chars(s: &str) -> bool {
    let b = s.as_bytes();
    let alnum = |c: &u8| c.is_ascii_alphanumeric();
    b.first().is_some_and(alnum)
        && b.last().is_some_and(alnum)
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

fn is_dns1123_subdomain(s: &str) -> bool {
    s.len() <= 253
        && s.split('.').all(|label| {
            let b = label.as_bytes();
            let ok = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
            b.first().is_some_and(ok)
                && b.last().is_some_and(ok)
                && b.iter()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        })
}
