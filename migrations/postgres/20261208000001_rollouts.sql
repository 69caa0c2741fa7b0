-- Upgrades in waves: a target version brought to the clusters a filter picked, wave_size at a
-- time. tenant_id is the tenant a tenant admin's rollout is limited to (NULL: the fleet).
CREATE TABLE rollouts (
    id              UUID PRIMARY KEY,
    tenant_id       UUID REFERENCES tenants (id),
    target_version  TEXT NOT NULL,
    wave_size       BIGINT NOT NULL,
    -- The filter as asked for (JSON: tenant, provider, version).
    filter          TEXT NOT NULL,
    state           TEXT NOT NULL CHECK (state IN ('running', 'paused', 'completed', 'aborted')),
    -- The wave under way (0-based), and how many there are.
    wave            BIGINT NOT NULL,
    waves           BIGINT NOT NULL,
    reason          TEXT,
    created_by      TEXT NOT NULL,
    created_at      TIMESTAMPTZ NOT NULL,
    updated_at      TIMESTAMPTZ NOT NULL
);
CREATE INDEX rollouts_by_time ON rollouts (created_at);

-- The clusters of a rollout, each in its wave; names are kept as they were (a deleted
-- cluster's row stays, skipped).
CREATE TABLE rollout_clusters (
    rollout_id      UUID NOT NULL REFERENCES rollouts (id),
    cluster_id      UUID NOT NULL,
    cluster_name    TEXT NOT NULL,
    tenant_id       UUID NOT NULL,
    tenant_slug     TEXT NOT NULL,
    wave            BIGINT NOT NULL,
    position        BIGINT NOT NULL,
    from_version    TEXT NOT NULL,
    state           TEXT NOT NULL
                    CHECK (state IN ('waiting', 'upgrading', 'upgraded', 'failed', 'skipped')),
    operation_id    UUID,
    reason          TEXT,
    updated_at      TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (rollout_id, cluster_id)
);
-- A cluster's open rollouts are found by cluster.
CREATE INDEX rollout_clusters_by_cluster ON rollout_clusters (cluster_id);
