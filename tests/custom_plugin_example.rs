//! The custom plugin example runs, and its plugin changes what `ssd-scheduler` decides
//! while the default profile is unaffected.

#[path = "../examples/custom_plugin.rs"]
mod example;

use kubesched::sim::PodOutcome;

#[test]
fn custom_plugin_filters_and_scores_in_its_profile_only() {
    let results = example::run().expect("example runs");
    let web = results.iter().find(|r| r.pod == "default/web").unwrap();
    let db = results
        .iter()
        .find(|r| r.pod == "default/database")
        .unwrap();
    // default-scheduler: least allocated wins; the maintenance label means nothing to it.
    assert_eq!(web.scheduler, "default-scheduler");
    assert!(!web.rejected.contains_key("ssd-1"));
    assert!(
        !web.scores["hdd-1"]
            .plugins
            .iter()
            .any(|(p, _)| p == "DiskAware")
    );
    // ssd-scheduler: ssd-1 is filtered out by DiskAware, ssd-2 wins on its score.
    assert_eq!(db.scheduler, "ssd-scheduler");
    assert_eq!(db.rejected["ssd-1"].plugin.as_deref(), Some("DiskAware"));
    assert_eq!(
        db.rejected["ssd-1"].reasons,
        vec!["node(s) were under maintenance"]
    );
    assert_eq!(db.outcome, PodOutcome::Scheduled("ssd-2".into()));
    let disk = |node: &str| {
        db.scores[node]
            .plugins
            .iter()
            .find(|(p, _)| p == "DiskAware")
            .unwrap()
            .1
    };
    assert_eq!(disk("ssd-2"), 80 * 5);
    assert_eq!(disk("hdd-1"), 0);
}

#[test]
fn bad_args_are_a_clear_error() {
    let bad = example::SCENARIO.replace("ssdScore: 80", "ssdScore: 800");
    let source = kubesched::sim::scenario::Source {
        name: "x.yaml".into(),
        text: bad,
    };
    let scenario = kubesched::sim::scenario::load(&[source]).unwrap();
    let err = kubesched::sim::simulate_with(&scenario, &Default::default(), &example::registry())
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("ssdScore: must be between 0 and 100"),
        "{err}"
    );
    let typo = example::SCENARIO.replace("ssdScore: 80", "ssdScor: 80");
    let source = kubesched::sim::scenario::Source {
        name: "x.yaml".into(),
        text: typo,
    };
    let scenario = kubesched::sim::scenario::load(&[source]).unwrap();
    let err = kubesched::sim::simulate_with(&scenario, &Default::default(), &example::registry())
        .unwrap_err();
    assert!(err.to_string().contains("ssdScor"), "{err}");
}
