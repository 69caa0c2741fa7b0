-- Per-tenant quota of bytes kept in storage shared between clusters (hosted control planes'
-- etcd key spaces); NULL means unlimited. Over it, the tenant's clusters become read-only there.
ALTER TABLE tenants ADD COLUMN max_shared_storage_bytes INTEGER;
