//! Helpers the runtime's tests against the fake API server share (each test binary
//! includes this module and uses its part of it).
#![allow(dead_code)]

use std::time::{Duration, Instant};

use kubesched_config::KubeSchedulerConfiguration;

/// The scheduler name of the tests' profile.
pub const OURS: &str = "my-scheduler";

/// A configuration without leader election and with one profile, [`OURS`]: `top` adds
/// lines at the top level, `profile` lines under the profile (each line ending in a
/// newline, the profile's indented two spaces).
pub fn one_profile(top: &str, profile: &str) -> KubeSchedulerConfiguration {
    let text = format!(
        "apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
{top}leaderElection:
  leaderElect: false
profiles:
- schedulerName: {OURS}
{profile}"
    );
    KubeSchedulerConfiguration::from_yaml_str(&text, "test.yaml")
        .expect("config")
        .config
}

/// Polls `f` every 10 ms until it gives a value, for at most `secs` seconds; the test
/// fails with `what` if it never does.
pub async fn until_some<T>(secs: u64, what: &str, f: impl Fn() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Polls `f` every 10 ms until it holds, for at most `secs` seconds.
pub async fn until(secs: u64, what: &str, f: impl Fn() -> bool) {
    until_some(secs, what, || f().then_some(())).await
}
