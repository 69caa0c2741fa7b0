-- Autoscaling of a cluster's worker nodes, one row per cluster that has it on: the bounds and
-- the scale-down rule, and what the last turn left for the next (which nodes were underused
-- since when, as JSON; the last decision's reason, so that the timeline gets news only).
CREATE TABLE autoscaling (
    cluster_id             UUID PRIMARY KEY REFERENCES clusters (id),
    tenant_id              UUID NOT NULL REFERENCES tenants (id),
    min_nodes              BIGINT NOT NULL CHECK (min_nodes BETWEEN 1 AND 1000),
    max_nodes              BIGINT NOT NULL CHECK (max_nodes BETWEEN 1 AND 1000),
    scale_down_utilisation BIGINT NOT NULL CHECK (scale_down_utilisation BETWEEN 1 AND 100),
    scale_down_after_secs  BIGINT NOT NULL CHECK (scale_down_after_secs BETWEEN 60 AND 86400),
    underused              TEXT NOT NULL DEFAULT '{}',
    last_reason            TEXT,
    last_turn_at           TIMESTAMPTZ,
    updated_by             TEXT NOT NULL,
    updated_at             TIMESTAMPTZ NOT NULL
);

-- A cluster's node counts over time, one row each time a turn saw them change (the chart):
-- what KQueen asked the provider for, the worker nodes there and how many of them were Ready,
-- and the pods the scheduler could place nowhere.
CREATE TABLE autoscaling_samples (
    cluster_id   UUID NOT NULL REFERENCES clusters (id),
    taken_at     TIMESTAMPTZ NOT NULL,
    wanted       BIGINT NOT NULL,
    nodes        BIGINT NOT NULL,
    ready        BIGINT NOT NULL,
    pending_pods BIGINT NOT NULL,
    PRIMARY KEY (cluster_id, taken_at)
);
