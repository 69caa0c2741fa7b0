-- Backups of what a cluster holds, and their restores. Taking one and restoring one are
-- durable operations of new kinds.
ALTER TABLE operations DROP CONSTRAINT operations_kind_check;
ALTER TABLE operations ADD CONSTRAINT operations_kind_check
    CHECK (kind IN ('create', 'delete', 'scale', 'upgrade',
                    'app-deploy', 'app-delete', 'addon-apply', 'addon-remove', 'backup', 'restore'));

-- One backup of one cluster. `summary` is what it holds (JSON, the archive's backup.yaml);
-- the archive itself is a file (the data directory's backups/), its Secrets, when asked
-- for, are sealed in the vault.
CREATE TABLE backups (
    id              UUID PRIMARY KEY NOT NULL,
    tenant_id       UUID NOT NULL REFERENCES tenants (id),
    cluster_id      UUID NOT NULL REFERENCES clusters (id),
    state           TEXT NOT NULL CHECK (state IN ('running', 'succeeded', 'failed')),
    include_secrets BOOLEAN NOT NULL,
    error           TEXT,
    summary         TEXT,
    size_bytes      BIGINT,
    requested_by    TEXT NOT NULL,
    created_at      TIMESTAMPTZ NOT NULL,
    finished_at     TIMESTAMPTZ
);
CREATE INDEX backups_by_cluster ON backups (cluster_id, created_at);

-- One restore of a backup into a cluster (the backup's own or another). `namespaces` (JSON)
-- limits it to those namespaces (empty: everything); `report` (JSON) says what became of
-- each object.
CREATE TABLE restores (
    id                UUID PRIMARY KEY NOT NULL,
    tenant_id         UUID NOT NULL REFERENCES tenants (id),
    cluster_id        UUID NOT NULL REFERENCES clusters (id),
    backup_id         UUID NOT NULL REFERENCES backups (id),
    namespaces        TEXT NOT NULL DEFAULT '[]',
    state             TEXT NOT NULL CHECK (state IN ('running', 'succeeded', 'failed')),
    error             TEXT,
    report            TEXT,
    requested_by      TEXT NOT NULL,
    created_at        TIMESTAMPTZ NOT NULL,
    finished_at       TIMESTAMPTZ
);
CREATE INDEX restores_by_cluster ON restores (cluster_id, created_at);

-- Scheduled backups, one schedule per cluster: every `every_hours`, keeping the newest
-- `keep` backups the schedule took (backups taken by hand are kept until removed).
CREATE TABLE backup_schedules (
    cluster_id      UUID PRIMARY KEY NOT NULL REFERENCES clusters (id),
    tenant_id       UUID NOT NULL REFERENCES tenants (id),
    every_hours     INTEGER NOT NULL CHECK (every_hours BETWEEN 1 AND 720),
    keep            INTEGER NOT NULL CHECK (keep BETWEEN 1 AND 100),
    include_secrets BOOLEAN NOT NULL,
    next_at         TIMESTAMPTZ NOT NULL,
    updated_by      TEXT NOT NULL,
    updated_at      TIMESTAMPTZ NOT NULL
);
CREATE INDEX backup_schedules_due ON backup_schedules (next_at);
