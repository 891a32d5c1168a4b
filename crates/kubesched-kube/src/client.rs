//! The HTTP clients kubesched talks to the API server with, shaped as kube-scheduler's
//! (`cmd/kube-scheduler/app/options`): a scheduling client (lists, watches, binds,
//! status patches, preemption deletes) and an event client, each behind its own token
//! bucket of `clientConnection.qps`/`burst` as client-go gives each clientset its own,
//! and a leader-election client with no limiter, on its own connection, so that
//! renewals never queue behind scheduling traffic.
//!
//! The scheduling client holds a few HTTP/2 connections (ALPN `h2`, with PING health
//! checks as client-go's), used in turn, and the event and leader-election clients one
//! each; all of a client's requests, watches included, are multiplexed over them. An
//! API server that only speaks HTTP/1.1 (or plain HTTP, as the loopback fake) gets a
//! pool instead. Every request counts in `rest_client_requests_total` and
//! `rest_client_request_duration_seconds`, and the time it waited for a token in
//! `rest_client_rate_limiter_duration_seconds`. A request that finds no token waits for
//! one: nothing is dropped.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use http::{HeaderName, HeaderValue, Request, Response};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use kube::client::{Body, ConfigExt};
use tokio_rustls::rustls;
use tower::{BoxError, Service, ServiceBuilder, ServiceExt};

use crate::metrics::Metrics;

/// The scheduling client's HTTP/2 connections. The API server serves each connection
/// from one goroutine and lets 250 streams through it at once, so a burst of binds
/// over a single connection queues behind itself while kube-scheduler's client-go
/// opens more connections as it needs them (over 100 in a burst of 500 binds, measured
/// beside it): a few connections, used in turn, keep kubesched's binds moving and its
/// connections few.
const SCHEDULING_CONNECTIONS: usize = 6;

/// How many dispatch times a [`TokenBucket`] remembers, for [`TokenBucket::recent`].
const REMEMBERED_DISPATCHES: usize = 8192;

/// A token bucket, as client-go's `flowcontrol.NewTokenBucketRateLimiter`: `burst`
/// tokens at most, refilled at `qps` per second; a request takes one, waiting for it
/// when the bucket is empty (waiters are served in order).
#[derive(Debug)]
pub struct TokenBucket {
    qps: f64,
    burst: f64,
    state: Mutex<BucketState>,
}

#[derive(Debug)]
struct BucketState {
    tokens: f64,
    last: Instant,
    dispatched: VecDeque<Instant>,
}

impl TokenBucket {
    /// A full bucket. `qps <= 0` means no limit (client-go: a negative QPS disables
    /// the limiter).
    pub fn new(qps: f64, burst: u32) -> TokenBucket {
        let burst = f64::from(burst.max(1));
        TokenBucket {
            qps,
            burst,
            state: Mutex::new(BucketState {
                tokens: burst,
                last: Instant::now(),
                dispatched: VecDeque::new(),
            }),
        }
    }

    /// Takes a token, and says how long to wait before using it (zero when one was
    /// there). The token is reserved at once, so the waits of concurrent callers add
    /// up in the order they called.
    pub fn reserve(&self) -> Duration {
        let now = Instant::now();
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let wait = if self.qps <= 0.0 {
            Duration::ZERO
        } else {
            let elapsed = now.saturating_duration_since(s.last).as_secs_f64();
            s.tokens = (s.tokens + elapsed * self.qps).min(self.burst);
            s.last = now;
            s.tokens -= 1.0;
            if s.tokens >= 0.0 {
                Duration::ZERO
            } else {
                Duration::from_secs_f64(-s.tokens / self.qps)
            }
        };
        if s.dispatched.len() == REMEMBERED_DISPATCHES {
            s.dispatched.pop_front();
        }
        s.dispatched.push_back(now + wait);
        wait
    }

    /// Waits for a token; returns how long it waited.
    pub async fn acquire(&self) -> Duration {
        let wait = self.reserve();
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
        wait
    }

    /// When the last requests (up to 8,192) were let through, oldest first.
    pub fn recent(&self) -> Vec<Instant> {
        let s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.dispatched.iter().copied().collect()
    }
}

/// How the clients are built.
#[derive(Clone, Debug)]
pub struct ClientOptions {
    /// `clientConnection.qps` (kube-scheduler's default: 50).
    pub qps: f32,
    /// `clientConnection.burst` (default 100).
    pub burst: u32,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            qps: 50.0,
            burst: 100,
        }
    }
}

/// The three clients of a runtime.
#[derive(Clone)]
pub struct Clients {
    /// Lists, watches, bindings, pod status, preemption.
    pub scheduling: kube::Client,
    /// `events.k8s.io/v1` events.
    pub events: kube::Client,
    /// The leader lease (no limiter, its own connection).
    pub leader_election: kube::Client,
    /// The scheduling client's bucket.
    pub scheduling_bucket: Arc<TokenBucket>,
    /// The event client's bucket.
    pub events_bucket: Arc<TokenBucket>,
}

impl std::fmt::Debug for Clients {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Clients").finish_non_exhaustive()
    }
}

impl Clients {
    /// The clients of `config` (see the module doc for their connections), with `options`' limits,
    /// counting their requests in `metrics`.
    pub fn new(
        config: &kube::Config,
        options: &ClientOptions,
        metrics: Arc<Metrics>,
    ) -> Result<Clients, kube::Error> {
        let qps = f64::from(options.qps);
        let scheduling_bucket = Arc::new(TokenBucket::new(qps, options.burst));
        let events_bucket = Arc::new(TokenBucket::new(qps, options.burst));
        Ok(Clients {
            scheduling: build(
                config,
                "scheduler",
                SCHEDULING_CONNECTIONS,
                Some(scheduling_bucket.clone()),
                metrics.clone(),
            )?,
            events: build(config, "", 1, Some(events_bucket.clone()), metrics.clone())?,
            leader_election: build(config, "leader-election", 1, None, metrics)?,
            scheduling_bucket,
            events_bucket,
        })
    }
}

/// client-go's user agent, `NAME/VERSION (OS/ARCH)`, with `suffix` appended as
/// `rest.AddUserAgent` does.
fn user_agent(suffix: &str) -> String {
    let base = format!(
        "kubesched/v{} ({}/{})",
        env!("CARGO_PKG_VERSION"),
        std::env::consts::OS,
        std::env::consts::ARCH
    );
    if suffix.is_empty() {
        base
    } else {
        format!("{base}/{suffix}")
    }
}

static INSECURE_WARNED: AtomicBool = AtomicBool::new(false);

/// Accepts any server certificate, silently: the kubeconfig asked for it
/// (`insecure-skip-tls-verify`), and that is said once when the client is built, not
/// on every connection as kube-rs's verifier does.
#[derive(Debug)]
struct InsecureVerifier(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for InsecureVerifier {
    fn verify_server_cert(
        &self,
        _end_entity: &rustls_pki_types::CertificateDer<'_>,
        _intermediates: &[rustls_pki_types::CertificateDer<'_>],
        _server_name: &rustls_pki_types::ServerName<'_>,
        _ocsp: &[u8],
        _now: rustls_pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls_pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls_pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

fn build(
    config: &kube::Config,
    agent_suffix: &str,
    connections: usize,
    bucket: Option<Arc<TokenBucket>>,
    metrics: Arc<Metrics>,
) -> Result<kube::Client, kube::Error> {
    let mut config = config.clone();
    if !config
        .headers
        .iter()
        .any(|(k, _)| k == http::header::USER_AGENT)
        && let Ok(v) = HeaderValue::from_str(&user_agent(agent_suffix))
    {
        config
            .headers
            .push((HeaderName::from_static("user-agent"), v));
    }
    let mut tls = config.rustls_client_config()?;
    if config.accept_invalid_certs {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        tls.dangerous()
            .set_certificate_verifier(Arc::new(InsecureVerifier(provider)));
        if !INSECURE_WARNED.swap(true, Ordering::SeqCst) {
            tracing::warn!(
                server = %config.cluster_url,
                "insecure-skip-tls-verify: the API server's certificate is not verified"
            );
        }
    }
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_connect_timeout(config.connect_timeout);
    http.set_nodelay(true);
    let mut https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http();
    if let Some(name) = config.tls_server_name.as_ref() {
        let name = rustls_pki_types::ServerName::try_from(name.clone())
            .map_err(|e| kube::Error::Service(Box::new(e)))?;
        https = https.with_server_name_resolver(hyper_rustls::FixedServerNameResolver::new(name));
    }
    let https = https.enable_http1().enable_http2().wrap_connector(http);
    // Each connection is a hyper client of its own (hyper keeps one HTTP/2 connection
    // per client); requests take them in turn.
    let hyper_clients: Vec<_> = (0..connections.max(1))
        .map(|_| {
            hyper_util::client::legacy::Client::builder(TokioExecutor::new())
                .timer(TokioTimer::new())
                .pool_timer(TokioTimer::new())
                // client-go's HTTP/2 health check: a PING after 30 s without a frame,
                // the connection closed when it is not answered within 15 s.
                .http2_keep_alive_interval(Some(Duration::from_secs(30)))
                .http2_keep_alive_timeout(Duration::from_secs(15))
                .http2_keep_alive_while_idle(true)
                .build::<_, Body>(https.clone())
        })
        .collect();
    let host = config
        .cluster_url
        .authority()
        .map(|a| a.to_string())
        .unwrap_or_default();
    let limited = Limited {
        inner: RoundRobin {
            clients: Arc::from(hyper_clients),
            next: Arc::default(),
        },
        bucket,
        metrics,
        host: Arc::from(host),
    };
    let service = ServiceBuilder::new()
        .layer(config.base_uri_layer())
        .option_layer(config.auth_layer()?)
        .layer(config.extra_headers_layer()?)
        .service(limited)
        .map_err(BoxError::from);
    Ok(kube::client::ClientBuilder::new(service, config.default_namespace.clone()).build())
}

/// Sends each request on the next of several clients.
struct RoundRobin<S> {
    clients: Arc<[S]>,
    next: Arc<std::sync::atomic::AtomicUsize>,
}

impl<S> Clone for RoundRobin<S> {
    fn clone(&self) -> Self {
        RoundRobin {
            clients: self.clients.clone(),
            next: self.next.clone(),
        }
    }
}

impl<S, R> Service<R> for RoundRobin<S>
where
    S: Service<R> + Clone,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: R) -> Self::Future {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.clients.len();
        self.clients[i].clone().call(req)
    }
}

/// Waits for a token, then sends, counting the request.
#[derive(Clone)]
struct Limited<S> {
    inner: S,
    bucket: Option<Arc<TokenBucket>>,
    metrics: Arc<Metrics>,
    host: Arc<str>,
}

impl<S, B> Service<Request<Body>> for Limited<S>
where
    S: Service<Request<Body>, Response = Response<B>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    B: Send + 'static,
{
    type Response = Response<B>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Response<B>, BoxError>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        // Readiness is awaited per request below (hyper's client is always ready).
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        let inner = self.inner.clone();
        let bucket = self.bucket.clone();
        let metrics = self.metrics.clone();
        let host = self.host.clone();
        Box::pin(async move {
            let method = req.method().as_str().to_string();
            let verb = verb_of(&req);
            if let Some(b) = &bucket {
                let waited = b.acquire().await;
                metrics.rate_limiter_wait(&host, verb, waited);
            }
            let start = Instant::now();
            let r = inner.oneshot(req).await.map_err(Into::into);
            let code = match &r {
                Ok(resp) => resp.status().as_u16().to_string(),
                Err(_) => "<error>".to_string(),
            };
            metrics.rest_request(&code, &host, &method, verb, start.elapsed());
            r
        })
    }
}

/// client-go's `verb` label: the HTTP method, with `WATCH` for watches.
fn verb_of(req: &Request<Body>) -> &'static str {
    let watch = req
        .uri()
        .query()
        .is_some_and(|q| q.split('&').any(|kv| kv == "watch=true" || kv == "watch=1"));
    match *req.method() {
        _ if watch => "WATCH",
        http::Method::GET => "GET",
        http::Method::POST => "POST",
        http::Method::PUT => "PUT",
        http::Method::PATCH => "PATCH",
        http::Method::DELETE => "DELETE",
        _ => "other",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_lets_a_burst_through_then_spaces_requests_at_qps() {
        let b = TokenBucket::new(10.0, 3);
        for _ in 0..3 {
            assert_eq!(b.reserve(), Duration::ZERO);
        }
        let w1 = b.reserve();
        let w2 = b.reserve();
        assert!(
            w1 > Duration::from_millis(90) && w1 <= Duration::from_millis(100),
            "{w1:?}"
        );
        assert!(
            w2 > Duration::from_millis(190) && w2 <= Duration::from_millis(200),
            "{w2:?}"
        );
        assert_eq!(b.recent().len(), 5);
    }

    #[test]
    fn a_bucket_without_qps_never_waits() {
        let b = TokenBucket::new(0.0, 1);
        for _ in 0..100 {
            assert_eq!(b.reserve(), Duration::ZERO);
        }
    }
}
