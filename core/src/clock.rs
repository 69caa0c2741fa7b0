//! The one clock of the domain. Times are truncated to microseconds, the precision every
//! database backend keeps, so that a value read back equals the value written.

use chrono::{DateTime, SubsecRound, Utc};

/// The current time, at microsecond precision.
pub fn now() -> DateTime<Utc> {
    Utc::now().trunc_subsecs(6)
}
