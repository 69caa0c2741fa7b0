//! What Jenkins' remote access API answers, as read by KQueen.

use std::time::{SystemTime, UNIX_EPOCH};

use serde::Deserialize;

pub(super) enum QueueState {
    Waiting(Option<String>),
    Started(u64),
    Cancelled,
    /// Jenkins forgets queue items some minutes after they leave the queue.
    Gone,
}

#[derive(Deserialize)]
pub(super) struct QueueItemJson {
    #[serde(default)]
    pub(super) cancelled: Option<bool>,
    #[serde(default)]
    pub(super) executable: Option<ExecutableJson>,
    #[serde(default)]
    pub(super) why: Option<String>,
}

#[derive(Deserialize)]
pub(super) struct ExecutableJson {
    pub(super) number: u64,
}

#[derive(Deserialize)]
pub(super) struct JobJson {
    #[serde(default)]
    pub(super) builds: Vec<JobBuildJson>,
}

#[derive(Deserialize)]
pub(super) struct JobBuildJson {
    pub(super) number: u64,
    #[serde(default, rename = "queueId")]
    pub(super) queue_id: Option<u64>,
}

#[derive(Deserialize)]
pub(super) struct BuildJson {
    #[serde(default)]
    pub(super) building: bool,
    #[serde(default)]
    pub(super) result: Option<String>,
    /// Start, in milliseconds since the epoch.
    #[serde(default)]
    pub(super) timestamp: i64,
    /// Milliseconds, or -1 when Jenkins has no history to estimate from.
    #[serde(default, rename = "estimatedDuration")]
    pub(super) estimated_duration: i64,
}

impl BuildJson {
    /// Percent done by Jenkins' estimate, at most 95 until the build has ended.
    pub(super) fn progress(&self) -> Option<u8> {
        if self.estimated_duration <= 0 || self.timestamp <= 0 {
            return None;
        }
        let now = SystemTime::now().duration_since(UNIX_EPOCH).ok()?;
        let now = i64::try_from(now.as_millis()).ok()?;
        let elapsed = now.saturating_sub(self.timestamp).max(0);
        let percent = elapsed.saturating_mul(100) / self.estimated_duration;
        u8::try_from(percent.clamp(0, 95)).ok()
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct CrumbJson {
    pub(super) crumb: String,
    pub(super) crumb_request_field: String,
}

pub(super) struct Console {
    pub(super) text: Vec<u8>,
    pub(super) next: u64,
    pub(super) more: bool,
}
