-- Clusters: providers and templates, clusters, durable operations, timelines, per-user access.
-- Same schema as migrations/sqlite, with native UUID and TIMESTAMPTZ types (JSON documents stay TEXT: one query text serves both).

-- Per-tenant quota; NULL means unlimited / no time-to-live.
ALTER TABLE tenants ADD COLUMN max_clusters INTEGER;
ALTER TABLE tenants ADD COLUMN max_nodes INTEGER;
ALTER TABLE tenants ADD COLUMN cluster_ttl_hours INTEGER;

-- A provisioner backend with its settings. Secret settings live in the vault
-- (scope 'global', name 'provider/<id>/<field>'); `config` holds only the others.
CREATE TABLE providers (
    id          UUID PRIMARY KEY NOT NULL,
    name        TEXT NOT NULL UNIQUE,
    kind        TEXT NOT NULL CHECK (kind IN ('import', 'command', 'jenkins')),
    description TEXT NOT NULL DEFAULT '',
    config      TEXT NOT NULL,
    secret_fields TEXT NOT NULL,
    disabled    BOOLEAN NOT NULL DEFAULT FALSE,
    created_at  TIMESTAMPTZ NOT NULL,
    updated_at  TIMESTAMPTZ NOT NULL
);

-- What tenants may request from a provider: the provisioner's cluster schema narrowed by
-- `overrides`. No rows in template_tenants: offered to every tenant.
CREATE TABLE templates (
    id              UUID PRIMARY KEY NOT NULL,
    provider_id     UUID NOT NULL REFERENCES providers (id),
    name            TEXT NOT NULL UNIQUE,
    description     TEXT NOT NULL DEFAULT '',
    overrides       TEXT NOT NULL,
    timeout_minutes INTEGER NOT NULL,
    disabled        BOOLEAN NOT NULL DEFAULT FALSE,
    created_at      TIMESTAMPTZ NOT NULL,
    updated_at      TIMESTAMPTZ NOT NULL
);
CREATE INDEX templates_by_provider ON templates (provider_id);

CREATE TABLE template_tenants (
    template_id UUID NOT NULL REFERENCES templates (id) ON DELETE CASCADE,
    tenant_id   UUID NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    PRIMARY KEY (template_id, tenant_id)
);

CREATE TABLE clusters (
    id                 UUID PRIMARY KEY NOT NULL,
    tenant_id          UUID NOT NULL REFERENCES tenants (id),
    name               TEXT NOT NULL,
    template_id        UUID REFERENCES templates (id) ON DELETE SET NULL,
    template_name      TEXT NOT NULL,
    provider_id        UUID NOT NULL REFERENCES providers (id),
    provider_kind      TEXT NOT NULL,
    state              TEXT NOT NULL CHECK (state IN
                         ('provisioning', 'ready', 'updating', 'deleting', 'error', 'unknown')),
    parameters         TEXT NOT NULL,
    node_count         INTEGER NOT NULL DEFAULT 0,
    endpoint           TEXT,
    provisioner_state  TEXT NOT NULL DEFAULT 'null',
    error              TEXT,
    expires_at         TIMESTAMPTZ,
    created_by         TEXT NOT NULL,
    created_at         TIMESTAMPTZ NOT NULL,
    updated_at         TIMESTAMPTZ NOT NULL,
    deleted_at         TIMESTAMPTZ
);
-- Names are unique among a tenant's live clusters; a deleted name can be reused.
CREATE UNIQUE INDEX clusters_name_per_tenant ON clusters (tenant_id, name) WHERE deleted_at IS NULL;
CREATE INDEX clusters_by_tenant ON clusters (tenant_id, deleted_at, name);
CREATE INDEX clusters_live_by_name ON clusters (deleted_at, name);
CREATE INDEX clusters_by_expiry ON clusters (expires_at) WHERE deleted_at IS NULL;

-- Durable operations, executed by background workers that hold a lease.
CREATE TABLE operations (
    id               UUID PRIMARY KEY NOT NULL,
    cluster_id       UUID NOT NULL REFERENCES clusters (id),
    kind             TEXT NOT NULL CHECK (kind IN ('create', 'delete', 'scale', 'upgrade')),
    state            TEXT NOT NULL CHECK (state IN ('pending', 'running', 'succeeded', 'failed')),
    step             TEXT NOT NULL DEFAULT '',
    progress         INTEGER NOT NULL DEFAULT 0,
    attempts         INTEGER NOT NULL DEFAULT 0,
    error            TEXT,
    target           TEXT,
    checkpoint       TEXT NOT NULL DEFAULT 'null',
    requested_by     TEXT NOT NULL,
    created_at       TIMESTAMPTZ NOT NULL,
    updated_at       TIMESTAMPTZ NOT NULL,
    started_at       TIMESTAMPTZ,
    finished_at      TIMESTAMPTZ,
    deadline_at      TIMESTAMPTZ NOT NULL,
    run_after        TIMESTAMPTZ NOT NULL,
    lease_owner      TEXT,
    lease_expires_at TIMESTAMPTZ
);
CREATE INDEX operations_runnable ON operations (state, run_after);
CREATE INDEX operations_by_cluster ON operations (cluster_id, created_at);

-- The cluster's timeline: steps, output lines, state changes.
CREATE TABLE cluster_events (
    id           UUID PRIMARY KEY NOT NULL,
    cluster_id   UUID NOT NULL REFERENCES clusters (id),
    operation_id UUID,
    occurred_at  TIMESTAMPTZ NOT NULL,
    kind         TEXT NOT NULL CHECK (kind IN ('step', 'log', 'state', 'error')),
    message      TEXT NOT NULL
);
CREATE INDEX cluster_events_by_cluster ON cluster_events (cluster_id, occurred_at, id);

-- Per-user ServiceAccounts KQueen created in clusters (for "revoke access").
CREATE TABLE cluster_access (
    cluster_id      UUID NOT NULL REFERENCES clusters (id),
    user_id         UUID NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    service_account TEXT NOT NULL,
    role            TEXT NOT NULL,
    last_issued_at  TIMESTAMPTZ NOT NULL,
    expires_at      TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (cluster_id, user_id)
);
