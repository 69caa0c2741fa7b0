-- Applications (versions deployed side by side, each in its namespace) and addons (an
-- operator-defined catalog, toggled per cluster). Their deploys and toggles are durable
-- operations of new kinds.
ALTER TABLE operations DROP CONSTRAINT operations_kind_check;
ALTER TABLE operations ADD CONSTRAINT operations_kind_check
    CHECK (kind IN ('create', 'delete', 'scale', 'upgrade',
                    'app-deploy', 'app-delete', 'addon-apply', 'addon-remove'));

-- One version of an application in one cluster. Its manifests are sealed in the vault
-- (they may hold Secrets); `objects` lists what its last deploy applied (JSON).
CREATE TABLE applications (
    id           UUID PRIMARY KEY NOT NULL,
    tenant_id    UUID NOT NULL REFERENCES tenants (id),
    cluster_id   UUID NOT NULL REFERENCES clusters (id),
    name         TEXT NOT NULL,
    version      TEXT NOT NULL,
    namespace    TEXT NOT NULL,
    state        TEXT NOT NULL CHECK (state IN ('deploying', 'deployed', 'failed', 'deleting')),
    error        TEXT,
    objects      TEXT NOT NULL DEFAULT '[]',
    user_id      UUID,
    requested_by TEXT NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL,
    updated_at   TIMESTAMPTZ NOT NULL,
    deployed_at  TIMESTAMPTZ,
    deleted_at   TIMESTAMPTZ
);
CREATE UNIQUE INDEX applications_version ON applications (cluster_id, name, version)
    WHERE deleted_at IS NULL;
CREATE UNIQUE INDEX applications_namespace ON applications (cluster_id, namespace)
    WHERE deleted_at IS NULL;
CREATE INDEX applications_by_cluster ON applications (cluster_id, deleted_at, name, version);

-- Addons defined by operators (KQueen's built-in ones live in its code).
CREATE TABLE addon_catalog (
    id          UUID PRIMARY KEY NOT NULL,
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
    created_at  TIMESTAMPTZ NOT NULL,
    UNIQUE (name, version)
);

-- The addons KQueen manages in a cluster.
CREATE TABLE cluster_addons (
    cluster_id   UUID NOT NULL REFERENCES clusters (id),
    name         TEXT NOT NULL,
    version      TEXT NOT NULL,
    parameters   TEXT NOT NULL DEFAULT '{}',
    state        TEXT NOT NULL CHECK (state IN ('installing', 'installed', 'failed', 'removing')),
    error        TEXT,
    objects      TEXT NOT NULL DEFAULT '[]',
    requested_by TEXT NOT NULL,
    updated_at   TIMESTAMPTZ NOT NULL,
    installed_at TIMESTAMPTZ,
    PRIMARY KEY (cluster_id, name)
);
