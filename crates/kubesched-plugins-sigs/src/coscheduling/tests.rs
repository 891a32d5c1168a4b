//! The args' defaults and validation, as apis/config/v1 and validation_pluginargs.go
//! have them.

use super::*;

#[test]
fn args_default_as_set_defaults_coscheduling_args() {
    let mut args = CoschedulingArgs::default();
    args.apply_defaults();
    assert_eq!(args.permit_waiting_time_seconds, Some(60));
    assert_eq!(args.pod_group_backoff_seconds, Some(0));
    assert_eq!(args.pod_group_reject_percentage, Some(10));
    assert_eq!(args.validate(), Ok(()));
}

#[test]
fn invalid_args_are_refused_with_validate_coscheduling_args_words() {
    let args = CoschedulingArgs {
        permit_waiting_time_seconds: Some(-1),
        pod_group_backoff_seconds: Some(0),
        pod_group_reject_percentage: Some(10),
    };
    assert_eq!(
        args.validate(),
        Err("permitWaitingTimeSeconds: Invalid value: -1: must be greater than 0".into())
    );
    let args = CoschedulingArgs {
        permit_waiting_time_seconds: Some(5),
        pod_group_backoff_seconds: Some(-2),
        pod_group_reject_percentage: Some(101),
    };
    assert_eq!(
        args.validate(),
        Err("[podGroupBackoffSeconds: Invalid value: -2: must be greater than 0, podGroupRejectPercentage: Invalid value: 101: must be between 0 and 100]".into())
    );
}

#[test]
fn args_decode_strictly() {
    let err = new(
        Some(&serde_json::json!({"permitWaitingTimeSecond": 5})),
        &Handle::default(),
    )
    .err()
    .map(|e| e.message)
    .unwrap_or_default();
    assert!(err.contains("permitWaitingTimeSecond"), "{err}");
}
