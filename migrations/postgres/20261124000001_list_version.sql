-- The version of what the list pages read (clusters, tenants, memberships): bumped in the
-- same transaction as every write to those tables, so that a page kept in memory with the
-- version it was read under is known to be current when the version is unchanged
-- (core/src/store/sql/list_cache.rs).
--
-- One row, so every writing transaction locks it: the triggers are deferred to commit, once
-- per transaction, when the transaction has taken every other lock it needs. A transaction
-- holding this row therefore waits for nothing else, and the row cannot be part of a
-- deadlock; it only orders the commits of transactions that change these tables.
CREATE TABLE list_version (
    id      INTEGER PRIMARY KEY CHECK (id = 1),
    version BIGINT NOT NULL
);
INSERT INTO list_version (id, version) VALUES (1, 0);

CREATE FUNCTION bump_list_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- Once per transaction: the flag is transaction-local (set_config(..., true)).
    IF current_setting('kqueen.list_version_bumped', true) IS DISTINCT FROM 'on' THEN
        UPDATE list_version SET version = version + 1;
        PERFORM set_config('kqueen.list_version_bumped', 'on', true);
    END IF;
    RETURN NULL;
END
$$;

CREATE CONSTRAINT TRIGGER clusters_bump_list_version
    AFTER INSERT OR UPDATE OR DELETE ON clusters
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION bump_list_version();
CREATE CONSTRAINT TRIGGER tenants_bump_list_version
    AFTER INSERT OR UPDATE OR DELETE ON tenants
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION bump_list_version();
CREATE CONSTRAINT TRIGGER memberships_bump_list_version
    AFTER INSERT OR UPDATE OR DELETE ON memberships
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION bump_list_version();
