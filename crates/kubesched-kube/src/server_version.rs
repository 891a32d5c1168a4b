//! The API server's version (`GET /version`) and the kube-scheduler behaviour that
//! goes with it: the same minor when kubesched has it, else the nearest older one.
//! `kubesched run` and `--from-cluster` use it unless `--kubernetes-version` says
//! otherwise.

use kubesched_framework::KubernetesVersion;

use crate::cluster_dump::{ClusterDump, ClusterError, ClusterOptions, LiveCluster};

/// What the API server said, and the behaviour picked for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerVersion {
    /// `gitVersion`, such as `v1.36.1`.
    pub git_version: String,
    /// The behaviour kubesched uses for it.
    pub behaviour: KubernetesVersion,
    /// Whether kubesched has the server's own minor version.
    pub exact: bool,
}

impl ServerVersion {
    /// Reads `/version`'s `major`, `minor` and `gitVersion`; an error when they name no
    /// `1.<minor>` version.
    pub fn from_info(major: &str, minor: &str, git_version: &str) -> Result<ServerVersion, String> {
        let m = KubernetesVersion::server_minor(major, minor, git_version).ok_or_else(|| {
            format!(
                "the API server's /version (major {major:?}, minor {minor:?}, gitVersion {git_version:?}) names no Kubernetes 1.x version"
            )
        })?;
        let (behaviour, exact) = KubernetesVersion::for_server(m);
        let git_version = if git_version.is_empty() {
            format!("v1.{m}")
        } else {
            git_version.to_string()
        };
        Ok(ServerVersion {
            git_version,
            behaviour,
            exact,
        })
    }

    /// Why this behaviour: `the API server is v1.36.1`, or, when kubesched has not
    /// that version, which one it falls back to.
    pub fn choice(&self) -> String {
        if self.exact {
            format!("the API server is {}", self.git_version)
        } else {
            format!(
                "the API server is {}, which kubesched does not implement: the nearest {} it has",
                self.git_version,
                if KubernetesVersion::server_minor("", "", &self.git_version)
                    .is_some_and(|m| m < 35)
                {
                    "newer one"
                } else {
                    "older one"
                }
            )
        }
    }
}

/// Asks the API server of `client` for its version.
pub async fn server_version(client: &kube::Client) -> Result<ServerVersion, String> {
    let info = client.apiserver_version().await.map_err(|e| {
        let text = e.to_string();
        format!("GET /version: {}", text.lines().next().unwrap_or_default())
    })?;
    ServerVersion::from_info(&info.major, &info.minor, &info.git_version)
}

/// [`crate::cluster_dump::connect_and_dump`] that also asks for the server's version
/// (`Err` in the last place when `/version` does not answer: the dump is still good).
pub fn connect_dump_and_version(
    options: &ClusterOptions,
) -> Result<(String, ClusterDump, Result<ServerVersion, String>), ClusterError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(ClusterError::Runtime)?;
    runtime.block_on(async {
        let cluster = LiveCluster::connect(options).await?;
        let version = server_version(cluster.client()).await;
        let dump = cluster.dump().await?;
        Ok((cluster.to_string(), dump, version))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_server_picks_its_own_or_the_nearest_older_behaviour() {
        let v = ServerVersion::from_info("1", "36", "v1.36.1").unwrap();
        assert_eq!((v.behaviour, v.exact), (KubernetesVersion::V1_36, true));
        assert_eq!(v.choice(), "the API server is v1.36.1");
        let v = ServerVersion::from_info("1", "37+", "v1.37.0-gke.3").unwrap();
        assert_eq!((v.behaviour, v.exact), (KubernetesVersion::V1_36, false));
        assert!(v.choice().contains("nearest older one"), "{}", v.choice());
        let v = ServerVersion::from_info("1", "33", "v1.33.2").unwrap();
        assert_eq!(v.behaviour, KubernetesVersion::V1_35);
        assert!(v.choice().contains("nearest newer one"), "{}", v.choice());
        assert!(ServerVersion::from_info("", "", "").is_err());
    }
}
