//! The scenarios the differential tests of kubesched's shortcuts run both ways: the
//! conformance cases of the repository's `conformance/` folders and generated ones,
//! each loaded with the options it is simulated with.

use std::path::{Path, PathBuf};

use kubesched_framework::{Features, KubernetesVersion};
use kubesched_sim::SimulationOptions;
use kubesched_sim::scenario::{self, Scenario, Source};
use serde_json::Value;

/// One scenario to run, with its name for messages.
pub struct Case {
    pub name: String,
    pub scenario: Scenario,
    pub options: SimulationOptions,
}

/// Every case of `folders` (each with its version), preemption on in the
/// `cases-preemption` folders, in name order; a case that does not load is left out.
pub fn conformance(folders: &[(&str, KubernetesVersion)]) -> Vec<Case> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../conformance");
    let mut out = Vec::new();
    for &(folder, version) in folders {
        let dir = root.join(folder);
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.extension().is_some_and(|x| x == "yaml")
                    && !p.to_string_lossy().ends_with(".expected.yaml")
            })
            .collect();
        files.sort();
        for path in files {
            let name = path.display().to_string();
            let text = std::fs::read_to_string(&path).expect("case");
            let options = SimulationOptions {
                preemption: folder.ends_with("cases-preemption"),
                features: Features::new(version),
                ..Default::default()
            };
            out.extend(load(name, text, options));
        }
    }
    out
}

/// The generated scenarios of `seeds` (kube-scheduler v1.35's behaviour, preemption on
/// for odd seeds), each passed through `shape` first.
pub fn generated(
    seeds: std::ops::Range<u64>,
    shape: impl Fn(u64, Vec<Value>) -> Vec<Value>,
) -> Vec<Case> {
    seeds
        .filter_map(|seed| {
            let docs = shape(seed, kubesched_difftest::generate::generate(seed));
            let options = SimulationOptions {
                preemption: seed % 2 == 1,
                features: Features::new(KubernetesVersion::V1_35),
                ..Default::default()
            };
            load(
                format!("generated seed {seed}"),
                kubesched_difftest::generate::to_yaml(&docs, ""),
                options,
            )
        })
        .collect()
}

/// A scenario written as JSON documents, with v1.35's behaviour.
#[allow(dead_code)] // not every differential test uses every loader
pub fn from_docs(name: String, docs: &[Value]) -> Option<Case> {
    let options = SimulationOptions {
        features: Features::new(KubernetesVersion::V1_35),
        ..Default::default()
    };
    load(
        name,
        kubesched_difftest::generate::to_yaml(docs, ""),
        options,
    )
}

fn load(name: String, text: String, options: SimulationOptions) -> Option<Case> {
    let scenario = scenario::load(&[Source {
        name: name.clone(),
        text,
    }])
    .ok()?;
    Some(Case {
        name,
        scenario,
        options,
    })
}
