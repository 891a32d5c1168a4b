//! The PreBind point as a future ([`Framework::pre_bind_async`]): the plugins with work
//! run in the profile's order, the first failure ends the run with the plugin's name as
//! the synchronous run reports it, plugins the pre-flight skipped are not run, and
//! there is no future when a plugin with work has only the synchronous form.

use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use kubesched_config::{KubeSchedulerConfiguration, PluginRef};
use kubesched_framework::build::PodBuilder;
use kubesched_framework::*;

/// A PreBind plugin that records its runs in a shared log and answers `answer`.
struct Step {
    name: &'static str,
    answer: Code,
    /// Whether it offers the future form.
    offers_future: bool,
    /// Whether its pre-flight says it has work.
    has_work: bool,
    log: Arc<Mutex<Vec<String>>>,
}

impl Step {
    fn status(&self) -> Status {
        match self.answer {
            Code::Success => Status::success(),
            code => Status::new(code, format!("{} said no", self.name)),
        }
    }
}

impl Plugin for Step {
    fn name(&self) -> &str {
        self.name
    }
    extension_points!(PreBind);
}

impl PreBindPlugin for Step {
    fn pre_bind(&self, _: &mut CycleState, _: &PodInfo, _: &str) -> Status {
        self.log.lock().unwrap().push(format!("{} sync", self.name));
        self.status()
    }

    fn pre_bind_pre_flight(&self, _: &CycleState, _: &PodInfo, _: &str) -> Status {
        if self.has_work {
            Status::success()
        } else {
            Status::skip()
        }
    }

    fn pre_bind_async(&self, _: &CycleState, _: &Arc<PodInfo>, _: &str) -> Option<PreBindFuture> {
        if !self.offers_future {
            return None;
        }
        let (log, name, status) = (self.log.clone(), self.name, self.status());
        Some(Box::pin(async move {
            log.lock().unwrap().push(format!("{name} async"));
            status
        }))
    }
}

/// The profile's QueueSort and Bind, which every profile needs.
struct Frame;

impl Plugin for Frame {
    fn name(&self) -> &str {
        "Frame"
    }
    extension_points!(QueueSort, Bind);
}

impl QueueSortPlugin for Frame {
    fn less(&self, a: &QueuedPodInfo, b: &QueuedPodInfo) -> bool {
        a.timestamp < b.timestamp
    }
}

impl BindPlugin for Frame {
    fn bind(&self, _: &mut CycleState, _: &PodInfo, _: &str) -> Status {
        Status::success()
    }
}

/// A profile whose PreBind plugins are `steps`, in order, sharing one log.
fn framework(steps: Vec<Step>) -> Framework {
    let mut registry = Registry::new();
    registry
        .register("Frame", |_, _| Ok(Arc::new(Frame) as Arc<dyn Plugin>))
        .unwrap();
    let mut config = KubeSchedulerConfiguration::default_config();
    let profile = &mut config.profiles[0];
    profile.user_plugins = None;
    profile.plugins = Default::default();
    profile
        .plugins
        .queue_sort
        .enabled
        .push(PluginRef::new("Frame"));
    profile.plugins.bind.enabled.push(PluginRef::new("Frame"));
    for step in steps {
        let name = step.name;
        let step = Arc::new(step);
        registry
            .register(name, move |_, _| Ok(step.clone() as Arc<dyn Plugin>))
            .unwrap();
        profile.plugins.pre_bind.enabled.push(PluginRef::new(name));
    }
    Framework::new(profile, &registry, &Handle::default()).unwrap()
}

fn step(name: &'static str, answer: Code, log: &Arc<Mutex<Vec<String>>>) -> Step {
    Step {
        name,
        answer,
        offers_future: true,
        has_work: true,
        log: log.clone(),
    }
}

/// Runs the pre-flight, then the future to its end (the steps answer at once).
fn run_async(fwk: &Framework) -> Option<Status> {
    let pod = PodBuilder::new("default", "p").pod_info().unwrap();
    let mut state = CycleState::new();
    fwk.run_pre_bind_pre_flights(&mut state, &pod, "n1");
    let future = fwk.pre_bind_async(&state, &pod, "n1")?;
    let Poll::Ready(status) = std::pin::pin!(future).poll(&mut Context::from_waker(Waker::noop()))
    else {
        panic!("the steps answer at once");
    };
    Some(status)
}

#[test]
fn the_plugins_run_in_order_and_the_first_failure_ends_the_run() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let fwk = framework(vec![
        step("First", Code::Success, &log),
        step("Second", Code::Error, &log),
        step("Third", Code::Success, &log),
    ]);
    let status = run_async(&fwk).expect("every plugin offers a future");
    assert_eq!(*log.lock().unwrap(), ["First async", "Second async"]);
    // As the synchronous run reports it.
    let pod = PodBuilder::new("default", "p").pod_info().unwrap();
    let mut state = CycleState::new();
    fwk.run_pre_bind_pre_flights(&mut state, &pod, "n1");
    let sync = fwk.run_pre_bind_plugins(&mut state, &pod, "n1");
    assert_eq!(
        (status.code(), status.message(), status.plugin()),
        (sync.code(), sync.message(), sync.plugin())
    );
    assert_eq!(status.plugin(), Some("Second"));
    assert_eq!(status.message(), "Second said no");
}

#[test]
fn a_plugin_the_pre_flight_skipped_is_not_run_and_needs_no_future() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let idle = Step {
        offers_future: false,
        has_work: false,
        ..step("Idle", Code::Error, &log)
    };
    let fwk = framework(vec![idle, step("Busy", Code::Success, &log)]);
    let status = run_async(&fwk).expect("the plugin with work offers a future");
    assert!(status.is_success());
    assert_eq!(*log.lock().unwrap(), ["Busy async"]);
}

#[test]
fn no_future_when_a_plugin_with_work_has_only_the_synchronous_form() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let blocking = Step {
        offers_future: false,
        ..step("Blocking", Code::Success, &log)
    };
    let fwk = framework(vec![step("Busy", Code::Success, &log), blocking]);
    assert!(run_async(&fwk).is_none());
    // Nothing ran: the caller falls back to the synchronous run.
    assert!(log.lock().unwrap().is_empty());
}
