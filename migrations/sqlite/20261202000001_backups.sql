-- Backups of what a cluster holds, and their restores. Taking one and restoring one are
-- durable operations of new kinds; SQLite
-- cannot change a CHECK constraint, so the operations table is rebuilt with its rows
-- (nothing references it with a foreign key).
CREATE TABLE operations_copy AS SELECT * FROM operations;
DROP TABLE operations;

CREATE TABLE operations (
    id               BLOB PRIMARY KEY NOT NULL,
    cluster_id       BLOB NOT NULL REFERENCES clusters (id),
    kind             TEXT NOT NULL CHECK (kind IN ('create', 'delete', 'scale', 'upgrade',
                       'app-deploy', 'app-delete', 'addon-apply', 'addon-remove', 'backup', 'restore')),
    state            TEXT NOT NULL CHECK (state IN ('pending', 'running', 'succeeded', 'failed')),
    step             TEXT NOT NULL DEFAULT '',
    progress         INTEGER NOT NULL DEFAULT 0,
    attempts         INTEGER NOT NULL DEFAULT 0,
    error            TEXT,
    target           TEXT,
    checkpoint       TEXT NOT NULL DEFAULT 'null',
    requested_by     TEXT NOT NULL,
    created_at       TEXT NOT NULL,
    updated_at       TEXT NOT NULL,
    started_at       TEXT,
    finished_at      TEXT,
    deadline_at      TEXT NOT NULL,
    run_after        TEXT NOT NULL,
    lease_owner      TEXT,
    lease_expires_at TEXT
);
INSERT INTO operations SELECT * FROM operations_copy;
DROP TABLE operations_copy;
CREATE INDEX operations_runnable ON operations (state, run_after);
CREATE INDEX operations_by_cluster ON operations (cluster_id, created_at);

-- One backup of one cluster. `summary` is what it holds (JSON, the archive's backup.yaml);
-- the archive itself is a file (the data directory's backups/), its Secrets, when asked
-- for, are sealed in the vault.
CREATE TABLE backups (
    id              BLOB PRIMARY KEY NOT NULL,
    tenant_id       BLOB NOT NULL REFERENCES tenants (id),
    cluster_id      BLOB NOT NULL REFERENCES clusters (id),
    state           TEXT NOT NULL CHECK (state IN ('running', 'succeeded', 'failed')),
    include_secrets BOOLEAN NOT NULL,
    error           TEXT,
    summary         TEXT,
    size_bytes      INTEGER,
    requested_by    TEXT NOT NULL,
    created_at      TEXT NOT NULL,
    finished_at     TEXT
);
CREATE INDEX backups_by_cluster ON backups (cluster_id, created_at);

-- One restore of a backup into a cluster (the backup's own or another). `namespaces` (JSON)
-- limits it to those namespaces (empty: everything); `report` (JSON) says what became of
-- each object.
CREATE TABLE restores (
    id                BLOB PRIMARY KEY NOT NULL,
    tenant_id         BLOB NOT NULL REFERENCES tenants (id),
    cluster_id        BLOB NOT NULL REFERENCES clusters (id),
    backup_id         BLOB NOT NULL REFERENCES backups (id),
    namespaces        TEXT NOT NULL DEFAULT '[]',
    state             TEXT NOT NULL CHECK (state IN ('running', 'succeeded', 'failed')),
    error             TEXT,
    report            TEXT,
    requested_by      TEXT NOT NULL,
    created_at        TEXT NOT NULL,
    finished_at       TEXT
);
CREATE INDEX restores_by_cluster ON restores (cluster_id, created_at);

-- Scheduled backups, one schedule per cluster: every `every_hours`, keeping the newest
-- `keep` backups the schedule took (backups taken by hand are kept until removed).
CREATE TABLE backup_schedules (
    cluster_id      BLOB PRIMARY KEY NOT NULL REFERENCES clusters (id),
    tenant_id       BLOB NOT NULL REFERENCES tenants (id),
    every_hours     INTEGER NOT NULL CHECK (every_hours BETWEEN 1 AND 720),
    keep            INTEGER NOT NULL CHECK (keep BETWEEN 1 AND 100),
    include_secrets BOOLEAN NOT NULL,
    next_at         TEXT NOT NULL,
    updated_by      TEXT NOT NULL,
    updated_at      TEXT NOT NULL
);
CREATE INDEX backup_schedules_due ON backup_schedules (next_at);
