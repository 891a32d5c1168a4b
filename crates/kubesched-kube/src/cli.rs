//! `kubesched run`: the command-line front of the runtime, with kube-scheduler's flags
//! where they overlap.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;

use kubesched_config::KubeSchedulerConfiguration;
use kubesched_framework::Registry;

use crate::{DEFAULT_SECURE_PORT, Runtime, ServingOptions};

/// Run kubesched as a scheduler of a real cluster, beside (or instead of) kube-scheduler.
///
/// Schedules the pending pods whose spec.schedulerName is one of the configuration's
/// profiles, and only those. Serves /healthz, /livez, /readyz and /metrics over HTTPS
/// on --secure-port.
#[derive(clap::Args, Debug, Clone)]
pub struct RunArgs {
    /// The KubeSchedulerConfiguration file (kubescheduler.config.k8s.io/v1).
    #[arg(long, value_name = "FILE")]
    pub config: PathBuf,
    /// A kubeconfig file; overrides the configuration's clientConnection.kubeconfig.
    /// With neither, the in-cluster service account is used (then $KUBECONFIG or
    /// ~/.kube/config when not in a cluster).
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// The HTTPS port for /healthz, /livez, /readyz and /metrics; 0 turns serving off.
    #[arg(long, value_name = "PORT", default_value_t = DEFAULT_SECURE_PORT)]
    pub secure_port: u16,
    /// The address to serve on.
    #[arg(long, value_name = "IP", default_value = "0.0.0.0")]
    pub bind_address: IpAddr,
    /// A PEM certificate for the secure port (a self-signed one is made when absent).
    #[arg(long, value_name = "FILE", requires = "tls_private_key_file")]
    pub tls_cert_file: Option<PathBuf>,
    /// The PEM private key of --tls-cert-file.
    #[arg(long, value_name = "FILE", requires = "tls_cert_file")]
    pub tls_private_key_file: Option<PathBuf>,
    /// Paths of the secure port served without authorization (as kube-scheduler's);
    /// the others (/metrics) need a bearer token the API server authenticates
    /// (TokenReview) and authorises to `get` the path (SubjectAccessReview).
    #[arg(
        long,
        value_name = "PATHS",
        value_delimiter = ',',
        default_value = "/healthz,/readyz,/livez"
    )]
    pub authorization_always_allow_paths: Vec<String>,
    /// Override the configuration's leaderElection.leaderElect; `--leader-elect`
    /// alone means true, as kube-scheduler takes it.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub leader_elect: Option<bool>,
    /// Override the configuration's clientConnection.contentType: how pods, nodes and
    /// the other built-in kinds are listed and watched
    /// (`application/vnd.kubernetes.protobuf`, the default, or `application/json`).
    #[arg(long, value_name = "TYPE")]
    pub kube_api_content_type: Option<String>,
    /// The kube-scheduler version whose decisions to reproduce (1.35 or 1.36); default:
    /// the API server's (`/version`), or the nearest older one kubesched has.
    #[arg(long, value_name = "VERSION", value_parser = |s: &str| s.parse::<kubesched_framework::KubernetesVersion>())]
    pub kubernetes_version: Option<kubesched_framework::KubernetesVersion>,
    /// Feature gates changed from the version's defaults, as kube-scheduler takes them:
    /// `Name=true,Other=false` (docs/versions.md lists those kubesched honours).
    #[arg(long, value_name = "NAME=BOOL,...")]
    pub feature_gates: Vec<String>,
    /// Log verbosity, as kube-scheduler's --v: 0-3 info, 4-5 debug, 6+ trace.
    #[arg(short = 'v', long = "v", value_name = "LEVEL", default_value_t = 0)]
    pub verbosity: u8,
}

fn init_logging(verbosity: u8) {
    let level = match verbosity {
        0..=3 => tracing::Level::INFO,
        4..=5 => tracing::Level::DEBUG,
        _ => tracing::Level::TRACE,
    };
    let _ = tracing_subscriber::fmt()
        .with_max_level(level)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .try_init();
}

async fn kube_config_for(kubeconfig: Option<PathBuf>) -> Result<kube::Config, String> {
    let config = match kubeconfig {
        Some(path) => {
            let kc = kube::config::Kubeconfig::read_from(&path)
                .map_err(|e| format!("{}: {e}", path.display()))?;
            kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
                .await
                .map_err(|e| format!("{}: {e}", path.display()))?
        }
        None => match kube::Config::incluster() {
            Ok(c) => c,
            Err(in_cluster) => kube::Config::infer().await.map_err(|e| {
                format!("no --kubeconfig, not in a cluster ({in_cluster}), and {e}")
            })?,
        },
    };
    Ok(config)
}

/// Why `kubesched run` stopped: a bad configuration or kubeconfig (exit 2), or a
/// failure while running (exit 1).
enum Failure {
    Usage(String),
    Runtime(String),
}

async fn run_async(args: RunArgs, plugins: Registry) -> Result<(), Failure> {
    use Failure::{Runtime as Fail, Usage};
    // Gate names and the values kubesched implements do not depend on the version:
    // a bad flag is a usage error before anything is contacted.
    kubesched_framework::Features::with_gates(
        kubesched_framework::KubernetesVersion::LATEST,
        args.feature_gates.iter().map(String::as_str),
    )
    .map_err(|e| Usage(format!("--feature-gates: {e}")))?;
    let source = args.config.display().to_string();
    let text = std::fs::read_to_string(&args.config)
        .map_err(|e| Usage(format!("{source}: cannot read: {e}")))?;
    // kube-scheduler's --config holds one document; a file with the cluster's objects
    // besides it (a scenario) is said so, not as the YAML parser's complaint.
    let documents = serde_norway::Deserializer::from_str(&text)
        .map(<serde_json::Value as serde::Deserialize>::deserialize)
        .filter(|v| !matches!(v, Ok(serde_json::Value::Null)))
        .count();
    if documents > 1 {
        return Err(Usage(format!(
            "{source}: not a scheduler configuration: it holds {documents} YAML documents, and --config reads one KubeSchedulerConfiguration (the cluster's objects come from the API server)"
        )));
    }
    let loaded = KubeSchedulerConfiguration::from_yaml_str(&text, &source)
        .map_err(|e| Usage(e.to_string()))?;
    for w in &loaded.warnings {
        tracing::warn!("{w}");
    }
    let mut config = loaded.config;
    if let Some(le) = args.leader_elect {
        config.leader_election.leader_elect = le;
    }
    match &args.kube_api_content_type {
        Some(t) => {
            crate::watch::Encoding::from_content_type(t)
                .map_err(|why| Usage(format!("--kube-api-content-type: {why}")))?;
            config.client_connection.content_type = t.clone();
        }
        None => {
            crate::watch::Encoding::from_content_type(&config.client_connection.content_type)
                .map_err(|why| Usage(format!("{source}: {why}")))?;
        }
    }
    let kubeconfig = args.kubeconfig.clone().or_else(|| {
        let k = &config.client_connection.kubeconfig;
        (!k.is_empty()).then(|| PathBuf::from(k))
    });
    let kube_config = kube_config_for(kubeconfig).await.map_err(Usage)?;
    let serving = (args.secure_port != 0).then(|| ServingOptions {
        cert_file: args.tls_cert_file.clone(),
        key_file: args.tls_private_key_file.clone(),
        always_allow_paths: args.authorization_always_allow_paths.clone(),
        ..ServingOptions::new(SocketAddr::new(args.bind_address, args.secure_port))
    });
    let mut running = Runtime::from_kube_config(&kube_config, config)
        .map_err(|e| Usage(format!("the API server's client: {e}")))?
        .with_plugins(plugins)
        .map_err(|e| Usage(e.to_string()))?
        .kubernetes_version(args.kubernetes_version, args.feature_gates.clone())
        .serving(serving)
        .start()
        .await
        .map_err(|e| Fail(e.to_string()))?;
    let terminate = async {
        #[cfg(unix)]
        {
            if let Ok(mut s) =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            {
                s.recv().await;
                return;
            }
        }
        std::future::pending::<()>().await
    };
    tokio::select! {
        r = running.wait() => {
            r.map_err(|e| Fail(e.to_string()))?;
        }
        _ = tokio::signal::ctrl_c() => {
            tracing::info!("interrupted; stopping");
            running.stop().await;
        }
        _ = terminate => {
            tracing::info!("terminated; stopping");
            running.stop().await;
        }
    }
    Ok(())
}

/// Runs `kubesched run` to the end: 0 on a clean stop, 2 on a configuration or
/// kubeconfig that cannot be used (one line on standard error), 1 on an error while
/// running (including a lost lease, after which a restart rejoins the election, as
/// kube-scheduler does).
pub fn run(args: RunArgs) -> ExitCode {
    run_with_plugins("kubesched", args, Registry::new())
}

/// As [`run`], with out-of-tree `plugins` beside the in-tree ones, for a command named
/// `program` (the name its error lines start with).
pub fn run_with_plugins(program: &str, args: RunArgs, plugins: Registry) -> ExitCode {
    init_logging(args.verbosity);
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("{program}: error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match rt.block_on(run_async(args, plugins)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Usage(e)) => {
            eprintln!("{program}: error: {e}");
            ExitCode::from(2)
        }
        Err(Failure::Runtime(e)) => {
            eprintln!("{program}: error: {e}");
            ExitCode::FAILURE
        }
    }
}
