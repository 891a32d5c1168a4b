//! # gpu-sharing
//!
//! GPU sharing and the six scheduling policies of the FGD paper ("Beware of
//! Fragmentation: Scheduling GPU-Sharing Workloads with Fragmentation Gradient
//! Descent", USENIX ATC'23) as out-of-tree kubesched plugins, and the paper's
//! experiment over its trace (Alibaba's `cluster-trace-gpu-v2023`, "openb").
//!
//! - [`model`]: each GPU's free milli, and `GpuShare` (PreFilter, Filter, Reserve),
//!   which keeps it;
//! - [`frag`]: GPU fragmentation against the workload's typical pods;
//! - [`policies`]: `FGDScore`, `BestFitScore`, `DotProductScore`, `GpuPackingScore`,
//!   `GpuClusteringScore`, `RandomScore`;
//! - [`experiment`]: the trace loaded through kubesched's openb importer, shuffled and
//!   resampled with a seed, scheduled pod by pod, reported per arrived-GPU percent;
//! - [`html`]: the runs as a page of charts (kubesched's chart piece).
//!
//! It stands on `kubesched` as a user's crate would (the framework's plugin traits,
//! the simulator's scenario loader, the replay's importer, the command); nothing in
//! kubesched knows of it. [`registry`] gives the plugins, sharing one GPU state, to a
//! `kubesched::cli::Command` or to a `Framework` of your own.
//!
//! ```
//! use kubesched::framework::Registry;
//!
//! let registry: Registry = gpu_sharing::registry();
//! let names: Vec<&str> = registry.names().collect();
//! assert!(names.contains(&"GpuShare") && names.contains(&"FGDScore"));
//! ```

pub mod experiment;
pub mod frag;
pub mod html;
pub mod model;
pub mod policies;
pub mod rng;

use std::sync::Arc;

use kubesched::framework::{Handle, Plugin, PluginError, Registry};
use serde::Deserialize;

use crate::frag::{TypicalPod, TypicalPods};
use crate::model::{GPU_SHARE, GpuSelection, GpuShare, GpuState};
use crate::policies::{
    BestFitScore, DotProductScore, FgdScore, GpuClusteringScore, GpuPackingScore, RandomScore,
};

/// `GpuShare`'s args.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct GpuShareArgs {
    /// `best` (the default), `random` or `FGD`.
    gpu_selection: Option<String>,
    /// The seed of `random`.
    seed: Option<u64>,
}

/// `FGDScore`'s args.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct FgdScoreArgs {
    /// The workload's typical pods (see [`frag`]); required.
    typical_pods: Option<Vec<TypicalPod>>,
}

/// `RandomScore`'s args.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RandomScoreArgs {
    seed: Option<u64>,
}

fn args<T: Default + serde::de::DeserializeOwned>(
    plugin: &str,
    value: Option<&serde_json::Value>,
) -> Result<T, PluginError> {
    match value {
        None => Ok(T::default()),
        Some(v) => serde_json::from_value(v.clone())
            .map_err(|e| PluginError::new(format!("{plugin} args: {e}"))),
    }
}

/// The plugins of this crate over a fresh GPU state (one per cluster: build a new
/// registry for each run).
pub fn registry() -> Registry {
    registry_with(Arc::new(GpuState::new()))
}

/// The plugins of this crate over `state`.
pub fn registry_with(state: Arc<GpuState>) -> Registry {
    let mut r = Registry::new();
    let s = state.clone();
    let gpu_share = move |a: Option<&serde_json::Value>, _: &Handle| {
        let a: GpuShareArgs = args(GPU_SHARE, a)?;
        let selection = match a.gpu_selection.as_deref() {
            None | Some("best") => GpuSelection::BestFit,
            Some("random") => GpuSelection::Random,
            Some("FGD") => GpuSelection::Fgd,
            Some(other) => {
                return Err(PluginError::new(format!(
                    "GpuShare args: gpuSelection: {other:?} is not best, random or FGD"
                )));
            }
        };
        Ok(Arc::new(GpuShare::new(s.clone(), selection, a.seed.unwrap_or(0))) as Arc<dyn Plugin>)
    };
    let s = state.clone();
    let fgd = move |a: Option<&serde_json::Value>, _: &Handle| {
        let a: FgdScoreArgs = args("FGDScore", a)?;
        let pods = a
            .typical_pods
            .filter(|p| !p.is_empty())
            .ok_or_else(|| PluginError::new("FGDScore args: typicalPods: required"))?;
        let typical = Arc::new(TypicalPods { pods });
        s.set_typical_pods(typical.clone());
        Ok(Arc::new(FgdScore {
            state: s.clone(),
            typical,
        }) as Arc<dyn Plugin>)
    };
    let random = |a: Option<&serde_json::Value>, _: &Handle| {
        let a: RandomScoreArgs = args("RandomScore", a)?;
        Ok(Arc::new(RandomScore::new(a.seed.unwrap_or(0))) as Arc<dyn Plugin>)
    };
    let register = |r: &mut Registry, name: &str, f: kubesched::framework::PluginFactory| {
        r.register(name, move |a: Option<&serde_json::Value>, h: &Handle| {
            f(a, h)
        })
        .expect("the crate's plugin names are distinct");
    };
    register(&mut r, GPU_SHARE, Arc::new(gpu_share));
    register(&mut r, "FGDScore", Arc::new(fgd));
    register(&mut r, "RandomScore", Arc::new(random));
    let s = state.clone();
    register(
        &mut r,
        "BestFitScore",
        Arc::new(move |_: Option<&serde_json::Value>, _: &Handle| {
            Ok(Arc::new(BestFitScore { state: s.clone() }) as Arc<dyn Plugin>)
        }),
    );
    let s = state.clone();
    register(
        &mut r,
        "DotProductScore",
        Arc::new(move |_: Option<&serde_json::Value>, _: &Handle| {
            Ok(Arc::new(DotProductScore { state: s.clone() }) as Arc<dyn Plugin>)
        }),
    );
    let s = state.clone();
    register(
        &mut r,
        "GpuPackingScore",
        Arc::new(move |_: Option<&serde_json::Value>, _: &Handle| {
            Ok(Arc::new(GpuPackingScore { state: s.clone() }) as Arc<dyn Plugin>)
        }),
    );
    let s = state;
    register(
        &mut r,
        "GpuClusteringScore",
        Arc::new(move |_: Option<&serde_json::Value>, _: &Handle| {
            Ok(Arc::new(GpuClusteringScore { state: s.clone() }) as Arc<dyn Plugin>)
        }),
    );
    r
}
