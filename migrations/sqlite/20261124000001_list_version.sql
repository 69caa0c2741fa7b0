-- The version of what the list pages read (clusters, tenants, memberships): bumped in the
-- same transaction as every write to those tables, so that a page kept in memory with the
-- version it was read under is known to be current when the version is unchanged
-- (core/src/store/sql/list_cache.rs). SQLite triggers run per row; writers are serialised
-- by the database itself.
CREATE TABLE list_version (
    id      INTEGER PRIMARY KEY CHECK (id = 1),
    version INTEGER NOT NULL
);
INSERT INTO list_version (id, version) VALUES (1, 0);

CREATE TRIGGER clusters_insert_bumps_list_version AFTER INSERT ON clusters
BEGIN UPDATE list_version SET version = version + 1; END;
CREATE TRIGGER clusters_update_bumps_list_version AFTER UPDATE ON clusters
BEGIN UPDATE list_version SET version = version + 1; END;
CREATE TRIGGER clusters_delete_bumps_list_version AFTER DELETE ON clusters
BEGIN UPDATE list_version SET version = version + 1; END;

CREATE TRIGGER tenants_insert_bumps_list_version AFTER INSERT ON tenants
BEGIN UPDATE list_version SET version = version + 1; END;
CREATE TRIGGER tenants_update_bumps_list_version AFTER UPDATE ON tenants
BEGIN UPDATE list_version SET version = version + 1; END;
CREATE TRIGGER tenants_delete_bumps_list_version AFTER DELETE ON tenants
BEGIN UPDATE list_version SET version = version + 1; END;

CREATE TRIGGER memberships_insert_bumps_list_version AFTER INSERT ON memberships
BEGIN UPDATE list_version SET version = version + 1; END;
CREATE TRIGGER memberships_update_bumps_list_version AFTER UPDATE ON memberships
BEGIN UPDATE list_version SET version = version + 1; END;
CREATE TRIGGER memberships_delete_bumps_list_version AFTER DELETE ON memberships
BEGIN UPDATE list_version SET version = version + 1; END;
