-- One-time set-password links for local accounts created in the portal (see migrations/sqlite
-- for the same schema on SQLite). Only a SHA-256 of the link's secret is kept.
CREATE TABLE user_invites (
    id         UUID PRIMARY KEY,
    user_id    UUID NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    token_hash TEXT NOT NULL UNIQUE,
    created_by TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL,
    used_at    TIMESTAMPTZ
);
CREATE INDEX user_invites_by_user ON user_invites (user_id);
