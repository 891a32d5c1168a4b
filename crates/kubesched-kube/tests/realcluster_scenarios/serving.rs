//! What kubesched serves and reads about itself: `/metrics` behind delegated
//! authentication and authorization, and the API server's version picking the
//! behaviour.

use std::path::Path;
use std::process::Command;

use kubesched_kube::Runtime;

use super::support::realcluster::Cluster;
use super::{
    LOG, config_with_token, create_nodes, create_pods, kubectl, kubectl_apply, limited_config,
    pods, ready_node, repo_file, service_account_token,
};

/// `/metrics` behind delegated authentication and authorization, with deploy/'s
/// RBAC: no token 403 (system:anonymous), a bad token 401, a token without RBAC 403,
/// a token bound to my-scheduler-metrics-reader 200; /healthz, /livez, /readyz open.
pub(super) async fn metrics_auth(cluster: &mut Cluster) {
    use kubesched_kube::testing::https_get_insecure_as;
    kubectl_apply(cluster, &repo_file("deploy/serviceaccount.yaml"));
    let token = service_account_token(cluster, "kube-system", "my-scheduler").await;
    let config = config_with_token(cluster, &token).await;
    let running = Runtime::from_kube_config(&config, limited_config("ks-metrics", 50, 100, false))
        .expect("clients")
        .serving(Some(kubesched_kube::ServingOptions::new(
            "127.0.0.1:0".parse().unwrap(),
        )))
        .start()
        .await
        .expect("start");
    let addr = running.secure_address().expect("serving");
    kubectl(
        cluster,
        &[
            "-n",
            "default",
            "create",
            "serviceaccount",
            "metrics-reader",
        ],
    );
    kubectl(
        cluster,
        &["-n", "default", "create", "serviceaccount", "nobody"],
    );
    kubectl(
        cluster,
        &[
            "create",
            "clusterrolebinding",
            "metrics-reader",
            "--clusterrole=my-scheduler-metrics-reader",
            "--serviceaccount=default:metrics-reader",
        ],
    );
    let reader = service_account_token(cluster, "default", "metrics-reader").await;
    let nobody = service_account_token(cluster, "default", "nobody").await;
    for path in ["/healthz", "/livez", "/readyz"] {
        let (code, body) = https_get_insecure_as(addr, path, None).await.expect("get");
        assert_eq!((code, body.as_str()), (200, "ok"), "{path}");
    }
    let (code, body) = https_get_insecure_as(addr, "/metrics", None)
        .await
        .expect("get");
    assert_eq!(code, 403, "{body}");
    assert!(body.contains("system:anonymous"), "{body}");
    let (code, _) = https_get_insecure_as(addr, "/metrics", Some("not-a-token"))
        .await
        .expect("get");
    assert_eq!(code, 401);
    let (code, body) = https_get_insecure_as(addr, "/metrics", Some(&nobody))
        .await
        .expect("get");
    assert_eq!(code, 403, "{body}");
    assert!(
        body.contains("system:serviceaccount:default:nobody"),
        "{body}"
    );
    for token in [reader.as_str(), "admin-token"] {
        let (code, body) = https_get_insecure_as(addr, "/metrics", Some(token))
            .await
            .expect("get");
        assert_eq!(code, 200, "{body}");
        assert!(body.contains("scheduler_pending_pods"));
    }
    running.stop().await;
    kubectl(cluster, &["delete", "clusterrolebinding", "metrics-reader"]);
    kubectl(
        cluster,
        &[
            "-n",
            "default",
            "delete",
            "serviceaccount",
            "metrics-reader",
            "nobody",
        ],
    );
}

/// The v1.36 API server's `/version` picks kubesched's v1.36 behaviour: for
/// `--from-cluster` (the same call `kubesched simulate --from-cluster` makes, and the
/// binary itself when `cargo test --workspace` has built it) and for `kubesched run`
/// (the lesson's runtime logged the line).
pub(super) async fn server_version(cluster: &mut Cluster) {
    use kubesched_framework::KubernetesVersion;
    let live = kubesched_kube::cluster_dump::LiveCluster::from_config(
        cluster.config().await,
        Some("realcluster".into()),
    )
    .expect("client");
    let v = kubesched_kube::server_version::server_version(live.client())
        .await
        .expect("/version answers");
    eprintln!(
        "realcluster: /version says {}: {}",
        v.git_version,
        v.choice()
    );
    assert_eq!((v.behaviour, v.exact), (KubernetesVersion::V1_36, true));
    assert!(v.git_version.starts_with("v1.36."), "{}", v.git_version);
    let logged = LOG.lines();
    assert!(
        logged
            .iter()
            .any(|l| l.contains("kube-scheduler v1.36.1 behaviour (the API server is v1.36.")),
        "the runtime said which behaviour it picked: {logged:?}"
    );
    // One pending pod (no kube-scheduler runs now) for the simulation to place.
    let admin = cluster.admin().await;
    create_nodes(&admin, vec![ready_node("node-1", "4", "8Gi")]).await;
    create_pods(&admin, pods(1, "versioned", "default-scheduler", "500m")).await;
    let bin = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/debug/kubesched");
    if !bin.exists() {
        eprintln!(
            "realcluster: {} not built: simulate --from-cluster not run",
            bin.display()
        );
        return;
    }
    let out = Command::new(&bin)
        .args(["simulate", "--from-cluster", "--kubeconfig"])
        .arg(&cluster.kubeconfig)
        .args(["--format", "jsonl"])
        .output()
        .expect("run kubesched");
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("realcluster: kubesched simulate --from-cluster said:\n{stderr}");
    assert!(out.status.success(), "{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains(r#""node":"node-1""#), "{stdout}");
    assert!(
        stderr.contains(
            "kubesched: note: kube-scheduler v1.36.1 behaviour (the API server is v1.36."
        ),
        "{stderr}"
    );
}
