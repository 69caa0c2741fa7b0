-- Applications (versions deployed side by side, each in its namespace) and addons (an
-- operator-defined catalog, toggled per cluster). Their deploys and toggles are durable
-- operations of new kinds; SQLite cannot change a CHECK constraint, so the operations table
-- is rebuilt with its rows (nothing references it with a foreign key).
CREATE TABLE operations_copy AS SELECT * FROM operations;
DROP TABLE operations;

CREATE TABLE operations (
    id               BLOB PRIMARY KEY NOT NULL,
    cluster_id       BLOB NOT NULL REFERENCES clusters (id),
    kind             TEXT NOT NULL CHECK (kind IN ('create', 'delete', 'scale', 'upgrade',
                       'app-deploy', 'app-delete', 'addon-apply', 'addon-remove')),
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

-- One version of an application in one cluster. Its manifests are sealed in the vault
-- (they may hold Secrets); `objects` lists what its last deploy applied (JSON).
CREATE TABLE applications (
    id           BLOB PRIMARY KEY NOT NULL,
    tenant_id    BLOB NOT NULL REFERENCES tenants (id),
    cluster_id   BLOB NOT NULL REFERENCES clusters (id),
    name         TEXT NOT NULL,
    version      TEXT NOT NULL,
    namespace    TEXT NOT NULL,
    state        TEXT NOT NULL CHECK (state IN ('deploying', 'deployed', 'failed', 'deleting')),
    error        TEXT,
    objects      TEXT NOT NULL DEFAULT '[]',
    user_id      BLOB,
    requested_by TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL,
    deployed_at  TEXT,
    deleted_at   TEXT
);
CREATE UNIQUE INDEX applications_version ON applications (cluster_id, name, version)
    WHERE deleted_at IS NULL;
CREATE UNIQUE INDEX applications_namespace ON applications (cluster_id, namespace)
    WHERE deleted_at IS NULL;
CREATE INDEX applications_by_cluster ON applications (cluster_id, deleted_at, name, version);

-- Addons defined by operators (KQueen's built-in ones live in its code).
CREATE TABLE addon_catalog (
    id          BLOB PRIMARY KEY NOT NULL,
    name        TEXT NOT NULL,
    version     TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    namespace   TEXT NOT NULL,
    manifests   TEXT NOT NULL,
    parameters  TEXT NOT NULL DEFAULT '[]',
    health      TEXT NOT NULL DEFAULT '{}',
    requires    TEXT NOT NULL DEFAULT '[]',
    detect      TEXT NOT NULL DEFAULT '[]',
    created_by  TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    UNIQUE (name, version)
);

-- The addons KQueen manages in a cluster.
CREATE TABLE cluster_addons (
    cluster_id   BLOB NOT NULL REFERENCES clusters (id),
    name         TEXT NOT NULL,
    version      TEXT NOT NULL,
    parameters   TEXT NOT NULL DEFAULT '{}',
    state        TEXT NOT NULL CHECK (state IN ('installing', 'installed', 'failed', 'removing')),
    error        TEXT,
    objects      TEXT NOT NULL DEFAULT '[]',
    requested_by TEXT NOT NULL,
    updated_at   TEXT NOT NULL,
    installed_at TEXT,
    PRIMARY KEY (cluster_id, name)
);
