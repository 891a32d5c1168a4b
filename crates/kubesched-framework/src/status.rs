//! [`Status`]: the outcome of running a plugin, with kube-scheduler's codes and reasons.
//!
//! Unschedulable is an outcome, not a fault: plugins return a `Status`, and the
//! framework turns the reasons into the "0/N nodes are available: ..." message that
//! users read in events. Reasons are `Cow<'static, str>` so the common fixed reasons
//! ("Insufficient cpu") cost no allocation in the per-node hot loop.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use smallvec::SmallVec;

/// kube-scheduler's status codes (`fwk.Code`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Code {
    /// The plugin ran and the pod may go on.
    Success,
    /// An internal error: the scheduling attempt is aborted.
    Error,
    /// The pod cannot be placed now; preemption might help.
    Unschedulable,
    /// The pod cannot be placed and preemption would not help.
    UnschedulableAndUnresolvable,
    /// A Permit plugin asks the pod to wait.
    Wait,
    /// The plugin has nothing to do for this pod (PreFilter, PreScore, Bind).
    Skip,
    /// The pod waits for something outside the scheduler (an external controller).
    Pending,
}

impl Code {
    /// The code's name as kube-scheduler prints it.
    pub fn as_str(self) -> &'static str {
        match self {
            Code::Success => "Success",
            Code::Error => "Error",
            Code::Unschedulable => "Unschedulable",
            Code::UnschedulableAndUnresolvable => "UnschedulableAndUnresolvable",
            Code::Wait => "Wait",
            Code::Skip => "Skip",
            Code::Pending => "Pending",
        }
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A reason string: static for the fixed reasons, owned for formatted ones.
pub type Reason = Cow<'static, str>;

/// The result of running a plugin: a [`Code`], its reasons and the plugin that set it.
///
/// ```
/// use kubesched_framework::{Code, Status};
/// let s = Status::new(Code::Unschedulable, "Insufficient cpu");
/// assert!(s.is_rejected());
/// assert_eq!(s.message(), "Insufficient cpu");
/// assert!(Status::success().is_success());
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Status {
    // `None` is a plain success: the per-node hot loop returns and drops one null
    // pointer per plugin call, and only statuses that say something are allocated.
    // Shared, so that a rejection kept for many nodes (incremental scheduling's
    // columns, a diagnosis) is copied with a count, not with its reasons.
    detail: Option<Arc<Detail>>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Detail {
    code: Code,
    reasons: SmallVec<[Reason; 2]>,
    plugin: Option<Arc<str>>,
    /// Explanations for people, beside the reasons (see [`Status::notes`]).
    notes: Vec<String>,
}

impl Status {
    /// A success status with no reasons.
    pub const fn success() -> Status {
        Status { detail: None }
    }

    /// A status with one reason.
    pub fn new(code: Code, reason: impl Into<Reason>) -> Status {
        let mut reasons = SmallVec::new();
        reasons.push(reason.into());
        Status::from_parts(code, reasons)
    }

    /// A status with no reason (for example `Skip`).
    pub fn with_code(code: Code) -> Status {
        Status::from_parts(code, SmallVec::new())
    }

    /// A status with several reasons, in order.
    pub fn with_reasons<I, R>(code: Code, reasons: I) -> Status
    where
        I: IntoIterator<Item = R>,
        R: Into<Reason>,
    {
        Status::from_parts(code, reasons.into_iter().map(Into::into).collect())
    }

    fn from_parts(code: Code, reasons: SmallVec<[Reason; 2]>) -> Status {
        if code == Code::Success && reasons.is_empty() {
            return Status::success();
        }
        Status {
            detail: Some(Arc::new(Detail {
                code,
                reasons,
                plugin: None,
                notes: Vec::new(),
            })),
        }
    }

    fn detail_mut(&mut self) -> &mut Detail {
        Arc::make_mut(self.detail.get_or_insert_with(|| {
            Arc::new(Detail {
                code: Code::Success,
                reasons: SmallVec::new(),
                plugin: None,
                notes: Vec::new(),
            })
        }))
    }

    /// Whether `other` is a copy of this status (a clone shares its detail): then
    /// they are equal, without comparing their reasons.
    pub(crate) fn is_copy_of(&self, other: &Status) -> bool {
        match (&self.detail, &other.detail) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        }
    }

    /// An `Error` status carrying an error message.
    pub fn error(message: impl Into<Reason>) -> Status {
        Status::new(Code::Error, message)
    }

    /// A `Skip` status.
    pub fn skip() -> Status {
        Status::with_code(Code::Skip)
    }

    /// The code.
    pub fn code(&self) -> Code {
        self.detail.as_ref().map_or(Code::Success, |d| d.code)
    }

    /// The reasons, in order.
    pub fn reasons(&self) -> &[Reason] {
        self.detail.as_ref().map_or(&[], |d| &d.reasons)
    }

    /// Appends a reason.
    pub fn push_reason(&mut self, reason: impl Into<Reason>) {
        self.detail_mut().reasons.push(reason.into());
    }

    /// The reasons joined by ", ", as kube-scheduler's `Status.Message()`.
    pub fn message(&self) -> String {
        self.reasons().join(", ")
    }

    /// What a plugin adds for people beside its reasons: which claim, volume or request
    /// stopped the node, e.g. "claim data-db-0: no Available PV of class local-ssd
    /// with at least 10Gi on this node". Notes are not reasons: they are not in [`Status::message`]
    /// or [`Status::reasons`], so kube-scheduler's wording is kept word for word.
    /// Plugins add them only when [`CycleState::explain`](crate::CycleState::explain)
    /// asks, so the scheduling loop pays nothing for them otherwise.
    pub fn notes(&self) -> &[String] {
        self.detail.as_ref().map_or(&[], |d| &d.notes)
    }

    /// Adds a note (see [`Status::notes`]).
    pub fn push_note(&mut self, note: impl Into<String>) {
        self.detail_mut().notes.push(note.into());
    }

    /// Returns the status with these notes added (see [`Status::notes`]).
    pub fn with_notes(mut self, notes: impl IntoIterator<Item = String>) -> Status {
        for note in notes {
            self.push_note(note);
        }
        self
    }

    /// The plugin that returned this status, once the framework has recorded it.
    pub fn plugin(&self) -> Option<&str> {
        self.detail.as_ref().and_then(|d| d.plugin.as_deref())
    }

    /// Records the plugin that returned this status.
    pub fn set_plugin(&mut self, plugin: Arc<str>) {
        self.detail_mut().plugin = Some(plugin);
    }

    /// Returns the status with the plugin recorded.
    pub fn with_plugin(mut self, plugin: Arc<str>) -> Status {
        self.set_plugin(plugin);
        self
    }

    /// `true` for `Success`.
    #[inline]
    pub fn is_success(&self) -> bool {
        match &self.detail {
            None => true,
            Some(d) => d.code == Code::Success,
        }
    }

    /// The status if it is not a success; a success is consumed without running its
    /// destructor when it holds nothing (the common case in per-node loops, where the
    /// out-of-line drop of a null pointer is measurable).
    #[inline]
    pub fn into_failure(self) -> Option<Status> {
        match &self.detail {
            None => {
                std::mem::forget(self);
                None
            }
            Some(d) if d.code == Code::Success => None,
            Some(_) => Some(self),
        }
    }

    /// `true` for `Skip`.
    pub fn is_skip(&self) -> bool {
        self.code() == Code::Skip
    }

    /// `true` for `Wait`.
    pub fn is_wait(&self) -> bool {
        self.code() == Code::Wait
    }

    /// `true` for `Error`.
    pub fn is_error(&self) -> bool {
        self.code() == Code::Error
    }

    /// `true` when the pod was rejected: `Unschedulable`, `UnschedulableAndUnresolvable`
    /// or `Pending` (kube-scheduler's `IsRejected`).
    pub fn is_rejected(&self) -> bool {
        matches!(
            self.code(),
            Code::Unschedulable | Code::UnschedulableAndUnresolvable | Code::Pending
        )
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.plugin() {
            Some(p) => write!(f, "{} ({}): {}", self.code(), p, self.message()),
            None => write!(f, "{}: {}", self.code(), self.message()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_are_beside_the_reasons_not_in_them() {
        let s = Status::new(
            Code::UnschedulableAndUnresolvable,
            "cannot allocate all claims",
        )
        .with_notes(["claim c: request gpu wants 2 device(s)".to_string()]);
        assert_eq!(s.message(), "cannot allocate all claims");
        assert_eq!(s.reasons(), ["cannot allocate all claims"]);
        assert_eq!(s.notes(), ["claim c: request gpu wants 2 device(s)"]);
        assert!(!s.to_string().contains("claim c"), "{s}");
        assert!(Status::success().notes().is_empty());
    }

    #[test]
    fn message_joins_reasons_in_order() {
        let s = Status::with_reasons(
            Code::Unschedulable,
            ["Insufficient cpu", "Insufficient memory"],
        );
        assert_eq!(s.message(), "Insufficient cpu, Insufficient memory");
        assert_eq!(s.reasons().len(), 2);
    }

    #[test]
    fn rejected_codes_match_kube_scheduler() {
        assert!(Status::with_code(Code::Unschedulable).is_rejected());
        assert!(Status::with_code(Code::UnschedulableAndUnresolvable).is_rejected());
        assert!(Status::with_code(Code::Pending).is_rejected());
        assert!(!Status::error("boom").is_rejected());
        assert!(!Status::skip().is_rejected());
        assert!(!Status::success().is_rejected());
    }

    #[test]
    fn a_success_is_one_pointer_and_equal_however_made() {
        assert_eq!(std::mem::size_of::<Status>(), std::mem::size_of::<usize>());
        assert_eq!(Status::with_code(Code::Success), Status::success());
        assert_eq!(Status::default(), Status::success());
        let mut s = Status::success();
        s.push_reason("note");
        assert!(s.is_success());
        assert_eq!(s.message(), "note");
    }

    #[test]
    fn a_clone_is_a_copy_and_an_equal_status_is_not() {
        let s = Status::new(Code::Unschedulable, "x");
        assert!(s.is_copy_of(&s.clone()));
        assert!(!s.is_copy_of(&Status::new(Code::Unschedulable, "x")));
        assert!(Status::success().is_copy_of(&Status::success()));
        // Changing a copy leaves the original alone.
        let mut copy = s.clone();
        copy.push_reason("y");
        assert_eq!(s.message(), "x");
        assert!(!s.is_copy_of(&copy));
    }

    #[test]
    fn plugin_is_recorded() {
        let s = Status::new(Code::Unschedulable, "x").with_plugin("NodeName".into());
        assert_eq!(s.plugin(), Some("NodeName"));
        assert_eq!(s.to_string(), "Unschedulable (NodeName): x");
    }
}
