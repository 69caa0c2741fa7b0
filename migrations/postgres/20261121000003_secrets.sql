-- Sealed secrets of the credential vault's SQL backend (see migrations/sqlite).
CREATE TABLE secrets (
    scope      TEXT NOT NULL,
    name       TEXT NOT NULL,
    sealed     TEXT NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (scope, name)
);
