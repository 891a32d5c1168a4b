//! A real control plane (etcd + kube-apiserver, v1.36) for the tests that prove the
//! runtime against the real API server: one per test binary, started through
//! kubesched-envtest (binaries from `KUBEBUILDER_ASSETS`, `KUBESCHED_REALCLUSTER` or
//! `../shared/realcluster`) and stopped when the [`Cluster`] is dropped (also while a
//! failing test unwinds). Without binaries the test skips with a line saying how to run
//! it, unless `KUBESCHED_REQUIRE_REALCLUSTER` is set (as `.ci/run` sets it); binaries
//! that do not start fail the test loudly.

#![allow(dead_code)]

use std::path::PathBuf;

use kubesched_envtest::ControlPlane;

/// A running control plane: kubesched-envtest's, whose state folder, kubeconfig, port,
/// `kubectl`, `kube-scheduler`, `track` and `stop_apiserver` it reads through, with the
/// kube-rs clients the tests use.
pub struct Cluster {
    plane: ControlPlane,
}

impl std::ops::Deref for Cluster {
    type Target = ControlPlane;
    fn deref(&self) -> &ControlPlane {
        &self.plane
    }
}

impl std::ops::DerefMut for Cluster {
    fn deref_mut(&mut self) -> &mut ControlPlane {
        &mut self.plane
    }
}

impl Cluster {
    /// Starts etcd and kube-apiserver in a state folder under the target directory (one
    /// per test binary `name`); `None` when the test is to skip (said on standard error).
    pub fn up(name: &str) -> Option<Cluster> {
        let state = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("realcluster-{name}"));
        // The gang scheduling API (scheduling.k8s.io/v1alpha2 PodGroups, their
        // schedulingConstraints kept), which the gang scenario's kube-scheduler reads;
        // nothing else uses it.
        let args = [
            "--feature-gates=GenericWorkload=true,GangScheduling=true,TopologyAwareWorkloadScheduling=true"
                .to_string(),
            "--runtime-config=scheduling.k8s.io/v1alpha2=true".to_string(),
        ];
        let plane = kubesched_envtest::start_or_skip(
            concat!(env!("CARGO_PKG_NAME"), "'s tests against a real API server"),
            &state,
            &args,
        )?;
        eprintln!(
            "realcluster: up in {:.1}s from {}, API server on 127.0.0.1:{}",
            plane.took.as_secs_f64(),
            plane.binaries.place,
            plane.port
        );
        Some(Cluster { plane })
    }

    /// The admin kube-rs configuration.
    pub async fn config(&self) -> kube::Config {
        let kc = kube::config::Kubeconfig::read_from(&self.kubeconfig).expect("kubeconfig");
        kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
            .await
            .expect("kube config")
    }

    /// An admin client (kube-rs defaults, for the test's own requests).
    pub async fn admin(&self) -> kube::Client {
        kube::Client::try_from(self.config().await).expect("client")
    }

    /// Starts kube-apiserver again after `stop_apiserver` and waits until it is ready.
    pub fn start_apiserver(&mut self) {
        if let Err(e) = self.plane.start_apiserver() {
            panic!("kube-apiserver did not come back: {e}");
        }
    }

    /// The TCP connections this process holds open to the API server right now:
    /// the ESTABLISHED rows of /proc/net/tcp{,6} whose remote port is the API
    /// server's and whose socket inode is one of this process's file descriptors.
    pub fn connections_to_apiserver(&self) -> usize {
        let mut mine = std::collections::HashSet::new();
        if let Ok(dir) = std::fs::read_dir("/proc/self/fd") {
            for e in dir.flatten() {
                if let Ok(target) = std::fs::read_link(e.path()) {
                    let t = target.to_string_lossy();
                    if let Some(inode) =
                        t.strip_prefix("socket:[").and_then(|r| r.strip_suffix(']'))
                    {
                        mine.insert(inode.to_string());
                    }
                }
            }
        }
        let mut n = 0;
        for file in ["/proc/net/tcp", "/proc/net/tcp6"] {
            let text = std::fs::read_to_string(file).unwrap_or_default();
            for line in text.lines().skip(1) {
                let cols: Vec<&str> = line.split_whitespace().collect();
                if cols.len() < 10 {
                    continue;
                }
                let remote_port = cols[2]
                    .rsplit(':')
                    .next()
                    .and_then(|p| u16::from_str_radix(p, 16).ok());
                // State 01 is ESTABLISHED.
                if remote_port == Some(self.port) && cols[3] == "01" && mine.contains(cols[9]) {
                    n += 1;
                }
            }
        }
        n
    }
}
