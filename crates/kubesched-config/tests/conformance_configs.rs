//! Every `KubeSchedulerConfiguration` document in the repository's conformance scenarios
//! (`conformance/cases*/`) loads without error or warning. A missing folder is a failure,
//! not a skip.

use std::path::{Path, PathBuf};

use kubesched_config::KubeSchedulerConfiguration;
use serde::Deserialize;

fn conformance_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../conformance");
    assert!(
        dir.is_dir(),
        "{}: the repository's conformance folder is missing",
        dir.display()
    );
    dir
}

fn configs_in(folder: &Path) -> Vec<(String, serde_json::Value)> {
    let mut out = Vec::new();
    let entries = std::fs::read_dir(folder)
        .unwrap_or_else(|e| panic!("{}: cannot be read: {e}", folder.display()));
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    files.sort();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for doc in serde_norway::Deserializer::from_str(&text) {
            let v = serde_json::Value::deserialize(doc).unwrap();
            if v.get("kind").and_then(|k| k.as_str()) == Some("KubeSchedulerConfiguration") {
                out.push((f.file_name().unwrap().to_string_lossy().into_owned(), v));
            }
        }
    }
    out
}

#[test]
fn every_case_config_loads() {
    let dir = conformance_dir();
    let mut count = 0;
    for folder in ["cases", "cases-preemption", "cases-default"] {
        for (name, value) in configs_in(&dir.join(folder)) {
            let loaded = KubeSchedulerConfiguration::from_value(value.clone(), &name)
                .unwrap_or_else(|e| panic!("{folder}/{name}: {e}"));
            assert!(loaded.warnings.is_empty(), "{name}: {:?}", loaded.warnings);
            let c = &loaded.config;
            assert!(!c.profiles.is_empty());
            for p in &c.profiles {
                assert!(!p.scheduler_name.is_empty());
                // Every enabled in-tree plugin with args has an entry.
                for (_, set) in p.plugins.extension_points() {
                    for plugin in &set.enabled {
                        if plugin.name == "NodeResourcesFit" {
                            let args = p.plugin_args("NodeResourcesFit").unwrap();
                            let res = args["scoringStrategy"]["resources"].as_array().unwrap();
                            assert!(res.iter().all(|r| r["weight"].as_i64().unwrap() >= 1));
                        }
                    }
                }
            }
            // Also through the YAML text path.
            let text = serde_norway::to_string(&value).unwrap();
            KubeSchedulerConfiguration::from_yaml_str(&text, &name).unwrap();
            count += 1;
        }
    }
    assert!(count >= 90, "only {count} configs found");
}
