//! A snapshot changed node by node (`add_node`, `update_node`) holds what a snapshot
//! built at once from the same nodes and pods holds, and only the changed node gets a
//! new generation.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{ContainerImage, Node};
use kubesched_framework::Snapshot;
use kubesched_framework::build::{NodeBuilder, PodBuilder};

fn node(name: &str, cpu: i64) -> Arc<Node> {
    NodeBuilder::new(name)
        .cpu_millis(cpu)
        .memory_bytes(1 << 33)
        .pods(110)
        .node()
}

fn with_image(node: Arc<Node>, image: &str) -> Arc<Node> {
    let mut n = (*node).clone();
    n.status.get_or_insert_with(Default::default).images = Some(vec![ContainerImage {
        names: Some(vec![image.to_string()]),
        size_bytes: Some(100 << 20),
    }]);
    Arc::new(n)
}

/// Each node's name, allocatable cpu, requested cpu, pods and image states.
fn contents(s: &Snapshot) -> Vec<String> {
    s.nodes()
        .iter()
        .map(|n| {
            let pods: Vec<&str> = n.pods().iter().map(|p| p.key()).collect();
            let image = s
                .image("app:1")
                .map(|(summary, holders)| (summary.num_nodes, holders.to_vec()));
            format!(
                "{} {} {} {pods:?} {image:?}",
                n.name(),
                n.allocatable().milli_cpu,
                n.requested().milli_cpu
            )
        })
        .collect()
}

#[test]
fn nodes_added_and_updated_one_by_one_give_the_snapshot_built_at_once() {
    let pods = || {
        vec![
            PodBuilder::new("default", "a")
                .cpu_millis(500)
                .bound_to("n1")
                .pod_info()
                .unwrap(),
            PodBuilder::new("default", "b")
                .cpu_millis(700)
                .bound_to("n2")
                .pod_info()
                .unwrap(),
        ]
    };
    let (mut changed, _) = Snapshot::new([node("n1", 2000), node("n2", 4000)], pods()).unwrap();
    let before = changed.generations().to_vec();
    let mark = changed.change_mark();

    // n1 grows and gets an image; n3 joins with the same image.
    assert!(
        changed
            .update_node(with_image(node("n1", 3000), "app:1"))
            .unwrap()
    );
    changed
        .add_node(with_image(node("n3", 1000), "app:1"))
        .unwrap();
    assert!(!changed.update_node(node("nowhere", 1)).unwrap());
    assert!(
        changed.add_node(node("n2", 1)).is_err(),
        "a duplicate name is refused"
    );

    let (at_once, _) = Snapshot::new(
        [
            with_image(node("n1", 3000), "app:1"),
            node("n2", 4000),
            with_image(node("n3", 1000), "app:1"),
        ],
        pods(),
    )
    .unwrap();
    assert_eq!(contents(&changed), contents(&at_once));
    assert_eq!(changed.index_of("n3"), Some(2));
    // Images span the cluster: every node's generation is new and the log restarted.
    assert!(
        changed
            .generations()
            .iter()
            .zip(&before)
            .all(|(a, b)| a != b)
    );
    assert_eq!(changed.nodes_changed_since(mark), None);

    // Without images, only the updated node's generation changes, and the log says so.
    let (mut plain, _) = Snapshot::new([node("n1", 2000), node("n2", 4000)], pods()).unwrap();
    let (before, mark) = (plain.generations().to_vec(), plain.change_mark());
    plain.update_node(node("n2", 8000)).unwrap();
    assert_eq!(plain.generations()[0], before[0]);
    assert_ne!(plain.generations()[1], before[1]);
    assert_eq!(plain.nodes_changed_since(mark), Some(&[1][..]));
    assert_eq!(plain.nodes()[1].requested().milli_cpu, 700, "the pods stay");
}
