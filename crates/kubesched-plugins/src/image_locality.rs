//! ImageLocality: prefers nodes that already have the pod's images, weighing each image
//! by its size and by how widely it is spread across the cluster (so that a pod is not
//! pulled toward the one node that happens to have a popular image).
//!
//! v1.36 (with the ImageVolume gate, on by default) adds the images of the pod's image
//! volumes to the sum; the thresholds still count containers only.

use std::sync::{Arc, OnceLock};

use kubesched_framework::{
    CycleState, MAX_NODE_SCORE, NodeInfo, Plugin, PodInfo, ScorePlugin, Snapshot, Status,
};

/// The plugin's name.
pub const NAME: &str = "ImageLocality";

const MB: i64 = 1024 * 1024;
/// Below this total, the score is 0.
pub const MIN_THRESHOLD: i64 = 23 * MB;
/// Per container, sizes above this count no more.
pub const MAX_CONTAINER_THRESHOLD: i64 = 1000 * MB;

/// Image locality scoring.
#[derive(Debug, Default, Clone, Copy)]
pub struct ImageLocality {
    /// v1.36 with ImageVolume: the images of image volumes count too (the thresholds
    /// stay per container).
    image_volumes: bool,
}

impl ImageLocality {
    /// The plugin as the version and gates of `features` run it.
    pub fn new(features: &kubesched_framework::Features) -> ImageLocality {
        ImageLocality {
            image_volumes: features.image_locality_counts_image_volumes(),
        }
    }
}

/// Per pod, computed once before scoring ([`ScorePlugin::prepare`]): the pod's images
/// that some node has, and the number of containers.
#[derive(Clone, Debug)]
struct PodImageScores {
    /// The pod's images that some node has, once per container (or image volume) that
    /// names it.
    images: Vec<PodImage>,
    /// Each node's sum of the scaled sizes of `images`, by node position, made the
    /// first time enough nodes are scored at once ([`PodImageScores::dense_pays`]).
    sums: OnceLock<Vec<i64>>,
    /// The number of nodes in the snapshot.
    total: usize,
    containers: i64,
}

/// One of the pod's images that some node has.
#[derive(Clone, Debug)]
struct PodImage {
    /// Its size scaled by its spread.
    scaled: i64,
    /// The positions of the nodes that have it, in node order.
    holders: Arc<[usize]>,
}

/// [`PodImageScores::dense_pays`]: the share of the cluster (one in this many nodes)
/// from which a cycle sums every node's images at once.
const DENSE_SHARE: usize = 16;

impl Plugin for ImageLocality {
    fn name(&self) -> &str {
        NAME
    }
    // The canonical names of the images the score reads.
    fn node_scoped(&self, _pod: &PodInfo, _snapshot: &kubesched_framework::Snapshot) -> bool {
        true
    }
    // Reads the node's images and how many nodes have each only.
    fn reads_node_pods(&self, _pod: &PodInfo) -> bool {
        false
    }
    fn sign_pod(
        &self,
        pod: &PodInfo,
    ) -> Result<Vec<kubesched_framework::signature::SignFragment>, kubesched_framework::Status>
    {
        use kubesched_framework::signature::{SignFragment, signers};
        let spec = pod.spec();
        let mut names: Vec<String> = (spec.init_containers.iter().flatten())
            .chain(&spec.containers)
            .map(|c| c.image.as_deref().unwrap_or(""))
            .map(|i| normalized_image_name(i).into_owned())
            .collect();
        if self.image_volumes {
            names.extend(
                pod.spec()
                    .volumes
                    .iter()
                    .flatten()
                    .filter_map(|v| v.image.as_ref()?.reference.as_deref())
                    .map(|i| format!("volume:{}", normalized_image_name(i))),
            );
        }
        Ok(vec![SignFragment::json(signers::IMAGE_NAMES, &names)])
    }
    fn events_to_register(&self) -> Vec<kubesched_framework::ClusterEvent> {
        crate::events::none()
    }
    kubesched_framework::extension_points!(Score);
}

impl ScorePlugin for ImageLocality {
    /// Finds the pod's images in the snapshot's image index: an image's size and
    /// spread are the same on every node that reports it, so a node's score is the sum
    /// over the images whose holders it is among. kube-scheduler's ImageLocality has no
    /// PreScore (it does this in Score), so this is not one: a profile that enables
    /// only its Score still scores.
    fn prepare(&self, state: &mut CycleState, pod: &PodInfo, _: &[&NodeInfo], snapshot: &Snapshot) {
        let total = snapshot.num_nodes();
        let spec = pod.spec();
        let mut containers = 0;
        let container_images = spec
            .init_containers
            .iter()
            .flatten()
            .chain(&spec.containers)
            .map(|c| {
                containers += 1;
                c.image.as_deref().unwrap_or("")
            });
        let volume_images = spec
            .volumes
            .iter()
            .flatten()
            .filter(|_| self.image_volumes)
            .filter_map(|v| v.image.as_ref())
            .map(|i| i.reference.as_deref().unwrap_or(""));
        let images = container_images
            .chain(volume_images)
            .filter_map(|image| {
                let (summary, holders) = snapshot.image(&normalized_image_name(image))?;
                Some(PodImage {
                    scaled: scaled_image_score(summary.size, summary.num_nodes, total),
                    holders: holders.clone(),
                })
            })
            .collect();
        state.write(PodImageScores {
            images,
            sums: OnceLock::new(),
            total,
            containers,
        });
    }

    fn score(&self, state: &CycleState, _: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        let scores = prescored(state)?;
        Ok(scores.priority(scores.sum(node.index())))
    }

    fn score_nodes(
        &self,
        state: &CycleState,
        _: &PodInfo,
        nodes: &[&NodeInfo],
        out: &mut [i64],
    ) -> Result<(), Status> {
        let scores = prescored(state)?;
        if scores.images.is_empty() {
            // No node has any of the pod's images: one score for all.
            out.fill(scores.priority(0));
        } else {
            if scores.dense_pays(nodes.len()) {
                // Every node's sum at once; `sum` then reads it.
                scores.sums();
            }
            for (node, out) in nodes.iter().zip(out) {
                *out = scores.priority(scores.sum(node.index()));
            }
        }
        Ok(())
    }
}

/// What [`ScorePlugin::prepare`] computed for the pod.
fn prescored(state: &CycleState) -> Result<&PodImageScores, Status> {
    state.read::<PodImageScores>().ok_or_else(|| {
        Status::error("ImageLocality: scored without Framework::run_pre_score_plugins")
    })
}

impl PodImageScores {
    /// The sum of the scaled sizes of the pod's images that the node at `position` has.
    fn sum(&self, position: usize) -> i64 {
        if let Some(sums) = self.sums.get() {
            return sums.get(position).copied().unwrap_or(0);
        }
        (self.images.iter())
            .filter(|image| image.holders.binary_search(&position).is_ok())
            .map(|image| image.scaled)
            .sum()
    }

    /// Whether one pass over the holders of the pod's images (a sum for every node of
    /// the cluster) pays for `scored` nodes scored at once, against a binary search of
    /// the holders per node: from a sixteenth of the cluster (a pass reads memory in
    /// order, a search jumps). A cycle that rescores the few nodes that changed (exact
    /// incremental scheduling) searches, however large the cluster.
    fn dense_pays(&self, scored: usize) -> bool {
        self.sums.get().is_some() || scored.saturating_mul(DENSE_SHARE) >= self.total
    }

    /// Every node's sum, by position, from one pass over the images' holders (kept
    /// for [`PodImageScores::sum`]).
    fn sums(&self) -> &[i64] {
        self.sums.get_or_init(|| {
            let mut sums = vec![0; self.total];
            for image in &self.images {
                for &i in image.holders.iter() {
                    if let Some(sum) = sums.get_mut(i) {
                        *sum += image.scaled;
                    }
                }
            }
            sums
        })
    }

    /// A node's score from its sum.
    fn priority(&self, sum: i64) -> i64 {
        calculate_priority(sum, self.containers)
    }
}

/// The image size scaled by the fraction of nodes that have it (truncated).
fn scaled_image_score(size: i64, num_nodes: usize, total_nodes: usize) -> i64 {
    if total_nodes == 0 {
        return 0;
    }
    let spread = num_nodes as f64 / total_nodes as f64;
    (size as f64 * spread) as i64
}

/// Maps the summed sizes to 0..=100 between the thresholds.
fn calculate_priority(sum: i64, num_containers: i64) -> i64 {
    let max_threshold = MAX_CONTAINER_THRESHOLD * num_containers;
    let sum = if sum < MIN_THRESHOLD {
        MIN_THRESHOLD
    } else if sum > max_threshold {
        max_threshold
    } else {
        sum
    };
    // Most nodes have too little of the pod's images to score: skip the division.
    if max_threshold <= MIN_THRESHOLD || sum == MIN_THRESHOLD {
        return 0;
    }
    MAX_NODE_SCORE * (sum - MIN_THRESHOLD) / (max_threshold - MIN_THRESHOLD)
}

/// Appends `:latest` to an image without a tag (a registry port is not a tag; a digest
/// is kept as is).
pub fn normalized_image_name(name: &str) -> std::borrow::Cow<'_, str> {
    let colon = name.rfind(':').map_or(-1, |i| i as isize);
    let slash = name.rfind('/').map_or(-1, |i| i as isize);
    if colon <= slash {
        format!("{name}:latest").into()
    } else {
        name.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_names_get_latest_only_without_a_tag() {
        assert_eq!(normalized_image_name("nginx"), "nginx:latest");
        assert_eq!(normalized_image_name("nginx:1.25"), "nginx:1.25");
        assert_eq!(
            normalized_image_name("registry:5000/app"),
            "registry:5000/app:latest"
        );
        assert_eq!(normalized_image_name("app@sha256:abc"), "app@sha256:abc");
    }

    /// A node per number, reporting images by its number: `a` on even nodes, `b` on
    /// every third, both large enough to score.
    fn cluster(count: usize) -> Snapshot {
        let nodes = (0..count).map(|i| {
            let mut images = Vec::new();
            if i % 2 == 0 {
                images.push(serde_json::json!({"names": ["a:1"], "sizeBytes": 400 * MB}));
            }
            if i % 3 == 0 {
                images.push(serde_json::json!({"names": ["b:latest", "b"], "sizeBytes": 900 * MB}));
            }
            let node = serde_json::json!({
                "metadata": {"name": format!("node-{i}")},
                "status": {"images": images}
            });
            std::sync::Arc::new(serde_json::from_value(node).unwrap())
        });
        Snapshot::new(nodes, []).unwrap().0
    }

    #[test]
    fn a_search_per_node_gives_the_scores_of_the_pass_over_the_image_index() {
        let snapshot = cluster(200);
        let pod: k8s_openapi::api::core::v1::Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p"},
            "spec": {"containers": [
                {"name": "one", "image": "a:1"},
                {"name": "two", "image": "b"},
                {"name": "three", "image": "a:1"}
            ]}
        }))
        .unwrap();
        let pod = PodInfo::new(std::sync::Arc::new(pod)).unwrap();
        let nodes: Vec<&NodeInfo> = snapshot.nodes().iter().collect();
        let plugin = ImageLocality::default();
        let prepared = || {
            let mut state = CycleState::new();
            plugin.prepare(&mut state, &pod, &[], &snapshot);
            state
        };
        // All at once (one pass over the index), then a few at a time (searches),
        // then one by one through `score`, each from a fresh cycle.
        let state = prepared();
        let mut dense = vec![0; nodes.len()];
        plugin
            .score_nodes(&state, &pod, &nodes, &mut dense)
            .unwrap();
        assert!(state.read::<PodImageScores>().unwrap().sums.get().is_some());
        let state = prepared();
        let mut searched = vec![0; nodes.len()];
        for (chunk, out) in nodes.chunks(7).zip(searched.chunks_mut(7)) {
            plugin.score_nodes(&state, &pod, chunk, out).unwrap();
        }
        assert!(state.read::<PodImageScores>().unwrap().sums.get().is_none());
        let state = prepared();
        let one_by_one: Vec<i64> = (nodes.iter())
            .map(|n| plugin.score(&state, &pod, n).unwrap())
            .collect();
        assert_eq!(dense, searched);
        assert_eq!(dense, one_by_one);
        assert!(dense[0] > dense[2] && dense[2] > 0 && dense[3] > 0 && dense[1] == 0);
    }

    #[test]
    fn priority_is_zero_below_threshold_and_capped() {
        assert_eq!(calculate_priority(0, 1), 0);
        assert_eq!(calculate_priority(MAX_CONTAINER_THRESHOLD * 5, 1), 100);
        assert_eq!(
            calculate_priority(
                MIN_THRESHOLD + (MAX_CONTAINER_THRESHOLD - MIN_THRESHOLD) / 2,
                1
            ),
            50
        );
    }
}
