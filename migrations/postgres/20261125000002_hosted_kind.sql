-- The `hosted` provisioner kind: KQueen runs the control planes on a shared etcd.
ALTER TABLE providers DROP CONSTRAINT providers_kind_check;
ALTER TABLE providers ADD CONSTRAINT providers_kind_check
    CHECK (kind IN ('import', 'command', 'jenkins', 'hosted'));
