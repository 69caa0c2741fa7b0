-- What each cluster keeps in a store KQueen shares between clusters (a hosted control
-- plane's etcd key space): measured at every inventory sync.
CREATE TABLE shared_storage_usage (
    cluster_id  BLOB PRIMARY KEY NOT NULL REFERENCES clusters (id) ON DELETE CASCADE,
    keys        INTEGER NOT NULL,
    bytes       INTEGER NOT NULL,
    writable    BOOLEAN NOT NULL,
    measured_at TEXT NOT NULL
);
