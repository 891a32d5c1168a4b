//! Label selectors (`metav1.LabelSelector`) compiled once and matched against label
//! maps, with apimachinery's semantics: an absent selector matches nothing, an empty
//! one matches everything.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

/// One requirement of a selector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Requirement {
    /// `key in (values)`; `matchLabels` entries are `In` with one value.
    In(String, Vec<String>),
    /// `key notin (values)`: also true when the key is absent.
    NotIn(String, Vec<String>),
    /// The key is present.
    Exists(String),
    /// The key is absent.
    DoesNotExist(String),
}

impl Requirement {
    fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        match self {
            Requirement::In(k, vs) => labels.get(k).is_some_and(|v| vs.contains(v)),
            Requirement::NotIn(k, vs) => labels.get(k).is_none_or(|v| !vs.contains(v)),
            Requirement::Exists(k) => labels.contains_key(k),
            Requirement::DoesNotExist(k) => !labels.contains_key(k),
        }
    }
}

/// A compiled selector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Selector {
    /// Matches no labels (an absent selector).
    Nothing,
    /// Matches when every requirement holds (none: everything).
    All(Vec<Requirement>),
}

impl Selector {
    /// The selector that matches everything.
    pub fn everything() -> Selector {
        Selector::All(Vec::new())
    }

    /// Compiles a `LabelSelector`; `None` compiles to [`Selector::Nothing`]. An unknown
    /// operator, or `In`/`NotIn` without values, is an error, as in apimachinery.
    pub fn from_label_selector(selector: Option<&LabelSelector>) -> Result<Selector, String> {
        let Some(sel) = selector else {
            return Ok(Selector::Nothing);
        };
        let mut reqs = Vec::new();
        for (k, v) in sel.match_labels.iter().flatten() {
            reqs.push(Requirement::In(k.clone(), vec![v.clone()]));
        }
        for e in sel.match_expressions.iter().flatten() {
            let values = e.values.clone().unwrap_or_default();
            let r = match e.operator.as_str() {
                "In" | "NotIn" if values.is_empty() => {
                    return Err(format!(
                        "{:?}: for 'in', 'notin' operators, values set can't be empty",
                        e.key
                    ));
                }
                "In" => Requirement::In(e.key.clone(), values),
                "NotIn" => Requirement::NotIn(e.key.clone(), values),
                "Exists" => Requirement::Exists(e.key.clone()),
                "DoesNotExist" => Requirement::DoesNotExist(e.key.clone()),
                op => return Err(format!("{op:?} is not a valid label selector operator")),
            };
            reqs.push(r);
        }
        Ok(Selector::All(reqs))
    }

    /// Adds a requirement (for example from `matchLabelKeys`).
    pub fn push(&mut self, requirement: Requirement) {
        if let Selector::All(reqs) = self {
            reqs.push(requirement);
        }
    }

    /// `true` when the labels satisfy the selector.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        match self {
            Selector::Nothing => false,
            Selector::All(reqs) => reqs.iter().all(|r| r.matches(labels)),
        }
    }

    /// `true` for the selector that matches everything.
    pub fn is_everything(&self) -> bool {
        matches!(self, Selector::All(r) if r.is_empty())
    }
}

/// An empty label map, for objects without labels.
pub fn no_labels() -> &'static BTreeMap<String, String> {
    static EMPTY: BTreeMap<String, String> = BTreeMap::new();
    &EMPTY
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;

    fn labels(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn absent_matches_nothing_and_empty_everything() {
        assert!(
            !Selector::from_label_selector(None)
                .unwrap()
                .matches(&labels(&[]))
        );
        let empty = LabelSelector::default();
        assert!(
            Selector::from_label_selector(Some(&empty))
                .unwrap()
                .matches(&labels(&[("a", "b")]))
        );
    }

    #[test]
    fn expressions() {
        let sel = LabelSelector {
            match_labels: Some(BTreeMap::from([("app".to_string(), "web".to_string())])),
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: "tier".into(),
                operator: "NotIn".into(),
                values: Some(vec!["db".into()]),
            }]),
        };
        let s = Selector::from_label_selector(Some(&sel)).unwrap();
        assert!(s.matches(&labels(&[("app", "web")])));
        assert!(!s.matches(&labels(&[("app", "web"), ("tier", "db")])));
        assert!(!s.matches(&labels(&[("app", "api")])));
        let bad = LabelSelector {
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: "k".into(),
                operator: "Like".into(),
                values: None,
            }]),
            ..Default::default()
        };
        assert!(Selector::from_label_selector(Some(&bad)).is_err());
    }
}
