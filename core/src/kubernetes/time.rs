//! Kubernetes' timestamps (`metav1.Time`) as the times KQueen keeps (UTC, chrono).

use chrono::{DateTime, Utc};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// `t` in UTC; None for an instant chrono cannot hold.
pub fn utc(t: &Time) -> Option<DateTime<Utc>> {
    let nanos = u32::try_from(t.0.subsec_nanosecond()).unwrap_or(0);
    DateTime::from_timestamp(t.0.as_second(), nanos)
}
