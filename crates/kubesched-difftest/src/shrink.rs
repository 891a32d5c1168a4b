//! Shrinking a disagreeing scenario: drop whole documents, then single fields (object
//! keys and array elements, deepest first), keeping each removal only while the scenario
//! still disagrees in the same way. Greedy and bounded by a number of trials, since each
//! trial runs both programs.

use serde_json::Value;

/// Keys never dropped alone: names and the references that name other objects.
const NAMES: &[&str] = &[
    "name",
    "claimName",
    "resourceClaimName",
    "resourceClaimTemplateName",
    "deviceClassName",
];

/// Paths (object key or array index per step) of every removable field of `v`.
fn field_paths(v: &Value, prefix: &mut Vec<PathStep>, out: &mut Vec<Vec<PathStep>>) {
    match v {
        Value::Object(m) => {
            for (k, child) in m {
                // A document keeps its kind and name: without them it reads as nothing.
                let keep =
                    prefix.is_empty() && (k == "apiVersion" || k == "kind" || k == "metadata");
                // Nor does any reference lose the name it refers by (a claim entry
                // without its claim name is a pod the API server would refuse, and
                // another disagreement): the whole entry may go instead.
                let name = NAMES.contains(&k.as_str());
                prefix.push(PathStep::Key(k.clone()));
                field_paths(child, prefix, out);
                if !keep && !name {
                    out.push(prefix.clone());
                }
                prefix.pop();
            }
        }
        Value::Array(a) => {
            for (i, child) in a.iter().enumerate().rev() {
                prefix.push(PathStep::Index(i));
                field_paths(child, prefix, out);
                out.push(prefix.clone());
                prefix.pop();
            }
        }
        _ => {}
    }
}

/// One step of a path into a JSON value.
#[derive(Debug, Clone, PartialEq, Eq)]
enum PathStep {
    Key(String),
    Index(usize),
}

/// `v` without the field at `path`; `None` when the path no longer exists.
fn without(v: &Value, path: &[PathStep]) -> Option<Value> {
    let mut out = v.clone();
    let (last, parents) = path.split_last()?;
    let mut cur = &mut out;
    for step in parents {
        cur = match step {
            PathStep::Key(k) => cur.get_mut(k.as_str())?,
            PathStep::Index(i) => cur.get_mut(*i)?,
        };
    }
    match (last, cur) {
        (PathStep::Key(k), Value::Object(m)) => {
            m.remove(k)?;
        }
        (PathStep::Index(i), Value::Array(a)) if *i < a.len() => {
            a.remove(*i);
        }
        _ => return None,
    }
    Some(out)
}

/// Shrinks `docs` while `still_fails` holds, trying at most `budget` candidates.
/// Returns the smallest scenario found and the number of trials made.
pub fn shrink(
    docs: Vec<Value>,
    budget: usize,
    mut still_fails: impl FnMut(&[Value]) -> bool,
) -> (Vec<Value>, usize) {
    let mut best = docs;
    let mut trials = 0;
    // Whole documents first, repeated until none can go.
    let mut changed = true;
    while changed && trials < budget {
        changed = false;
        let mut i = best.len();
        while i > 0 && trials < budget {
            i -= 1;
            let mut cand = best.clone();
            cand.remove(i);
            trials += 1;
            if still_fails(&cand) {
                best = cand;
                changed = true;
            }
        }
    }
    // Then fields, document by document.
    changed = true;
    while changed && trials < budget {
        changed = false;
        for d in 0..best.len() {
            let mut paths = Vec::new();
            field_paths(&best[d], &mut Vec::new(), &mut paths);
            // Shallow fields first: dropping a whole subtree saves many trials.
            paths.sort_by_key(|p| p.len());
            for p in paths {
                if trials >= budget {
                    break;
                }
                let Some(doc) = without(&best[d], &p) else {
                    continue;
                };
                let mut cand = best.clone();
                cand[d] = doc;
                trials += 1;
                if still_fails(&cand) {
                    best = cand;
                    changed = true;
                }
            }
        }
    }
    (best, trials)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn shrinks_to_the_documents_and_fields_that_matter() {
        let docs = vec![
            json!({"kind": "Node", "metadata": {"name": "a", "labels": {"x": "1", "y": "2"}}}),
            json!({"kind": "Node", "metadata": {"name": "b"}}),
            json!({"kind": "Pod", "metadata": {"name": "p"}, "spec": {"list": [1, 2, 3]}}),
        ];
        // "Fails" while some node has label y and the pod's list holds 2.
        let fails = |d: &[Value]| {
            d.iter().any(|x| x["metadata"]["labels"]["y"] == "2")
                && d.iter().any(|x| {
                    x["spec"]["list"]
                        .as_array()
                        .is_some_and(|l| l.contains(&json!(2)))
                })
        };
        let (small, trials) = shrink(docs, 1000, fails);
        assert_eq!(
            small,
            vec![
                json!({"kind": "Node", "metadata": {"name": "a", "labels": {"y": "2"}}}),
                json!({"kind": "Pod", "metadata": {"name": "p"}, "spec": {"list": [2]}}),
            ]
        );
        assert!(trials > 0);
    }
}
