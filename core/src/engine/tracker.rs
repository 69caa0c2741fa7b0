//! Progress of a running provisioner call, kept in memory and flushed to the store in batches.

use chrono::{DateTime, Utc};

use super::checkpoint::Checkpoint;
use crate::cluster::{ClusterEvent, EventKind, Operation};
use crate::provisioner::Report;

/// Progress of the running call, flushed to the store in batches.
pub(super) struct Tracker {
    pub(super) step: String,
    pub(super) progress: u8,
    pub(super) events: Vec<ClusterEvent>,
    /// What the last save wrote (or what the operation started from).
    pub(super) checkpoint: Checkpoint,
    pub(super) dirty: bool,
    pub(super) cluster_id: uuid::Uuid,
    pub(super) operation_id: uuid::Uuid,
}

impl Tracker {
    pub(super) fn new(op: &Operation, checkpoint: Checkpoint) -> Self {
        Self {
            step: op.step.clone(),
            progress: op.progress,
            events: Vec::new(),
            checkpoint,
            dirty: false,
            cluster_id: op.cluster_id,
            operation_id: op.id,
        }
    }

    pub(super) fn step(&mut self, name: &str) {
        self.apply(Report::Step(name.to_owned()));
    }

    pub(super) fn apply(&mut self, r: Report) {
        self.dirty = true;
        let now: DateTime<Utc> = crate::clock::now();
        match r {
            Report::Step(s) => {
                self.events.push(ClusterEvent::new(
                    self.cluster_id,
                    Some(self.operation_id),
                    EventKind::Step,
                    s.clone(),
                    now,
                ));
                self.step = s.chars().take(200).collect();
            }
            Report::Progress(p) => self.progress = p,
            Report::Log(line) => self.events.push(ClusterEvent::new(
                self.cluster_id,
                Some(self.operation_id),
                EventKind::Log,
                line,
                now,
            )),
        }
    }
}
