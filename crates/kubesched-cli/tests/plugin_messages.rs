//! The profile-building errors the docs quote (configuration.md, writing-a-plugin.md)
//! are the ones `kubesched simulate --config` prints: the list the name was written
//! in, and words a user reads ("is not a Score plugin"), not Go type names.

mod common;
use common::stderr;

fn repo_doc(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Runs `simulate --config c.yaml` from a fresh directory holding `config` as c.yaml,
/// and returns its error line.
fn error_of(test: &str, config: &str) -> String {
    let dir = std::env::temp_dir().join(format!(
        "kubesched-plugin-messages-{}-{test}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("c.yaml");
    std::fs::write(&file, config).unwrap();
    let o = common::command(&["simulate", "--config", "c.yaml"])
        .current_dir(&dir)
        .output()
        .expect("run kubesched");
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    stderr(&o)
        .lines()
        .find(|l| l.starts_with("kubesched: error:"))
        .unwrap_or_else(|| panic!("no error line: {}", stderr(&o)))
        .to_string()
}

const HEAD: &str =
    "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n";

#[test]
fn an_unknown_plugin_reads_as_configuration_md_says() {
    let line = error_of(
        "unknown",
        &format!(
            "{HEAD}- schedulerName: my-scheduler-2\n  plugins:\n    multiPoint:\n      enabled: [{{name: NodeResourceFit}}]\n"
        ),
    );
    assert_eq!(
        line,
        "kubesched: error: c.yaml: profile \"my-scheduler-2\": plugins.multiPoint.enabled: plugin \"NodeResourceFit\" does not exist, did you mean NodeResourcesFit?"
    );
    assert!(repo_doc("configuration.md").contains(&line));
}

#[test]
fn a_plugin_enabled_at_a_point_it_lacks_names_the_point_and_the_method() {
    let line = error_of(
        "not-score",
        &format!(
            "{HEAD}- schedulerName: p\n  plugins:\n    score:\n      enabled: [{{name: NodeUnschedulable}}]\n"
        ),
    );
    assert_eq!(
        line,
        "kubesched: error: c.yaml: profile \"p\": plugins.score.enabled: plugin \"NodeUnschedulable\" is not a Score plugin: it does not implement the Score extension point"
    );
    let filter = error_of(
        "not-prefilter",
        &format!(
            "{HEAD}- schedulerName: P\n  plugins:\n    preFilter:\n      enabled: [{{name: ImageLocality}}]\n"
        ),
    );
    assert!(
        filter.ends_with("profile \"P\": plugins.preFilter.enabled: plugin \"ImageLocality\" is not a PreFilter plugin: it does not implement the PreFilter extension point"),
        "{filter}"
    );
    let doc = repo_doc("writing-a-plugin.md");
    assert!(
        doc.contains("profile \"P\": plugins.filter.enabled: plugin \"X\" is not a Filter plugin: it does not implement the Filter extension point"),
        "writing-a-plugin.md quotes another message"
    );
    assert!(!doc.contains("does not extend"));
}
