-- The `cluster-api` provisioner kind: Cluster objects in a management cluster.
-- SQLite cannot change a CHECK constraint, so the providers table is rebuilt with its rows.
-- Templates and clusters reference it: with the foreign keys deferred, dropping the table
-- leaves them dangling only until the same rows are back, before the commit checks.
PRAGMA defer_foreign_keys = ON;

CREATE TABLE providers_copy AS SELECT * FROM providers;
DROP TABLE providers;

CREATE TABLE providers (
    id          BLOB PRIMARY KEY NOT NULL,
    name        TEXT NOT NULL UNIQUE,
    kind        TEXT NOT NULL CHECK (kind IN ('import', 'command', 'jenkins', 'hosted', 'cluster-api')),
    description TEXT NOT NULL DEFAULT '',
    config      TEXT NOT NULL,
    secret_fields TEXT NOT NULL,
    disabled    BOOLEAN NOT NULL DEFAULT FALSE,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);

INSERT INTO providers (id, name, kind, description, config, secret_fields, disabled,
                       created_at, updated_at)
SELECT id, name, kind, description, config, secret_fields, disabled, created_at, updated_at
FROM providers_copy;

DROP TABLE providers_copy;
