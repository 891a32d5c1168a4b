//! The secure port: `/healthz`, `/livez`, `/readyz` and `/metrics` over HTTPS, with a
//! self-signed certificate unless one is given (as kube-scheduler does on 10259).
//! Paths outside `always_allow_paths` (by default: `/metrics`) need a bearer token
//! the API server authenticates and authorises ([`crate::auth`]).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls;

use crate::metrics::Metrics;

/// kube-scheduler's secure port.
pub const DEFAULT_SECURE_PORT: u16 = 10259;

/// Where and how to serve.
#[derive(Clone, Debug)]
pub struct ServingOptions {
    /// The address and port (port 0 picks a free one).
    pub address: SocketAddr,
    /// A PEM certificate chain; a self-signed one is generated when `None`.
    pub cert_file: Option<PathBuf>,
    /// The PEM private key of `cert_file`.
    pub key_file: Option<PathBuf>,
    /// Paths served to anyone (kube-scheduler's `--authorization-always-allow-paths`,
    /// by default `/healthz`, `/readyz`, `/livez`); the others need a token allowed to
    /// `get` them.
    pub always_allow_paths: Vec<String>,
}

impl ServingOptions {
    /// Serving on `address` with a self-signed certificate and kube-scheduler's
    /// always-allowed paths.
    pub fn new(address: SocketAddr) -> ServingOptions {
        ServingOptions {
            address,
            cert_file: None,
            key_file: None,
            always_allow_paths: crate::auth::DEFAULT_ALWAYS_ALLOW_PATHS
                .iter()
                .map(|p| p.to_string())
                .collect(),
        }
    }
}

/// What `/readyz` checks, as kube-scheduler's readyz: `sched-handler-sync` (the first
/// lists of pods and nodes are in the cache) and `shutdown` (not stopping).
/// Leadership is not checked: a standby replica is ready too.
#[derive(Debug, Default)]
pub struct Readiness {
    synced: AtomicBool,
    shutting_down: AtomicBool,
}

impl Readiness {
    /// Not synced, not shutting down.
    pub fn new() -> Readiness {
        Readiness::default()
    }

    /// The first lists are in the cache.
    pub fn set_synced(&self) {
        self.synced.store(true, Ordering::SeqCst);
    }

    /// The runtime is stopping.
    pub fn set_shutting_down(&self) {
        self.shutting_down.store(true, Ordering::SeqCst);
    }

    /// `/readyz`'s status code and body: 200 `ok`, or 500 with the failed checks in
    /// the apiserver's healthz format.
    pub fn readyz(&self) -> (StatusCode, String) {
        let mut failed = Vec::new();
        if self.shutting_down.load(Ordering::SeqCst) {
            failed.push("[-]shutdown failed: process is shutting down");
        }
        if !self.synced.load(Ordering::SeqCst) {
            failed.push("[-]sched-handler-sync failed: waiting for handlers to sync");
        }
        if failed.is_empty() {
            (StatusCode::OK, "ok".to_string())
        } else {
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("{}\nreadyz check failed", failed.join("\n")),
            )
        }
    }
}

/// Why serving could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The certificate or key could not be read or used.
    #[error("TLS: {0}")]
    Tls(String),
    /// The port could not be bound.
    #[error("cannot listen on {0}: {1}")]
    Bind(SocketAddr, std::io::Error),
}

fn tls_config(opts: &ServingOptions) -> Result<rustls::ServerConfig, ServeError> {
    let tls = |e: &dyn std::fmt::Display| ServeError::Tls(e.to_string());
    let (certs, key): (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>) =
        match (&opts.cert_file, &opts.key_file) {
            (Some(cert), Some(key)) => {
                let certs = CertificateDer::pem_file_iter(cert)
                    .map_err(|e| tls(&format!("{}: {e}", cert.display())))?
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| tls(&format!("{}: {e}", cert.display())))?;
                let key = PrivateKeyDer::from_pem_file(key)
                    .map_err(|e| tls(&format!("{}: {e}", key.display())))?;
                (certs, key)
            }
            (None, None) => {
                let host = crate::hostname();
                let names = vec!["localhost".to_string(), host];
                let cert = rcgen::generate_simple_self_signed(names).map_err(|e| tls(&e))?;
                let key = PrivatePkcs8KeyDer::from(cert.signing_key.serialize_der());
                (vec![cert.cert.der().clone()], key.into())
            }
            _ => {
                return Err(ServeError::Tls(
                    "--tls-cert-file and --tls-private-key-file go together".into(),
                ));
            }
        };
    rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| tls(&e))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| tls(&e))
}

/// The health and metrics routes.
pub fn router(metrics: Arc<Metrics>, readiness: Arc<Readiness>) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/livez", get(|| async { "ok" }))
        .route(
            "/readyz",
            get(move || {
                let readiness = readiness.clone();
                async move { readiness.readyz() }
            }),
        )
        .route(
            "/metrics",
            get(move || {
                let metrics = metrics.clone();
                async move {
                    (
                        [(
                            header::CONTENT_TYPE,
                            "application/openmetrics-text; version=1.0.0; charset=utf-8",
                        )],
                        metrics.encode(),
                    )
                        .into_response()
                }
            }),
        )
}

/// Answers 401 or 403 to a request for a path that is not always allowed, unless its
/// bearer token is authenticated and authorised to `get` it.
async fn guard(
    axum::extract::State((auth, allowed)): axum::extract::State<(
        Arc<crate::auth::DelegatedAuth>,
        Arc<Vec<String>>,
    )>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let path = req.uri().path().to_string();
    if allowed
        .iter()
        .any(|p| p == &path || (p.ends_with('*') && path.starts_with(p.trim_end_matches('*'))))
    {
        return next.run(req).await;
    }
    let token = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty());
    match auth.check(token.as_deref(), &path).await {
        crate::auth::Verdict::Allowed => next.run(req).await,
        crate::auth::Verdict::Unauthorized => {
            (StatusCode::UNAUTHORIZED, "Unauthorized").into_response()
        }
        crate::auth::Verdict::Forbidden(message) => {
            (StatusCode::FORBIDDEN, message).into_response()
        }
    }
}

/// Binds the port and serves until `stop` turns true, in a task; returns the bound
/// address. With `auth`, the paths outside `opts.always_allow_paths` need a token the
/// API server allows; without, every path is open.
pub async fn serve(
    opts: &ServingOptions,
    metrics: Arc<Metrics>,
    readiness: Arc<Readiness>,
    auth: Option<Arc<crate::auth::DelegatedAuth>>,
    mut stop: watch::Receiver<bool>,
) -> Result<SocketAddr, ServeError> {
    let acceptor = TlsAcceptor::from(Arc::new(tls_config(opts)?));
    let listener = TcpListener::bind(opts.address)
        .await
        .map_err(|e| ServeError::Bind(opts.address, e))?;
    let addr = listener
        .local_addr()
        .map_err(|e| ServeError::Bind(opts.address, e))?;
    let mut app = router(metrics, readiness);
    if let Some(auth) = auth {
        let allowed = Arc::new(opts.always_allow_paths.clone());
        app = app.layer(axum::middleware::from_fn_with_state((auth, allowed), guard));
    }
    tokio::spawn(async move {
        loop {
            let (tcp, _) = tokio::select! {
                r = listener.accept() => match r {
                    Ok(c) => c,
                    Err(e) => { tracing::warn!(error = %e, "accept failed"); continue; }
                },
                _ = stop.changed() => return,
            };
            let acceptor = acceptor.clone();
            let app = app.clone();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let service = TowerToHyperService::new(app);
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tls), service)
                    .await;
            });
        }
    });
    tracing::info!(%addr, "serving securely on /healthz, /livez, /readyz and /metrics");
    Ok(addr)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readyz_waits_for_the_first_lists_and_fails_on_shutdown() {
        let r = Readiness::new();
        let (code, body) = r.readyz();
        assert_eq!(code, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(
            body,
            "[-]sched-handler-sync failed: waiting for handlers to sync\nreadyz check failed"
        );
        r.set_synced();
        assert_eq!(r.readyz(), (StatusCode::OK, "ok".to_string()));
        r.set_shutting_down();
        assert_eq!(r.readyz().0, StatusCode::INTERNAL_SERVER_ERROR);
    }
}
