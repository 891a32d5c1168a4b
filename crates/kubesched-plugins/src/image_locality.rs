//! ImageLocality: prefers nodes that already have the pod's images, weighing each image
//! by its size and by how widely it is spread across the cluster (so that a pod is not
//! pulled toward the one node that happens to have a popular image).
//!
//! v1.36 (with the ImageVolume gate, on by default) adds the images of the pod's image
//! volumes to the sum; the thresholds still count containers only.

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

/// Per pod, computed once before scoring ([`ScorePlugin::prepare`]): the scaled size
/// of each of the pod's images that some node has, each node's sum of them when many
/// nodes are to be scored, and the number of containers.
#[derive(Clone, Debug)]
struct PodImageScores {
    /// The pod's images that some node has, each with its scaled size, once per
    /// container (or image volume) that names it.
    images: Vec<(String, i64)>,
    /// Each node's sum of `images`, by node index, when `prepare` was given more than
    /// [`DENSE_FROM`] nodes; otherwise each node looks its images up.
    sums: Option<Vec<i64>>,
    containers: i64,
}

/// From how many nodes to score on, one pass over the image index (a sum for every
/// node of the cluster) beats a lookup of the pod's images on each node: a cycle that
/// rescores the few nodes that changed (exact incremental scheduling) looks them up.
const DENSE_FROM: usize = 64;

impl Plugin for ImageLocality {
    fn name(&self) -> &str {
        NAME
    }
    // The canonical names of the images the score reads.
    fn node_scoped(&self, _pod: &PodInfo, _snapshot: &kubesched_framework::Snapshot) -> bool {
        true
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
    /// Sums, for every node, the scaled sizes of the pod's images it has: an image's
    /// size and spread are the same on every node that reports it, so one pass over the
    /// snapshot's image index replaces a lookup per node and container. kube-scheduler's
    /// ImageLocality has no PreScore (it does this in Score), so this is not one: a
    /// profile that enables only its Score still scores.
    fn prepare(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        snapshot: &Snapshot,
    ) {
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
        let mut images = Vec::new();
        let mut sums: Option<Vec<i64>> = None;
        let dense = nodes.len() > DENSE_FROM;
        for image in container_images.chain(volume_images) {
            let name = normalized_image_name(image);
            if let Some((summary, holders)) = snapshot.image(&name) {
                let scaled = scaled_image_score(summary.size, summary.num_nodes, total);
                if dense {
                    let sums = sums.get_or_insert_with(|| vec![0; total]);
                    for &i in holders {
                        sums[i] += scaled;
                    }
                }
                images.push((name.into_owned(), scaled));
            }
        }
        state.write(PodImageScores {
            images,
            sums,
            containers,
        });
    }

    fn score(&self, state: &CycleState, _: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        Ok(prescored(state)?.score(node))
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
            out.fill(calculate_priority(0, scores.containers));
        } else {
            for (node, out) in nodes.iter().zip(out) {
                *out = scores.score(node);
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
    /// The node's score.
    fn score(&self, node: &NodeInfo) -> i64 {
        let sum = match &self.sums {
            Some(sums) => sums.get(node.index()).copied().unwrap_or(0),
            None => {
                let states = node.image_states();
                (self.images.iter())
                    .filter(|(name, _)| states.contains_key(name))
                    .map(|(_, scaled)| scaled)
                    .sum()
            }
        };
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
    fn a_lookup_per_node_gives_the_scores_of_the_pass_over_the_image_index() {
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
        let scores = |given: &[&NodeInfo]| {
            let mut state = CycleState::new();
            ImageLocality::default().prepare(&mut state, &pod, given, &snapshot);
            let mut out = vec![0; nodes.len()];
            ImageLocality::default()
                .score_nodes(&state, &pod, &nodes, &mut out)
                .unwrap();
            out
        };
        let dense = scores(&nodes);
        assert_eq!(dense, scores(&[]));
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
