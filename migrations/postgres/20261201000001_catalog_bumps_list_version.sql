-- Providers and templates are read by every cluster answer and page (its capabilities, the
-- template's parameters and tenant admins' access): the store keeps them in memory while the
-- list version is unchanged (core/src/store/sql/catalog.rs), so their writes bump it too.
-- They change only when an operator edits the catalog.
CREATE CONSTRAINT TRIGGER providers_bump_list_version
    AFTER INSERT OR UPDATE OR DELETE ON providers
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION bump_list_version();
CREATE CONSTRAINT TRIGGER templates_bump_list_version
    AFTER INSERT OR UPDATE OR DELETE ON templates
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION bump_list_version();
CREATE CONSTRAINT TRIGGER template_tenants_bump_list_version
    AFTER INSERT OR UPDATE OR DELETE ON template_tenants
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION bump_list_version();
