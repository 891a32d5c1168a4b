//! `Scenario::from_files` and `Scenario::from_text`: one call from paths (or a text) to
//! a scenario, with the same one-line errors naming the file as `scenario::load`.

use std::path::PathBuf;

use kubesched_sim::scenario::{Scenario, ScenarioError};

/// A fresh directory for this test's files.
fn dir(test: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "kubesched-from-files-{}-{test}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

const NODE: &str = "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: '2', memory: 4Gi, pods: '110'}}\n";
const POD: &str = "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec: {containers: [{name: app, image: nginx}]}\n";

#[test]
fn files_are_read_in_the_order_given() {
    let d = dir("order");
    std::fs::write(d.join("nodes.yaml"), NODE).unwrap();
    std::fs::write(d.join("pods.yaml"), POD).unwrap();
    let s = Scenario::from_files([d.join("nodes.yaml"), d.join("pods.yaml")]).unwrap();
    assert_eq!(s.nodes.len(), 1);
    assert_eq!(s.pods.len(), 1);
    assert_eq!(s.pods[0].metadata.namespace.as_deref(), Some("default"));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_missing_file_is_one_line_naming_it() {
    let d = dir("missing");
    let missing = d.join("nope.yaml");
    let e = Scenario::from_files([&missing]).unwrap_err();
    assert!(matches!(e, ScenarioError::Read { .. }), "{e:?}");
    let line = e.to_string();
    assert!(
        line.starts_with(&format!("{}: cannot read: ", missing.display())),
        "{line}"
    );
    assert!(!line.contains('\n'), "{line}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_bad_object_names_the_file_the_object_and_the_field() {
    let d = dir("bad");
    let path = d.join("pods.yaml");
    std::fs::write(&path, POD.replace("containers:", "contianers:")).unwrap();
    let line = Scenario::from_files([&path]).unwrap_err().to_string();
    assert_eq!(
        line,
        format!(
            "{}: Pod default/web: spec.contianers: unknown field, did you mean containers?",
            path.display()
        )
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_text_is_named_as_the_caller_says() {
    let s = Scenario::from_text("inline", &format!("{NODE}---\n{POD}")).unwrap();
    assert_eq!((s.nodes.len(), s.pods.len()), (1, 1));
    let line = Scenario::from_text("inline", "kind: Pod\n")
        .unwrap_err()
        .to_string();
    assert!(line.starts_with("inline"), "{line}");
}
