//! The Kubernetes versions kubesched implements and the feature gates its plugins
//! honour: a [`Features`] value, made once from a [`KubernetesVersion`] and
//! `--feature-gates`, that plugins receive at construction (through the
//! [`Handle`](crate::Handle)), as kube-scheduler's plugins receive `feature.Features`.
//! Nothing reads a global: two frameworks built with different values in one process
//! (`simulate --compare-versions`) behave as their own versions.
//!
//! The version decides what has no gate (NodeResourcesBalancedAllocation's v1.36 score,
//! kubernetes PR #135573) and the gates' defaults; `--feature-gates` then changes gates
//! one by one, with kube-scheduler's syntax (`Name=true,Other=false`).

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

/// A minor version of kube-scheduler whose decisions kubesched reproduces.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum KubernetesVersion {
    /// kube-scheduler v1.35 (v1.35.4).
    V1_35,
    /// kube-scheduler v1.36 (v1.36.1): BalancedAllocation weighs the change the pod
    /// makes; ImageLocality counts image volumes.
    #[default]
    V1_36,
}

impl KubernetesVersion {
    /// Every version kubesched implements, oldest first.
    pub const ALL: [KubernetesVersion; 2] = [KubernetesVersion::V1_35, KubernetesVersion::V1_36];

    /// The newest version: the default.
    pub const LATEST: KubernetesVersion = KubernetesVersion::V1_36;

    /// `1.35`, `1.36`.
    pub fn as_str(self) -> &'static str {
        match self {
            KubernetesVersion::V1_35 => "1.35",
            KubernetesVersion::V1_36 => "1.36",
        }
    }

    /// The kube-scheduler release whose code the version's behaviour was checked against.
    pub fn release(self) -> &'static str {
        match self {
            KubernetesVersion::V1_35 => "v1.35.4",
            KubernetesVersion::V1_36 => "v1.36.1",
        }
    }

    fn minor(self) -> u32 {
        match self {
            KubernetesVersion::V1_35 => 35,
            KubernetesVersion::V1_36 => 36,
        }
    }

    fn index(self) -> usize {
        self as usize
    }

    /// The behaviour to use for an API server of version `1.<minor>`: the same minor
    /// when kubesched has it, else the nearest older one, else (a server older than
    /// every version kubesched has) the oldest. The flag says whether it is exact.
    pub fn for_server(minor: u32) -> (KubernetesVersion, bool) {
        match Self::ALL.iter().rev().find(|v| v.minor() <= minor) {
            Some(&v) => (v, v.minor() == minor),
            None => (Self::ALL[0], false),
        }
    }

    /// Reads the major and minor of an API server's `/version` (`minor` may carry a
    /// vendor suffix such as `36+`; `gitVersion` is the fallback when it is empty).
    /// `None` when neither says `1.<minor>`.
    pub fn server_minor(major: &str, minor: &str, git_version: &str) -> Option<u32> {
        let digits = |s: &str| -> Option<u32> {
            let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
            s[..end].parse().ok()
        };
        if digits(major) == Some(1)
            && let Some(m) = digits(minor)
        {
            return Some(m);
        }
        let rest = git_version.strip_prefix('v').unwrap_or(git_version);
        let (maj, rest) = rest.split_once('.')?;
        (maj == "1").then(|| digits(rest)).flatten()
    }
}

impl fmt::Display for KubernetesVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for KubernetesVersion {
    type Err = String;

    /// `1.36`, `v1.36`, or a patch release such as `1.36.1` (its minor is what counts).
    fn from_str(s: &str) -> Result<Self, String> {
        let bare = s.trim().strip_prefix('v').unwrap_or(s.trim());
        let mut parts = bare.splitn(3, '.');
        let (major, minor) = (parts.next(), parts.next());
        let patch_ok = parts.next().is_none_or(|p| p.parse::<u32>().is_ok());
        let known = || {
            Self::ALL
                .iter()
                .map(|v| v.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        match (major, minor.and_then(|m| m.parse::<u32>().ok())) {
            (Some("1"), Some(minor)) if patch_ok => Self::ALL
                .iter()
                .copied()
                .find(|v| v.minor() == minor)
                .ok_or_else(|| {
                    format!("kubesched implements kube-scheduler {}, not {s:?}", known())
                }),
            _ => Err(format!(
                "{s:?} is not a Kubernetes version: expected one of {}",
                known()
            )),
        }
    }
}

/// What kubesched does with a gate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Support {
    /// Both values change kubesched's behaviour as they change kube-scheduler's.
    Both,
    /// kubesched implements only this value; the other is refused on the command line.
    /// When a version's default is the other value, kubesched still behaves as this
    /// one (said in docs/versions.md).
    Only(bool),
}

/// A kube-scheduler feature gate kubesched knows.
#[derive(Clone, Copy, Debug)]
pub struct Gate {
    /// The gate's name, as `--feature-gates` spells it.
    pub name: &'static str,
    /// The default in each of [`KubernetesVersion::ALL`], in that order.
    pub defaults: [bool; 2],
    /// What kubesched does with it.
    pub support: Support,
    /// What it changes in the scheduler, in a few words.
    pub what: &'static str,
}

impl Gate {
    /// The gate's default in `version`.
    pub fn default_in(&self, version: KubernetesVersion) -> bool {
        self.defaults[version.index()]
    }
}

/// The gates kubesched knows, by name; defaults from kube-scheduler v1.35.4 and v1.36.1.
pub const GATES: &[Gate] = &[
    Gate {
        name: "DRAAdminAccess",
        defaults: [true, true],
        support: Support::Only(true),
        what: "DRA requests with adminAccess",
    },
    Gate {
        name: "DRAConsumableCapacity",
        defaults: [false, true],
        support: Support::Both,
        what: "DRA devices with allowMultipleAllocations shared by capacity requests",
    },
    Gate {
        name: "DRADeviceBindingConditions",
        defaults: [false, true],
        support: Support::Both,
        what: "DRA devices with binding conditions are allocated (refused while off); PreBind waits for them",
    },
    Gate {
        name: "DRADeviceTaints",
        defaults: [false, true],
        support: Support::Both,
        what: "DRA devices with untolerated NoSchedule/NoExecute taints are not allocated",
    },
    Gate {
        name: "DRAExtendedResource",
        defaults: [false, true],
        support: Support::Both,
        what: "extended resources backed by DRA device classes",
    },
    Gate {
        name: "DRAPartitionableDevices",
        defaults: [false, true],
        support: Support::Both,
        what: "DRA devices that consume shared counters (refused while off)",
    },
    Gate {
        name: "DRAPrioritizedList",
        defaults: [true, true],
        support: Support::Only(true),
        what: "DRA firstAvailable requests and DynamicResources' score",
    },
    Gate {
        name: "DynamicResourceAllocation",
        defaults: [true, true],
        support: Support::Only(true),
        what: "the DynamicResources plugin in the default profile",
    },
    Gate {
        name: "GangScheduling",
        defaults: [false, false],
        support: Support::Both,
        what: "the GangScheduling plugin in the default profile (needs GenericWorkload): v1.35's on scheduling.k8s.io/v1alpha1 Workloads, v1.36's on v1alpha2 PodGroups",
    },
    Gate {
        name: "GenericWorkload",
        defaults: [false, false],
        support: Support::Both,
        what: "v1.35: the scheduling.k8s.io/v1alpha1 Workload API; v1.36: pods of a v1alpha2 PodGroup are scheduled together, in one PodGroup cycle",
    },
    Gate {
        name: "ImageVolume",
        defaults: [true, true],
        support: Support::Both,
        what: "v1.36's ImageLocality counts the images of image volumes",
    },
    Gate {
        name: "InPlacePodVerticalScaling",
        defaults: [true, true],
        support: Support::Only(true),
        what: "a resizing pod counts the larger of its spec and allocated requests",
    },
    Gate {
        name: "MatchLabelKeysInPodTopologySpread",
        defaults: [true, true],
        support: Support::Only(true),
        what: "topologySpreadConstraints' matchLabelKeys",
    },
    Gate {
        name: "NodeDeclaredFeatures",
        defaults: [false, true],
        support: Support::Both,
        what: "the NodeDeclaredFeatures plugin (in the default profile when on)",
    },
    Gate {
        name: "NodeInclusionPolicyInPodTopologySpread",
        defaults: [true, true],
        support: Support::Only(true),
        what: "topologySpreadConstraints' nodeAffinityPolicy and nodeTaintsPolicy",
    },
    Gate {
        name: "OpportunisticBatching",
        defaults: [true, true],
        support: Support::Both,
        what: "a pod like the previous one may take the next node of its scores (runtime, bench --mode upstream)",
    },
    Gate {
        name: "PodLevelResources",
        defaults: [true, true],
        support: Support::Only(true),
        what: "pod-level spec.resources requests",
    },
    Gate {
        name: "SchedulerPopFromBackoffQ",
        defaults: [true, true],
        support: Support::Both,
        what: "an idle scheduler takes a pod backing off after a rejection before its backoff ends (runtime, timed replay)",
    },
    Gate {
        name: "SchedulerQueueingHints",
        defaults: [true, true],
        support: Support::Only(true),
        what: "plugins' queueing hints decide which events requeue a pod",
    },
    Gate {
        name: "StorageCapacityScoring",
        defaults: [false, false],
        support: Support::Only(false),
        what: "VolumeBinding's score and its shape argument",
    },
    Gate {
        name: "TopologyAwareWorkloadScheduling",
        defaults: [false, false],
        support: Support::Both,
        what: "v1.36's placements for PodGroups with topology constraints: TopologyPlacementGenerator and PodGroupPodsCount in the default profile, NodeResourcesFit's placement score (needs GenericWorkload; simulate and replay, not run)",
    },
    Gate {
        name: "WorkloadAwarePreemption",
        defaults: [false, false],
        support: Support::Only(false),
        what: "v1.36's preemption for a whole PodGroup: not implemented",
    },
];

/// Gates that need others on (component-base's `Dependencies` of kube's feature list):
/// each gate with the gates it depends on.
pub const GATE_DEPENDENCIES: &[(&str, &[&str])] = &[
    ("GangScheduling", &["GenericWorkload"]),
    ("TopologyAwareWorkloadScheduling", &["GenericWorkload"]),
    ("WorkloadAwarePreemption", &["GangScheduling"]),
];

/// The gate of this name, if kubesched knows it.
pub fn gate(name: &str) -> Option<&'static Gate> {
    GATES.iter().find(|g| g.name == name)
}

/// What plugins know about the Kubernetes version they implement: the version and
/// the gates they honour.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Features {
    /// The kube-scheduler version whose behaviour to reproduce.
    pub version: KubernetesVersion,
    /// Every known gate's value (the version's default unless set).
    gates: BTreeMap<&'static str, bool>,
    /// The gates set explicitly, in the order given (for the note line).
    set: Vec<(&'static str, bool)>,
}

impl Default for Features {
    fn default() -> Self {
        Features::new(KubernetesVersion::LATEST)
    }
}

impl Features {
    /// `version`'s defaults.
    pub fn new(version: KubernetesVersion) -> Features {
        Features {
            version,
            gates: GATES
                .iter()
                .map(|g| (g.name, g.default_in(version)))
                .collect(),
            set: Vec::new(),
        }
    }

    /// `version`'s defaults changed by `--feature-gates` values (each
    /// `Name=true,Other=false`, kube-scheduler's syntax; later values win).
    pub fn with_gates<'a>(
        version: KubernetesVersion,
        specs: impl IntoIterator<Item = &'a str>,
    ) -> Result<Features, String> {
        let mut features = Features::new(version);
        for spec in specs {
            for (name, value) in parse_gates(spec)? {
                features.set(&name, value)?;
            }
        }
        features.check_dependencies()?;
        Ok(features)
    }

    /// Refuses a gate that is on while a gate it depends on is off, with
    /// component-base's words (`GangScheduling is enabled, but depends on features
    /// that are disabled: [GenericWorkload]`), as kube-scheduler refuses to start.
    pub fn check_dependencies(&self) -> Result<(), String> {
        // v1.36's gate: kube-scheduler v1.35.4 does not know it.
        if self.version < KubernetesVersion::V1_36
            && self.enabled("TopologyAwareWorkloadScheduling")
        {
            return Err(format!(
                "unrecognized feature gate: TopologyAwareWorkloadScheduling (kube-scheduler {} has no such gate; it came in v1.36)",
                self.version.release()
            ));
        }
        for (gate, needs) in GATE_DEPENDENCIES {
            if !self.enabled(gate) {
                continue;
            }
            let off: Vec<&str> = needs.iter().copied().filter(|n| !self.enabled(n)).collect();
            if !off.is_empty() {
                return Err(format!(
                    "{gate} is enabled, but depends on features that are disabled: [{}]",
                    off.join(" ")
                ));
            }
        }
        Ok(())
    }

    /// Whether pods that name a PodGroup (`spec.schedulingGroup.podGroupName`) are
    /// scheduled in PodGroup cycles (kube-scheduler v1.36's `genericWorkloadEnabled`).
    /// Never under v1.35: its `GenericWorkload` serves the v1alpha1 Workload API, and
    /// its gang pods are scheduled one at a time, waiting at Permit.
    pub fn generic_workload(&self) -> bool {
        self.version >= KubernetesVersion::V1_36 && self.enabled("GenericWorkload")
    }

    /// Sets one gate. Unknown names and values kubesched does not implement are errors.
    pub fn set(&mut self, name: &str, value: bool) -> Result<(), String> {
        let Some(g) = gate(name) else {
            return Err(unknown_gate(name));
        };
        if let Support::Only(only) = g.support
            && value != only
        {
            return Err(format!(
                "feature gate {name}={value}: kubesched implements only {name}={only} ({})",
                g.what
            ));
        }
        self.gates.insert(g.name, value);
        self.set.retain(|(n, _)| *n != g.name);
        self.set.push((g.name, value));
        Ok(())
    }

    /// Whether the gate is on. Panics on a name kubesched does not know: plugins ask
    /// only about gates of [`GATES`].
    pub fn enabled(&self, name: &str) -> bool {
        match self.gates.get(name) {
            Some(&v) => v,
            None => panic!("feature gate {name} is not in GATES"),
        }
    }

    /// Whether NodeResourcesBalancedAllocation scores the balance the pod adds
    /// (v1.36, kubernetes PR #135573) rather than the balance with the pod alone.
    pub fn balanced_allocation_weighs_change(&self) -> bool {
        self.version >= KubernetesVersion::V1_36
    }

    /// Whether DynamicResources' Score counts the pod's already allocated claims (v1.36)
    /// rather than failing on them (v1.35, kubernetes issue #133836).
    pub fn dra_score_counts_allocated_claims(&self) -> bool {
        self.version >= KubernetesVersion::V1_36
    }

    /// Whether ImageLocality counts the images of the pod's image volumes (v1.36, with
    /// ImageVolume on).
    pub fn image_locality_counts_image_volumes(&self) -> bool {
        self.version >= KubernetesVersion::V1_36 && self.enabled("ImageVolume")
    }

    /// Whether DRA's allocator refuses devices with untolerated taints.
    pub fn dra_device_taints(&self) -> bool {
        self.enabled("DRADeviceTaints")
    }

    /// Whether DRA's allocator allocates devices that consume shared counters, within
    /// their counter sets.
    pub fn dra_partitionable_devices(&self) -> bool {
        self.enabled("DRAPartitionableDevices")
    }

    /// Whether DRA's allocator honours capacity requests and shares devices with
    /// `allowMultipleAllocations`.
    pub fn dra_consumable_capacity(&self) -> bool {
        self.enabled("DRAConsumableCapacity")
    }

    /// Whether DRA's allocator may pick devices with binding conditions (and PreBind
    /// waits for them).
    pub fn dra_device_binding_conditions(&self) -> bool {
        self.enabled("DRADeviceBindingConditions")
    }

    /// Whether extended resources that a DeviceClass names are allocated through DRA on
    /// the nodes that do not advertise them.
    pub fn dra_extended_resource(&self) -> bool {
        self.enabled("DRAExtendedResource")
    }

    /// `kube-scheduler v1.36.1 behaviour`, with the gates set explicitly.
    pub fn describe(&self) -> String {
        let mut s = format!("kube-scheduler {} behaviour", self.version.release());
        if !self.set.is_empty() {
            let gates: Vec<String> = self.set.iter().map(|(n, v)| format!("{n}={v}")).collect();
            s.push_str(&format!(" with feature gates {}", gates.join(",")));
        }
        s
    }
}

/// Parses `Name=true,Other=false` (kube-scheduler's `--feature-gates` syntax: pairs
/// separated by commas, spaces around them ignored, values as Go's `ParseBool`).
pub fn parse_gates(spec: &str) -> Result<Vec<(String, bool)>, String> {
    let mut out = Vec::new();
    for pair in spec.split(',') {
        let pair = pair.trim();
        if pair.is_empty() {
            continue;
        }
        let Some((name, value)) = pair.split_once('=') else {
            return Err(format!(
                "feature gate {pair:?}: missing bool value (expected Name=true or Name=false)"
            ));
        };
        let name = name.trim();
        let value = match value.trim() {
            "1" | "t" | "T" | "true" | "TRUE" | "True" => true,
            "0" | "f" | "F" | "false" | "FALSE" | "False" => false,
            other => {
                return Err(format!(
                    "feature gate {name}: invalid value {other:?} (expected true or false)"
                ));
            }
        };
        if gate(name).is_none() {
            return Err(unknown_gate(name));
        }
        out.push((name.to_string(), value));
    }
    Ok(out)
}

fn unknown_gate(name: &str) -> String {
    let close = GATES
        .iter()
        .map(|g| {
            (
                strsim::damerau_levenshtein(&g.name.to_lowercase(), &name.to_lowercase()),
                g.name,
            )
        })
        .filter(|(d, g)| *d <= (g.len() / 3).max(2))
        .min();
    match close {
        Some((_, g)) => format!("unrecognized feature gate: {name}; did you mean {g}?"),
        None => format!(
            "unrecognized feature gate: {name} (kubesched knows the gates listed in docs/versions.md)"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_and_pick_the_nearest_older() {
        assert_eq!("1.35".parse(), Ok(KubernetesVersion::V1_35));
        assert_eq!("v1.36.1".parse(), Ok(KubernetesVersion::V1_36));
        assert!(
            "1.34"
                .parse::<KubernetesVersion>()
                .unwrap_err()
                .contains("1.35, 1.36")
        );
        assert!("banana".parse::<KubernetesVersion>().is_err());
        assert_eq!(
            KubernetesVersion::for_server(36),
            (KubernetesVersion::V1_36, true)
        );
        assert_eq!(
            KubernetesVersion::for_server(38),
            (KubernetesVersion::V1_36, false)
        );
        assert_eq!(
            KubernetesVersion::for_server(30),
            (KubernetesVersion::V1_35, false)
        );
        assert_eq!(KubernetesVersion::server_minor("1", "36+", ""), Some(36));
        assert_eq!(
            KubernetesVersion::server_minor("", "", "v1.35.2-gke.1"),
            Some(35)
        );
        assert_eq!(KubernetesVersion::server_minor("2", "0", "v2.0.0"), None);
    }

    #[test]
    fn gates_start_from_the_version_and_follow_the_flag() {
        let f = Features::new(KubernetesVersion::V1_35);
        assert!(!f.dra_device_taints());
        assert!(Features::new(KubernetesVersion::V1_36).dra_device_taints());
        let f = Features::with_gates(
            KubernetesVersion::V1_36,
            [
                "DRADeviceTaints=false, ImageVolume=true",
                "DRADeviceTaints=true",
            ],
        )
        .unwrap();
        assert!(f.dra_device_taints());
        assert_eq!(
            f.describe(),
            "kube-scheduler v1.36.1 behaviour with feature gates ImageVolume=true,DRADeviceTaints=true"
        );
    }

    #[test]
    fn bad_gates_are_one_line_errors() {
        let e = Features::with_gates(KubernetesVersion::V1_36, ["DRADeviceTaint=true"]);
        assert_eq!(
            e.unwrap_err(),
            "unrecognized feature gate: DRADeviceTaint; did you mean DRADeviceTaints?"
        );
        let e = Features::with_gates(KubernetesVersion::V1_36, ["ImageVolume"]).unwrap_err();
        assert!(e.contains("missing bool value"), "{e}");
        let e = Features::with_gates(KubernetesVersion::V1_36, ["ImageVolume=yes"]).unwrap_err();
        assert!(e.contains("invalid value \"yes\""), "{e}");
        let e = Features::with_gates(KubernetesVersion::V1_35, ["StorageCapacityScoring=true"]);
        assert!(
            e.unwrap_err()
                .contains("implements only StorageCapacityScoring=false")
        );
        let f = Features::with_gates(KubernetesVersion::V1_35, ["NodeDeclaredFeatures=true"]);
        assert!(f.unwrap().enabled("NodeDeclaredFeatures"));
        // v1.36's gang gate kubesched does not implement: known, and refused on.
        let on = "GenericWorkload=true,GangScheduling=true,WorkloadAwarePreemption=true";
        let e = Features::with_gates(KubernetesVersion::V1_36, [on]).unwrap_err();
        assert!(
            e.contains("implements only WorkloadAwarePreemption=false"),
            "{e}"
        );
    }

    #[test]
    fn the_placement_gate_is_v1_36_s() {
        let on = "GenericWorkload=true,TopologyAwareWorkloadScheduling=true";
        assert!(Features::with_gates(KubernetesVersion::V1_36, [on]).is_ok());
        let e = Features::with_gates(KubernetesVersion::V1_35, [on]).unwrap_err();
        assert!(
            e.starts_with("unrecognized feature gate: TopologyAwareWorkloadScheduling"),
            "{e}"
        );
    }

    #[test]
    fn a_gate_whose_dependency_is_off_is_refused() {
        let e = Features::with_gates(KubernetesVersion::V1_36, ["GangScheduling=true"]);
        assert_eq!(
            e.unwrap_err(),
            "GangScheduling is enabled, but depends on features that are disabled: [GenericWorkload]"
        );
        let f = Features::with_gates(
            KubernetesVersion::V1_36,
            ["GangScheduling=true", "GenericWorkload=true"],
        )
        .unwrap();
        assert!(f.generic_workload() && f.enabled("GangScheduling"));
        assert!(!Features::new(KubernetesVersion::V1_36).generic_workload());
        // v1.35 has both gates (the v1alpha1 Workload API), but no PodGroup cycle.
        let f = Features::with_gates(
            KubernetesVersion::V1_35,
            ["GenericWorkload=true,GangScheduling=true"],
        )
        .unwrap();
        assert!(f.enabled("GangScheduling") && !f.generic_workload());
        let e = Features::with_gates(KubernetesVersion::V1_35, ["GangScheduling=true"]);
        assert!(e.unwrap_err().contains("[GenericWorkload]"));
    }
}
