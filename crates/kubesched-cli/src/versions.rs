//! `--kubernetes-version` and `--feature-gates`, shared by `simulate`, `capacity`,
//! `rollout` and `bench`: which kube-scheduler version's behaviour to reproduce, and
//! the gates changed from its defaults. Without the flag, a scenario read with
//! `--from-cluster` follows the API server's version (the nearest older one kubesched
//! has, when it has not that one), anything else the newest.

use clap::Args;
use kubesched_framework::{Features, KubernetesVersion};

/// The behaviour picked for the API server a scenario was read from (`--from-cluster`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerBehaviour {
    /// The version whose behaviour is used.
    pub version: KubernetesVersion,
    /// Why, for the note: `the API server is v1.36.1`, or the fallback.
    pub why: String,
}

/// The version options.
#[derive(Args, Debug, Clone, Default)]
pub struct VersionArgs {
    /// The kube-scheduler version whose decisions to reproduce: 1.35 or 1.36 (default:
    /// the API server's with --from-cluster, else 1.36, the newest). See
    /// docs/versions.md for what differs.
    #[arg(long, value_name = "VERSION", value_parser = parse_version)]
    pub kubernetes_version: Option<KubernetesVersion>,
    /// Feature gates changed from the version's defaults, as kube-scheduler takes them:
    /// `Name=true,Other=false`. Repeatable. docs/versions.md lists the gates kubesched
    /// honours.
    #[arg(long, value_name = "NAME=BOOL,...")]
    pub feature_gates: Vec<String>,
}

fn parse_version(s: &str) -> Result<KubernetesVersion, String> {
    s.parse()
}

impl VersionArgs {
    /// The features to run with, and the note line saying which behaviour is used (for
    /// the caller to print once its input has proved good, so that an error stays the
    /// only line); `server` is the API server's version when the scenario was read from
    /// a cluster.
    pub fn features(&self, server: Option<&ServerBehaviour>) -> Result<(Features, String), String> {
        let (version, why) = match (self.kubernetes_version, server) {
            (Some(v), _) => (v, "--kubernetes-version".to_string()),
            (None, Some(server)) => (server.version, server.why.clone()),
            (None, None) => (KubernetesVersion::LATEST, "the default".to_string()),
        };
        let features = self.with_version(version)?;
        let note = format!("{} ({why})", features.describe());
        Ok((features, note))
    }

    /// The two behaviours of `--compare-versions OLD,NEW`: each version's name (`v1.35`)
    /// and features, and the note saying which behaviours are compared.
    pub fn compared(
        &self,
        (old, new): (KubernetesVersion, KubernetesVersion),
    ) -> Result<(Vec<(String, Features)>, String), String> {
        let mut notes = Vec::new();
        let mut behaviours = Vec::new();
        for version in [old, new] {
            let features = self.with_version(version)?;
            notes.push(features.describe());
            behaviours.push((format!("v{version}"), features));
        }
        Ok((
            behaviours,
            format!("{} (--compare-versions)", notes.join(" vs ")),
        ))
    }

    /// `version`'s defaults with `--feature-gates` applied, without a note.
    pub fn with_version(&self, version: KubernetesVersion) -> Result<Features, String> {
        Features::with_gates(version, self.feature_gates.iter().map(String::as_str))
            .map_err(|e| format!("--feature-gates: {e}"))
    }
}

/// `--compare-versions A,B`: two versions, the first the "before".
pub fn parse_pair(s: &str) -> Result<(KubernetesVersion, KubernetesVersion), String> {
    let Some((a, b)) = s.split_once(',') else {
        return Err("expected two versions separated by a comma, such as 1.35,1.36".to_string());
    };
    Ok((a.parse()?, b.parse()?))
}

/// The checks `--compare-versions OLD,NEW` shares between the commands that take it:
/// at most one `--config` (`configs` given), no `--kubernetes-version`, two different
/// versions.
pub fn check_compare_versions(
    (old, new): (KubernetesVersion, KubernetesVersion),
    configs: usize,
    versions: &VersionArgs,
) -> Result<(), String> {
    if configs > 1 {
        return Err(format!(
            "--compare-versions {old},{new}: compares versions under one configuration; give at most one --config (or compare the configurations without --compare-versions)"
        ));
    }
    if let Some(v) = versions.kubernetes_version {
        return Err(format!(
            "--kubernetes-version {v}: --compare-versions {old},{new} names the versions; give one of them"
        ));
    }
    if old == new {
        return Err(format!(
            "--compare-versions {old},{new}: the same version twice; give two different versions, such as 1.35,1.36"
        ));
    }
    Ok(())
}
