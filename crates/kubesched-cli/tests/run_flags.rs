//! `kubesched run`'s flags and its exits before it reaches an API server: one line and
//! status 2 for a configuration or kubeconfig it cannot use, `--leader-elect` alone
//! taken as true (as kube-scheduler takes it).

use std::path::PathBuf;
use std::process::Output;

mod common;
use common::kubesched;

fn config_file(name: &str, text: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("run_flags");
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write");
    path
}

const CONFIG: &str = "apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: my-scheduler
";

fn one_line_exit_2(o: &Output, needle: &str) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(
        err.starts_with("kubesched: error: ") && err.contains(needle),
        "{err}"
    );
}

#[test]
fn a_missing_kubeconfig_is_one_line_and_exit_2() {
    let config = config_file("ok.yaml", CONFIG);
    let o = kubesched(&[
        "run",
        "--config",
        config.to_str().unwrap(),
        "--kubeconfig",
        "/nonexistent/kubeconfig",
    ]);
    one_line_exit_2(&o, "/nonexistent/kubeconfig");
}

#[test]
fn a_bad_configuration_is_one_line_and_exit_2() {
    let config = config_file(
        "bad.yaml",
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles: 3\n",
    );
    let o = kubesched(&[
        "run",
        "--config",
        config.to_str().unwrap(),
        "--kubeconfig",
        "/nonexistent",
    ]);
    one_line_exit_2(&o, "bad.yaml");
    let o = kubesched(&["run", "--config", "/nonexistent/config.yaml"]);
    one_line_exit_2(&o, "/nonexistent/config.yaml");
}

/// A scenario file given as --config (the configuration and objects in one file) is
/// said so, not as the YAML parser's message about several documents.
#[test]
fn a_file_of_several_documents_is_not_a_configuration() {
    let config = config_file(
        "scenario.yaml",
        &format!("{CONFIG}---\napiVersion: v1\nkind: Node\nmetadata: {{name: n1}}\n---\n"),
    );
    let o = kubesched(&["run", "--config", config.to_str().unwrap()]);
    one_line_exit_2(
        &o,
        "scenario.yaml: not a scheduler configuration: it holds 2 YAML documents",
    );
    // A configuration after a `---` alone (an empty first document) is still one.
    let config = config_file("leading.yaml", &format!("---\n{CONFIG}"));
    let o = kubesched(&[
        "run",
        "--config",
        config.to_str().unwrap(),
        "--kubeconfig",
        "/nonexistent/kubeconfig",
    ]);
    one_line_exit_2(&o, "/nonexistent/kubeconfig");
}

#[test]
fn leader_elect_alone_means_true_and_takes_a_value_with_equals() {
    let config = config_file("ok.yaml", CONFIG);
    for flag in [
        "--leader-elect",
        "--leader-elect=true",
        "--leader-elect=false",
    ] {
        let o = kubesched(&[
            "run",
            "--config",
            config.to_str().unwrap(),
            flag,
            "--kubeconfig",
            "/nonexistent/kubeconfig",
        ]);
        // The flag is accepted: the run gets as far as the kubeconfig.
        one_line_exit_2(&o, "/nonexistent/kubeconfig");
    }
    let o = kubesched(&[
        "run",
        "--config",
        config.to_str().unwrap(),
        "--leader-elect=maybe",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--leader-elect"));
}
