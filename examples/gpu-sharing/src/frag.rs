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

use crate::model::{GpuDemand, MAX_GPUS, model_allows};

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

    /// The fragment of a node with `cpu_left` cpu milli, `left` free milli per GPU (at
    /// most [`MAX_GPUS`], as the model has) and GPU model `model`, in GPU milli.
    pub fn frag(&self, cpu_left: i64, left: &[u32], model: Option<&str>) -> f64 {
        self.frag_allowed(&self.allowed(model), cpu_left, left)
    }

    /// Which typical pods a node of GPU model `model` allows, in order: what
    /// [`TypicalPods::frag_allowed`] reads, for the several fragments of one node.
    pub fn allowed(&self, model: Option<&str>) -> Vec<bool> {
        self.pods
            .iter()
            .map(|t| model_allows(t.gpu_models.as_deref(), model))
            .collect()
    }

    /// [`TypicalPods::frag`] of a node whose model allows the typical pods `allowed`
    /// says ([`TypicalPods::allowed`]).
    pub fn frag_allowed(&self, allowed: &[bool], cpu_left: i64, left: &[u32]) -> f64 {
        let gpus = FreeGpus::new(left);
        if gpus.total() == 0 {
            return 0.0;
        }
        let mut frag = 0.0;
        for (t, allowed) in self.pods.iter().zip(allowed) {
            let unusable = if t.gpu_milli == 0 || !allowed || cpu_left < t.cpu_milli {
                gpus.total()
            } else {
                let (fitting, short) = gpus.split(t.gpu_milli);
                if fitting >= t.gpu_count {
                    short
                } else {
                    gpus.total()
                }
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

/// A node's free milli per GPU, sorted once, so that each typical pod finds the GPUs
/// it fits and the milli of the others without a pass over them.
struct FreeGpus {
    /// Free milli, ascending (the first `len`).
    sorted: [u32; MAX_GPUS],
    /// `below[k]`: the free milli of the `k` GPUs with the least.
    below: [u32; MAX_GPUS + 1],
    len: usize,
}

impl FreeGpus {
    fn new(left: &[u32]) -> FreeGpus {
        let len = left.len().min(MAX_GPUS);
        let mut sorted = [0; MAX_GPUS];
        sorted[..len].copy_from_slice(&left[..len]);
        sorted[..len].sort_unstable();
        let mut below = [0; MAX_GPUS + 1];
        for k in 0..len {
            below[k + 1] = below[k] + sorted[k];
        }
        FreeGpus { sorted, below, len }
    }

    fn total(&self) -> u32 {
        self.below[self.len]
    }

    /// How many GPUs have `milli` free or more, and the free milli of the others.
    fn split(&self, milli: u32) -> (u32, u32) {
        let short = self.sorted[..self.len].partition_point(|l| *l < milli);
        ((self.len - short) as u32, self.below[short])
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
    fn the_sorted_gpus_split_as_a_pass_over_them_does() {
        let mut rng = crate::rng::SplitMix64::new(7);
        for _ in 0..200 {
            let left: Vec<u32> = (0..rng.below(MAX_GPUS + 1))
                .map(|_| rng.below(1001) as u32)
                .collect();
            let gpus = FreeGpus::new(&left);
            let milli = rng.below(1001) as u32;
            let fitting = left.iter().filter(|l| **l >= milli).count() as u32;
            let short: u32 = left.iter().filter(|l| **l < milli).sum();
            assert_eq!(gpus.split(milli), (fitting, short), "{left:?} {milli}");
            assert_eq!(gpus.total(), left.iter().sum::<u32>());
        }
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
