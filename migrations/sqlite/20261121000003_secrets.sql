-- Sealed secrets of the credential vault's SQL backend (kubeconfigs, provider credentials).
-- `sealed` is AEAD ciphertext bound to (scope, name); plaintext never reaches the database.
CREATE TABLE secrets (
    scope      TEXT NOT NULL,
    name       TEXT NOT NULL,
    sealed     TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (scope, name)
);
