//! Starting and stopping etcd and kube-apiserver: free loopback ports, a service-account
//! key, a static admin token, RBAC on, and a wait until `/readyz` answers `ok`.

use std::ffi::OsString;
use std::io::Write;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::{Binaries, Error};

/// The static token of the admin user (`system:masters`) in every kubeconfig written.
pub const ADMIN_TOKEN: &str = "admin-token";

/// How long kube-apiserver may take to answer `/readyz` with `ok`.
const READY_WITHIN: Duration = Duration::from_secs(120);

/// A running etcd and kube-apiserver on 127.0.0.1, stopped when dropped (also while a
/// failing test unwinds), with every process recorded through [`ControlPlane::track`].
#[derive(Debug)]
pub struct ControlPlane {
    /// The binaries it runs (and `kubectl`, `kube-scheduler` beside them).
    pub binaries: Binaries,
    /// The state folder: `kubeconfig`, `logs/`, `etcd/`, `certs/`, `pids`.
    pub state: PathBuf,
    /// The admin kubeconfig ([`ADMIN_TOKEN`], TLS not verified).
    pub kubeconfig: PathBuf,
    /// kube-apiserver's port on 127.0.0.1.
    pub port: u16,
    /// How long the start took, binaries found to `/readyz`.
    pub took: Duration,
    etcd: Child,
    apiserver: Option<Child>,
    apiserver_args: Vec<OsString>,
    tracked: Mutex<Vec<u32>>,
}

impl ControlPlane {
    /// Starts etcd and kube-apiserver with their state in `state` (created; data of an
    /// earlier run there is removed, and processes it left running are stopped), with
    /// `extra_apiserver_args` appended to kube-apiserver's flags, and waits until the
    /// API server is ready.
    pub fn start(
        binaries: Binaries,
        state: &Path,
        extra_apiserver_args: &[String],
    ) -> Result<ControlPlane, Error> {
        let started = Instant::now();
        std::fs::create_dir_all(state).map_err(|e| Error::io(state, e))?;
        let state = state.canonicalize().map_err(|e| Error::io(state, e))?;
        stop_leftovers(&state);
        for stale in ["etcd", "logs"] {
            let _ = std::fs::remove_dir_all(state.join(stale));
        }
        let logs = state.join("logs");
        std::fs::create_dir_all(&logs).map_err(|e| Error::io(&logs, e))?;
        write(&state.join("pids"), "")?;

        // The service-account key: PKCS#8 to sign with, its public half to verify with
        // (kube-apiserver reads only RSA or SEC1 private keys as public keys).
        let (sa_key, sa_public) = (state.join("sa.key"), state.join("sa.pub"));
        let key = rcgen::KeyPair::generate().map_err(|e| Error::Tool {
            what: "generating the service-account key".into(),
            detail: e.to_string(),
        })?;
        write(&sa_key, &key.serialize_pem())?;
        write(&sa_public, &key.public_key_pem())?;
        let tokens = state.join("tokens.csv");
        write(
            &tokens,
            &format!("{ADMIN_TOKEN},admin,admin,system:masters\n"),
        )?;

        let [etcd_port, peer_port, api_port] = free_ports()?;
        let peer = format!("http://127.0.0.1:{peer_port}");
        let client = format!("http://127.0.0.1:{etcd_port}");
        let etcd_args: Vec<OsString> = vec![
            flag("data-dir", state.join("etcd")),
            flag("listen-client-urls", &client),
            flag("advertise-client-urls", &client),
            flag("listen-peer-urls", &peer),
            flag("initial-advertise-peer-urls", &peer),
            flag("initial-cluster", format!("default={peer}")),
            flag("quota-backend-bytes", "8589934592"),
        ];
        let etcd = spawn(&binaries.etcd, &etcd_args, &logs.join("etcd.log"))?;
        record(&state, etcd.id())?;

        let mut apiserver_args: Vec<OsString> = vec![
            flag("etcd-servers", &client),
            flag("bind-address", "127.0.0.1"),
            flag("secure-port", api_port.to_string()),
            flag("cert-dir", state.join("certs")),
            flag("token-auth-file", &tokens),
            flag("authorization-mode", "RBAC"),
            flag("service-account-key-file", &sa_public),
            flag("service-account-signing-key-file", &sa_key),
            flag("service-account-issuer", "https://kubernetes.default.svc"),
            flag("service-cluster-ip-range", "10.96.0.0/16"),
            // No controller-manager creates service accounts, and no node controller
            // removes the not-ready taint from the nodes a test creates.
            flag(
                "disable-admission-plugins",
                "ServiceAccount,TaintNodesByCondition",
            ),
            flag("max-requests-inflight", "2000"),
            flag("max-mutating-requests-inflight", "1000"),
        ];
        apiserver_args.extend(extra_apiserver_args.iter().map(OsString::from));
        let mut plane = ControlPlane {
            kubeconfig: state.join("kubeconfig"),
            port: api_port,
            took: Duration::ZERO,
            etcd,
            apiserver: None,
            apiserver_args,
            tracked: Mutex::new(Vec::new()),
            state,
            binaries,
        };
        write(&plane.kubeconfig, &kubeconfig(api_port))?;
        plane.start_apiserver()?;
        plane.took = started.elapsed();
        Ok(plane)
    }

    /// `kubectl`, from the same place as the API server (or `PATH`).
    pub fn kubectl(&self) -> &Path {
        &self.binaries.kubectl
    }

    /// `kube-scheduler`, when the place the binaries came from has one.
    pub fn kube_scheduler(&self) -> Option<&Path> {
        self.binaries.kube_scheduler.as_deref()
    }

    /// Records a process started against the control plane, so that dropping the
    /// control plane (or the next start in the same state folder, after a killed run)
    /// stops it too.
    pub fn track(&self, pid: u32) {
        self.tracked
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(pid);
        let _ = record(&self.state, pid);
    }

    /// Kills kube-apiserver (etcd keeps running); [`ControlPlane::start_apiserver`]
    /// starts it again with the same flags, on the same port.
    pub fn stop_apiserver(&mut self) {
        if let Some(mut apiserver) = self.apiserver.take() {
            let _ = apiserver.kill();
            let _ = apiserver.wait();
        }
    }

    /// Starts kube-apiserver (again, after [`ControlPlane::stop_apiserver`]), appending
    /// to its log, and waits until `/readyz` answers `ok`.
    pub fn start_apiserver(&mut self) -> Result<(), Error> {
        self.stop_apiserver();
        let log = self.state.join("logs/kube-apiserver.log");
        let apiserver = spawn(&self.binaries.kube_apiserver, &self.apiserver_args, &log)?;
        record(&self.state, apiserver.id())?;
        self.apiserver = Some(apiserver);
        self.wait_ready()
    }

    /// Polls `kubectl get --raw /readyz` until it prints `ok`, failing at once when
    /// etcd or kube-apiserver exits, with the end of their logs.
    fn wait_ready(&mut self) -> Result<(), Error> {
        let deadline = Instant::now() + READY_WITHIN;
        loop {
            if let Ok(Some(status)) = self.etcd.try_wait() {
                return Err(self.not_ready(format!("etcd exited ({status})")));
            }
            if let Some(Ok(Some(status))) = self.apiserver.as_mut().map(Child::try_wait) {
                return Err(self.not_ready(format!("kube-apiserver exited ({status})")));
            }
            let ready = Command::new(&self.binaries.kubectl)
                .arg("--kubeconfig")
                .arg(&self.kubeconfig)
                .args(["--request-timeout=5s", "get", "--raw", "/readyz"])
                .stderr(Stdio::null())
                .output()
                .is_ok_and(|o| o.stdout.trim_ascii() == b"ok");
            if ready {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(self.not_ready(format!(
                    "kube-apiserver not ready after {} s",
                    READY_WITHIN.as_secs()
                )));
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    fn not_ready(&self, why: String) -> Error {
        Error::NotReady {
            why,
            place: self.binaries.place.clone(),
            apiserver_log: tail(&self.state.join("logs/kube-apiserver.log"), 30),
            etcd_log: tail(&self.state.join("logs/etcd.log"), 30),
        }
    }
}

impl Drop for ControlPlane {
    fn drop(&mut self) {
        let tracked = std::mem::take(self.tracked.get_mut().unwrap_or_else(|e| e.into_inner()));
        for pid in tracked {
            kill_if_ours(pid, &self.state);
        }
        self.stop_apiserver();
        let _ = self.etcd.kill();
        let _ = self.etcd.wait();
        let _ = std::fs::remove_file(self.state.join("pids"));
    }
}

/// `--name=value`.
fn flag(name: &str, value: impl AsRef<std::ffi::OsStr>) -> OsString {
    let mut f = OsString::from(format!("--{name}="));
    f.push(value);
    f
}

fn write(path: &Path, text: &str) -> Result<(), Error> {
    std::fs::write(path, text).map_err(|e| Error::io(path, e))
}

fn spawn(program: &Path, args: &[OsString], log: &Path) -> Result<Child, Error> {
    let out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .map_err(|e| Error::io(log, e))?;
    let err = out.try_clone().map_err(|e| Error::io(log, e))?;
    Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .map_err(|e| Error::io(program, e))
}

/// Appends `pid` to the state folder's `pids`, so a later start there can stop what a
/// killed run left behind.
fn record(state: &Path, pid: u32) -> Result<(), Error> {
    let path = state.join("pids");
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .map_err(|e| Error::io(&path, e))?;
    writeln!(f, "{pid}").map_err(|e| Error::io(&path, e))
}

/// Stops the processes an earlier run in `state` recorded and left running.
fn stop_leftovers(state: &Path) {
    let Ok(pids) = std::fs::read_to_string(state.join("pids")) else {
        return;
    };
    for pid in pids.lines().filter_map(|l| l.trim().parse().ok()) {
        kill_if_ours(pid, state);
    }
}

/// Kills `pid` if its command line names `state` (so a reused PID is left alone), and
/// waits briefly for it to go.
fn kill_if_ours(pid: u32, state: &Path) {
    let cmdline = |pid: u32| std::fs::read(format!("/proc/{pid}/cmdline")).ok();
    let needle = state.as_os_str().as_encoded_bytes();
    let ours = |pid| cmdline(pid).is_some_and(|c| c.windows(needle.len()).any(|w| w == needle));
    if !ours(pid) {
        return;
    }
    let _ = Command::new("kill")
        .args(["-9", &pid.to_string()])
        .stderr(Stdio::null())
        .status();
    let deadline = Instant::now() + Duration::from_secs(5);
    while ours(pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Three distinct free ports on 127.0.0.1 (held together while chosen, so they differ).
fn free_ports() -> Result<[u16; 3], Error> {
    let bind =
        || TcpListener::bind("127.0.0.1:0").map_err(|e| Error::io(Path::new("127.0.0.1:0"), e));
    let held = [bind()?, bind()?, bind()?];
    let port = |l: &TcpListener| {
        l.local_addr()
            .map(|a| a.port())
            .map_err(|e| Error::io(Path::new("127.0.0.1:0"), e))
    };
    Ok([port(&held[0])?, port(&held[1])?, port(&held[2])?])
}

fn kubeconfig(port: u16) -> String {
    format!(
        "apiVersion: v1
kind: Config
clusters:
- name: local
  cluster: {{server: \"https://127.0.0.1:{port}\", insecure-skip-tls-verify: true}}
users:
- name: admin
  user: {{token: {ADMIN_TOKEN}}}
contexts:
- name: local
  context: {{cluster: local, user: admin}}
current-context: local
"
    )
}

/// The last `lines` lines of a log file.
pub(crate) fn tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
