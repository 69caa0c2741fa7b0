-- One-time set-password links for local accounts created in the portal (invitations). Only a
-- SHA-256 of the link's secret is kept; a link works once (used_at), until expires_at.
-- created_by: the operator's username, as the audit trail names them.
CREATE TABLE user_invites (
    id         BLOB PRIMARY KEY NOT NULL,
    user_id    BLOB NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    token_hash TEXT NOT NULL UNIQUE,
    created_by TEXT NOT NULL,
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    used_at    TEXT
);
CREATE INDEX user_invites_by_user ON user_invites (user_id);
