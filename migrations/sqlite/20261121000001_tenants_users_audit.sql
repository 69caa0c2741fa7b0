-- Tenants, users and the audit trail. Ids are UUIDs (16-byte BLOBs here), times are UTC
-- RFC 3339 text with microseconds, which sorts chronologically.
CREATE TABLE tenants (
    id           BLOB PRIMARY KEY NOT NULL,
    slug         TEXT NOT NULL UNIQUE,
    display_name TEXT NOT NULL,
    created_at   TEXT NOT NULL
);

CREATE TABLE users (
    id           BLOB PRIMARY KEY NOT NULL,
    subject      TEXT NOT NULL UNIQUE,
    username     TEXT NOT NULL UNIQUE,
    email        TEXT,
    display_name TEXT,
    is_operator  BOOLEAN NOT NULL DEFAULT FALSE,
    created_at   TEXT NOT NULL
);

-- No foreign key to tenants on purpose: the trail outlives what it describes.
CREATE TABLE audit_events (
    id          BLOB PRIMARY KEY NOT NULL,
    occurred_at TEXT NOT NULL,
    actor       TEXT NOT NULL,
    tenant_id   BLOB,
    action      TEXT NOT NULL,
    target      TEXT NOT NULL,
    outcome     TEXT NOT NULL CHECK (outcome IN ('success', 'denied', 'failure')),
    source_ip   TEXT,
    detail      TEXT
);
CREATE INDEX audit_events_by_time ON audit_events (occurred_at DESC, id DESC);
CREATE INDEX audit_events_by_tenant ON audit_events (tenant_id, occurred_at DESC);
CREATE INDEX audit_events_by_action ON audit_events (action, occurred_at DESC);
