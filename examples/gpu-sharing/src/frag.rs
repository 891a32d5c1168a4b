//! GPU fragmentation as the FGD paper defines it: the free GPU milli of a node that
//! the workload's typical pods could not use, weighted by how often each typical pod
//! arrives (the simulator's `NodeGpuShareFragAmount`, summed over every class but
//! "satisfied").
//!
//! For each typical pod of weight `w`:
//! - a pod asking no GPU counts all the node's free GPU milli as fragment (CPU pods
//!   cannot use GPUs);
//! - a pod the node's GPU model does not allow counts all of it;
//! - a pod the node can host (`count` GPUs with `milli` free each, and its cpu) counts
//!   the GPUs with less than `milli` free;
//! - a pod it cannot host counts all of it.
//!
//! The typical pods are the most frequent pod shapes (cpu, GPU count and milli,
//! allowed models) of the workload, taken in decreasing frequency until they make up
//! 95% of its pods, their weights renormalised to sum to 1 (the simulator's
//! `GetTypicalPods` with `podPopularityThreshold` 95, `podIncreaseStep` 1, CPU pods
//! included, `gpuResWeight` 0).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::model::{GpuDemand, model_allows};

/// One typical pod shape and its weight.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TypicalPod {
    /// cpu, in milli.
    pub cpu_milli: i64,
    /// GPUs asked (0 for a CPU pod).
    #[serde(default)]
    pub gpu_count: u32,
    /// Milli of each GPU.
    #[serde(default)]
    pub gpu_milli: u32,
    /// Allowed GPU models, `|`-separated; none allows any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_models: Option<String>,
    /// How often it arrives; the weights sum to 1.
    pub weight: f64,
}

/// The typical pods of a workload.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TypicalPods {
    /// The shapes, most frequent first.
    pub pods: Vec<TypicalPod>,
}

/// A pod shape: (cpu, GPU count, milli, models).
pub type Shape = (i64, u32, u32, Option<String>);

impl TypicalPods {
    /// The typical pods of a workload given as one shape per pod, taking the most
    /// frequent shapes until they make up `threshold_percent` of the pods. Shapes as
    /// frequent as each other are taken in shape order (the simulator sorts a Go map,
    /// whose order among equals is arbitrary).
    pub fn from_workload(
        shapes: impl IntoIterator<Item = Shape>,
        threshold_percent: f64,
    ) -> TypicalPods {
        let mut counts: BTreeMap<Shape, u64> = BTreeMap::new();
        let mut total = 0u64;
        for s in shapes {
            *counts.entry(s).or_default() += 1;
            total += 1;
        }
        let mut sorted: Vec<(Shape, u64)> = counts.into_iter().collect();
        sorted.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let expected = threshold_percent * total as f64 / 100.0;
        let mut taken = 0u64;
        let mut n = 0;
        while (taken as f64) < expected && n < sorted.len() {
            taken += sorted[n].1;
            n += 1;
        }
        let pods = sorted[..n]
            .iter()
            .map(|((cpu, count, milli, models), c)| TypicalPod {
                cpu_milli: *cpu,
                gpu_count: *count,
                gpu_milli: *milli,
                gpu_models: models.clone(),
                weight: *c as f64 / taken as f64,
            })
            .collect();
        TypicalPods { pods }
    }

    /// The fragment of a node with `cpu_left` cpu milli, `left` free milli per GPU and
    /// GPU model `model`, in GPU milli.
    pub fn frag(&self, cpu_left: i64, left: &[u32], model: Option<&str>) -> f64 {
        let total: u32 = left.iter().sum();
        if total == 0 {
            return 0.0;
        }
        let mut frag = 0.0;
        for t in &self.pods {
            let unusable = if t.gpu_milli == 0
                || !model_allows(t.gpu_models.as_deref(), model)
                || cpu_left < t.cpu_milli
            {
                total
            } else {
                let mut fitting = 0;
                let mut short = 0;
                for l in left {
                    if *l >= t.gpu_milli {
                        fitting += 1;
                    } else {
                        short += *l;
                    }
                }
                if fitting >= t.gpu_count { short } else { total }
            };
            frag += t.weight * f64::from(unusable);
        }
        frag
    }

    /// The typical pods' demand shapes, for tests and reports.
    pub fn demands(&self) -> impl Iterator<Item = GpuDemand> + '_ {
        self.pods.iter().map(|t| GpuDemand {
            count: t.gpu_count,
            milli: t.gpu_milli,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn typical(pods: &[(i64, u32, u32, f64)]) -> TypicalPods {
        TypicalPods {
            pods: pods
                .iter()
                .map(|(c, n, m, w)| TypicalPod {
                    cpu_milli: *c,
                    gpu_count: *n,
                    gpu_milli: *m,
                    gpu_models: None,
                    weight: *w,
                })
                .collect(),
        }
    }

    #[test]
    fn a_share_that_fits_counts_only_the_gpus_too_small_for_it() {
        // Half the pods want 500 of one GPU, half one whole GPU.
        let t = typical(&[(1000, 1, 500, 0.5), (1000, 1, 1000, 0.5)]);
        // GPUs with 300 and 1000 free: the share leaves out 300, the whole GPU 300.
        assert_eq!(t.frag(8000, &[300, 1000], None), 0.5 * 300.0 + 0.5 * 300.0);
        // No cpu left: nothing fits, all 1300 is fragment.
        assert_eq!(t.frag(0, &[300, 1000], None), 1300.0);
    }

    #[test]
    fn cpu_pods_count_every_free_gpu_and_a_full_node_has_none() {
        let t = typical(&[(1000, 0, 0, 1.0)]);
        assert_eq!(t.frag(8000, &[1000, 1000], None), 2000.0);
        assert_eq!(t.frag(8000, &[0, 0], None), 0.0);
    }

    #[test]
    fn a_model_the_pod_does_not_allow_makes_all_of_it_fragment() {
        let mut t = typical(&[(1000, 1, 500, 1.0)]);
        t.pods[0].gpu_models = Some("V100M16|V100M32".into());
        assert_eq!(t.frag(8000, &[1000], Some("T4")), 1000.0);
        assert_eq!(t.frag(8000, &[1000], Some("V100M32")), 0.0);
    }

    #[test]
    fn the_most_frequent_shapes_up_to_the_threshold_renormalised() {
        let shapes = [
            (1, 1, 500, None),
            (1, 1, 500, None),
            (1, 1, 500, None),
            (2, 0, 0, None),
            (3, 1, 1000, None),
        ];
        let t = TypicalPods::from_workload(shapes.iter().cloned(), 70.0);
        // 3/5 = 60% < 70%, so the next shape (in shape order among equals) joins.
        assert_eq!(t.pods.len(), 2);
        assert_eq!((t.pods[0].gpu_milli, t.pods[0].weight), (500, 0.75));
        assert_eq!((t.pods[1].cpu_milli, t.pods[1].weight), (2, 0.25));
    }
}
