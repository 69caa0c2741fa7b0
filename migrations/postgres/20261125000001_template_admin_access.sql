-- What tenant admins' personal kubeconfigs may do in clusters made from a template:
-- 'namespaced' (admin in the tenant's namespaces) or 'cluster-admin' (the whole cluster).
ALTER TABLE templates ADD COLUMN admin_access TEXT NOT NULL DEFAULT 'namespaced';
