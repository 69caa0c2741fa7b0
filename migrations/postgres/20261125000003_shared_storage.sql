-- What each cluster keeps in a store KQueen shares between clusters (a hosted control
-- plane's etcd key space): measured at every inventory sync.
CREATE TABLE shared_storage_usage (
    cluster_id  UUID PRIMARY KEY NOT NULL REFERENCES clusters (id) ON DELETE CASCADE,
    keys        BIGINT NOT NULL,
    bytes       BIGINT NOT NULL,
    writable    BOOLEAN NOT NULL,
    measured_at TIMESTAMPTZ NOT NULL
);
