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

#[test]
fn a_node_removed_gives_the_snapshot_built_without_it() {
    let pod = |name: &str, node: &str| {
        PodBuilder::new("default", name)
            .cpu_millis(100)
            .bound_to(node)
            .pod_info()
            .unwrap()
    };
    let nodes = || {
        [
            node("n1", 1000),
            with_image(node("n2", 2000), "app:1"),
            node("n3", 3000),
            with_image(node("n4", 4000), "app:1"),
        ]
    };
    let pods = || {
        [
            pod("a", "n1"),
            pod("b", "n2"),
            pod("c", "n3"),
            pod("d", "n4"),
        ]
    };
    let (mut changed, _) = Snapshot::new(nodes(), pods()).unwrap();
    let mark = changed.change_mark();
    let removed = changed.remove_node("n2").unwrap();
    assert_eq!(removed.pods().len(), 1, "its pods go with it");
    assert!(changed.remove_node("n2").is_none());
    let [n1, _, n3, n4] = nodes();
    let (at_once, _) = Snapshot::new(
        [n1, n3, n4],
        [pod("a", "n1"), pod("c", "n3"), pod("d", "n4")],
    )
    .unwrap();
    assert_eq!(contents(&changed), contents(&at_once));
    assert_eq!(
        (changed.index_of("n3"), changed.index_of("n4")),
        (Some(1), Some(2))
    );
    assert_eq!(changed.node_at(2).name(), "n4");
    // The image's holders are the new positions.
    assert_eq!(changed.image("app:1").unwrap().1.to_vec(), [2]);
    assert_eq!(changed.nodes_changed_since(mark), None);

    // Without images the moved nodes keep their generations, each at its new place.
    let (mut plain, _) =
        Snapshot::new([node("n1", 1000), node("n2", 2000), node("n3", 3000)], []).unwrap();
    let before = plain.generations().to_vec();
    plain.remove_node("n1").unwrap();
    assert_eq!(plain.generations(), &before[1..]);
    assert_eq!(plain.num_nodes(), 2);
}
