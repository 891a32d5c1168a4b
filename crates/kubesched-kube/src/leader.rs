//! Leader election with a `coordination.k8s.io/v1` Lease, as client-go's
//! `leaderelection` does it: acquire when the lease is free or its holder has not
//! renewed within `leaseDuration` (measured on this replica's clock from when the
//! record last changed), renew every `retryPeriod`, give up leadership when a renewal
//! has not succeeded for `renewDeadline`, and release the lease on a clean stop.
//! Writes use the lease's `resourceVersion`, so two replicas never both win.
//!
//! Hand-written rather than kube-lease-manager: it follows client-go's timing fields
//! exactly (kube-lease-manager's are whole seconds), and tests can run it with
//! sub-second periods.

use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use tokio::sync::watch;

use crate::requests::Requests;
use crate::watch::Encoding;

/// Whether the elector should stop: told to, or its runtime dropped the sender (then
/// `changed()` returns at once, and a retry loop waiting on it would spin).
fn stopped(stop: &watch::Receiver<bool>) -> bool {
    *stop.borrow() || stop.has_changed().is_err()
}

/// The lease and its timings.
#[derive(Clone, Debug)]
pub struct LeaderElectionOptions {
    /// The lease's namespace.
    pub namespace: String,
    /// The lease's name.
    pub name: String,
    /// This replica's identity (the lease's `holderIdentity`).
    pub identity: String,
    /// How long a non-leader waits after the last change before taking over.
    pub lease_duration: Duration,
    /// How long the leader keeps retrying a renewal before it steps down.
    pub renew_deadline: Duration,
    /// How often to try to acquire or renew.
    pub retry_period: Duration,
}

/// Leadership was lost (renewal failed past the deadline).
#[derive(Debug, thiserror::Error)]
#[error("leaderelection lost: failed to renew lease {0} within the renew deadline")]
pub struct LeaderLost(pub String);

/// The elector of one replica.
pub struct LeaderElector {
    requests: Requests,
    opts: LeaderElectionOptions,
    observed: Option<(Option<String>, Option<Timestamp>)>,
    observed_at: Instant,
}

impl std::fmt::Debug for LeaderElector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderElector")
            .field("opts", &self.opts)
            .finish()
    }
}

fn seconds(d: Duration) -> i32 {
    d.as_secs_f64().ceil().max(1.0) as i32
}

impl LeaderElector {
    /// An elector for the lease of `opts`.
    pub fn new(client: kube::Client, opts: LeaderElectionOptions) -> LeaderElector {
        LeaderElector {
            requests: Requests::new(client, Encoding::Protobuf),
            opts,
            observed: None,
            observed_at: Instant::now(),
        }
    }

    /// Reads and writes the Lease in `encoding` (protobuf unless told otherwise, as
    /// kube-scheduler's client does).
    pub fn with_encoding(mut self, encoding: Encoding) -> LeaderElector {
        self.requests.encoding = encoding;
        self
    }

    async fn get(&self) -> Result<Option<Lease>, kube::Error> {
        self.requests
            .get_opt(Some(&self.opts.namespace), &self.opts.name)
            .await
    }

    async fn replace(&self, lease: &Lease) -> Result<Lease, kube::Error> {
        self.requests
            .replace(Some(&self.opts.namespace), &self.opts.name, lease)
            .await
    }

    /// One try: `Ok(true)` when this replica holds the lease afterwards.
    pub async fn try_acquire_or_renew(&mut self) -> Result<bool, kube::Error> {
        let now = Timestamp::now();
        let me = self.opts.identity.clone();
        let spec = |acquire: Option<MicroTime>, transitions: i32| LeaseSpec {
            holder_identity: Some(me.clone()),
            lease_duration_seconds: Some(seconds(self.opts.lease_duration)),
            acquire_time: acquire,
            renew_time: Some(MicroTime(now)),
            lease_transitions: Some(transitions),
            ..Default::default()
        };
        let Some(lease) = self.get().await? else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(self.opts.name.clone()),
                    namespace: Some(self.opts.namespace.clone()),
                    ..Default::default()
                },
                spec: Some(spec(Some(MicroTime(now)), 0)),
            };
            return match self
                .requests
                .create(Some(&self.opts.namespace), &lease)
                .await
            {
                Ok(_) => Ok(true),
                Err(kube::Error::Api(s)) if s.is_already_exists() || s.is_conflict() => Ok(false),
                Err(e) => Err(e),
            };
        };
        let old = lease.spec.clone().unwrap_or_default();
        let holder = old.holder_identity.clone().filter(|h| !h.is_empty());
        let record = (holder.clone(), old.renew_time.as_ref().map(|t| t.0));
        if self.observed.as_ref() != Some(&record) {
            self.observed = Some(record);
            self.observed_at = Instant::now();
        }
        let held_by_other = holder.as_deref().is_some_and(|h| h != me);
        if held_by_other {
            let duration = old
                .lease_duration_seconds
                .map(|s| Duration::from_secs(s.max(0) as u64))
                .unwrap_or(self.opts.lease_duration)
                .min(self.opts.lease_duration.max(Duration::from_millis(1)));
            if self.observed_at.elapsed() < duration {
                return Ok(false);
            }
        }
        let transitions = old.lease_transitions.unwrap_or(0);
        let new_spec = if holder.as_deref() == Some(me.as_str()) {
            spec(old.acquire_time.clone(), transitions)
        } else {
            spec(Some(MicroTime(now)), transitions + 1)
        };
        let mut updated = lease;
        updated.spec = Some(new_spec);
        match self.replace(&updated).await {
            Ok(l) => {
                let s = l.spec.unwrap_or_default();
                self.observed = Some((s.holder_identity, s.renew_time.map(|t| t.0)));
                self.observed_at = Instant::now();
                Ok(true)
            }
            Err(kube::Error::Api(s)) if s.is_conflict() => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Gives the lease up if this replica holds it (client-go's `ReleaseOnCancel`).
    pub async fn release(&mut self) -> Result<(), kube::Error> {
        let Some(mut lease) = self.get().await? else {
            return Ok(());
        };
        let spec = lease.spec.get_or_insert_with(Default::default);
        if spec.holder_identity.as_deref() != Some(self.opts.identity.as_str()) {
            return Ok(());
        }
        let now = MicroTime(Timestamp::now());
        spec.holder_identity = None;
        spec.lease_duration_seconds = Some(1);
        spec.renew_time = Some(now.clone());
        spec.acquire_time = Some(now);
        self.replace(&lease).await?;
        Ok(())
    }

    /// Runs the election until `stop` turns true (or its sender is dropped): waits to acquire, then renews,
    /// publishing leadership on `leading`. Releases the lease on stop; returns
    /// [`LeaderLost`] when no renewal succeeded within `renewDeadline`.
    ///
    /// As client-go's `renew` (but with rounds `retryPeriod` apart from start to start,
    /// where client-go waits `retryPeriod` after each): every `retryPeriod` a renewal
    /// round starts; within it a
    /// failed try (the API server refused, did not answer, or the lease changed under
    /// us) is retried every `retryPeriod`, and only when the round reaches
    /// `renewDeadline` without a success is leadership given up. No try waits longer
    /// than the time left in its round.
    pub async fn run(
        mut self,
        leading: watch::Sender<bool>,
        mut stop: watch::Receiver<bool>,
    ) -> Result<(), LeaderLost> {
        let retry = self.opts.retry_period;
        let deadline = self.opts.renew_deadline;
        // Acquire.
        let mut failing = false;
        loop {
            if stopped(&stop) {
                return Ok(());
            }
            match tokio::time::timeout(deadline.max(retry), self.try_acquire_or_renew()).await {
                Ok(Ok(true)) => break,
                Ok(Ok(false)) => failing = false,
                Ok(Err(e)) => {
                    if !failing {
                        tracing::warn!(error = %e, "error retrieving resource lock");
                    }
                    failing = true;
                }
                Err(_) => {
                    if !failing {
                        tracing::warn!("error retrieving resource lock: timed out");
                    }
                    failing = true;
                }
            }
            tokio::select! {
                _ = tokio::time::sleep(retry) => {}
                _ = stop.changed() => {}
            }
        }
        tracing::info!(lease = %format!("{}/{}", self.opts.namespace, self.opts.name), identity = %self.opts.identity, "successfully acquired lease");
        let _ = leading.send(true);
        // Renew. Rounds start retryPeriod apart, from start to start: the time a
        // renewal takes under load does not stretch the period (the lease's renewTime
        // never lags more than retryPeriod and one request).
        let mut next_round = Instant::now() + retry;
        loop {
            if !stopped(&stop) {
                tokio::select! {
                    _ = tokio::time::sleep_until(next_round.into()) => {}
                    _ = stop.changed() => {}
                }
            }
            if stopped(&stop) {
                let _ = leading.send(false);
                if let Err(e) = self.release().await {
                    tracing::warn!(error = %e, "failed to release the lease");
                }
                return Ok(());
            }
            let round = Instant::now();
            next_round = round + retry;
            loop {
                let left = deadline.saturating_sub(round.elapsed());
                if left.is_zero() {
                    let _ = leading.send(false);
                    return Err(LeaderLost(self.opts.name.clone()));
                }
                match tokio::time::timeout(left, self.try_acquire_or_renew()).await {
                    Ok(Ok(true)) => break,
                    Ok(Ok(false)) => {
                        tracing::warn!(
                            "failed to renew the lease: it is held by another replica or changed meanwhile"
                        )
                    }
                    Ok(Err(e)) => tracing::warn!(error = %e, "failed to renew the lease"),
                    Err(_) => tracing::warn!("failed to renew the lease: timed out"),
                }
                let left = deadline.saturating_sub(round.elapsed());
                tokio::select! {
                    _ = tokio::time::sleep(retry.min(left)) => {}
                    _ = stop.changed() => {}
                }
                if stopped(&stop) {
                    break;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A dropped stop sender makes `changed()` return at once: the elector must stop,
    /// not retry in a tight loop (seen as thousands of log lines a second).
    #[tokio::test]
    async fn a_dropped_stop_sender_stops_the_elector() {
        let config = kube::Config::new("http://127.0.0.1:1".parse().expect("url"));
        let client = kube::Client::try_from(config).expect("client");
        let elector = LeaderElector::new(
            client,
            LeaderElectionOptions {
                namespace: "kube-system".into(),
                name: "lock".into(),
                identity: "me".into(),
                lease_duration: Duration::from_secs(15),
                renew_deadline: Duration::from_secs(10),
                retry_period: Duration::from_secs(2),
            },
        );
        let (leading, _leading_rx) = watch::channel(false);
        let (stop_tx, stop_rx) = watch::channel(false);
        let run = tokio::spawn(elector.run(leading, stop_rx));
        tokio::time::sleep(Duration::from_millis(100)).await;
        drop(stop_tx);
        let done = tokio::time::timeout(Duration::from_secs(5), run).await;
        assert!(
            matches!(done, Ok(Ok(Ok(())))),
            "the elector went on: {done:?}"
        );
    }
}
