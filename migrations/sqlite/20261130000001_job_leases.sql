-- Periodic work (inventory syncs, the access and time-to-live sweeps, session purges,
-- planner statistics) runs on one replica at a time: the replica holding a job's lease runs
-- it and renews the lease each time; another replica takes the lease once it has expired.
CREATE TABLE job_leases (
    job        TEXT PRIMARY KEY NOT NULL,
    owner      TEXT NOT NULL,
    expires_at TEXT NOT NULL
);
