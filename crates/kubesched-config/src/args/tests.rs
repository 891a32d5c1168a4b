//! The plugin args' tests: decoding, defaults and validation messages.

use super::*;

#[test]
fn defaults_match_go() {
    let fit = NodeResourcesFitArgs::default();
    assert_eq!(
        fit.scoring_strategy.type_,
        ScoringStrategyType::LeastAllocated
    );
    assert_eq!(fit.scoring_strategy.resources, default_resources());
    assert_eq!(InterPodAffinityArgs::default().hard_pod_affinity_weight, 1);
    assert_eq!(
        DefaultPreemptionArgs::default(),
        DefaultPreemptionArgs {
            min_candidate_nodes_percentage: 10,
            min_candidate_nodes_absolute: 100
        }
    );
    assert_eq!(VolumeBindingArgs::default().bind_timeout_seconds, 600);
    assert_eq!(
        PodTopologySpreadArgs::default().defaulting_type,
        DefaultingType::System
    );
    for a in [
        serde_json::to_value(NodeResourcesFitArgs::default()).unwrap(),
        serde_json::to_value(DynamicResourcesArgs::default()).unwrap(),
    ] {
        assert!(a.is_object());
    }
    assert_eq!(
        serde_json::to_value(DynamicResourcesArgs::default()).unwrap(),
        serde_json::json!({"filterTimeout": "10s", "bindingTimeout": "10m0s"})
    );
}

#[test]
fn fit_validation() {
    let mut a = NodeResourcesFitArgs::default();
    a.scoring_strategy.resources = vec![ResourceSpec::new("cpu", 101)];
    a.ignored_resource_groups = vec!["example.com/x".into()];
    a.scoring_strategy.requested_to_capacity_ratio = Some(RequestedToCapacityRatioParam {
        shape: vec![
            UtilizationShapePoint {
                utilization: 50,
                score: 11,
            },
            UtilizationShapePoint {
                utilization: 10,
                score: 0,
            },
        ],
    });
    let errs: Vec<String> = a.validate().iter().map(|e| e.to_string()).collect();
    assert!(errs.contains(&"ignoredResourceGroups[0]: Invalid value: \"example.com/x\": resource group name can't contain '/'".to_string()), "{errs:?}");
    assert!(errs.contains(&"scoringStrategy.resources[0].weight: Invalid value: 101: resource weight of cpu not in valid range (0, 100]".to_string()), "{errs:?}");
    assert!(errs.contains(&"scoringStrategy.requestedToCapacityRatio.shape[1].utilization: Invalid value: 10: values must be sorted in increasing order".to_string()), "{errs:?}");
    assert!(errs.contains(&"scoringStrategy.requestedToCapacityRatio.shape[0].score: Invalid value: 11: not in valid range [0, 10]".to_string()), "{errs:?}");
}

#[test]
fn other_validations() {
    let e = DefaultPreemptionArgs {
        min_candidate_nodes_percentage: 0,
        min_candidate_nodes_absolute: 0,
    }
    .validate();
    assert_eq!(e.len(), 2);
    let e = InterPodAffinityArgs {
        hard_pod_affinity_weight: 101,
        ..Default::default()
    }
    .validate();
    assert_eq!(
        e[0].to_string(),
        "hardPodAffinityWeight: Invalid value: 101: not in valid range [0, 100]"
    );
    let e = NodeResourcesBalancedAllocationArgs {
        resources: vec![ResourceSpec::new("cpu", 2), ResourceSpec::new("cpu", 1)],
    }
    .validate();
    assert_eq!(e.len(), 2);
    let pts = PodTopologySpreadArgs {
        default_constraints: vec![TopologySpreadConstraint {
            max_skew: 0,
            topology_key: String::new(),
            when_unsatisfiable: "Maybe".into(),
            ..Default::default()
        }],
        defaulting_type: DefaultingType::System,
    };
    let e: Vec<String> = pts.validate().iter().map(|e| e.to_string()).collect();
    assert_eq!(e.len(), 4, "{e:?}");
    assert!(e[3].contains("Unsupported value: \"Maybe\""), "{e:?}");
    let na = NodeAffinityArgs {
        added_affinity: Some(NodeAffinity {
            required_during_scheduling_ignored_during_execution: Some(NodeSelector {
                node_selector_terms: vec![NodeSelectorTerm {
                    match_expressions: vec![NodeSelectorRequirement {
                        key: "zone".into(),
                        operator: "In".into(),
                        values: vec![],
                    }],
                    match_fields: vec![],
                }],
            }),
            preferred_during_scheduling_ignored_during_execution: vec![],
        }),
    };
    let e = na.validate();
    assert_eq!(
        e[0].to_string(),
        "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values: Invalid value: []string{}: for 'in', 'notin' operators, values set can't be empty"
    );
    let vb = VolumeBindingArgs {
        bind_timeout_seconds: -1,
        shape: vec![UtilizationShapePoint::default()],
    };
    assert_eq!(vb.validate().len(), 2);
    let dra = DynamicResourcesArgs {
        filter_timeout: None,
        binding_timeout: Some(Duration::from_millis(10)),
    };
    assert_eq!(
        dra.validate()[0].to_string(),
        "bindingTimeout: Invalid value: 10ms: must be at least 1 second"
    );
}
