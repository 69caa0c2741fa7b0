//! Clusters: create, read, list, queue an operation, find the expired (quotas are in
//! `quotas.rs`, timelines in `timeline.rs`, the per-user access records in `access.rs`, the
//! workers' operation queue in `operations.rs`).

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::Deserialize;
use sqlx::FromRow;
use uuid::Uuid;

use super::catalog::{json, to_json};
use super::operations::{insert_events, insert_op};
use super::quotas::admit_in_tx;
use super::{contains_pattern, limit_offset, Pool, SqlStore, INSERT_AUDIT};
use crate::audit::AuditEvent;
use crate::cluster::{
    Cluster, ClusterEvent, ClusterFilter, ClusterName, ClusterState, Operation, OperationKind,
};
use crate::page::Page;
use crate::provisioner::ProviderKind;
use crate::store::ClusterStore;
use crate::{Error, Result};

/// A cluster as the database holds it. Also read from JSON: SQLite lists (see
/// [`SQLITE_PAGE_JSON`]) arrive as one JSON array.
#[derive(FromRow, Deserialize)]
struct ClusterRow {
    id: Uuid,
    tenant_id: Uuid,
    tenant_slug: String,
    name: String,
    template_id: Option<Uuid>,
    template_name: String,
    provider_id: Uuid,
    provider_kind: String,
    state: String,
    parameters: String,
    node_count: i32,
    endpoint: Option<String>,
    provisioner_state: String,
    error: Option<String>,
    #[serde(deserialize_with = "json_time::optional")]
    expires_at: Option<DateTime<Utc>>,
    #[serde(deserialize_with = "json_bool")]
    production: bool,
    created_by: String,
    #[serde(deserialize_with = "json_time::required")]
    created_at: DateTime<Utc>,
    #[serde(deserialize_with = "json_time::required")]
    updated_at: DateTime<Utc>,
}

/// Timestamps in SQLite's JSON: the text sqlx stored (RFC 3339), or SQLite's own
/// `YYYY-MM-DD HH:MM:SS[.fff]` (UTC), as sqlx itself accepts.
mod json_time {
    use chrono::{DateTime, NaiveDateTime, Utc};
    use serde::{de::Error, Deserialize, Deserializer};

    fn parse<E: Error>(s: &str) -> Result<DateTime<Utc>, E> {
        DateTime::parse_from_rfc3339(s)
            .map(|t| t.with_timezone(&Utc))
            .or_else(|_| NaiveDateTime::parse_from_str(s, "%F %T%.f").map(|t| t.and_utc()))
            .map_err(|_| E::custom(format!("not a timestamp: '{s}'")))
    }

    pub(super) fn required<'de, D: Deserializer<'de>>(d: D) -> Result<DateTime<Utc>, D::Error> {
        parse(&String::deserialize(d)?)
    }

    pub(super) fn optional<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<DateTime<Utc>>, D::Error> {
        Option::<String>::deserialize(d)?
            .map(|s| parse(&s))
            .transpose()
    }
}

/// A boolean in SQLite's JSON: 0 or 1 (a JSON `true`/`false` is taken too).
fn json_bool<'de, D: serde::Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Flag {
        Bool(bool),
        Int(i64),
    }
    Ok(match Flag::deserialize(d)? {
        Flag::Bool(b) => b,
        Flag::Int(i) => i != 0,
    })
}

/// SQLite: a page of clusters as one JSON array, built from the rows of the page query (a
/// subquery yielding [`CLUSTER_COLS`] and `total`). sqlx's SQLite driver hands every row
/// from its database thread to the async task separately — a thread wake-up per row that
/// cost more than the query itself — so a page crosses as one value. Ids are BLOBs there:
/// hex, which [`Uuid`] parses.
const SQLITE_PAGE_JSON: &str = "json_group_array(json_object(\
     'id', hex(id), 'tenant_id', hex(tenant_id), 'tenant_slug', tenant_slug, 'name', name, \
     'template_id', nullif(hex(template_id), ''), 'template_name', template_name, \
     'provider_id', hex(provider_id), 'provider_kind', provider_kind, 'state', state, \
     'parameters', parameters, 'node_count', node_count, 'endpoint', endpoint, \
     'provisioner_state', provisioner_state, 'error', error, 'expires_at', expires_at, \
     'production', production, 'created_by', created_by, 'created_at', created_at, 'updated_at', updated_at)), \
     MAX(total)";

/// A cluster of a listed page, with the number of clusters matching in all.
#[derive(FromRow)]
struct ListedRow {
    #[sqlx(flatten)]
    row: ClusterRow,
    total: i64,
}

const CLUSTER_COLS: &str = "c.id, c.tenant_id, t.slug AS tenant_slug, c.name, c.template_id, \
     c.template_name, c.provider_id, c.provider_kind, c.state, c.parameters, c.node_count, \
     c.endpoint, c.provisioner_state, c.error, c.expires_at, c.production, c.created_by, c.created_at, \
     c.updated_at";

/// A live cluster by id, with its tenant's slug. The id is looked up alone, in a subquery with
/// a LIMIT (a fence the planner does not flatten), and `deleted_at IS NULL` is checked on the
/// one row found: beside the id, that predicate let Postgres with stale statistics (the minute
/// after a bulk import) prefer a partial index of live clusters to the primary key, reading every
/// live cluster to find one. `plans.rs` checks the plan.
pub(super) fn cluster_by_id_sql() -> String {
    format!(
        "SELECT {CLUSTER_COLS} FROM (SELECT * FROM clusters WHERE id = $1 LIMIT 1) c \
         JOIN tenants t ON t.id = c.tenant_id WHERE c.deleted_at IS NULL"
    )
}

/// `$1` when it names a live cluster, else NULL: an id to compare with `clusters.id` in a
/// write, looked up as in [`cluster_by_id_sql`] (beside the id, `deleted_at IS NULL` let the
/// planner scan a partial index of all live clusters).
pub(super) const LIVE_CLUSTER_ID: &str = "(SELECT x.id FROM (SELECT id, deleted_at FROM \
     clusters WHERE id = $1 LIMIT 1) x WHERE x.deleted_at IS NULL)";

/// Claims a live cluster for an operation: its state `$2`, updated at `$3`.
pub(super) fn claim_cluster_sql() -> String {
    format!("UPDATE clusters SET state = $2, updated_at = $3 WHERE id = {LIVE_CLUSTER_ID}")
}

impl TryFrom<ClusterRow> for Cluster {
    type Error = Error;
    fn try_from(r: ClusterRow) -> Result<Self> {
        let corrupt = |what: &str| Error::Corrupt(format!("cluster {}: {what}", r.id));
        Ok(Cluster {
            name: ClusterName::parse(&r.name).map_err(|_| corrupt("name"))?,
            provider_kind: ProviderKind::parse(&r.provider_kind).ok_or_else(|| corrupt("kind"))?,
            state: ClusterState::parse(&r.state).ok_or_else(|| corrupt("state"))?,
            parameters: json("cluster", r.id, &r.parameters)?,
            provisioner_state: json("cluster", r.id, &r.provisioner_state)?,
            node_count: u32::try_from(r.node_count).unwrap_or(0),
            id: r.id,
            tenant_id: r.tenant_id,
            tenant_slug: r.tenant_slug,
            template_id: r.template_id,
            template_name: r.template_name,
            provider_id: r.provider_id,
            endpoint: r.endpoint,
            error: r.error,
            expires_at: r.expires_at,
            production: r.production,
            created_by: r.created_by,
            created_at: r.created_at,
            updated_at: r.updated_at,
        })
    }
}

/// The WHERE clause and its text binds for a cluster list (binds start at `$first`).
pub(super) fn cluster_where(
    filter: &ClusterFilter,
    tenants: Option<&[Uuid]>,
    first: usize,
) -> (String, Vec<String>, Vec<Uuid>) {
    let mut clauses = vec!["c.deleted_at IS NULL".to_owned()];
    let mut texts = Vec::new();
    let mut n = first;
    if let Some(t) = &filter.tenant {
        // By the tenant's id, so that counting needs no join.
        clauses.push(format!(
            "c.tenant_id = (SELECT id FROM tenants WHERE slug = ${n})"
        ));
        texts.push(t.clone());
        n += 1;
    }
    if let Some(s) = filter.state {
        clauses.push(format!("c.state = ${n}"));
        texts.push(s.as_str().to_owned());
        n += 1;
    }
    if let Some(name) = filter.name.as_deref().filter(|s| !s.is_empty()) {
        clauses.push(format!("c.name LIKE ${n} ESCAPE '\\'"));
        texts.push(contains_pattern(name));
        n += 1;
    }
    let mut ids = Vec::new();
    if let Some(tenants) = tenants {
        if tenants.is_empty() {
            clauses.push("1 = 0".into());
        } else {
            let ps: Vec<String> = (0..tenants.len()).map(|i| format!("${}", n + i)).collect();
            clauses.push(format!("c.tenant_id IN ({})", ps.join(", ")));
            ids.extend_from_slice(tenants);
        }
    }
    (clauses.join(" AND "), texts, ids)
}

/// The list cache's key of a cluster page: everything that selects its rows.
fn cluster_list_key(filter: &ClusterFilter, tenants: Option<&[Uuid]>, page: Page) -> String {
    let scope = tenants.map(|t| {
        let mut t = t.to_vec();
        t.sort_unstable();
        t.dedup();
        t
    });
    format!(
        "{:?}|{:?}|{:?}|{scope:?}|{}|{}",
        filter.tenant,
        filter.state.map(ClusterState::as_str),
        filter.name,
        page.limit(),
        page.offset()
    )
}

impl SqlStore {
    /// A page of clusters and the number matching, from the database.
    async fn read_cluster_page(
        &self,
        filter: &ClusterFilter,
        tenants: Option<&[Uuid]>,
        page: Page,
    ) -> Result<(Vec<Cluster>, u64)> {
        let (wh, texts, ids) = cluster_where(filter, tenants, 3);
        // One round trip: the page and, in each row, the total (an uncorrelated subquery,
        // evaluated once). Written as tenants CROSS JOIN clusters so that SQLite walks
        // tenants in slug order and each tenant's clusters by name through indexes, stopping
        // after one page; a plain JOIN made it sort every live cluster for every page.
        let page_sql = format!(
            "SELECT {CLUSTER_COLS}, \
             (SELECT COUNT(*) FROM clusters c WHERE {wh}) AS total \
             FROM tenants t CROSS JOIN clusters c \
             WHERE c.tenant_id = t.id AND {wh} ORDER BY t.slug, c.name LIMIT $1 OFFSET $2"
        );
        let (limit, offset) = limit_offset(page);
        let (rows, total): (Vec<ClusterRow>, Option<i64>) = match &self.pool {
            Pool::Sqlite(p) => {
                let sql = format!("SELECT {SQLITE_PAGE_JSON} FROM ({page_sql})");
                let q = sqlx::query_as(&sql).bind(limit).bind(offset);
                let (page, total): (String, Option<i64>) =
                    bind_all!(q, &texts, &ids).fetch_one(p).await?;
                let mut rows: Vec<ClusterRow> = serde_json::from_str(&page)
                    .map_err(|e| Error::Corrupt(format!("cluster list: {e}")))?;
                // The page's order, restored here rather than by a sort inside SQLite (both
                // compare bytes; names are unique per tenant).
                rows.sort_unstable_by(|a, b| {
                    (&a.tenant_slug, &a.name).cmp(&(&b.tenant_slug, &b.name))
                });
                (rows, total)
            }
            Pool::Postgres(p) => {
                let q = sqlx::query_as(&page_sql).bind(limit).bind(offset);
                let rows: Vec<ListedRow> = bind_all!(q, &texts, &ids).fetch_all(p).await?;
                let total = rows.first().map(|r| r.total);
                (rows.into_iter().map(|r| r.row).collect(), total)
            }
        };
        let total = match total {
            Some(n) => n,
            // A page past the end still reports how many there are.
            None if offset > 0 => self.count_clusters(filter, tenants).await?,
            None => 0,
        };
        let clusters = rows
            .into_iter()
            .map(TryInto::try_into)
            .collect::<Result<_>>()?;
        Ok((clusters, u64::try_from(total).unwrap_or(0)))
    }

    async fn count_clusters(
        &self,
        filter: &ClusterFilter,
        tenants: Option<&[Uuid]>,
    ) -> Result<i64> {
        let (wh, texts, ids) = cluster_where(filter, tenants, 1);
        let sql = format!("SELECT COUNT(*) FROM clusters c WHERE {wh}");
        Ok(on_pool!(self, p => {
            bind_all!(sqlx::query_scalar(&sql), &texts, &ids).fetch_one(p).await?
        }))
    }
}

#[async_trait]
impl ClusterStore for SqlStore {
    async fn create_cluster(
        &self,
        c: &Cluster,
        op: &Operation,
        event: &ClusterEvent,
        audit: &AuditEvent,
    ) -> Result<()> {
        let params = to_json(&c.parameters)?;
        let pstate = to_json(&c.provisioner_state)?;
        let checkpoint = to_json(&op.checkpoint)?;
        let postgres = matches!(self.pool, Pool::Postgres(_));
        audited_tx!(self, audit, |tx| {
            admit_in_tx!(tx, postgres, c.tenant_id, Uuid::nil(), c.node_count);
            sqlx::query(
                "INSERT INTO clusters (id, tenant_id, name, template_id, template_name, \
                 provider_id, provider_kind, state, parameters, node_count, endpoint, \
                 provisioner_state, error, expires_at, created_by, created_at, updated_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)",
            )
            .bind(c.id)
            .bind(c.tenant_id)
            .bind(c.name.as_str())
            .bind(c.template_id)
            .bind(&c.template_name)
            .bind(c.provider_id)
            .bind(c.provider_kind.as_str())
            .bind(c.state.as_str())
            .bind(&params)
            .bind(i32::try_from(c.node_count).unwrap_or(i32::MAX))
            .bind(&c.endpoint)
            .bind(&pstate)
            .bind(&c.error)
            .bind(c.expires_at)
            .bind(&c.created_by)
            .bind(c.created_at)
            .bind(c.updated_at)
            .execute(&mut *tx)
            .await
            .map_err(super::conflict_as(|| {
                format!("the tenant already has a cluster named '{}'", c.name)
            }))?;
            insert_op!(tx, op, &checkpoint);
            insert_events!(tx, [event]);
        });
        Ok(())
    }

    async fn cluster(&self, id: Uuid) -> Result<Cluster> {
        // Its row and its tenant's: every write to either bumps the list version.
        let read = || async {
            let sql = cluster_by_id_sql();
            let row: Option<ClusterRow> = on_pool!(self, p => {
                sqlx::query_as(&sql).bind(id).fetch_optional(p).await?
            });
            row.ok_or(Error::NotFound("cluster"))?.try_into()
        };
        self.cached_by_id(&self.lists.cluster_by_id, id, read).await
    }

    async fn list_clusters(
        &self,
        filter: &ClusterFilter,
        tenants: Option<&[Uuid]>,
        page: Page,
    ) -> Result<(Vec<Cluster>, u64)> {
        let key = cluster_list_key(filter, tenants, page);
        let listed = self
            .cached_list(&self.lists.clusters, key, || {
                self.read_cluster_page(filter, tenants, page)
            })
            .await?;
        Ok((listed.0.clone(), listed.1))
    }

    async fn enqueue_operation(
        &self,
        op: &Operation,
        state: ClusterState,
        event: &ClusterEvent,
        audit: &AuditEvent,
        approved: bool,
    ) -> Result<()> {
        let checkpoint = to_json(&op.checkpoint)?;
        let claim = if op.kind == OperationKind::Delete && !approved {
            format!("{} AND NOT production", claim_cluster_sql())
        } else {
            claim_cluster_sql()
        };
        let postgres = matches!(self.pool, Pool::Postgres(_));
        // A scale's target counts against the tenant's node quota from now on (not only once
        // it is done), checked under the tenant's lock like a new cluster.
        let scale_to = match op.kind {
            OperationKind::Scale => Some(op.nodes().map_err(Error::Corrupt)?),
            _ => None,
        };
        audited_tx!(self, audit, |tx| {
            if let Some(nodes) = scale_to {
                // Tenant first, then the cluster: the order a new cluster takes them in.
                // The id alone under a LIMIT, as in `cluster_by_id_sql`.
                let found: Option<(Uuid, i32)> = sqlx::query_as(
                    "SELECT tenant_id, node_count FROM \
                     (SELECT tenant_id, node_count, deleted_at FROM clusters WHERE id = $1 LIMIT 1) c \
                     WHERE c.deleted_at IS NULL",
                )
                .bind(op.cluster_id)
                .fetch_optional(&mut *tx)
                .await?;
                let (tenant, current) = found.ok_or(Error::NotFound("cluster"))?;
                // Scaling down is always allowed, even when a lowered quota is exceeded.
                if i64::from(nodes) > i64::from(current) {
                    admit_in_tx!(tx, postgres, tenant, op.cluster_id, nodes);
                }
            }
            // Claim the cluster first (the row write serialises concurrent requests).
            let done = sqlx::query(&claim)
                .bind(op.cluster_id)
                .bind(state.as_str())
                .bind(op.created_at)
                .execute(&mut *tx)
                .await?;
            if done.rows_affected() == 0 {
                let production: Option<bool> = sqlx::query_scalar(&format!(
                    "SELECT production FROM clusters WHERE id = {LIVE_CLUSTER_ID}"
                ))
                .bind(op.cluster_id)
                .fetch_optional(&mut *tx)
                .await?;
                return Err(match production {
                    Some(true) => Error::Conflict(
                        "the cluster is production: deleting it needs a second person's approval"
                            .into(),
                    ),
                    _ => Error::NotFound("cluster"),
                });
            }
            // A delete cancels an unfinished create (and any unfinished deploy or toggle of
            // what runs in the cluster): its worker loses the lease at its next
            // renewal and stops; the delete then stops what the create started. The delete
            // waits until the create's lease has run out (renewals come every third of it,
            // so by then its worker has noticed and stopped, as long as the portals' clocks
            // agree to within the rest of the lease): the two never run at once.
            // The lease is read by the statement that cancels (a renewal cannot slip in
            // between) and kept on the failed operation, for the record.
            let mut start_after = None;
            if op.kind == OperationKind::Delete {
                let leases: Vec<Option<DateTime<Utc>>> = sqlx::query_scalar(
                    "UPDATE operations SET state = 'failed', \
                     error = 'cancelled: the cluster is being deleted', lease_owner = NULL, \
                     finished_at = $2, updated_at = $2 \
                     WHERE cluster_id = $1 \
                     AND kind NOT IN ('delete', 'scale', 'upgrade', 'replace-node') \
                     AND state IN ('pending', 'running') \
                     RETURNING lease_expires_at",
                )
                .bind(op.cluster_id)
                .bind(op.created_at)
                .fetch_all(&mut *tx)
                .await?;
                start_after = leases
                    .into_iter()
                    .flatten()
                    .max()
                    .filter(|t| *t > op.run_after);
            }
            let busy: i64 = sqlx::query_scalar(
                "SELECT COUNT(*) FROM operations WHERE cluster_id = $1 \
                 AND state IN ('pending', 'running')",
            )
            .bind(op.cluster_id)
            .fetch_one(&mut *tx)
            .await?;
            if busy > 0 {
                return Err(Error::Conflict(
                    "another operation of this cluster is still running".into(),
                ));
            }
            insert_op!(tx, op, &checkpoint);
            if let Some(t) = start_after {
                sqlx::query("UPDATE operations SET run_after = $2 WHERE id = $1")
                    .bind(op.id)
                    .bind(t)
                    .execute(&mut *tx)
                    .await?;
            }
            insert_events!(tx, [event]);
        });
        Ok(())
    }

    async fn expired_clusters(&self, now: DateTime<Utc>, limit: u32) -> Result<Vec<Cluster>> {
        let sql = format!(
            "SELECT {CLUSTER_COLS} FROM clusters c JOIN tenants t ON t.id = c.tenant_id \
             WHERE c.deleted_at IS NULL AND c.expires_at IS NOT NULL AND c.expires_at < $1 \
             AND NOT c.production \
             AND NOT EXISTS (SELECT 1 FROM operations o WHERE o.cluster_id = c.id \
                             AND o.state IN ('pending', 'running')) \
             ORDER BY c.expires_at LIMIT $2"
        );
        let rows: Vec<ClusterRow> = on_pool!(self, p => {
            sqlx::query_as(&sql).bind(now).bind(i64::from(limit)).fetch_all(p).await?
        });
        rows.into_iter().map(TryInto::try_into).collect()
    }
}
