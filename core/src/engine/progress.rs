//! A running operation's bookkeeping with the store: its lease kept while a call runs or
//! while it waits, its progress and timeline entries saved (fenced by the lease).

use std::time::Duration;

use chrono::Utc;
use tokio::sync::mpsc;

use super::checkpoint::Checkpoint;
use super::tracker::Tracker;
use super::{chrono_duration, lease_token, Engine, Stop};
use crate::cluster::{ClusterEvent, EventKind, Operation};
use crate::Result;

impl Engine {
    /// Runs one call of an operation until the operation's deadline, renewing its lease and
    /// saving the progress it reports meanwhile (soon after it comes, not only with the
    /// lease: a page reloaded during a long call shows the step the call is on). Err when
    /// the lease is lost; Ok(Err) when the deadline passed first.
    pub(super) async fn drive<T>(
        &self,
        op: &Operation,
        tracker: &mut Tracker,
        rx: &mut mpsc::UnboundedReceiver<crate::provisioner::Report>,
        call: impl std::future::Future<Output = T>,
    ) -> Result<Result<T, tokio::time::error::Elapsed>, Stop> {
        let left = (op.deadline_at - Utc::now()).to_std().unwrap_or_default();
        let call = tokio::time::timeout(left, call);
        tokio::pin!(call);
        let mut tick = tokio::time::interval(self.config.lease / 3);
        tick.tick().await;
        let mut flush_tick = tokio::time::interval(self.config.progress_flush);
        flush_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        flush_tick.tick().await;
        loop {
            tokio::select! {
                res = &mut call => return Ok(res),
                Some(r) = rx.recv() => tracker.apply(r),
                _ = flush_tick.tick(), if tracker.dirty => {
                    self.flush(op, tracker, None).await?;
                }
                _ = tick.tick() => {
                    self.renew_lease(op).await?;
                    self.flush(op, tracker, None).await?;
                }
            }
        }
    }

    pub(super) async fn sleep_holding_lease(
        &self,
        op: &Operation,
        pause: Duration,
    ) -> Result<(), Stop> {
        let end = tokio::time::Instant::now() + pause;
        loop {
            let now = tokio::time::Instant::now();
            if now >= end {
                return Ok(());
            }
            tokio::time::sleep((end - now).min(self.config.lease / 3)).await;
            self.renew_lease(op).await?;
        }
    }

    /// Extends the operation's lease by the configured term; Err when another worker owns
    /// it now (or the store cannot say it still is ours).
    async fn renew_lease(&self, op: &Operation) -> Result<(), Stop> {
        let until = crate::clock::now() + chrono_duration(self.config.lease);
        match self
            .deps
            .store
            .renew_lease(op.id, lease_token(op), until)
            .await
        {
            Ok(true) => Ok(()),
            _ => Err(Stop::LostLease),
        }
    }

    pub(super) async fn flush(
        &self,
        op: &Operation,
        tracker: &mut Tracker,
        checkpoint: Option<&Checkpoint>,
    ) -> Result<(), Stop> {
        if !tracker.dirty && checkpoint.is_none() {
            return Ok(());
        }
        let events = std::mem::take(&mut tracker.events);
        let saved = checkpoint.unwrap_or(&tracker.checkpoint).clone();
        let ok = self
            .save_progress(
                op,
                &tracker.step,
                tracker.progress,
                &saved.to_value(),
                &events,
            )
            .await;
        match ok {
            Ok(true) => {
                tracker.dirty = false;
                tracker.checkpoint = saved;
                Ok(())
            }
            Ok(false) => Err(Stop::LostLease),
            Err(e) => {
                // The database is unavailable: keep the events for the next flush.
                tracing::warn!(error = %e, "saving operation progress failed");
                tracker.events = events;
                Ok(())
            }
        }
    }

    pub(super) async fn record(
        &self,
        op: &Operation,
        kind: EventKind,
        message: String,
    ) -> Result<(), Stop> {
        let event = ClusterEvent::new(
            op.cluster_id,
            Some(op.id),
            kind,
            message,
            crate::clock::now(),
        );
        let ok = self
            .save_progress(op, &op.step, op.progress, &op.checkpoint, &[event])
            .await;
        match ok {
            Ok(false) => Err(Stop::LostLease),
            _ => Ok(()),
        }
    }

    /// Saves a running operation's progress and new timeline entries, fenced by its lease;
    /// false when the lease is lost.
    pub(super) async fn save_progress(
        &self,
        op: &Operation,
        step: &str,
        progress: u8,
        checkpoint: &serde_json::Value,
        events: &[ClusterEvent],
    ) -> Result<bool> {
        let store = &self.deps.store;
        store
            .save_progress(op.id, lease_token(op), step, progress, checkpoint, events)
            .await
    }
}
