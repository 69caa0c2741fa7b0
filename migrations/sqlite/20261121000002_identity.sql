-- Identity and tenancy: local passwords, memberships with roles, API tokens, sessions.
ALTER TABLE users ADD COLUMN password_hash TEXT;
ALTER TABLE users ADD COLUMN disabled BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE users ADD COLUMN last_login_at TEXT;

-- source: 'oidc' rows are recomputed from the identity provider's groups at every login;
-- 'manual' rows are managed by operators and tenant admins in the portal.
CREATE TABLE memberships (
    tenant_id  BLOB NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    user_id    BLOB NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    role       TEXT NOT NULL CHECK (role IN ('member', 'admin')),
    source     TEXT NOT NULL CHECK (source IN ('oidc', 'manual')),
    created_at TEXT NOT NULL,
    PRIMARY KEY (tenant_id, user_id)
);
CREATE INDEX memberships_by_user ON memberships (user_id);

-- Only a SHA-256 of each token is kept; `prefix` identifies it in lists.
CREATE TABLE api_tokens (
    id           BLOB PRIMARY KEY NOT NULL,
    user_id      BLOB NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name         TEXT NOT NULL,
    prefix       TEXT NOT NULL,
    token_hash   TEXT NOT NULL UNIQUE,
    created_at   TEXT NOT NULL,
    expires_at   TEXT NOT NULL,
    last_used_at TEXT,
    revoked_at   TEXT
);
CREATE INDEX api_tokens_by_user ON api_tokens (user_id, created_at);

CREATE TABLE sessions (
    id         TEXT PRIMARY KEY NOT NULL,
    data       TEXT NOT NULL,
    expires_at TEXT NOT NULL
);
CREATE INDEX sessions_by_expiry ON sessions (expires_at);

CREATE INDEX audit_events_by_actor ON audit_events (actor, occurred_at DESC);
