//! `mergePlugins` through real configs: disabling `*`, overriding a default's weight in
//! place, appending custom plugins, per-extension-point sets, and the default args that
//! follow the enabled plugins.

use kubesched_config::{KubeSchedulerConfiguration, PluginRef, Profile};

fn profile(plugins_yaml: &str) -> Profile {
    let text = format!(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- schedulerName: s\n  plugins:\n{plugins_yaml}"
    );
    let mut c = KubeSchedulerConfiguration::from_yaml_str(&text, "m.yaml")
        .unwrap()
        .config;
    c.profiles.remove(0)
}

fn names(set: &kubesched_config::PluginSet) -> Vec<&str> {
    set.enabled.iter().map(|p| p.name.as_str()).collect()
}

#[test]
fn disable_star_keeps_only_user_plugins() {
    let p = profile(
        "    multiPoint:\n      enabled:\n      - name: PrioritySort\n      - name: NodeResourcesFit\n        weight: 1\n      - name: DefaultBinder\n      disabled:\n      - name: '*'\n",
    );
    assert_eq!(
        names(&p.plugins.multi_point),
        ["PrioritySort", "NodeResourcesFit", "DefaultBinder"]
    );
    assert_eq!(p.plugins.multi_point.disabled, vec![PluginRef::new("*")]);
    // Only NodeResourcesFit of the enabled plugins has args.
    let cfg: Vec<&str> = p.plugin_config.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(cfg, ["NodeResourcesFit"]);
}

#[test]
fn override_default_weight_in_place() {
    let p = profile(
        "    multiPoint:\n      enabled:\n      - name: ImageLocality\n        weight: 7\n      - name: TaintToleration\n",
    );
    let mp = &p.plugins.multi_point.enabled;
    assert_eq!(mp.len(), 19);
    let il = mp.iter().position(|x| x.name == "ImageLocality").unwrap();
    assert_eq!(mp[il], PluginRef::weighted("ImageLocality", 7));
    assert_eq!(mp[il + 1].name, "DefaultBinder");
    // A re-configured default without weight loses the default weight, as in Go.
    let tt = mp.iter().find(|x| x.name == "TaintToleration").unwrap();
    assert_eq!(tt.weight, None);
    assert_eq!(mp[4].name, "TaintToleration");
}

#[test]
fn custom_plugin_appended_and_disabled_removed() {
    let p = profile(
        "    multiPoint:\n      enabled:\n      - name: MyPlugin\n        weight: 4\n      disabled:\n      - name: NodePorts\n      - name: ImageLocality\n",
    );
    let n = names(&p.plugins.multi_point);
    assert_eq!(n.last(), Some(&"MyPlugin"));
    assert!(!n.contains(&"NodePorts") && !n.contains(&"ImageLocality"));
    assert_eq!(n.len(), 18);
    assert_eq!(p.plugins.multi_point.disabled.len(), 2);
}

#[test]
fn extension_point_sets_are_kept() {
    let p = profile(
        "    score:\n      enabled:\n      - name: NodeResourcesFit\n        weight: 5\n      disabled:\n      - name: ImageLocality\n    filter:\n      disabled:\n      - name: '*'\n",
    );
    assert_eq!(
        p.plugins.score.enabled,
        vec![PluginRef::weighted("NodeResourcesFit", 5)]
    );
    assert_eq!(
        p.plugins.score.disabled,
        vec![PluginRef::new("ImageLocality")]
    );
    assert_eq!(p.plugins.filter.disabled, vec![PluginRef::new("*")]);
    assert!(p.plugins.filter.enabled.is_empty());
    assert_eq!(p.plugins.multi_point.enabled.len(), 19);
}

#[test]
fn duplicates_are_appended_as_go_does() {
    let p = profile("    multiPoint:\n      enabled:\n      - name: X\n      - name: X\n");
    let n = names(&p.plugins.multi_point);
    assert_eq!(n.iter().filter(|x| **x == "X").count(), 2);
}

#[test]
fn user_args_replace_defaults_and_out_of_tree_args_are_kept() {
    let text = r#"
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: s
  plugins:
    multiPoint:
      enabled:
      - name: MyPlugin
  pluginConfig:
  - name: MyPlugin
    args:
      anything: [1, 2]
      nested: null
  - name: NodeResourcesFit
    args:
      apiVersion: kubescheduler.config.k8s.io/v1
      kind: NodeResourcesFitArgs
      scoringStrategy:
        type: MostAllocated
        resources:
        - name: cpu
          weight: 0
        - name: example.com/gpu
          weight: 5
"#;
    let c = KubeSchedulerConfiguration::from_yaml_str(text, "a.yaml")
        .unwrap()
        .config;
    let p = &c.profiles[0];
    assert_eq!(
        p.plugin_args("MyPlugin").unwrap(),
        &serde_json::json!({"anything": [1, 2], "nested": null})
    );
    assert_eq!(
        p.plugin_args("NodeResourcesFit").unwrap(),
        &serde_json::json!({"scoringStrategy": {"type": "MostAllocated", "resources": [
            {"name": "cpu", "weight": 1}, {"name": "example.com/gpu", "weight": 5}]}})
    );
    // User entries first, then defaults in sorted order.
    let names: Vec<&str> = p.plugin_config.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(&names[..2], ["MyPlugin", "NodeResourcesFit"]);
    assert_eq!(names[2], "DefaultPreemption");
    assert_eq!(
        names.iter().filter(|n| **n == "NodeResourcesFit").count(),
        1
    );
}

#[test]
fn node_declared_features_joins_the_defaults_when_its_gate_is_on() {
    // Gate on: appended after the defaults, before the user's own plugins.
    let p = profile("    multiPoint:\n      enabled:\n      - name: Custom\n");
    let on = p.plugins_gated(true);
    let n = names(&on.multi_point);
    assert_eq!(
        n[n.len() - 3..],
        ["DefaultBinder", "NodeDeclaredFeatures", "Custom"]
    );
    // Gate off: v1.35's defaults.
    assert!(!names(&p.plugins_gated(false).multi_point).contains(&"NodeDeclaredFeatures"));
    // Disabled by the user: gone either way.
    let p = profile("    multiPoint:\n      disabled:\n      - name: NodeDeclaredFeatures\n");
    assert!(!names(&p.plugins_gated(true).multi_point).contains(&"NodeDeclaredFeatures"));
    // No config at all: the defaults.
    let d = KubeSchedulerConfiguration::default_config();
    let on = d.profiles[0].plugins_gated(true);
    assert_eq!(names(&on.multi_point).last(), Some(&"NodeDeclaredFeatures"));
}
