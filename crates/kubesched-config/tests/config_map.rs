//! A ConfigMap holding a configuration (the lesson's `deploy/configmap.yaml`, which
//! kube-scheduler reads as the file it mounts) loads as the configuration it holds.

use kubesched_config::{ConfigError, KubeSchedulerConfiguration};

fn config_map(data: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: my-scheduler-config\n  namespace: kube-system\n{data}"
    )
}

#[test]
fn the_lessons_config_map_is_read_as_its_configuration() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../deploy/configmap.yaml");
    let text = std::fs::read_to_string(path).expect("deploy/configmap.yaml");
    let loaded = KubeSchedulerConfiguration::from_yaml_str(&text, "deploy/configmap.yaml")
        .expect("the lesson's ConfigMap loads");
    let names: Vec<&str> = loaded
        .config
        .profiles
        .iter()
        .map(|p| p.scheduler_name.as_str())
        .collect();
    assert_eq!(names, ["my-scheduler"]);
    let election = &loaded.config.leader_election;
    assert!(election.leader_elect);
    assert_eq!(election.resource_name, "lock-object-my-scheduler");
    assert_eq!(election.resource_namespace, "kube-system");
}

#[test]
fn an_error_inside_names_the_config_map_and_its_key() {
    let text = config_map(
        "data:\n  sched.yaml: |\n    apiVersion: kubescheduler.config.k8s.io/v1\n    kind: KubeSchedulerConfiguration\n    profiles:\n    - schdulerName: x\n",
    );
    let e = KubeSchedulerConfiguration::from_yaml_str(&text, "cm.yaml").unwrap_err();
    assert_eq!(
        e.to_string(),
        "cm.yaml: ConfigMap kube-system/my-scheduler-config, data[sched.yaml]: profiles[0].schdulerName: unknown field, did you mean schedulerName?"
    );
}

#[test]
fn a_config_map_without_a_configuration_is_an_error_listing_its_keys() {
    let text = config_map("data:\n  a.txt: hello\n  b.yaml: |\n    kind: Pod\n");
    let e = KubeSchedulerConfiguration::from_yaml_str(&text, "cm.yaml").unwrap_err();
    assert!(matches!(e, ConfigError::ConfigMap { .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        "cm.yaml: ConfigMap kube-system/my-scheduler-config: no data value is a KubeSchedulerConfiguration (keys: a.txt, b.yaml)"
    );
    let e = KubeSchedulerConfiguration::from_yaml_str(&config_map(""), "cm.yaml").unwrap_err();
    assert_eq!(
        e.to_string(),
        "cm.yaml: ConfigMap kube-system/my-scheduler-config: data: Required value: the ConfigMap holds no KubeSchedulerConfiguration"
    );
}

#[test]
fn a_broken_configuration_in_a_config_map_reports_its_syntax_error() {
    let text = config_map(
        "data:\n  sched.yaml: |\n    kind: KubeSchedulerConfiguration\n    profiles: [\n",
    );
    let e = KubeSchedulerConfiguration::from_yaml_str(&text, "cm.yaml").unwrap_err();
    assert!(matches!(e, ConfigError::Syntax { .. }), "{e:?}");
    assert!(
        e.to_string()
            .starts_with("cm.yaml: ConfigMap kube-system/my-scheduler-config, data[sched.yaml]:"),
        "{e}"
    );
}

#[test]
fn two_configurations_in_one_config_map_are_refused() {
    let doc =
        "    apiVersion: kubescheduler.config.k8s.io/v1\n    kind: KubeSchedulerConfiguration\n";
    let text = config_map(&format!("data:\n  a.yaml: |\n{doc}  b.yaml: |\n{doc}"));
    let e = KubeSchedulerConfiguration::from_yaml_str(&text, "cm.yaml").unwrap_err();
    assert_eq!(
        e.to_string(),
        "cm.yaml: ConfigMap kube-system/my-scheduler-config: 2 data values are KubeSchedulerConfigurations (a.yaml, b.yaml); kube-scheduler reads one file: keep one"
    );
}
