//! Error reporting: strict decoding with paths and suggestions, syntax errors with line and
//! column, apiVersion/kind handling, and every validation rule with Go's wording.

use kubesched_config::{ConfigError, KubeSchedulerConfiguration, decode_args};

const HEAD: &str = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n";

fn load(body: &str) -> Result<kubesched_config::Loaded, ConfigError> {
    KubeSchedulerConfiguration::from_yaml_str(&format!("{HEAD}{body}"), "my-config.yaml")
}

fn err(body: &str) -> ConfigError {
    match load(body) {
        Ok(l) => panic!("expected an error, loaded {:?}", l.config.profiles.len()),
        Err(e) => e,
    }
}

fn invalid(body: &str) -> Vec<String> {
    match err(body) {
        ConfigError::Invalid { errors, .. } => errors.iter().map(|e| e.to_string()).collect(),
        other => panic!("expected validation errors, got {other}"),
    }
}

#[test]
fn typo_in_scheduler_name_suggests_the_field() {
    let e = err("profiles:\n- schdulerName: x\n");
    assert_eq!(
        e.to_string(),
        "my-config.yaml: profiles[0].schdulerName: unknown field, did you mean schedulerName?"
    );
    assert!(
        matches!(e, ConfigError::UnknownField { ref suggestion, .. } if suggestion.as_deref() == Some("schedulerName"))
    );
}

#[test]
fn unknown_field_without_close_match_lists_fields() {
    let e = err(
        "profiles:\n- schedulerName: x\n  plugins:\n    score:\n      enabled:\n      - name: A\n        zzzzz: 1\n",
    );
    let s = e.to_string();
    assert!(s.starts_with("my-config.yaml: profiles[0].plugins.score.enabled[0].zzzzz: unknown field (known fields: name, weight)"), "{s}");
    let e = err("parallelizm: 3\n");
    assert_eq!(
        e.to_string(),
        "my-config.yaml: parallelizm: unknown field, did you mean parallelism?"
    );
    let e = err("leaderElection:\n  leaseDurtion: 3s\n");
    assert!(
        e.to_string()
            .contains("leaderElection.leaseDurtion: unknown field, did you mean leaseDuration?"),
        "{e}"
    );
}

#[test]
fn unknown_field_inside_in_tree_args() {
    let e = err(
        "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n        type: LeastAllocated\n        resource: []\n",
    );
    assert_eq!(
        e.to_string(),
        "my-config.yaml: profiles[0].pluginConfig[0].args.scoringStrategy.resource: unknown field, did you mean resources?"
    );
}

#[test]
fn wrong_types_name_the_path() {
    let e = err(
        "profiles:\n- plugins:\n    score:\n      enabled:\n      - name: A\n        weight: \"3\"\n",
    );
    assert_eq!(
        e.to_string(),
        "my-config.yaml: profiles[0].plugins.score.enabled[0].weight: invalid type: string \"3\", expected i32"
    );
    let e = err(
        "profiles:\n- plugins:\n    score:\n      enabled:\n      - name: A\n        weight: 3000000000\n",
    );
    assert!(e.to_string().contains("profiles[0].plugins.score.enabled[0].weight: invalid value: integer `3000000000`, expected i32"), "{e}");
    let e = err("parallelism: [1]\n");
    assert!(
        matches!(e, ConfigError::Decode { ref path, .. } if path == "parallelism"),
        "{e}"
    );
    let e = err("leaderElection:\n  leaseDuration: 15\n");
    assert!(
        e.to_string().contains("leaderElection.leaseDuration"),
        "{e}"
    );
    let e = err("leaderElection:\n  leaseDuration: 15x\n");
    assert_eq!(
        e.to_string(),
        "my-config.yaml: leaderElection.leaseDuration: time: unknown unit \"x\" in duration \"15x\""
    );
}

#[test]
fn scoring_strategy_type_errors() {
    let body = "profiles:\n- pluginConfig:\n  - name: A\n  - name: B\n  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n        type: Leastallocated\n";
    let e = err(body);
    assert_eq!(
        e.to_string(),
        "my-config.yaml: profiles[0].pluginConfig[2].args.scoringStrategy.type: Unsupported value: \"Leastallocated\": supported values: \"LeastAllocated\", \"MostAllocated\", \"RequestedToCapacityRatio\""
    );
    let e = err(
        "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n        resources: []\n",
    );
    assert_eq!(
        e.to_string(),
        "my-config.yaml: profiles[0].pluginConfig[0].args.scoringStrategy.type: Required value"
    );
}

#[test]
fn syntax_errors_have_line_and_column() {
    let e = KubeSchedulerConfiguration::from_yaml_str(
        "apiVersion: x\nprofiles: [a\nkind: y\n",
        "bad.yaml",
    )
    .unwrap_err();
    match &e {
        ConfigError::Syntax {
            line,
            column,
            format,
            ..
        } => {
            assert_eq!(*format, "YAML");
            assert!(line.is_some() && column.is_some());
        }
        other => panic!("{other}"),
    }
    assert!(e.to_string().starts_with("bad.yaml:"), "{e}");
    let e = KubeSchedulerConfiguration::from_json_str("{\n  \"apiVersion\": 3,,\n}", "bad.json")
        .unwrap_err();
    assert!(
        matches!(e, ConfigError::Syntax { line: Some(2), .. }),
        "{e}"
    );
    let e = KubeSchedulerConfiguration::from_yaml_str("a: 1\na: 2\n", "dup.yaml").unwrap_err();
    assert!(e.to_string().contains("duplicate entry"), "{e}");
    let e =
        KubeSchedulerConfiguration::from_yaml_str("a: 1\n---\nb: 2\n", "multi.yaml").unwrap_err();
    assert!(matches!(e, ConfigError::Syntax { .. }), "{e}");
}

#[test]
fn api_version_and_kind() {
    let beta2 = "apiVersion: kubescheduler.config.k8s.io/v1beta2\nkind: KubeSchedulerConfiguration\nprofiles:\n- schedulerName: s\n";
    let loaded = KubeSchedulerConfiguration::from_yaml_str(beta2, "b.yaml").unwrap();
    assert_eq!(loaded.warnings.len(), 1);
    assert!(
        loaded.warnings[0].contains("v1beta2"),
        "{:?}",
        loaded.warnings
    );
    assert_eq!(loaded.config.profiles[0].scheduler_name, "s");
    let beta3 = beta2.replace("v1beta2", "v1beta3");
    assert_eq!(
        KubeSchedulerConfiguration::from_yaml_str(&beta3, "b.yaml")
            .unwrap()
            .warnings
            .len(),
        1
    );

    let removed = format!("{beta2}healthzBindAddress: 0.0.0.0:10251\n");
    let e = KubeSchedulerConfiguration::from_yaml_str(&removed, "b.yaml").unwrap_err();
    assert_eq!(
        e.to_string(),
        "b.yaml: healthzBindAddress: field was removed in kubescheduler.config.k8s.io/v1beta3 and is not part of kubescheduler.config.k8s.io/v1"
    );

    let e = KubeSchedulerConfiguration::from_yaml_str(
        "apiVersion: kubescheduler.config.k8s.io/v2\nkind: KubeSchedulerConfiguration\n",
        "x.yaml",
    )
    .unwrap_err();
    assert!(
        matches!(e, ConfigError::UnsupportedApiVersion { .. }),
        "{e}"
    );
    let e = KubeSchedulerConfiguration::from_yaml_str(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: Pod\n",
        "x.yaml",
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "x.yaml: kind: \"Pod\" is not KubeSchedulerConfiguration"
    );
    let e =
        KubeSchedulerConfiguration::from_yaml_str("kind: KubeSchedulerConfiguration\n", "x.yaml")
            .unwrap_err();
    assert!(matches!(e, ConfigError::MissingApiVersion { .. }), "{e}");
    let e = KubeSchedulerConfiguration::from_yaml_str(
        "apiVersion: kubescheduler.config.k8s.io/v1\n",
        "x.yaml",
    )
    .unwrap_err();
    assert!(matches!(e, ConfigError::MissingKind { .. }), "{e}");
    let e = KubeSchedulerConfiguration::from_yaml_str("- a\n- b\n", "x.yaml").unwrap_err();
    assert!(matches!(e, ConfigError::NotAMapping { .. }), "{e}");
    let e = KubeSchedulerConfiguration::from_yaml_str("", "x.yaml").unwrap_err();
    assert!(matches!(e, ConfigError::NotAMapping { .. }), "{e}");
}

#[test]
fn extenders_are_rejected_unless_empty() {
    assert!(load("extenders: []\n").is_ok());
    let e = err("extenders:\n- urlPrefix: http://x\n");
    assert_eq!(
        e.to_string(),
        "my-config.yaml: extenders: extenders are not supported by kubesched"
    );
}

#[test]
fn args_kind_must_match_plugin() {
    let e = err(
        "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      kind: InterPodAffinityArgs\n",
    );
    assert_eq!(
        e.to_string(),
        "my-config.yaml: profiles[0].pluginConfig[0].args.kind: args of kind InterPodAffinityArgs given for plugin NodeResourcesFit"
    );
    assert!(load("profiles:\n- pluginConfig:\n  - name: InterPodAffinity\n    args:\n      kind: InterPodAffinityArgs\n      apiVersion: kubescheduler.config.k8s.io/v1\n      hardPodAffinityWeight: 0\n").is_ok());
    let e = err("profiles:\n- pluginConfig:\n  - name: InterPodAffinity\n    args: 5\n");
    assert!(
        e.to_string()
            .contains("profiles[0].pluginConfig[0].args: expected a mapping"),
        "{e}"
    );
}

#[test]
fn profile_validation() {
    assert_eq!(
        invalid("profiles:\n- schedulerName: a\n- schedulerName: a\n"),
        [
            "profiles[1].schedulerName: Duplicate value: \"a\" (already the name of profiles[0].schedulerName)"
        ]
    );
    assert_eq!(
        invalid("profiles:\n- schedulerName: a\n- plugins: {}\n"),
        ["profiles[1].schedulerName: Required value"]
    );
    assert_eq!(
        invalid("profiles:\n- schedulerName: \"\"\n"),
        ["profiles[0].schedulerName: Required value"]
    );
    assert_eq!(
        invalid("profiles:\n- schedulerName: a\n  percentageOfNodesToScore: 101\n"),
        ["profiles[0].percentageOfNodesToScore: Invalid value: 101: not in valid range [0-100]"]
    );
    assert_eq!(
        invalid("profiles:\n- schedulerName: a\n  pluginConfig:\n  - name: X\n  - name: X\n"),
        ["profiles[0].pluginConfig[1]: Duplicate value: \"X\""]
    );
    assert_eq!(
        invalid(
            "profiles:\n- schedulerName: a\n  plugins:\n    score:\n      enabled:\n      - name: ImageLocality\n        weight: -1\n"
        ),
        [
            "profiles[0].plugins.score.enabled[0].weight: Invalid value: -1: weight of plugin ImageLocality must not be negative"
        ]
    );
}

#[test]
fn queue_sort_must_match() {
    let errs = invalid(
        "profiles:\n- schedulerName: a\n- schedulerName: b\n  plugins:\n    queueSort:\n      enabled:\n      - name: MySort\n      disabled:\n      - name: '*'\n",
    );
    assert_eq!(errs.len(), 1);
    assert!(
        errs[0].starts_with("profiles[1].plugins.queueSort: Invalid value: "),
        "{errs:?}"
    );
    assert!(
        errs[0].ends_with("queueSort must be the same for all profiles"),
        "{errs:?}"
    );
    let errs = invalid(
        "profiles:\n- schedulerName: a\n  plugins:\n    queueSort:\n      enabled:\n      - name: A\n      - name: B\n",
    );
    assert_eq!(
        errs,
        [
            "profiles[0].plugins.queueSort.enabled: Invalid value: 2: only one queue sort plugin can be enabled"
        ]
    );
    // The same explicit set in every profile is fine.
    let same = "  plugins:\n    queueSort:\n      enabled:\n      - name: MySort\n";
    assert!(
        load(&format!(
            "profiles:\n- schedulerName: a\n{same}- schedulerName: b\n{same}"
        ))
        .is_ok()
    );
}

#[test]
fn top_level_validation() {
    assert_eq!(
        invalid("parallelism: 0\n"),
        ["parallelism: Invalid value: 0: should be an integer value greater than zero"]
    );
    assert_eq!(
        invalid("percentageOfNodesToScore: -1\n"),
        ["percentageOfNodesToScore: Invalid value: -1: not in valid range [0-100]"]
    );
    assert_eq!(
        invalid("podInitialBackoffSeconds: 0\n"),
        ["podInitialBackoffSeconds: Invalid value: 0: must be greater than 0"]
    );
    assert_eq!(
        invalid("podInitialBackoffSeconds: 5\npodMaxBackoffSeconds: 4\n"),
        [
            "podMaxBackoffSeconds: Invalid value: 4: must be greater than or equal to PodInitialBackoffSeconds"
        ]
    );
    assert_eq!(
        invalid("clientConnection:\n  burst: -1\n"),
        ["clientConnection.burst: Invalid value: -1: must be non-negative"]
    );
    assert_eq!(
        invalid("leaderElection:\n  resourceLock: endpoints\n"),
        [
            "leaderElection.resourceLock: Invalid value: \"endpoints\": resourceLock value must be \"leases\""
        ]
    );
    assert_eq!(
        invalid("leaderElection:\n  leaseDuration: -1s\n"),
        [
            "leaderElection.leaseDuration: Invalid value: -1s: must be greater than zero",
            "leaderElection.leaseDuration: Invalid value: 10s: LeaseDuration must be greater than RenewDeadline",
        ]
    );
    // Not electing: leader election settings are not validated, as in Go.
    assert!(load("leaderElection:\n  leaderElect: false\n  resourceLock: endpoints\n").is_ok());
    // Several errors are all reported.
    let e = err("parallelism: -1\npodInitialBackoffSeconds: -1\n");
    assert_eq!(e.field_errors().len(), 2);
    assert!(
        e.to_string().starts_with("my-config.yaml: 2 errors: ") && !e.to_string().contains('\n'),
        "{e}"
    );
}

#[test]
fn plugin_args_validation() {
    assert_eq!(
        invalid(
            "profiles:\n- pluginConfig:\n  - name: InterPodAffinity\n    args:\n      hardPodAffinityWeight: 200\n"
        ),
        [
            "profiles[0].pluginConfig[0].args.hardPodAffinityWeight: Invalid value: 200: not in valid range [0, 100]"
        ]
    );
    assert_eq!(
        invalid(
            "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n        type: MostAllocated\n        resources:\n        - name: cpu\n          weight: 101\n"
        ),
        [
            "profiles[0].pluginConfig[0].args.scoringStrategy.resources[0].weight: Invalid value: 101: resource weight of cpu not in valid range (0, 100]"
        ]
    );
    let errs = invalid(
        "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n        type: RequestedToCapacityRatio\n        requestedToCapacityRatio:\n          shape:\n          - utilization: 0\n            score: 0\n          - utilization: 0\n            score: 11\n",
    );
    assert_eq!(
        errs,
        [
            "profiles[0].pluginConfig[0].args.scoringStrategy.requestedToCapacityRatio.shape[1].utilization: Invalid value: 0: values must be sorted in increasing order",
            "profiles[0].pluginConfig[0].args.scoringStrategy.requestedToCapacityRatio.shape[1].score: Invalid value: 11: not in valid range [0, 10]",
        ]
    );
    assert_eq!(
        invalid("profiles:\n- pluginConfig:\n  - name: DefaultPreemption\n    args:\n      minCandidateNodesPercentage: 0\n      minCandidateNodesAbsolute: 0\n").len(),
        2
    );
    assert_eq!(
        invalid(
            "profiles:\n- pluginConfig:\n  - name: PodTopologySpread\n    args:\n      defaultConstraints:\n      - maxSkew: 1\n        topologyKey: zone\n        whenUnsatisfiable: DoNotSchedule\n"
        ),
        [
            "profiles[0].pluginConfig[0].args.defaultingType: Invalid value: \"System\": when .defaultConstraints are not empty"
        ]
    );
    assert!(load("profiles:\n- pluginConfig:\n  - name: PodTopologySpread\n    args:\n      defaultingType: List\n      defaultConstraints:\n      - maxSkew: 1\n        topologyKey: zone\n        whenUnsatisfiable: DoNotSchedule\n").is_ok());
    let e = err(
        "profiles:\n- pluginConfig:\n  - name: DynamicResources\n    args:\n      filterTimeout: -1s\n",
    );
    assert!(
        e.to_string()
            .contains("profiles[0].pluginConfig[0].args.filterTimeout"),
        "{e}"
    );
    assert_eq!(
        invalid(
            "profiles:\n- pluginConfig:\n  - name: VolumeBinding\n    args:\n      bindTimeoutSeconds: -5\n"
        ),
        [
            "profiles[0].pluginConfig[0].args.bindTimeoutSeconds: Invalid value: -5: invalid BindTimeoutSeconds, should not be a negative value"
        ]
    );
}

#[test]
fn decode_args_for_factories() {
    #[derive(serde::Deserialize, Debug)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    struct MyArgs {
        #[allow(dead_code)]
        threshold: i32,
    }
    let ok: MyArgs = decode_args(
        "MyPlugin",
        &serde_json::json!({"kind": "MyPluginArgs", "threshold": 3}),
    )
    .unwrap();
    assert_eq!(ok.threshold, 3);
    let e = decode_args::<MyArgs>("MyPlugin", &serde_json::json!({"treshold": 3})).unwrap_err();
    assert_eq!(
        e.to_string(),
        "MyPlugin args: treshold: unknown field, did you mean threshold?"
    );
    let e =
        decode_args::<MyArgs>("MyPlugin", &serde_json::json!({"kind": "OtherArgs"})).unwrap_err();
    assert!(matches!(e, ConfigError::ArgsKind { .. }), "{e}");
    let fit: kubesched_config::args::NodeResourcesFitArgs =
        decode_args("NodeResourcesFit", &serde_json::Value::Null).unwrap();
    assert_eq!(fit, Default::default());
}

/// Odd values in every position: errors, never panics.
#[test]
fn fuzz_odd_values_never_panic() {
    let odd = [
        "null",
        "1",
        "-1",
        "1.5",
        "1e400",
        "true",
        "\"\"",
        "\"x\"",
        "[]",
        "[null]",
        "{}",
        "{a: 1}",
        "[[[]]]",
        "{profiles: [1]}",
        "99999999999999999999999",
        "!!binary aGVsbG8=",
        "~",
        ".inf",
    ];
    let fields = [
        "parallelism",
        "profiles",
        "extenders",
        "leaderElection",
        "clientConnection",
        "percentageOfNodesToScore",
        "podInitialBackoffSeconds",
        "enableProfiling",
    ];
    let profile_fields = [
        "schedulerName",
        "plugins",
        "pluginConfig",
        "percentageOfNodesToScore",
    ];
    let args_fields = [
        "scoringStrategy",
        "ignoredResources",
        "resources",
        "hardPodAffinityWeight",
        "addedAffinity",
        "defaultConstraints",
        "filterTimeout",
        "kind",
        "apiVersion",
        "shape",
    ];
    let plugins = [
        "NodeResourcesFit",
        "InterPodAffinity",
        "NodeAffinity",
        "PodTopologySpread",
        "DynamicResources",
        "VolumeBinding",
        "DefaultPreemption",
        "NodeResourcesBalancedAllocation",
        "Custom",
    ];
    let mut n = 0;
    for v in odd {
        for f in fields {
            let _ = load(&format!("{f}: {v}\n"));
            n += 1;
        }
        for f in profile_fields {
            let _ = load(&format!("profiles:\n- {f}: {v}\n"));
            let _ = load(&format!(
                "profiles:\n- plugins:\n    score:\n      enabled:\n      - name: {v}\n        weight: {v}\n"
            ));
            n += 2;
        }
        for p in plugins {
            let _ = load(&format!(
                "profiles:\n- pluginConfig:\n  - name: {p}\n    args: {v}\n"
            ));
            for a in args_fields {
                let _ = load(&format!(
                    "profiles:\n- pluginConfig:\n  - name: {p}\n    args:\n      {a}: {v}\n"
                ));
                let _ = load(&format!(
                    "profiles:\n- pluginConfig:\n  - name: {p}\n    args:\n      scoringStrategy:\n        type: RequestedToCapacityRatio\n        {a}: {v}\n        requestedToCapacityRatio: {{shape: [{{utilization: {v}, score: {v}}}]}}\n"
                ));
                n += 2;
            }
        }
        let _ = KubeSchedulerConfiguration::from_json_str(
            &format!("{{\"apiVersion\": {v}}}"),
            "f.json",
        );
        let _ = KubeSchedulerConfiguration::from_value(
            serde_json::json!({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration", "leaderElection": {"leaseDuration": v}}),
            "v",
        );
    }
    // Byte-level garbage.
    let base = format!(
        "{HEAD}profiles:\n- schedulerName: a\n  pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n        type: MostAllocated\n"
    );
    for cut in 0..base.len() {
        if base.is_char_boundary(cut) {
            let _ = KubeSchedulerConfiguration::from_yaml_str(&base[..cut], "cut.yaml");
            let _ = KubeSchedulerConfiguration::from_json_str(&base[..cut], "cut.json");
        }
    }
    for weird in [
        "\u{0}",
        "\t\t:",
        "{{{{",
        "&a [*a]",
        "a: &a [*a, *a]\nb: *a\n",
        "? |\n  x\n: y\n",
        "%YAML 1.2\n---\n",
        "a: @\n",
    ] {
        let _ = KubeSchedulerConfiguration::from_yaml_str(weird, "w.yaml");
        let _ = KubeSchedulerConfiguration::from_json_str(weird, "w.json");
    }
    assert!(n > 100);
}

/// Input strings with newlines or control characters are quoted, so every error is one line.
#[test]
fn echoed_input_is_quoted_on_one_line() {
    let cases = [
        // A key with a newline (unknown field) at the top level and in plugin args.
        "\"bad\\nkey\": 1\n",
        "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args: {\"sc\\u0007oring\": 1}\n",
        // A kind with a newline.
        "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args: {kind: \"Node\\nArgs\"}\n",
        // A value with a newline (validation error).
        "leaderElection: {leaderElect: true, resourceLock: \"a\\nb\"}\n",
        // A plugin name with a newline (weight validation) plus a second error.
        "parallelism: -1\nprofiles:\n- plugins:\n    score:\n      enabled: [{name: \"x\\ny\", weight: -1}]\n",
    ];
    for body in cases {
        let text = err(body).to_string();
        assert!(
            !text.contains('\n') && !text.contains('\u{7}'),
            "{body}: {text}"
        );
    }
    assert_eq!(
        err("\"bad\\nkey\": 1\n").to_string().split(':').nth(1),
        Some(" \"bad\\nkey\"")
    );
    let text = err(
        "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args: {kind: \"Node\\nArgs\"}\n",
    )
    .to_string();
    assert!(
        text.ends_with("args of kind \"Node\\nArgs\" given for plugin NodeResourcesFit"),
        "{text}"
    );
    // A kind with a newline at the top level.
    let e = KubeSchedulerConfiguration::from_yaml_str(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: \"Kube\\nSchedulerConfiguration\"\n",
        "c.yaml",
    )
    .unwrap_err()
    .to_string();
    assert!(!e.contains('\n'), "{e}");
}
