//! The batch-system example runs: its machines and jobs, built from its own structs,
//! are scheduled by the default profile plus its own Score plugin, which keeps a job on
//! the data's rack when it fits.

#[path = "../examples/embed_batch.rs"]
mod example;

#[test]
fn batch_jobs_from_own_structs_are_placed_by_the_framework() {
    let placed = example::run().expect("example runs");
    let on = |job: &str| {
        placed
            .iter()
            .find(|(key, _)| key == job)
            .map(|(_, node)| node.as_str())
            .unwrap()
    };
    // The GPU job tolerates the GPU taint and is popped first (highest priority).
    assert_eq!(placed[0].0, "bo/train-1");
    assert_eq!(on("bo/train-1"), "g1");
    // DataLocality (weight 2) outweighs LeastAllocated: rack r1's m1, not the larger m2.
    assert_eq!(on("ana/etl-1"), "m1");
    // m1 has 8 cores left, etl-2 asks for 12; m3 (r1) is draining.
    assert_eq!(on("ana/etl-2"), "m2");
    assert!(
        on("cy/huge").starts_with("pending: 0/4 nodes are available"),
        "{placed:?}"
    );
}
