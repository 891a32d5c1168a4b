//! Delegated authentication and authorization of the secure port, as kube-scheduler's
//! (`DelegatingAuthenticationOptions`, `DelegatingAuthorizationOptions`): the bearer
//! token of a request is checked with a `TokenReview`, and the user it names is
//! allowed `get` on the non-resource path by a `SubjectAccessReview`; both answers are
//! cached for 10 seconds. A request without a token is `system:anonymous` (in the
//! group `system:unauthenticated`), as with kube-scheduler's anonymous
//! authentication. The paths of `--authorization-always-allow-paths` (`/healthz`,
//! `/readyz`, `/livez` by default) need neither.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec, UserInfo};
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::api::{Api, PostParams};

/// How long a token review or an access review is remembered.
const CACHE_TTL: Duration = Duration::from_secs(10);

/// kube-scheduler's default `--authorization-always-allow-paths`.
pub const DEFAULT_ALWAYS_ALLOW_PATHS: &[&str] = &["/healthz", "/readyz", "/livez"];

/// The delegated authenticator and authorizer of the secure port.
pub struct DelegatedAuth {
    client: kube::Client,
    tokens: Mutex<HashMap<String, (Instant, Option<UserInfo>)>>,
    decisions: Mutex<HashMap<(String, String), (Instant, bool)>>,
}

impl std::fmt::Debug for DelegatedAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DelegatedAuth")
    }
}

/// What the secure port answers a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Go on.
    Allowed,
    /// 401: the token is not valid (or could not be checked).
    Unauthorized,
    /// 403: the user may not `get` the path; the message says who and what.
    Forbidden(String),
}

impl Verdict {
    /// The status code to answer with, when not allowed.
    pub fn status(&self) -> StatusCode {
        match self {
            Verdict::Allowed => StatusCode::OK,
            Verdict::Unauthorized => StatusCode::UNAUTHORIZED,
            Verdict::Forbidden(_) => StatusCode::FORBIDDEN,
        }
    }
}

fn anonymous() -> UserInfo {
    UserInfo {
        username: Some("system:anonymous".into()),
        groups: Some(vec!["system:unauthenticated".into()]),
        ..Default::default()
    }
}

impl DelegatedAuth {
    /// Reviews through `client`'s API server.
    pub fn new(client: kube::Client) -> DelegatedAuth {
        DelegatedAuth {
            client,
            tokens: Mutex::new(HashMap::new()),
            decisions: Mutex::new(HashMap::new()),
        }
    }

    /// Whether the bearer `token` (or no token) may `get` `path`.
    pub async fn check(&self, token: Option<&str>, path: &str) -> Verdict {
        let user = match token {
            None => anonymous(),
            Some(t) => match self.authenticate(t).await {
                Some(u) => u,
                None => return Verdict::Unauthorized,
            },
        };
        let name = user.username.clone().unwrap_or_default();
        if self.authorize(&user, path).await {
            Verdict::Allowed
        } else {
            Verdict::Forbidden(format!(
                "forbidden: User \"{name}\" cannot get path \"{path}\""
            ))
        }
    }

    async fn authenticate(&self, token: &str) -> Option<UserInfo> {
        {
            let mut cache = self.tokens.lock().unwrap_or_else(|e| e.into_inner());
            cache.retain(|_, (t, _)| t.elapsed() < CACHE_TTL);
            if let Some((_, user)) = cache.get(token) {
                return user.clone();
            }
        }
        let review = TokenReview {
            spec: TokenReviewSpec {
                token: token.to_string(),
                ..Default::default()
            },
            ..Default::default()
        };
        let api: Api<TokenReview> = Api::all(self.client.clone());
        let user = match api.create(&PostParams::default(), &review).await {
            Ok(r) => r
                .status
                .filter(|s| s.authenticated == Some(true))
                .and_then(|s| s.user),
            Err(e) => {
                // Not cached: the next request asks again.
                tracing::warn!(error = %e, "token review failed");
                return None;
            }
        };
        self.tokens
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(token.to_string(), (Instant::now(), user.clone()));
        user
    }

    async fn authorize(&self, user: &UserInfo, path: &str) -> bool {
        let key = (
            serde_json::to_string(user).unwrap_or_default(),
            path.to_string(),
        );
        {
            let mut cache = self.decisions.lock().unwrap_or_else(|e| e.into_inner());
            cache.retain(|_, (t, _)| t.elapsed() < CACHE_TTL);
            if let Some((_, allowed)) = cache.get(&key) {
                return *allowed;
            }
        }
        let review = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: user.username.clone(),
                uid: user.uid.clone(),
                groups: user.groups.clone(),
                extra: user.extra.clone(),
                non_resource_attributes: Some(NonResourceAttributes {
                    path: Some(path.to_string()),
                    verb: Some("get".into()),
                }),
                ..Default::default()
            },
            ..Default::default()
        };
        let api: Api<SubjectAccessReview> = Api::all(self.client.clone());
        let allowed = match api.create(&PostParams::default(), &review).await {
            Ok(r) => r.status.is_some_and(|s| s.allowed),
            Err(e) => {
                tracing::warn!(error = %e, "subject access review failed");
                return false;
            }
        };
        self.decisions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, (Instant::now(), allowed));
        allowed
    }
}
