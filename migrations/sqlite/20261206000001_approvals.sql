-- Production clusters: deleting one, restoring a backup over it, or taking the mark off needs
-- a second person's approval (two-person rule).
ALTER TABLE clusters ADD COLUMN production BOOLEAN NOT NULL DEFAULT FALSE;

-- A request for such an action, and its fate. 'pending' past expires_at is expired (read so;
-- never written). The action runs when a second operator or tenant admin approves it:
-- state 'approved' with the operation it queued, or 'failed' with why it could not run.
CREATE TABLE approvals (
    id                BLOB PRIMARY KEY,
    tenant_id         BLOB NOT NULL REFERENCES tenants (id),
    cluster_id        BLOB NOT NULL,
    cluster_name      TEXT NOT NULL,
    action            TEXT NOT NULL,
    -- For a restore: the backup and namespaces (JSON); '{}' otherwise.
    detail            TEXT NOT NULL,
    reason            TEXT NOT NULL,
    requested_by      TEXT NOT NULL,
    requested_by_id   BLOB NOT NULL,
    requested_at      TEXT NOT NULL,
    expires_at        TEXT NOT NULL,
    state             TEXT NOT NULL,
    decided_by        TEXT,
    decided_at        TEXT,
    note              TEXT,
    operation_id      BLOB
);
CREATE INDEX approvals_by_cluster ON approvals (cluster_id, requested_at);
CREATE INDEX approvals_pending ON approvals (tenant_id, requested_at) WHERE state = 'pending';
