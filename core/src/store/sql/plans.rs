//! The plans of hot lookups on Postgres when the statistics are stale (the minute after a bulk
//! import, before the statistics job ran): they must still go through the primary key, for
//! clusters and for applications, and a cluster's history through its cluster's indexes. Needs
//! the Postgres of the test machines (skips, saying so, without one).

#![allow(clippy::unwrap_used, clippy::print_stdout)]

use uuid::Uuid;

use super::applications::{application_by_id_sql, claim_app_delete_sql, claim_ready_sql};
use super::cluster_history::postgres_sql as history_sql;
use super::clusters::{claim_cluster_sql, cluster_by_id_sql};
use super::Pool;
use crate::store::ClusterStore;

/// A store on a fresh Postgres database (kept while the returned database lives).
async fn postgres_store() -> Option<(kqueen_testkit::TestDatabase, super::SqlStore)> {
    let db = kqueen_testkit::TestDatabase::postgres().await?;
    let store = super::connect(db.url()).await.unwrap();
    Some((db, store))
}

fn pg_pool(store: &super::SqlStore) -> &sqlx::PgPool {
    match &store.pool {
        Pool::Postgres(pool) => pool,
        Pool::Sqlite(_) => panic!("a Postgres store"),
    }
}

/// 300 live clusters in 3 tenants, never analysed; returns one cluster's id.
async fn seeded(pool: &sqlx::PgPool) -> Uuid {
    for sql in [
        "INSERT INTO tenants (id, slug, display_name, created_at) \
         SELECT gen_random_uuid(), 't-' || i, 'T', now() FROM generate_series(1, 3) i",
        "INSERT INTO providers (id, name, kind, config, secret_fields, created_at, updated_at) \
         VALUES (gen_random_uuid(), 'lab', 'command', '{}', '[]', now(), now())",
        "INSERT INTO clusters (id, tenant_id, name, template_name, provider_id, provider_kind, \
         state, parameters, node_count, created_by, created_at, updated_at) \
         SELECT gen_random_uuid(), t.id, 'c-' || i, 'small', p.id, 'command', 'ready', '{}', 3, \
         'test', now(), now() FROM generate_series(1, 100) i, tenants t, providers p",
    ] {
        sqlx::query(sql).execute(pool).await.unwrap();
    }
    sqlx::query_scalar("SELECT id FROM clusters ORDER BY name DESC LIMIT 1")
        .fetch_one(pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn one_cluster_is_read_through_its_primary_key_whatever_the_statistics_say() {
    let Some((_db, store)) = postgres_store().await else {
        println!("skipped: no Postgres");
        return;
    };
    let pool = pg_pool(&store);
    let id = seeded(pool).await;
    let explain = |sql: String, generic: bool| async move {
        let mut conn = pool.acquire().await.unwrap();
        // A prepared statement run often gets a generic plan (the id unknown): check both.
        let mode = if generic {
            "force_generic_plan"
        } else {
            "auto"
        };
        sqlx::query(&format!("SET plan_cache_mode = {mode}"))
            .execute(&mut *conn)
            .await
            .unwrap();
        let lines: Vec<String> = sqlx::query_scalar(&format!("EXPLAIN (ANALYZE, COSTS OFF) {sql}"))
            .bind(id)
            .fetch_all(&mut *conn)
            .await
            .unwrap();
        sqlx::query("RESET plan_cache_mode")
            .execute(&mut *conn)
            .await
            .unwrap();
        lines.join("\n")
    };
    for generic in [false, true] {
        let plan = explain(cluster_by_id_sql(), generic).await;
        assert!(plan.contains("clusters_pkey"), "generic {generic}: {plan}");
        assert!(
            !plan.contains("Rows Removed by Filter"),
            "generic {generic}: {plan}"
        );
    }
    // The same lookup with the predicate beside the id (what it was): the planner may take a
    // partial index of live clusters and filter all of them — what the fence prevents.
    let naive = explain(
        "SELECT c.id FROM clusters c JOIN tenants t ON t.id = c.tenant_id \
         WHERE c.id = $1 AND c.deleted_at IS NULL"
            .to_owned(),
        false,
    )
    .await;
    println!("without the fence:\n{naive}");
    // The writes that claim a cluster by id: the same fence, the same key.
    for (what, sql) in [
        ("claim", claim_cluster_sql()),
        ("claim ready", claim_ready_sql()),
    ] {
        let explain = format!("EXPLAIN (COSTS OFF) {sql}");
        let mut query = sqlx::query_scalar::<_, String>(&explain).bind(id);
        if sql.contains("$2") {
            query = query.bind("updating").bind(chrono::Utc::now());
        }
        let plan = query.fetch_all(pool).await.unwrap().join("\n");
        assert!(plan.contains("clusters_pkey"), "{what}: {plan}");
        assert!(!plan.contains("clusters_by_expiry"), "{what}: {plan}");
    }
    // And the store finds it (and not a deleted one).
    assert_eq!(store.cluster(id).await.unwrap().id, id);
    sqlx::query("UPDATE clusters SET deleted_at = now() WHERE id = $1")
        .bind(id)
        .execute(pool)
        .await
        .unwrap();
    assert!(matches!(
        store.cluster(id).await,
        Err(crate::Error::NotFound("cluster"))
    ));
}

#[tokio::test]
async fn one_application_is_read_and_claimed_through_its_primary_key() {
    let Some((_db, store)) = postgres_store().await else {
        println!("skipped: no Postgres");
        return;
    };
    let pool = pg_pool(&store);
    seeded(pool).await;
    // One application on each of the 300 clusters, never analysed.
    sqlx::query(
        "INSERT INTO applications (id, tenant_id, cluster_id, name, version, namespace, state, \
         requested_by, created_at, updated_at) SELECT gen_random_uuid(), c.tenant_id, c.id, \
         'web', '1', 'web-1', 'deployed', 'test', now(), now() FROM clusters c",
    )
    .execute(pool)
    .await
    .unwrap();
    let id: Uuid = sqlx::query_scalar("SELECT id FROM applications LIMIT 1")
        .fetch_one(pool)
        .await
        .unwrap();
    // What it was: the id beside `deleted_at IS NULL`.
    let naive: Vec<String> = sqlx::query_scalar(
        "EXPLAIN (COSTS OFF) SELECT id FROM applications WHERE id = $1 AND deleted_at IS NULL",
    )
    .bind(id)
    .fetch_all(pool)
    .await
    .unwrap();
    println!("without the fence:\n{}", naive.join("\n"));
    for (what, sql) in [
        ("read", application_by_id_sql()),
        ("claim delete", claim_app_delete_sql()),
    ] {
        let explain = format!("EXPLAIN (COSTS OFF) {sql}");
        let mut query = sqlx::query_scalar::<_, String>(&explain).bind(id);
        if sql.contains("$2") {
            query = query.bind(chrono::Utc::now());
        }
        let plan = query.fetch_all(pool).await.unwrap().join("\n");
        assert!(plan.contains("applications_pkey"), "{what}: {plan}");
        for partial in ["applications_version", "applications_namespace"] {
            assert!(!plan.contains(partial), "{what}: {plan}");
        }
    }
    // The store still finds a live one and not a deleted one.
    assert_eq!(
        crate::store::ApplicationStore::application(&store, id)
            .await
            .unwrap()
            .id,
        id
    );
    sqlx::query("UPDATE applications SET deleted_at = now() WHERE id = $1")
        .bind(id)
        .execute(pool)
        .await
        .unwrap();
    assert!(matches!(
        crate::store::ApplicationStore::application(&store, id).await,
        Err(crate::Error::NotFound("application"))
    ));
}

#[tokio::test]
async fn a_clusters_history_is_read_through_its_clusters_indexes_whatever_the_statistics_say() {
    let Some((_db, store)) = postgres_store().await else {
        println!("skipped: no Postgres");
        return;
    };
    let pool = pg_pool(&store);
    let id = seeded(pool).await;
    // Every one of the 300 clusters with 5 operations, 20 timeline entries and a
    // shared-storage reading, never analysed (the minute after a bulk import).
    for sql in [
        "INSERT INTO operations (id, cluster_id, kind, state, requested_by, created_at, \
         updated_at, deadline_at, run_after) SELECT gen_random_uuid(), c.id, 'create', \
         'succeeded', 'test', now() - i * interval '1 minute', now(), now(), now() \
         FROM clusters c, generate_series(1, 5) i",
        "INSERT INTO cluster_events (id, cluster_id, occurred_at, kind, message) \
         SELECT gen_random_uuid(), c.id, now() - i * interval '1 second', 'step', 'm' \
         FROM clusters c, generate_series(1, 20) i",
        "INSERT INTO shared_storage_usage (cluster_id, keys, bytes, writable, measured_at) \
         SELECT id, 1, 1, true, now() FROM clusters",
    ] {
        sqlx::query(sql).execute(pool).await.unwrap();
    }
    for generic in [false, true] {
        let mut conn = pool.acquire().await.unwrap();
        let mode = match generic {
            true => "force_generic_plan",
            false => "auto",
        };
        sqlx::query(&format!("SET plan_cache_mode = {mode}"))
            .execute(&mut *conn)
            .await
            .unwrap();
        let plan: Vec<String> =
            sqlx::query_scalar(&format!("EXPLAIN (ANALYZE, COSTS OFF) {}", history_sql()))
                .bind(id)
                .bind(10_i64)
                .bind(50_i64)
                .bind(true)
                .fetch_all(&mut *conn)
                .await
                .unwrap();
        let plan = plan.join("\n");
        for index in [
            "operations_by_cluster",
            "cluster_events_by_cluster",
            "shared_storage_usage_pkey",
        ] {
            assert!(plan.contains(index), "generic {generic}, {index}: {plan}");
        }
        assert!(!plan.contains("Seq Scan"), "generic {generic}: {plan}");
        assert!(
            !plan.contains("Rows Removed by Filter"),
            "generic {generic}: {plan}"
        );
    }
    // And it answers this cluster's rows alone, newest first.
    let history = crate::store::ClusterHistoryStore::history_of(&store, id, 10, 50, true)
        .await
        .unwrap();
    assert_eq!(history.operations.len(), 5);
    assert!(history.operations.iter().all(|o| o.cluster_id == id));
    assert!(history.operations[0].created_at > history.operations[4].created_at);
    assert_eq!(history.events.len(), 20);
    assert!(history.shared_storage.is_some());
}
