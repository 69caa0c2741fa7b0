//! Tenants.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::FromRow;
use uuid::Uuid;

use super::{conflict_as, contains_pattern, limit_offset, Pool, SqlStore, INSERT_AUDIT};
use crate::audit::AuditEvent;
use crate::page::Page;
use crate::store::TenantStore;
use crate::tenant::{DisplayName, Tenant, TenantFilter, TenantSlug};
use crate::{Error, Result};

#[derive(FromRow)]
pub(super) struct TenantRow {
    id: Uuid,
    slug: String,
    display_name: String,
    created_at: DateTime<Utc>,
}

impl TryFrom<TenantRow> for Tenant {
    type Error = Error;
    fn try_from(r: TenantRow) -> Result<Self> {
        let corrupt = |e: crate::ValidationError| Error::Corrupt(format!("tenant {}: {e}", r.id));
        Ok(Tenant {
            id: r.id,
            slug: TenantSlug::parse(&r.slug).map_err(corrupt)?,
            display_name: DisplayName::parse(&r.display_name).map_err(corrupt)?,
            created_at: r.created_at,
        })
    }
}

#[async_trait]
impl TenantStore for SqlStore {
    #[tracing::instrument(skip_all, fields(tenant = %tenant.slug))]
    async fn create_tenant(&self, tenant: &Tenant, audit: &AuditEvent) -> Result<()> {
        let conflict = || format!("a tenant named '{}' already exists", tenant.slug);
        audited_tx!(self, audit, |tx| {
            sqlx::query(
                "INSERT INTO tenants (id, slug, display_name, created_at) VALUES ($1, $2, $3, $4)",
            )
            .bind(tenant.id)
            .bind(tenant.slug.as_str())
            .bind(tenant.display_name.as_str())
            .bind(tenant.created_at)
            .execute(&mut *tx)
            .await
            .map_err(conflict_as(conflict))?;
        });
        Ok(())
    }

    async fn tenant_by_slug(&self, slug: &TenantSlug) -> Result<Tenant> {
        const SQL: &str = "SELECT id, slug, display_name, created_at FROM tenants WHERE slug = $1";
        let row: Option<TenantRow> = on_pool!(self, p => {
            sqlx::query_as(SQL).bind(slug.as_str()).fetch_optional(p).await?
        });
        row.ok_or(Error::NotFound("tenant"))?.try_into()
    }

    #[tracing::instrument(skip_all)]
    async fn list_tenants(
        &self,
        filter: &TenantFilter,
        member: Option<Uuid>,
        page: Page,
    ) -> Result<Vec<Tenant>> {
        let key = format!(
            "{:?}|{member:?}|{}|{}",
            filter.contains,
            page.limit(),
            page.offset()
        );
        let read = || self.read_tenant_page(filter, member, page);
        Ok(self
            .cached_list(&self.lists.tenants, key, read)
            .await?
            .to_vec())
    }

    #[tracing::instrument(skip_all, fields(ids = ids.len()))]
    async fn tenants_by_ids(&self, ids: &[Uuid]) -> Result<Vec<Tenant>> {
        let mut ids = ids.to_vec();
        ids.sort_unstable();
        ids.dedup();
        let mut tenants = Vec::with_capacity(ids.len());
        // One query per chunk keeps the bind count well under both databases' limits.
        for chunk in ids.chunks(BIND_CHUNK) {
            let placeholders = (1..=chunk.len())
                .map(|i| format!("${i}"))
                .collect::<Vec<_>>()
                .join(", ");
            let sql = format!(
                "SELECT id, slug, display_name, created_at FROM tenants WHERE id IN ({placeholders})"
            );
            let rows: Vec<TenantRow> = on_pool!(self, p => {
                let mut q = sqlx::query_as(&sql);
                for id in chunk {
                    q = q.bind(*id);
                }
                q.fetch_all(p).await?
            });
            for row in rows {
                tenants.push(Tenant::try_from(row)?);
            }
        }
        Ok(tenants)
    }
}

/// Ids bound per `IN (...)` query.
const BIND_CHUNK: usize = 1000;

impl SqlStore {
    /// A page of tenants, from the database.
    async fn read_tenant_page(
        &self,
        filter: &TenantFilter,
        member: Option<Uuid>,
        page: Page,
    ) -> Result<Vec<Tenant>> {
        const SQL: &str = "SELECT id, slug, display_name, created_at FROM tenants t \
             WHERE ($1 IS NULL OR LOWER(slug) LIKE $1 ESCAPE '\\' \
                    OR LOWER(display_name) LIKE $1 ESCAPE '\\') \
               AND ($2 IS NULL OR EXISTS (SELECT 1 FROM memberships m \
                                          WHERE m.tenant_id = t.id AND m.user_id = $2)) \
             ORDER BY slug LIMIT $3 OFFSET $4";
        let pattern = filter.contains.as_deref().map(contains_pattern);
        let (limit, offset) = limit_offset(page);
        let rows: Vec<TenantRow> = on_pool!(self, p => {
            sqlx::query_as(SQL)
                .bind(&pattern)
                .bind(member)
                .bind(limit)
                .bind(offset)
                .fetch_all(p)
                .await?
        });
        rows.into_iter().map(Tenant::try_from).collect()
    }
}
