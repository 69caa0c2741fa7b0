-- Clusters: providers and templates, clusters, durable operations, timelines, per-user access.
-- JSON documents are TEXT; times are RFC 3339 text (see the first migration).

-- Per-tenant quota; NULL means unlimited / no time-to-live.
ALTER TABLE tenants ADD COLUMN max_clusters INTEGER;
ALTER TABLE tenants ADD COLUMN max_nodes INTEGER;
ALTER TABLE tenants ADD COLUMN cluster_ttl_hours INTEGER;

-- A provisioner backend with its settings. Secret settings live in the vault
-- (scope 'global', name 'provider/<id>/<field>'); `config` holds only the others.
CREATE TABLE providers (
    id          BLOB PRIMARY KEY NOT NULL,
    name        TEXT NOT NULL UNIQUE,
    kind        TEXT NOT NULL CHECK (kind IN ('import', 'command', 'jenkins')),
    description TEXT NOT NULL DEFAULT '',
    config      TEXT NOT NULL,
    secret_fields TEXT NOT NULL,
    disabled    BOOLEAN NOT NULL DEFAULT FALSE,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);

-- What tenants may request from a provider: the provisioner's cluster schema narrowed by
-- `overrides`. No rows in template_tenants: offered to every tenant.
CREATE TABLE templates (
    id              BLOB PRIMARY KEY NOT NULL,
    provider_id     BLOB NOT NULL REFERENCES providers (id),
    name            TEXT NOT NULL UNIQUE,
    description     TEXT NOT NULL DEFAULT '',
    overrides       TEXT NOT NULL,
    timeout_minutes INTEGER NOT NULL,
    disabled        BOOLEAN NOT NULL DEFAULT FALSE,
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL
);
CREATE INDEX templates_by_provider ON templates (provider_id);

CREATE TABLE template_tenants (
    template_id BLOB NOT NULL REFERENCES templates (id) ON DELETE CASCADE,
    tenant_id   BLOB NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    PRIMARY KEY (template_id, tenant_id)
);

CREATE TABLE clusters (
    id                 BLOB PRIMARY KEY NOT NULL,
    tenant_id          BLOB NOT NULL REFERENCES tenants (id),
    name               TEXT NOT NULL,
    template_id        BLOB REFERENCES templates (id) ON DELETE SET NULL,
    template_name      TEXT NOT NULL,
    provider_id        BLOB NOT NULL REFERENCES providers (id),
    provider_kind      TEXT NOT NULL,
    state              TEXT NOT NULL CHECK (state IN
                         ('provisioning', 'ready', 'updating', 'deleting', 'error', 'unknown')),
    parameters         TEXT NOT NULL,
    node_count         INTEGER NOT NULL DEFAULT 0,
    endpoint           TEXT,
    provisioner_state  TEXT NOT NULL DEFAULT 'null',
    error              TEXT,
    expires_at         TEXT,
    created_by         TEXT NOT NULL,
    created_at         TEXT NOT NULL,
    updated_at         TEXT NOT NULL,
    deleted_at         TEXT
);
-- Names are unique among a tenant's live clusters; a deleted name can be reused.
CREATE UNIQUE INDEX clusters_name_per_tenant ON clusters (tenant_id, name) WHERE deleted_at IS NULL;
CREATE INDEX clusters_by_tenant ON clusters (tenant_id, deleted_at, name);
CREATE INDEX clusters_live_by_name ON clusters (deleted_at, name);
CREATE INDEX clusters_by_expiry ON clusters (expires_at) WHERE deleted_at IS NULL;

-- Durable operations, executed by background workers that hold a lease.
CREATE TABLE operations (
    id               BLOB PRIMARY KEY NOT NULL,
    cluster_id       BLOB NOT NULL REFERENCES clusters (id),
    kind             TEXT NOT NULL CHECK (kind IN ('create', 'delete', 'scale', 'upgrade')),
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
CREATE INDEX operations_runnable ON operations (state, run_after);
CREATE INDEX operations_by_cluster ON operations (cluster_id, created_at);

-- The cluster's timeline: steps, output lines, state changes.
CREATE TABLE cluster_events (
    id           BLOB PRIMARY KEY NOT NULL,
    cluster_id   BLOB NOT NULL REFERENCES clusters (id),
    operation_id BLOB,
    occurred_at  TEXT NOT NULL,
    kind         TEXT NOT NULL CHECK (kind IN ('step', 'log', 'state', 'error')),
    message      TEXT NOT NULL
);
CREATE INDEX cluster_events_by_cluster ON cluster_events (cluster_id, occurred_at, id);

-- Per-user ServiceAccounts KQueen created in clusters (for "revoke access").
CREATE TABLE cluster_access (
    cluster_id      BLOB NOT NULL REFERENCES clusters (id),
    user_id         BLOB NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    service_account TEXT NOT NULL,
    role            TEXT NOT NULL,
    last_issued_at  TEXT NOT NULL,
    expires_at      TEXT NOT NULL,
    PRIMARY KEY (cluster_id, user_id)
);
