-- Providers and templates are read by every cluster answer and page (its capabilities, the
-- template's parameters and tenant admins' access): the store keeps them in memory while the
-- list version is unchanged (core/src/store/sql/catalog.rs), so their writes bump it too.
-- They change only when an operator edits the catalog.
CREATE TRIGGER providers_insert_bumps_list_version AFTER INSERT ON providers
BEGIN UPDATE list_version SET version = version + 1; END;
CREATE TRIGGER providers_update_bumps_list_version AFTER UPDATE ON providers
BEGIN UPDATE list_version SET version = version + 1; END;
CREATE TRIGGER providers_delete_bumps_list_version AFTER DELETE ON providers
BEGIN UPDATE list_version SET version = version + 1; END;

CREATE TRIGGER templates_insert_bumps_list_version AFTER INSERT ON templates
BEGIN UPDATE list_version SET version = version + 1; END;
CREATE TRIGGER templates_update_bumps_list_version AFTER UPDATE ON templates
BEGIN UPDATE list_version SET version = version + 1; END;
CREATE TRIGGER templates_delete_bumps_list_version AFTER DELETE ON templates
BEGIN UPDATE list_version SET version = version + 1; END;

CREATE TRIGGER template_tenants_insert_bumps_list_version AFTER INSERT ON template_tenants
BEGIN UPDATE list_version SET version = version + 1; END;
CREATE TRIGGER template_tenants_update_bumps_list_version AFTER UPDATE ON template_tenants
BEGIN UPDATE list_version SET version = version + 1; END;
CREATE TRIGGER template_tenants_delete_bumps_list_version AFTER DELETE ON template_tenants
BEGIN UPDATE list_version SET version = version + 1; END;
