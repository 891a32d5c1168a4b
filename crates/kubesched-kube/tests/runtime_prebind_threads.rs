//! Pods whose PreBind waits hold no thread: forty pods whose claims wait for a
//! provisioner are all in VolumeBinding's wait at once, and the process has no more
//! threads than before them (a blocking thread per binding cycle, as before PreBind was
//! a future, would add forty). Its own test binary: the thread count is the process's.
//! The bind timeout is short so that a regression fails in seconds, not ten minutes.

#[path = "support/objects.rs"]
mod objects;

mod common;

use std::time::Duration;

use common::{OURS, one_profile, until_some};
use kubesched_kube::Runtime;
use kubesched_kube::testing::FakeApiServer;
use objects::*;

const PODS: usize = 40;

/// The process's thread count, from /proc.
fn threads() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))
        .and_then(|n| n.trim().parse().ok())
        .expect("a Threads: line")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_waiting_for_their_volumes_hold_no_thread() {
    let server = FakeApiServer::start().await;
    server.add_node(FakeApiServer::node("n1", "64", "64Gi"));
    server.apply_object(&wffc_class("fast", "example.com/csi"));
    let config = one_profile(
        "",
        "  pluginConfig:
  - name: VolumeBinding
    args:
      bindTimeoutSeconds: 30
",
    );
    let rt = Runtime::new(server.client(), config)
        .start()
        .await
        .expect("start");
    // Settled: the runtime's own threads are there.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = threads();

    for i in 0..PODS {
        server.apply_object(&claim(&format!("c{i}"), "fast", "1Gi"));
        server.add_pod(pod_with_claim(&format!("p{i}"), OURS, &format!("c{i}")));
    }
    // PreBind has written each claim's selected-node: every binding cycle is in its
    // wait for the provisioner, which never comes.
    until_some(30, "every claim's selected-node", || {
        (0..PODS)
            .all(|i| {
                server
                    .object("persistentvolumeclaims", &format!("default/c{i}"))
                    .is_some_and(|c| {
                        c["metadata"]["annotations"]["volume.kubernetes.io/selected-node"]
                            .is_string()
                    })
            })
            .then_some(())
    })
    .await;
    let during = threads();
    assert!(
        during < before + PODS / 4,
        "{PODS} waiting binding cycles took threads: {before} before, {during} during"
    );
    assert!((0..PODS).all(|i| server.node_of(&format!("default/p{i}")).is_none()));
    rt.stop().await;
}
