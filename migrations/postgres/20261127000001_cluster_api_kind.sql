-- The `cluster-api` provisioner kind: Cluster objects with managed topologies in a
-- management cluster.
ALTER TABLE providers DROP CONSTRAINT providers_kind_check;
ALTER TABLE providers ADD CONSTRAINT providers_kind_check
    CHECK (kind IN ('import', 'command', 'jenkins', 'hosted', 'cluster-api'));
