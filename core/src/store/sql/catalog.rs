//! Providers and templates. One provider or template by id, read by every cluster answer
//! and page, is kept in memory while the list version is unchanged (their writes bump it:
//! see the migration `catalog_bumps_list_version`); lists are read afresh.

use std::collections::BTreeMap;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::FromRow;
use uuid::Uuid;

use super::{conflict_as, limit_offset, Pool, SqlStore, INSERT_AUDIT};
use crate::audit::AuditEvent;
use crate::cluster::{AdminAccess, Provider, Template};
use crate::page::Page;
use crate::provisioner::ProviderKind;
use crate::store::CatalogStore;
use crate::{Error, Result};

#[derive(FromRow)]
struct ProviderRow {
    id: Uuid,
    name: String,
    kind: String,
    description: String,
    config: String,
    secret_fields: String,
    disabled: bool,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
}

const PROVIDER_COLS: &str =
    "id, name, kind, description, config, secret_fields, disabled, created_at, updated_at";

pub(super) fn json<T: serde::de::DeserializeOwned>(what: &str, id: Uuid, text: &str) -> Result<T> {
    serde_json::from_str(text).map_err(|e| Error::Corrupt(format!("{what} {id}: {e}")))
}

pub(super) fn to_json<T: serde::Serialize>(value: &T) -> Result<String> {
    serde_json::to_string(value).map_err(|e| Error::Corrupt(format!("cannot encode JSON: {e}")))
}

impl TryFrom<ProviderRow> for Provider {
    type Error = Error;
    fn try_from(r: ProviderRow) -> Result<Self> {
        Ok(Provider {
            kind: ProviderKind::parse(&r.kind)
                .ok_or_else(|| Error::Corrupt(format!("provider {}: kind {}", r.id, r.kind)))?,
            config: json("provider", r.id, &r.config)?,
            secret_fields: json("provider", r.id, &r.secret_fields)?,
            id: r.id,
            name: r.name,
            description: r.description,
            disabled: r.disabled,
            created_at: r.created_at,
            updated_at: r.updated_at,
        })
    }
}

#[derive(FromRow)]
struct TemplateRow {
    id: Uuid,
    provider_id: Uuid,
    name: String,
    description: String,
    overrides: String,
    timeout_minutes: i32,
    admin_access: String,
    disabled: bool,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
}

const TEMPLATE_COLS: &str = "t.id, t.provider_id, t.name, t.description, t.overrides, \
     t.timeout_minutes, t.admin_access, t.disabled, t.created_at, t.updated_at";

impl TemplateRow {
    fn into_template(self, tenants: Vec<Uuid>) -> Result<Template> {
        let overrides: BTreeMap<_, _> = json("template", self.id, &self.overrides)?;
        Ok(Template {
            id: self.id,
            provider_id: self.provider_id,
            name: self.name,
            description: self.description,
            overrides,
            tenants,
            timeout_minutes: u32::try_from(self.timeout_minutes).unwrap_or(60),
            admin_access: AdminAccess::parse(&self.admin_access)
                .ok_or_else(|| Error::Corrupt(format!("template {}: admin_access", self.id)))?,
            disabled: self.disabled,
            created_at: self.created_at,
            updated_at: self.updated_at,
        })
    }
}

impl SqlStore {
    async fn template_tenants(&self, ids: &[Uuid]) -> Result<Vec<(Uuid, Uuid)>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let placeholders = (1..=ids.len())
            .map(|i| format!("${i}"))
            .collect::<Vec<_>>()
            .join(", ");
        let sql = format!(
            "SELECT template_id, tenant_id FROM template_tenants WHERE template_id IN ({placeholders})"
        );
        let rows: Vec<(Uuid, Uuid)> = on_pool!(self, p => {
            let mut q = sqlx::query_as(&sql);
            for id in ids {
                q = q.bind(*id);
            }
            q.fetch_all(p).await?
        });
        Ok(rows)
    }

    async fn templates_from(&self, rows: Vec<TemplateRow>) -> Result<Vec<Template>> {
        let ids: Vec<Uuid> = rows.iter().map(|r| r.id).collect();
        let links = self.template_tenants(&ids).await?;
        rows.into_iter()
            .map(|r| {
                let tenants = links
                    .iter()
                    .filter(|(t, _)| *t == r.id)
                    .map(|(_, tenant)| *tenant)
                    .collect();
                r.into_template(tenants)
            })
            .collect()
    }
}

/// Inserts the template's tenant links on `$tx`.
macro_rules! insert_template_tenants {
    ($tx:ident, $t:expr) => {
        for tenant in &$t.tenants {
            sqlx::query("INSERT INTO template_tenants (template_id, tenant_id) VALUES ($1, $2)")
                .bind($t.id)
                .bind(*tenant)
                .execute(&mut *$tx)
                .await?;
        }
    };
}

#[async_trait]
impl CatalogStore for SqlStore {
    async fn create_provider(&self, p: &Provider, audit: &AuditEvent) -> Result<()> {
        let config = to_json(&p.config)?;
        let secrets = to_json(&p.secret_fields)?;
        let conflict = || format!("a provider named '{}' already exists", p.name);
        audited_tx!(self, audit, |tx| {
            sqlx::query(
                "INSERT INTO providers (id, name, kind, description, config, secret_fields, \
                 disabled, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
            )
            .bind(p.id)
            .bind(&p.name)
            .bind(p.kind.as_str())
            .bind(&p.description)
            .bind(&config)
            .bind(&secrets)
            .bind(p.disabled)
            .bind(p.created_at)
            .bind(p.updated_at)
            .execute(&mut *tx)
            .await
            .map_err(conflict_as(conflict))?;
        });
        Ok(())
    }

    async fn update_provider(&self, p: &Provider, audit: &AuditEvent) -> Result<()> {
        let config = to_json(&p.config)?;
        let secrets = to_json(&p.secret_fields)?;
        let conflict = || format!("a provider named '{}' already exists", p.name);
        audited_tx!(self, audit, |tx| {
            let done = sqlx::query(
                "UPDATE providers SET name = $2, description = $3, config = $4, secret_fields = $5, \
                 disabled = $6, updated_at = $7 WHERE id = $1",
            )
            .bind(p.id)
            .bind(&p.name)
            .bind(&p.description)
            .bind(&config)
            .bind(&secrets)
            .bind(p.disabled)
            .bind(p.updated_at)
            .execute(&mut *tx)
            .await
            .map_err(conflict_as(conflict))?;
            if done.rows_affected() == 0 {
                return Err(Error::NotFound("provider"));
            }
        });
        Ok(())
    }

    async fn delete_provider(&self, id: Uuid, audit: &AuditEvent) -> Result<bool> {
        audited_tx!(self, audit, |tx| {
            let used: i64 = sqlx::query_scalar(
                "SELECT (SELECT COUNT(*) FROM templates WHERE provider_id = $1) + \
                 (SELECT COUNT(*) FROM clusters WHERE provider_id = $1 AND deleted_at IS NULL)",
            )
            .bind(id)
            .fetch_one(&mut *tx)
            .await?;
            if used > 0 {
                return Err(Error::Conflict(
                    "the provider still has templates or clusters; delete or move them first"
                        .into(),
                ));
            }
            let done = sqlx::query("DELETE FROM providers WHERE id = $1")
                .bind(id)
                .execute(&mut *tx)
                .await;
            match done {
                Ok(d) if d.rows_affected() == 0 => return Ok(false),
                Ok(_) => {}
                // Deleted clusters still reference it: keep the row, disabled and renamed away.
                Err(sqlx::Error::Database(db)) if db.is_foreign_key_violation() => {
                    return Err(Error::Conflict(
                        "the provider's deleted clusters still refer to it; disable it instead"
                            .into(),
                    ));
                }
                Err(e) => return Err(e.into()),
            }
        });
        Ok(true)
    }

    async fn provider(&self, id: Uuid) -> Result<Provider> {
        let read = || async {
            let sql = format!("SELECT {PROVIDER_COLS} FROM providers WHERE id = $1");
            let row: Option<ProviderRow> = on_pool!(self, p => {
                sqlx::query_as(&sql).bind(id).fetch_optional(p).await?
            });
            row.ok_or(Error::NotFound("provider"))?.try_into()
        };
        self.cached_by_id(&self.lists.providers, id, read).await
    }

    async fn provider_by_name(&self, name: &str) -> Result<Option<Provider>> {
        let sql = format!("SELECT {PROVIDER_COLS} FROM providers WHERE name = $1");
        let row: Option<ProviderRow> = on_pool!(self, p => {
            sqlx::query_as(&sql).bind(name).fetch_optional(p).await?
        });
        row.map(TryInto::try_into).transpose()
    }

    async fn list_providers(&self, page: Page) -> Result<Vec<Provider>> {
        let sql = format!("SELECT {PROVIDER_COLS} FROM providers ORDER BY name LIMIT $1 OFFSET $2");
        let (limit, offset) = limit_offset(page);
        let rows: Vec<ProviderRow> = on_pool!(self, p => {
            sqlx::query_as(&sql).bind(limit).bind(offset).fetch_all(p).await?
        });
        rows.into_iter().map(TryInto::try_into).collect()
    }

    async fn create_template(&self, t: &Template, audit: &AuditEvent) -> Result<()> {
        let overrides = to_json(&t.overrides)?;
        let conflict = || format!("a template named '{}' already exists", t.name);
        audited_tx!(self, audit, |tx| {
            sqlx::query(
                "INSERT INTO templates (id, provider_id, name, description, overrides, \
                 timeout_minutes, disabled, created_at, updated_at, admin_access) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
            )
            .bind(t.id)
            .bind(t.provider_id)
            .bind(&t.name)
            .bind(&t.description)
            .bind(&overrides)
            .bind(i32::try_from(t.timeout_minutes).unwrap_or(i32::MAX))
            .bind(t.disabled)
            .bind(t.created_at)
            .bind(t.updated_at)
            .bind(t.admin_access.as_str())
            .execute(&mut *tx)
            .await
            .map_err(conflict_as(conflict))?;
            insert_template_tenants!(tx, t);
        });
        Ok(())
    }

    async fn update_template(&self, t: &Template, audit: &AuditEvent) -> Result<()> {
        let overrides = to_json(&t.overrides)?;
        let conflict = || format!("a template named '{}' already exists", t.name);
        audited_tx!(self, audit, |tx| {
            let done = sqlx::query(
                "UPDATE templates SET provider_id = $2, name = $3, description = $4, \
                 overrides = $5, timeout_minutes = $6, disabled = $7, updated_at = $8, \
                 admin_access = $9 WHERE id = $1",
            )
            .bind(t.id)
            .bind(t.provider_id)
            .bind(&t.name)
            .bind(&t.description)
            .bind(&overrides)
            .bind(i32::try_from(t.timeout_minutes).unwrap_or(i32::MAX))
            .bind(t.disabled)
            .bind(t.updated_at)
            .bind(t.admin_access.as_str())
            .execute(&mut *tx)
            .await
            .map_err(conflict_as(conflict))?;
            if done.rows_affected() == 0 {
                return Err(Error::NotFound("template"));
            }
            sqlx::query("DELETE FROM template_tenants WHERE template_id = $1")
                .bind(t.id)
                .execute(&mut *tx)
                .await?;
            insert_template_tenants!(tx, t);
        });
        Ok(())
    }

    async fn delete_template(&self, id: Uuid, audit: &AuditEvent) -> Result<bool> {
        audited_tx!(self, audit, |tx| {
            let done = sqlx::query("DELETE FROM templates WHERE id = $1")
                .bind(id)
                .execute(&mut *tx)
                .await?;
            if done.rows_affected() == 0 {
                return Ok(false);
            }
        });
        Ok(true)
    }

    async fn template(&self, id: Uuid) -> Result<Template> {
        let read = || async {
            let sql = format!("SELECT {TEMPLATE_COLS} FROM templates t WHERE t.id = $1");
            let row: Option<TemplateRow> = on_pool!(self, p => {
                sqlx::query_as(&sql).bind(id).fetch_optional(p).await?
            });
            let row = row.ok_or(Error::NotFound("template"))?;
            self.templates_from(vec![row])
                .await?
                .pop()
                .ok_or(Error::NotFound("template"))
        };
        self.cached_by_id(&self.lists.templates, id, read).await
    }

    async fn template_by_name(&self, name: &str) -> Result<Option<Template>> {
        let sql = format!("SELECT {TEMPLATE_COLS} FROM templates t WHERE t.name = $1");
        let row: Option<TemplateRow> = on_pool!(self, p => {
            sqlx::query_as(&sql).bind(name).fetch_optional(p).await?
        });
        match row {
            Some(r) => Ok(self.templates_from(vec![r]).await?.pop()),
            None => Ok(None),
        }
    }

    async fn list_templates(&self, offered_to: Option<Uuid>, page: Page) -> Result<Vec<Template>> {
        let (limit, offset) = limit_offset(page);
        let rows: Vec<TemplateRow> = match offered_to {
            None => {
                let sql = format!(
                    "SELECT {TEMPLATE_COLS} FROM templates t ORDER BY t.name LIMIT $1 OFFSET $2"
                );
                on_pool!(self, p => {
                    sqlx::query_as(&sql).bind(limit).bind(offset).fetch_all(p).await?
                })
            }
            Some(tenant) => {
                let sql = format!(
                    "SELECT {TEMPLATE_COLS} FROM templates t JOIN providers p ON p.id = t.provider_id \
                     WHERE NOT t.disabled AND NOT p.disabled AND \
                     (NOT EXISTS (SELECT 1 FROM template_tenants x WHERE x.template_id = t.id) \
                      OR EXISTS (SELECT 1 FROM template_tenants x WHERE x.template_id = t.id AND x.tenant_id = $3)) \
                     ORDER BY t.name LIMIT $1 OFFSET $2"
                );
                on_pool!(self, p => {
                    sqlx::query_as(&sql).bind(limit).bind(offset).bind(tenant).fetch_all(p).await?
                })
            }
        };
        self.templates_from(rows).await
    }
}

/// Test hooks: rows the store cannot read, as a person editing the database might leave them.
#[cfg(any(test, feature = "testing"))]
impl SqlStore {
    /// Writes `raw` as the template's tenant-admin access (any text, unlike the store).
    pub async fn testing_set_admin_access(&self, template: &str, raw: &str) -> Result<()> {
        const SQL: &str = "UPDATE templates SET admin_access = $2 WHERE name = $1";
        on_pool!(self, p => sqlx::query(SQL).bind(template).bind(raw).execute(p).await.map(|_| ())?);
        Ok(())
    }
}
