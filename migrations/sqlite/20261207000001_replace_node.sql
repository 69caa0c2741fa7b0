-- Replacing a dead node is a durable operation of a new kind. SQLite cannot change a CHECK
-- constraint, so the operations table is rebuilt with its rows (nothing references it with a
-- foreign key).
CREATE TABLE operations_copy AS SELECT * FROM operations;
DROP TABLE operations;

CREATE TABLE operations (
    id               BLOB PRIMARY KEY NOT NULL,
    cluster_id       BLOB NOT NULL REFERENCES clusters (id),
    kind             TEXT NOT NULL CHECK (kind IN ('create', 'delete', 'scale', 'upgrade', 'replace-node',
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
