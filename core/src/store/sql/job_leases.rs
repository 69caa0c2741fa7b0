//! Leases of periodic jobs: one row per job naming the replica that runs it until when.

use chrono::{DateTime, Utc};

use super::{Pool, SqlStore};
use crate::Result;

impl SqlStore {
    /// Takes or renews `job`'s lease for `owner` until `until`: true when `owner` holds it
    /// now (it held it already, or nobody did, or the holder's lease had expired at `now`).
    /// One statement, so two replicas asking at once cannot both win.
    pub(super) async fn lease_job(
        &self,
        job: &str,
        owner: &str,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<bool> {
        const SQL: &str = "INSERT INTO job_leases (job, owner, expires_at) VALUES ($1, $2, $4) \
             ON CONFLICT (job) DO UPDATE SET owner = excluded.owner, \
             expires_at = excluded.expires_at \
             WHERE job_leases.owner = excluded.owner OR job_leases.expires_at < $3 \
             RETURNING owner";
        let row: Option<(String,)> = on_pool!(self, p => {
            sqlx::query_as(SQL)
                .bind(job)
                .bind(owner)
                .bind(now)
                .bind(until)
                .fetch_optional(p)
                .await?
        });
        Ok(row.is_some())
    }

    /// Gives up every lease `owner` holds (a replica stopping), so that another takes its
    /// jobs at their next turn rather than after the leases run out.
    pub(super) async fn release_jobs(&self, owner: &str) -> Result<()> {
        const SQL: &str = "DELETE FROM job_leases WHERE owner = $1";
        on_pool!(self, p => {
            sqlx::query(SQL).bind(owner).execute(p).await?;
        });
        Ok(())
    }
}
