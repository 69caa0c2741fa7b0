//! The store contract, run against SQLite and against Postgres with the same scenarios.

#![allow(clippy::unwrap_used)]

use kqueen_core::approval::{
    Approval, ApprovalAction, ApprovalState, RestoreDetail, APPROVAL_HOURS,
};
use kqueen_core::audit::{action, AuditEvent, AuditQuery, Outcome};
use kqueen_core::backup::Backup;
use kqueen_core::cluster::{
    AdminAccess, Cluster, ClusterEvent, ClusterFilter, ClusterName, ClusterState, EventKind,
    Operation, OperationKind, OperationState, OperationTarget, Provider, Template,
};
use kqueen_core::identity::{Identity, MembershipSource, Role};
use kqueen_core::page::Page;
use kqueen_core::provisioner::ProviderKind;
use kqueen_core::store::SqlStore;
use kqueen_core::store::{
    self, Backend, CatalogStore, ClusterStore, MembershipStore, Store, TenantStore, UserStore,
};
use kqueen_core::tenant::{DisplayName, Tenant, TenantFilter, TenantSlug};
use kqueen_core::user::User;
use kqueen_core::{Actor, Error};
use kqueen_testkit::TestDatabase;
use uuid::Uuid;

fn tenant(slug: &str, name: &str) -> Tenant {
    Tenant {
        id: Uuid::now_v7(),
        slug: TenantSlug::parse(slug).unwrap(),
        display_name: DisplayName::parse(name).unwrap(),
        created_at: kqueen_core::clock::now(),
    }
}

fn created(t: &Tenant) -> AuditEvent {
    AuditEvent::now(
        &Actor::system(),
        action::TENANT_CREATE,
        t.slug.as_str(),
        Outcome::Success,
    )
    .in_tenant(t.id)
}

fn filter(q: &str) -> TenantFilter {
    TenantFilter::from_query(Some(q))
}

async fn slugs(s: &dyn Store, f: &TenantFilter, page: Page) -> Vec<String> {
    s.list_tenants(f, None, page)
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.slug.to_string())
        .collect()
}

async fn tenants_round_trip(s: &dyn Store) {
    let a = tenant("team-a", "Team Alpha");
    s.create_tenant(&a, &created(&a)).await.unwrap();
    assert_eq!(
        s.tenant_by_slug(&a.slug).await.unwrap(),
        a,
        "read back equals written"
    );

    let dup = tenant("team-a", "Other");
    match s.create_tenant(&dup, &created(&dup)).await {
        Err(Error::Conflict(m)) => assert!(m.contains("team-a"), "{m}"),
        other => panic!("expected a conflict, got {other:?}"),
    }
    // The failed transaction left neither a tenant nor an audit entry behind.
    let counts = s.counts().await.unwrap();
    assert_eq!((counts.tenants, counts.audit_events), (1, 1));

    let missing = TenantSlug::parse("nobody").unwrap();
    assert!(matches!(
        s.tenant_by_slug(&missing).await,
        Err(Error::NotFound("tenant"))
    ));
}

async fn tenant_list_filters_and_pages(s: &dyn Store) {
    for (slug, name) in [
        ("team-a", "Team Alpha"),
        ("team-b", "Beta 50%_off"),
        ("ops", "Operations"),
    ] {
        let t = tenant(slug, name);
        s.create_tenant(&t, &created(&t)).await.unwrap();
    }
    let all = TenantFilter::default();
    assert_eq!(
        slugs(s, &all, Page::default()).await,
        ["ops", "team-a", "team-b"]
    );
    assert_eq!(
        slugs(s, &filter("TEAM"), Page::default()).await,
        ["team-a", "team-b"]
    );
    assert_eq!(
        slugs(s, &filter("alpha"), Page::default()).await,
        ["team-a"],
        "display name"
    );
    assert_eq!(
        slugs(s, &filter("%"), Page::default()).await,
        ["team-b"],
        "% is literal"
    );
    assert_eq!(
        slugs(s, &filter("_"), Page::default()).await,
        ["team-b"],
        "_ is literal"
    );
    assert!(slugs(s, &filter("zzz"), Page::default()).await.is_empty());
    assert_eq!(slugs(s, &all, Page::new(2, 0)).await, ["ops", "team-a"]);
    assert_eq!(slugs(s, &all, Page::new(2, 2)).await, ["team-b"]);
}

/// Tenants by id: every one asked for, whatever its place in the slug order; unknown ids and
/// repeats are skipped; no ids, no tenants.
async fn tenants_by_ids(s: &dyn Store) {
    let mut ids = Vec::new();
    for slug in ["zz-last", "aa-first", "mm-middle"] {
        let t = tenant(slug, slug);
        s.create_tenant(&t, &created(&t)).await.unwrap();
        ids.push(t.id);
    }
    let asked = [ids[0], ids[2], Uuid::now_v7(), ids[0]];
    let mut found: Vec<String> = s
        .tenants_by_ids(&asked)
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.slug.to_string())
        .collect();
    found.sort();
    assert_eq!(found, ["mm-middle", "zz-last"]);
    assert!(s.tenants_by_ids(&[]).await.unwrap().is_empty());
}

async fn audit_is_newest_first_and_filtered(s: &dyn Store) {
    let a = tenant("team-a", "A");
    s.create_tenant(&a, &created(&a)).await.unwrap();
    let denied = AuditEvent::now(
        &Actor::anonymous(),
        "tenant.view",
        "team-a",
        Outcome::Denied,
    )
    .in_tenant(a.id)
    .with_detail("not a member");
    s.record_audit(&denied).await.unwrap();
    let other = AuditEvent::now(&Actor::system(), "system.start", "kqueen", Outcome::Success);
    s.record_audit(&other).await.unwrap();

    let all = s
        .list_audit(&AuditQuery::default(), Page::default())
        .await
        .unwrap();
    assert_eq!(
        all.iter().map(|e| e.action.as_str()).collect::<Vec<_>>(),
        ["system.start", "tenant.view", "tenant.create"]
    );
    // Read back equals written, plus the tenant's slug.
    let denied = AuditEvent {
        tenant_slug: Some("team-a".into()),
        ..denied
    };
    assert_eq!(all[1], denied, "read back equals written");

    let in_a = AuditQuery {
        tenant_id: Some(a.id),
        ..Default::default()
    };
    assert_eq!(s.list_audit(&in_a, Page::default()).await.unwrap().len(), 2);
    let views = AuditQuery {
        action: Some("tenant.view".into()),
        ..Default::default()
    };
    assert_eq!(
        s.list_audit(&views, Page::default()).await.unwrap(),
        [denied]
    );
    assert_eq!(
        s.list_audit(&AuditQuery::default(), Page::new(1, 1))
            .await
            .unwrap()[0]
            .action,
        "tenant.view"
    );
}

async fn users_round_trip(s: &dyn Store) {
    let u = User {
        id: Uuid::now_v7(),
        subject: "local:root".into(),
        username: "root".into(),
        email: Some("root@example.test".into()),
        display_name: None,
        is_operator: true,
        disabled: false,
        created_at: kqueen_core::clock::now(),
        last_login_at: None,
    };
    let audit = AuditEvent::now(&Actor::system(), "user.create", "root", Outcome::Success);
    s.create_user(&u, None, &audit).await.unwrap();
    assert_eq!(
        s.list_users(Page::default()).await.unwrap(),
        std::slice::from_ref(&u)
    );
    let again = User {
        id: Uuid::now_v7(),
        subject: "local:other".into(),
        ..u
    };
    assert!(matches!(
        s.create_user(&again, None, &audit).await,
        Err(Error::Conflict(_))
    ));
    assert_eq!(s.counts().await.unwrap().users, 1);
}

/// Cluster `name` of `t` in `state` (provider `p`), not yet stored.
fn cluster(t: &Tenant, p: Uuid, name: &str, state: ClusterState) -> Cluster {
    let now = kqueen_core::clock::now();
    Cluster {
        id: Uuid::now_v7(),
        tenant_id: t.id,
        tenant_slug: t.slug.to_string(),
        name: ClusterName::parse(name).unwrap(),
        template_id: None,
        template_name: "small".into(),
        provider_id: p,
        provider_kind: ProviderKind::Command,
        state,
        parameters: [("node_count".to_owned(), "3".to_owned())].into(),
        node_count: 3,
        endpoint: None,
        provisioner_state: serde_json::Value::Null,
        error: None,
        expires_at: None,
        production: false,
        created_by: "test".into(),
        created_at: now,
        updated_at: now,
    }
}

/// Stores `c` with its create operation, first event and audit entry.
async fn insert(s: &dyn Store, c: &Cluster) {
    let now = c.created_at;
    let op = Operation::new(
        c.id,
        OperationKind::Create,
        None,
        "test",
        now,
        chrono::Duration::hours(1),
    );
    let event = ClusterEvent::new(c.id, Some(op.id), EventKind::State, "created", now);
    let audit = AuditEvent::now(
        &Actor::system(),
        action::CLUSTER_CREATE,
        c.name.as_str(),
        Outcome::Success,
    )
    .in_tenant(c.tenant_id);
    s.create_cluster(c, &op, &event, &audit).await.unwrap();
}

/// A provider "lab" and its template "small".
async fn catalog(s: &dyn Store) -> (Provider, Template) {
    let now = kqueen_core::clock::now();
    let provider = Provider {
        id: Uuid::now_v7(),
        name: "lab".into(),
        kind: ProviderKind::Command,
        description: String::new(),
        config: Default::default(),
        secret_fields: Vec::new(),
        disabled: false,
        created_at: now,
        updated_at: now,
    };
    let audit = AuditEvent::now(
        &Actor::system(),
        action::PROVIDER_CREATE,
        "lab",
        Outcome::Success,
    );
    s.create_provider(&provider, &audit).await.unwrap();
    let template = Template {
        id: Uuid::now_v7(),
        provider_id: provider.id,
        name: "small".into(),
        description: String::new(),
        overrides: Default::default(),
        tenants: Vec::new(),
        timeout_minutes: 30,
        admin_access: Default::default(),
        disabled: false,
        created_at: now,
        updated_at: now,
    };
    let audit = AuditEvent::now(
        &Actor::system(),
        action::TEMPLATE_CREATE,
        "small",
        Outcome::Success,
    );
    s.create_template(&template, &audit).await.unwrap();
    (provider, template)
}

/// Every field of a cluster survives a list (SQLite's arrives as JSON) as a single read has it.
async fn cluster_list_keeps_every_field(s: &dyn Store) {
    let a = tenant("team-a", "A");
    s.create_tenant(&a, &created(&a)).await.unwrap();
    let (provider, template) = catalog(s).await;
    let now = kqueen_core::clock::now();
    // Every field survives the list (SQLite's comes as JSON): one with every optional field.
    let mut full = cluster(&a, provider.id, "full", ClusterState::Error);
    full.template_id = Some(template.id);
    full.endpoint = Some("https://full.example.test:6443".into());
    full.error = Some("a \"quoted\" error\non two lines, ünïcode".into());
    full.expires_at = Some(now + chrono::Duration::hours(5));
    full.provisioner_state = serde_json::json!({"build": 7, "queue": "https://ci/queue/9/"});
    full.parameters
        .insert("version".into(), "1.31 \\ \"x\"".into());
    insert(s, &full).await;
    let stored = s.cluster(full.id).await.unwrap();
    let by_name = |n: &str| ClusterFilter {
        name: Some(n.into()),
        ..ClusterFilter::default()
    };
    let (listed, total) = s
        .list_clusters(&by_name("full"), None, Page::default())
        .await
        .unwrap();
    assert_eq!((listed, total), (vec![stored.clone()], 1));
    assert_eq!(stored, full, "and the single read agrees");
}

/// A page of clusters and the number matching in all, from one query: the total follows the
/// filters and the tenant scope, not the page; a page past the end still has the total.
async fn cluster_list_pages_and_totals(s: &dyn Store) {
    let (a, b) = (tenant("team-a", "A"), tenant("team-b", "B"));
    for t in [&a, &b] {
        s.create_tenant(t, &created(t)).await.unwrap();
    }
    let (provider, _) = catalog(s).await;
    for (t, name, state) in [
        (&b, "web", ClusterState::Ready),
        (&a, "db", ClusterState::Ready),
        (&a, "web", ClusterState::Error),
        (&a, "api", ClusterState::Ready),
        (&b, "batch", ClusterState::Provisioning),
    ] {
        insert(s, &cluster(t, provider.id, name, state)).await;
    }
    let list = |filter: ClusterFilter, scope: Option<Vec<Uuid>>, page: Page| async move {
        let (items, total) = s
            .list_clusters(&filter, scope.as_deref(), page)
            .await
            .unwrap();
        let names: Vec<String> = items
            .iter()
            .map(|c| format!("{}/{}", c.tenant_slug, c.name))
            .collect();
        (names, total)
    };
    let all = ClusterFilter::default;
    assert_eq!(
        list(all(), None, Page::new(2, 0)).await,
        (vec!["team-a/api".to_owned(), "team-a/db".to_owned()], 5)
    );
    assert_eq!(
        list(all(), None, Page::new(2, 4)).await,
        (vec!["team-b/web".to_owned()], 5)
    );
    assert_eq!(
        list(all(), None, Page::new(2, 10)).await,
        (vec![], 5),
        "past the end"
    );
    let ready = ClusterFilter {
        state: Some(ClusterState::Ready),
        ..all()
    };
    assert_eq!(
        list(ready, None, Page::new(1, 1)).await,
        (vec!["team-a/db".to_owned()], 3)
    );
    let web_of_b = ClusterFilter {
        tenant: Some("team-b".into()),
        name: Some("WE".into()),
        ..all()
    };
    assert_eq!(
        list(web_of_b, None, Page::default()).await,
        (vec!["team-b/web".to_owned()], 1)
    );
    assert_eq!(
        list(all(), Some(vec![b.id]), Page::new(1, 0)).await,
        (vec!["team-b/batch".to_owned()], 2),
        "scope"
    );
    assert_eq!(
        list(all(), Some(vec![]), Page::default()).await,
        (vec![], 0)
    );
    let nothing = ClusterFilter {
        name: Some("zzz".into()),
        ..all()
    };
    assert_eq!(list(nothing, None, Page::new(2, 2)).await, (vec![], 0));
}

/// Stale accesses as sortable tuples.
async fn stale(s: &dyn Store) -> Vec<(String, String, Option<String>, bool, Uuid)> {
    let mut v: Vec<_> = s
        .stale_accesses(100)
        .await
        .unwrap()
        .into_iter()
        .map(|x| {
            (
                x.username,
                x.granted_role,
                x.current_role,
                x.disabled,
                x.cluster_id,
            )
        })
        .collect();
    v.sort();
    v
}

/// ServiceAccounts whose user left the cluster's tenant, has another role there, or is
/// disabled are stale; only in clusters that can be reached (Ready, Updating).
async fn stale_accesses_follow_memberships(s: &dyn Store) {
    let a = tenant("team-a", "A");
    s.create_tenant(&a, &created(&a)).await.unwrap();
    let (provider, _) = catalog(s).await;
    let ready = cluster(&a, provider.id, "ready", ClusterState::Ready);
    let building = cluster(&a, provider.id, "building", ClusterState::Provisioning);
    insert(s, &ready).await;
    insert(s, &building).await;
    // A new audit entry for every write (each has its own id).
    let audit = || AuditEvent::now(&Actor::system(), "test", "x", Outcome::Success);
    let mut users = Vec::new();
    for (name, role, disabled) in [
        ("amy", Role::Member, false),
        ("adam", Role::Admin, false),
        ("dora", Role::Member, true),
    ] {
        let u = User {
            id: Uuid::now_v7(),
            subject: format!("local:{name}"),
            username: name.into(),
            email: None,
            display_name: None,
            is_operator: false,
            disabled,
            created_at: kqueen_core::clock::now(),
            last_login_at: None,
        };
        s.create_user(&u, None, &audit()).await.unwrap();
        s.put_membership(a.id, u.id, role, MembershipSource::Manual, &audit())
            .await
            .unwrap();
        let expires = kqueen_core::clock::now() + chrono::Duration::hours(8);
        for c in [&ready, &building] {
            s.put_access(
                c.id,
                u.id,
                &format!("kq-{name}"),
                role.as_str(),
                expires,
                &audit(),
            )
            .await
            .unwrap();
        }
        users.push(u);
    }
    let dora = (
        "dora".to_owned(),
        "member".to_owned(),
        Some("member".to_owned()),
        true,
        ready.id,
    );
    assert_eq!(stale(s).await, vec![dora.clone()], "disabled only");
    // The sweep's view: the valid ones, in Ready clusters only.
    let valid: Vec<(String, String)> = s
        .access_grants(100)
        .await
        .unwrap()
        .into_iter()
        .map(|g| {
            assert_eq!(
                g.cluster_id, ready.id,
                "never the cluster still being built"
            );
            (g.username, g.role)
        })
        .collect();
    assert_eq!(
        valid,
        vec![
            ("adam".to_owned(), "admin".to_owned()),
            ("amy".to_owned(), "member".to_owned())
        ],
        "not the disabled user"
    );
    s.delete_membership(a.id, users[0].id, &audit())
        .await
        .unwrap();
    s.put_membership(
        a.id,
        users[1].id,
        Role::Member,
        MembershipSource::Manual,
        &audit(),
    )
    .await
    .unwrap();
    assert_eq!(
        stale(s).await,
        vec![
            (
                "adam".to_owned(),
                "admin".to_owned(),
                Some("member".to_owned()),
                false,
                ready.id
            ),
            ("amy".to_owned(), "member".to_owned(), None, false, ready.id),
            dora.clone(),
        ],
        "left, another role, disabled; never the cluster still being built"
    );
    let listed = s.stale_accesses(100).await.unwrap();
    let of = |name: &str| listed.iter().find(|a| a.username == name).unwrap();
    assert!(s.still_stale(of("adam")).await.unwrap());
    // adam downloads again: the record holds his current role now, and is no longer stale.
    let expires = kqueen_core::clock::now() + chrono::Duration::hours(8);
    s.put_access(
        ready.id,
        users[1].id,
        "kq-adam",
        "member",
        expires,
        &audit(),
    )
    .await
    .unwrap();
    assert!(!s.still_stale(of("adam")).await.unwrap());
    assert!(
        !s.delete_stale_access(of("adam"), &audit()).await.unwrap(),
        "the new record stays"
    );
    assert!(s.delete_stale_access(of("amy"), &audit()).await.unwrap());
    assert_eq!(stale(s).await, vec![dora]);
    // An explicit "revoke access" deletes the record whatever its role.
    assert!(s
        .delete_access(ready.id, users[1].id, &audit())
        .await
        .unwrap());
    assert!(!s
        .delete_access(ready.id, users[1].id, &audit())
        .await
        .unwrap());
}

/// A cluster's history read on one connection is what the separate reads return: operations
/// newest first and limited, the newest timeline entries oldest first, the shared-storage
/// reading only when asked for; another cluster's rows stay out.
async fn cluster_history_matches_the_separate_reads(s: &dyn Store) {
    let a = tenant("team-a", "A");
    s.create_tenant(&a, &created(&a)).await.unwrap();
    let (provider, _) = catalog(s).await;
    let (one, other) = (
        cluster(&a, provider.id, "one", ClusterState::Ready),
        cluster(&a, provider.id, "other", ClusterState::Ready),
    );
    insert(s, &one).await;
    insert(s, &other).await;
    let at = one.created_at;
    let events: Vec<ClusterEvent> = (1..=4)
        .map(|i| {
            let later = at + chrono::Duration::seconds(i);
            ClusterEvent::new(one.id, None, EventKind::State, format!("step {i}"), later)
        })
        .collect();
    s.append_events(&events).await.unwrap();
    let usage = kqueen_core::provisioner::SharedStorage {
        keys: 12,
        bytes: 3456,
        writable: true,
    };
    s.put_shared_storage(one.id, &usage, at).await.unwrap();

    let h = s.history_of(one.id, 10, 3, true).await.unwrap();
    // Every field as the separate reads return it (Postgres sends these rows as JSON).
    assert_eq!(h.operations, s.operations_of(one.id, 10).await.unwrap());
    assert_eq!(h.operations.len(), 1, "the create operation of `one` only");
    assert_eq!(h.events, s.events_of(one.id, None, 3).await.unwrap());
    let messages = |e: &[ClusterEvent]| e.iter().map(|e| e.message.clone()).collect::<Vec<_>>();
    assert_eq!(messages(&h.events), ["step 2", "step 3", "step 4"]);
    let (read, measured) = h.shared_storage.expect("a reading");
    assert_eq!((read.keys, read.bytes, read.writable), (12, 3456, true));
    let (_, separately) = s.shared_storage(one.id).await.unwrap().expect("a reading");
    assert_eq!(measured, separately);

    let without = s.history_of(one.id, 10, 300, false).await.unwrap();
    assert!(without.shared_storage.is_none(), "not asked for");
    assert_eq!(without.events.len(), 5, "the first entry and four appended");
    let other_history = s.history_of(other.id, 10, 300, true).await.unwrap();
    assert_eq!(messages(&other_history.events), ["created"]);
    assert!(other_history.shared_storage.is_none(), "never measured");
}

/// Session loads arriving together (every page request loads its session first) are sent
/// as one query: each still gets its own session, live at its own time, with every write
/// made before it began.
async fn concurrent_session_loads_each_get_their_own_session(s: &dyn Store) {
    // Whole seconds: both databases keep them exactly.
    let now = chrono::DateTime::from_timestamp(chrono::Utc::now().timestamp(), 0).unwrap();
    let later = now + chrono::Duration::hours(1);
    for i in 0..150 {
        let expires = if i % 10 == 0 {
            now - chrono::Duration::seconds(1)
        } else {
            later
        };
        s.session_save(&format!("s{i}"), &format!("{{\"n\":{i}}}"), expires)
            .await
            .unwrap();
    }
    // 150 sessions and 10 unknown ids at once (more than one batch holds).
    let loads = (0..160).map(|i| async move { (i, s.session_load(&format!("s{i}"), now).await) });
    for (i, loaded) in futures::future::join_all(loads).await {
        let loaded = loaded.unwrap();
        match i {
            150.. => assert_eq!(loaded, None, "s{i} was never stored"),
            _ if i % 10 == 0 => assert_eq!(loaded, None, "s{i} has expired"),
            _ => assert_eq!(loaded, Some((format!("{{\"n\":{i}}}"), later)), "s{i}"),
        }
    }
    // Live at the caller's own time: the same row, asked about after it expires.
    let after = later + chrono::Duration::seconds(1);
    assert_eq!(s.session_load("s1", after).await.unwrap(), None);
    // A write is seen by every load that begins after it, alone or together.
    s.session_save("s1", "{\"n\":-1}", later).await.unwrap();
    let again = futures::future::join_all((0..8).map(|_| s.session_load("s1", now))).await;
    for loaded in again {
        assert_eq!(loaded.unwrap(), Some(("{\"n\":-1}".to_owned(), later)));
    }
    s.session_delete("s1").await.unwrap();
    assert_eq!(s.session_load("s1", now).await.unwrap(), None);
}

/// Runs every scenario on a fresh database of each backend.
macro_rules! scenarios {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(#[tokio::test] async fn $name() {
                let db = super::TestDatabase::sqlite();
                let s = db.connect().await;
                assert_eq!(super::Store::backend(&s), super::Backend::Sqlite);
                super::$name(&s).await;
            })*
        }
        mod postgres {
            $(#[tokio::test] async fn $name() {
                let Some(db) = super::TestDatabase::postgres().await else { return };
                let s = db.connect().await;
                assert_eq!(super::Store::backend(&s), super::Backend::Postgres);
                super::$name(&s).await;
                super::Store::close(&s).await;
            })*
        }
    };
}

/// Backups are listed by tenant with their cluster, and removed only once they have ended.
async fn backups_are_listed_by_tenant_and_removed_once_ended(s: &dyn Store) {
    let (a, b) = (tenant("team-a", "A"), tenant("team-b", "B"));
    for t in [&a, &b] {
        s.create_tenant(t, &created(t)).await.unwrap();
    }
    let (provider, _) = catalog(s).await;
    let audit = || AuditEvent::now(&Actor::system(), "test", "x", Outcome::Success);
    let mut taken = Vec::new();
    for (t, name) in [(&a, "one"), (&b, "two")] {
        let c = cluster(t, provider.id, name, ClusterState::Ready);
        insert(s, &c).await;
        let backup = Backup::new(t.id, c.id, false, "tim");
        let now = kqueen_core::clock::now();
        let op = Operation::new(
            c.id,
            OperationKind::Backup,
            Some(OperationTarget::Backup(backup.id)),
            "tim",
            now,
            chrono::Duration::hours(1),
        );
        let event = ClusterEvent::new(c.id, Some(op.id), EventKind::State, "backup", now);
        s.queue_backup(&backup, &op, &event, &audit())
            .await
            .unwrap();
        taken.push(backup);
    }
    let listed = s.backups_in(Some(&[a.id]), 10).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].backup, taken[0]);
    assert_eq!(
        (
            listed[0].cluster_name.as_str(),
            listed[0].tenant_slug.as_str()
        ),
        ("one", "team-a")
    );
    assert!(!listed[0].cluster_deleted);
    assert!(s.backups_in(Some(&[]), 10).await.unwrap().is_empty());
    let all: Vec<Uuid> = s
        .backups_in(None, 10)
        .await
        .unwrap()
        .iter()
        .map(|l| l.backup.id)
        .collect();
    assert_eq!(all, vec![taken[1].id, taken[0].id], "newest first");
    assert_eq!(s.backups_in(None, 1).await.unwrap().len(), 1);

    // Running: kept. Ended: removed, once.
    let id = taken[0].id;
    assert!(matches!(
        s.remove_backup(id, &audit()).await,
        Err(Error::Conflict(_))
    ));
    s.finish_backup(id, Err("refused"), kqueen_core::clock::now())
        .await
        .unwrap();
    s.remove_backup(id, &audit()).await.unwrap();
    assert!(matches!(s.backup(id).await, Err(Error::NotFound(_))));
    assert!(matches!(
        s.remove_backup(id, &audit()).await,
        Err(Error::NotFound(_))
    ));
    assert!(s.backups_in(Some(&[a.id]), 10).await.unwrap().is_empty());
}

/// A template's admin access is kept, and changed by an update.
async fn templates_keep_their_admin_access(s: &dyn Store) {
    let (_, mut template) = catalog(s).await;
    assert_eq!(s.template(template.id).await.unwrap(), template);
    template.admin_access = AdminAccess::ClusterAdmin;
    let audit = AuditEvent::now(
        &Actor::system(),
        action::TEMPLATE_UPDATE,
        "small",
        Outcome::Success,
    );
    s.update_template(&template, &audit).await.unwrap();
    let read = s.template(template.id).await.unwrap();
    assert_eq!(read.admin_access, AdminAccess::ClusterAdmin);
    assert_eq!(read, template);
}

/// A periodic job's lease: one holder at a time, renewed by it, taken by another once it
/// has run out or been given up; of replicas asking at once, one wins.
async fn job_leases_go_to_one_replica_at_a_time(s: &dyn Store) {
    let t0 = kqueen_core::clock::now();
    let at = |secs: i64| t0 + chrono::Duration::seconds(secs);
    let job = "inventory-sync";
    assert!(s.take_job_lease(job, "a", at(0), at(10)).await.unwrap());
    assert!(!s.take_job_lease(job, "b", at(1), at(11)).await.unwrap());
    // Renewed by its holder: still a's after its first expiry.
    assert!(s.take_job_lease(job, "a", at(5), at(15)).await.unwrap());
    assert!(!s.take_job_lease(job, "b", at(12), at(22)).await.unwrap());
    // Run out: b's.
    assert!(s.take_job_lease(job, "b", at(16), at(26)).await.unwrap());
    assert!(!s.take_job_lease(job, "a", at(17), at(27)).await.unwrap());
    // Another job is another lease.
    assert!(s
        .take_job_lease("sweeps", "a", at(17), at(27))
        .await
        .unwrap());
    // Given up by someone who holds another: nothing changes for this one; by its holder
    // (all it holds): free.
    assert!(s
        .take_job_lease("statistics", "c", at(17), at(27))
        .await
        .unwrap());
    s.drop_job_leases("a").await.unwrap();
    assert!(!s.take_job_lease(job, "a", at(18), at(28)).await.unwrap());
    assert!(s
        .take_job_lease("sweeps", "c", at(18), at(28))
        .await
        .unwrap());
    s.drop_job_leases("b").await.unwrap();
    assert!(s.take_job_lease(job, "a", at(18), at(28)).await.unwrap());
    assert!(!s
        .take_job_lease("statistics", "a", at(18), at(28))
        .await
        .unwrap());
    s.drop_job_leases("c").await.unwrap();
    // Eight replicas at once for a new job: one wins.
    let asks = (0..8).map(|n| {
        let owner = format!("r{n}");
        async move {
            s.take_job_lease("statistics", &owner, at(20), at(30))
                .await
                .unwrap()
        }
    });
    let won = futures::future::join_all(asks).await;
    assert_eq!(won.iter().filter(|w| **w).count(), 1, "{won:?}");
}

/// Ends every unfinished operation (the create operations [`insert`] queues), as a worker
/// would.
async fn finish_all(s: &dyn Store) {
    let now = kqueen_core::clock::now();
    let until = now + chrono::Duration::minutes(1);
    while let Some(op) = s.claim_operation("test", now, until).await.unwrap() {
        let change = store::ClusterChange::default();
        let done = s
            .finish_operation(
                op.id,
                "test",
                OperationState::Succeeded,
                None,
                &change,
                &[],
                now,
            )
            .await
            .unwrap();
        assert!(done, "{op:?}");
    }
}

/// Queues the deletion of `c` (no approval) as a day-2 request would: the write's answer.
async fn queue_delete(s: &dyn Store, c: &Cluster) -> kqueen_core::Result<()> {
    let now = kqueen_core::clock::now();
    let op = Operation::new(
        c.id,
        OperationKind::Delete,
        None,
        "test",
        now,
        chrono::Duration::hours(1),
    );
    let event = ClusterEvent::new(c.id, Some(op.id), EventKind::State, "deleting", now);
    let audit = AuditEvent::now(
        &Actor::system(),
        action::CLUSTER_DELETE,
        c.name.as_str(),
        Outcome::Success,
    );
    s.enqueue_operation(&op, ClusterState::Deleting, &event, &audit, false)
        .await
}

/// A timeline entry and an audit event for a write to cluster `c` at `at`.
fn written(
    c: &Cluster,
    verb: &str,
    at: chrono::DateTime<chrono::Utc>,
) -> (ClusterEvent, AuditEvent) {
    let event = ClusterEvent::new(c.id, None, EventKind::State, verb, at);
    let audit = AuditEvent::now(&Actor::system(), verb, c.name.as_str(), Outcome::Success)
        .in_tenant(c.tenant_id);
    (event, audit)
}

/// A production mark is read back by id and in lists (SQLite's arrive as JSON), and the
/// time-to-live sweep passes production clusters by.
async fn production_marks_are_kept_and_spare_clusters_from_their_ttl(s: &dyn Store) {
    let a = tenant("team-a", "A");
    s.create_tenant(&a, &created(&a)).await.unwrap();
    let (provider, _) = catalog(s).await;
    let now = kqueen_core::clock::now();
    let mut prod = cluster(&a, provider.id, "prod", ClusterState::Ready);
    let mut dev = cluster(&a, provider.id, "dev", ClusterState::Ready);
    prod.expires_at = Some(now - chrono::Duration::hours(2));
    dev.expires_at = Some(now - chrono::Duration::hours(1));
    insert(s, &prod).await;
    insert(s, &dev).await;
    finish_all(s).await;
    let expired = || async move {
        let list = s
            .expired_clusters(kqueen_core::clock::now(), 10)
            .await
            .unwrap();
        list.into_iter()
            .map(|c| c.name.to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(expired().await, vec!["prod", "dev"]);
    let marks = || async move {
        let (list, _) = s
            .list_clusters(&ClusterFilter::default(), None, Page::default())
            .await
            .unwrap();
        list.into_iter()
            .map(|c| (c.name.to_string(), c.production))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        marks().await,
        vec![("dev".to_owned(), false), ("prod".to_owned(), false)]
    );

    let (event, audit) = written(&prod, action::CLUSTER_PRODUCTION, now);
    s.set_production(prod.id, true, &event, &audit)
        .await
        .unwrap();
    let read = s.cluster(prod.id).await.unwrap();
    assert!(read.production);
    assert!(!s.cluster(dev.id).await.unwrap().production);
    assert_eq!(
        marks().await,
        vec![("dev".to_owned(), false), ("prod".to_owned(), true)]
    );
    let (listed, _) = s
        .list_clusters(&ClusterFilter::default(), Some(&[a.id]), Page::default())
        .await
        .unwrap();
    assert_eq!(listed[1], read, "the list and the single read agree");
    assert_eq!(
        expired().await,
        vec!["dev"],
        "production clusters outlive their TTL"
    );
    let events = s.events_of(prod.id, None, 50).await.unwrap();
    assert!(
        events
            .iter()
            .any(|e| e.message == action::CLUSTER_PRODUCTION),
        "{events:?}"
    );

    // The write itself refuses a delete of a production cluster that no second person
    // approved (a mark set after the caller read the cluster, the TTL sweep's race).
    let refused = queue_delete(s, &prod).await;
    assert!(
        matches!(&refused, Err(Error::Conflict(m)) if m.contains("production")),
        "{refused:?}"
    );
    assert_eq!(s.cluster(prod.id).await.unwrap().state, ClusterState::Ready);
    assert!(!s
        .operations_of(prod.id, 10)
        .await
        .unwrap()
        .iter()
        .any(|o| o.kind == OperationKind::Delete));
    queue_delete(s, &dev).await.unwrap();
    assert_eq!(
        s.cluster(dev.id).await.unwrap().state,
        ClusterState::Deleting
    );

    let (event, audit) = written(&prod, action::CLUSTER_PRODUCTION, now);
    s.set_production(prod.id, false, &event, &audit)
        .await
        .unwrap();
    assert!(!s.cluster(prod.id).await.unwrap().production);
    assert_eq!(expired().await, vec!["prod"], "dev is being deleted");
    let audited = s
        .list_audit(
            &AuditQuery {
                action: Some(action::CLUSTER_PRODUCTION.into()),
                ..AuditQuery::default()
            },
            Page::default(),
        )
        .await
        .unwrap();
    assert_eq!(audited.len(), 2);

    let mut gone = cluster(&a, provider.id, "gone", ClusterState::Ready);
    gone.id = Uuid::now_v7();
    let (event, audit) = written(&gone, action::CLUSTER_PRODUCTION, now);
    assert!(matches!(
        s.set_production(gone.id, true, &event, &audit).await,
        Err(Error::NotFound(_))
    ));
}

/// A person asking or deciding.
fn person(name: &str) -> Identity {
    Identity {
        user_id: Uuid::now_v7(),
        username: name.into(),
        email: None,
        display_name: None,
        is_operator: false,
        memberships: Vec::new(),
    }
}

/// Requests for approval: one pending per cluster and action, decided once and only while
/// pending and not expired, listed by cluster, tenants and pending time, newest first.
async fn approval_requests_are_decided_once_and_listed_by_filter(s: &dyn Store) {
    let (a, b) = (tenant("team-a", "A"), tenant("team-b", "B"));
    for t in [&a, &b] {
        s.create_tenant(t, &created(t)).await.unwrap();
    }
    let (provider, _) = catalog(s).await;
    let one = cluster(&a, provider.id, "one", ClusterState::Ready);
    let two = cluster(&b, provider.id, "two", ClusterState::Ready);
    insert(s, &one).await;
    insert(s, &two).await;
    let (one, two) = (&one, &two);
    let amy = person("amy");
    let t0 = kqueen_core::clock::now();
    let at = |secs: i64| t0 + chrono::Duration::seconds(secs);
    let ask = |c: &Cluster,
               action: ApprovalAction,
               restore: Option<RestoreDetail>,
               when: chrono::DateTime<chrono::Utc>| {
        Approval::new(
            c.tenant_id,
            c.id,
            c.name.as_str(),
            action,
            restore,
            "the reason \"quoted\", ünïcode",
            &amy,
            when,
        )
    };
    let request = |r: Approval| async move {
        let c = if r.cluster_id == one.id { one } else { two };
        let (event, audit) = written(c, action::APPROVAL_REQUEST, r.requested_at);
        s.request_approval(&r, &event, &audit).await.map(|()| r)
    };

    // Stored as asked; a second pending request of the same action is refused.
    let delete_one = request(ask(one, ApprovalAction::Delete, None, at(1)))
        .await
        .unwrap();
    assert_eq!(s.approval(delete_one.id).await.unwrap(), delete_one);
    let again = request(ask(one, ApprovalAction::Delete, None, at(2))).await;
    assert!(
        matches!(&again, Err(Error::Conflict(m)) if m.contains("amy")),
        "{again:?}"
    );
    let unprotect_one = request(ask(one, ApprovalAction::Unprotect, None, at(2)))
        .await
        .unwrap();
    let detail = RestoreDetail {
        backup_id: Uuid::now_v7(),
        namespaces: vec!["shop".into(), "web".into()],
    };
    let restore_two = request(ask(two, ApprovalAction::Restore, Some(detail), at(3)))
        .await
        .unwrap();
    assert_eq!(s.approval(restore_two.id).await.unwrap(), restore_two);
    // An expired request blocks nothing.
    let old = request(ask(
        two,
        ApprovalAction::Delete,
        None,
        at(-(APPROVAL_HOURS * 3600) - 60),
    ))
    .await
    .unwrap();
    let delete_two = request(ask(two, ApprovalAction::Delete, None, at(4)))
        .await
        .unwrap();
    let mut gone = cluster(&a, provider.id, "gone", ClusterState::Ready);
    gone.id = Uuid::now_v7();
    let (event, audit) = written(&gone, action::APPROVAL_REQUEST, at(5));
    assert!(matches!(
        s.request_approval(
            &ask(&gone, ApprovalAction::Delete, None, at(5)),
            &event,
            &audit
        )
        .await,
        Err(Error::NotFound(_))
    ));
    assert!(matches!(
        s.approval(Uuid::now_v7()).await,
        Err(Error::NotFound(_))
    ));

    // Listed by filter, newest first.
    let ids = |filter: store::ApprovalFilter, limit: u32| async move {
        s.approvals(&filter, limit)
            .await
            .unwrap()
            .into_iter()
            .map(|r| r.id)
            .collect::<Vec<_>>()
    };
    let all = store::ApprovalFilter::default;
    assert_eq!(
        ids(all(), 10).await,
        vec![
            delete_two.id,
            restore_two.id,
            unprotect_one.id,
            delete_one.id,
            old.id
        ]
    );
    assert_eq!(ids(all(), 2).await, vec![delete_two.id, restore_two.id]);
    let of_one = || store::ApprovalFilter {
        cluster: Some(one.id),
        ..all()
    };
    assert_eq!(
        ids(of_one(), 10).await,
        vec![unprotect_one.id, delete_one.id]
    );
    let in_tenants = |t: Vec<Uuid>| store::ApprovalFilter {
        tenants: Some(t),
        ..all()
    };
    assert_eq!(
        ids(in_tenants(vec![a.id]), 10).await,
        vec![unprotect_one.id, delete_one.id]
    );
    assert_eq!(ids(in_tenants(vec![a.id, b.id]), 10).await.len(), 5);
    assert!(ids(in_tenants(vec![]), 10).await.is_empty());
    let pending = |when| store::ApprovalFilter {
        pending_at: Some(when),
        ..all()
    };
    assert_eq!(
        ids(pending(at(10)), 10).await,
        vec![
            delete_two.id,
            restore_two.id,
            unprotect_one.id,
            delete_one.id
        ],
        "the expired one is not pending"
    );
    let pending_of_two = store::ApprovalFilter {
        cluster: Some(two.id),
        tenants: Some(vec![b.id]),
        pending_at: Some(at(10)),
    };
    assert_eq!(
        ids(pending_of_two, 10).await,
        vec![delete_two.id, restore_two.id]
    );
    let wrong_tenant = store::ApprovalFilter {
        cluster: Some(two.id),
        tenants: Some(vec![a.id]),
        pending_at: None,
    };
    assert!(ids(wrong_tenant, 10).await.is_empty());

    // Decided once; never once expired.
    let decide = |id: Uuid,
                  state: ApprovalState,
                  note: Option<&'static str>,
                  when: chrono::DateTime<chrono::Utc>| async move {
        let c = s.approval(id).await.unwrap();
        let c = if c.cluster_id == one.id { one } else { two };
        let (event, audit) = written(c, action::APPROVAL_APPROVE, when);
        let decision = store::Decision {
            state,
            by: "tim",
            at: when,
            note,
        };
        s.decide_approval(id, &decision, &event, &audit)
            .await
            .unwrap()
    };
    assert!(decide(delete_one.id, ApprovalState::Approved, None, at(10)).await);
    assert!(!decide(delete_one.id, ApprovalState::Refused, Some("late"), at(11)).await);
    let decided = s.approval(delete_one.id).await.unwrap();
    assert_eq!(
        (
            decided.state,
            decided.decided_by.as_deref(),
            decided.decided_at,
            decided.note.as_deref()
        ),
        (ApprovalState::Approved, Some("tim"), Some(at(10)), None)
    );
    assert!(!decide(old.id, ApprovalState::Approved, None, at(10)).await);
    let old_read = s.approval(old.id).await.unwrap();
    assert_eq!(old_read.state, ApprovalState::Pending, "never written");
    assert_eq!(old_read.state_at(at(10)), ApprovalState::Expired);
    assert!(old_read.decided_by.is_none());
    // Past its time, even a fresh request cannot be decided.
    let late = at(APPROVAL_HOURS * 3600 + 4);
    assert!(!decide(delete_two.id, ApprovalState::Approved, None, late).await);
    assert!(
        decide(
            unprotect_one.id,
            ApprovalState::Refused,
            Some("not now"),
            at(12)
        )
        .await
    );
    let refused = s.approval(unprotect_one.id).await.unwrap();
    assert_eq!(
        (refused.state, refused.note.as_deref()),
        (ApprovalState::Refused, Some("not now"))
    );
    let approvals_audited = s
        .list_audit(
            &AuditQuery {
                action: Some(action::APPROVAL_APPROVE.into()),
                ..AuditQuery::default()
            },
            Page::default(),
        )
        .await
        .unwrap();
    assert_eq!(
        approvals_audited.len(),
        2,
        "only decisions written are audited"
    );

    // What became of approved requests: the operation queued, or why not.
    let op = Uuid::now_v7();
    s.approval_outcome(delete_one.id, Ok(Some(op)))
        .await
        .unwrap();
    let ran = s.approval(delete_one.id).await.unwrap();
    assert_eq!(
        (ran.state, ran.operation_id, ran.note),
        (ApprovalState::Approved, Some(op), None)
    );
    assert!(decide(delete_two.id, ApprovalState::Approved, None, at(13)).await);
    s.approval_outcome(delete_two.id, Err("two is busy"))
        .await
        .unwrap();
    let failed = s.approval(delete_two.id).await.unwrap();
    assert_eq!(
        (failed.state, failed.operation_id, failed.note.as_deref()),
        (ApprovalState::Failed, None, Some("two is busy"))
    );
    assert_eq!(
        ids(pending(at(14)), 10).await,
        vec![restore_two.id],
        "decided requests are no longer pending"
    );
    // Decided requests block nothing.
    request(ask(one, ApprovalAction::Delete, None, at(15)))
        .await
        .unwrap();
}

/// Of people asking for the same thing at once, one request is stored; of people deciding
/// one request at once, one decides it.
async fn approval_races_have_one_winner(s: &dyn Store) {
    let a = tenant("team-a", "A");
    s.create_tenant(&a, &created(&a)).await.unwrap();
    let (provider, _) = catalog(s).await;
    let prod = cluster(&a, provider.id, "prod", ClusterState::Ready);
    insert(s, &prod).await;
    let prod = &prod;
    let now = kqueen_core::clock::now();
    let asks = (0..8).map(|n| async move {
        let who = person(&format!("p{n}"));
        let r = Approval::new(
            a.id,
            prod.id,
            "prod",
            ApprovalAction::Delete,
            None,
            "",
            &who,
            now,
        );
        let (event, audit) = written(prod, action::APPROVAL_REQUEST, now);
        s.request_approval(&r, &event, &audit).await.map(|()| r.id)
    });
    let asked = futures::future::join_all(asks).await;
    let stored: Vec<Uuid> = asked
        .iter()
        .filter_map(|r| r.as_ref().ok())
        .copied()
        .collect();
    assert_eq!(stored.len(), 1, "{asked:?}");
    assert!(
        asked
            .iter()
            .all(|r| matches!(r, Ok(_) | Err(Error::Conflict(_)))),
        "{asked:?}"
    );
    let all = s
        .approvals(&store::ApprovalFilter::default(), 10)
        .await
        .unwrap();
    assert_eq!(all.len(), 1);
    let id = stored[0];
    let decides = (0..8).map(|n| async move {
        let by = format!("admin{n}");
        let decision = store::Decision {
            state: ApprovalState::Approved,
            by: &by,
            at: now,
            note: None,
        };
        let (event, audit) = written(prod, action::APPROVAL_APPROVE, now);
        s.decide_approval(id, &decision, &event, &audit)
            .await
            .unwrap()
    });
    let won = futures::future::join_all(decides).await;
    assert_eq!(won.iter().filter(|w| **w).count(), 1, "{won:?}");
    let decided = s.approval(id).await.unwrap();
    assert_eq!(decided.state, ApprovalState::Approved);
    let events = s.events_of(prod.id, None, 100).await.unwrap();
    let approvals = events
        .iter()
        .filter(|e| e.message == action::APPROVAL_APPROVE)
        .count();
    assert_eq!(approvals, 1, "one decision on the timeline");
}

/// A node being replaced is an operation of the cluster's own, like a scale: a delete waits
/// for it (409) instead of cancelling it half-way, as it cancels what runs in the cluster.
async fn a_delete_never_cancels_a_node_replacement(s: &dyn Store) {
    let a = tenant("team-a", "A");
    s.create_tenant(&a, &created(&a)).await.unwrap();
    let (provider, _) = catalog(s).await;
    let c = cluster(&a, provider.id, "nodes", ClusterState::Ready);
    insert(s, &c).await;
    finish_all(s).await;
    let now = kqueen_core::clock::now();
    let audit = || {
        AuditEvent::now(
            &Actor::system(),
            action::CLUSTER_DELETE,
            "x",
            Outcome::Success,
        )
    };
    let replace = Operation::new(
        c.id,
        OperationKind::ReplaceNode,
        Some(OperationTarget::Node("worker-1".into())),
        "test",
        now,
        chrono::Duration::hours(1),
    );
    let event = ClusterEvent::new(c.id, Some(replace.id), EventKind::State, "replace", now);
    s.enqueue_operation(&replace, ClusterState::Updating, &event, &audit(), false)
        .await
        .unwrap();
    let stored = s.operations_of(c.id, 10).await.unwrap();
    let stored = stored.iter().find(|o| o.id == replace.id).unwrap();
    assert_eq!(stored.node(), Ok("worker-1"));
    let busy = queue_delete(s, &c).await;
    assert!(matches!(busy, Err(Error::Conflict(_))), "{busy:?}");
    let ops = s.operations_of(c.id, 10).await.unwrap();
    let replace = ops.iter().find(|o| o.id == replace.id).unwrap();
    assert_eq!(replace.state, OperationState::Pending);
    assert_eq!(s.cluster(c.id).await.unwrap().state, ClusterState::Updating);
}

/// A deleted cluster's requests wait for nothing: they leave the pending list (and stay in
/// its history).
async fn pending_requests_of_a_deleted_cluster_are_not_listed(s: &dyn Store) {
    let a = tenant("team-a", "A");
    s.create_tenant(&a, &created(&a)).await.unwrap();
    let (provider, _) = catalog(s).await;
    let c = cluster(&a, provider.id, "short-lived", ClusterState::Ready);
    insert(s, &c).await;
    finish_all(s).await;
    let now = kqueen_core::clock::now();
    let amy = person("amy");
    let request = Approval::new(
        a.id,
        c.id,
        c.name.as_str(),
        ApprovalAction::Unprotect,
        None,
        "",
        &amy,
        now,
    );
    let (event, audit) = written(&c, action::APPROVAL_REQUEST, now);
    s.request_approval(&request, &event, &audit).await.unwrap();
    let pending = || async move {
        let filter = store::ApprovalFilter {
            pending_at: Some(kqueen_core::clock::now()),
            ..store::ApprovalFilter::default()
        };
        s.approvals(&filter, 10).await.unwrap().len()
    };
    assert_eq!(pending().await, 1);
    queue_delete(s, &c).await.unwrap();
    let now = kqueen_core::clock::now();
    let until = now + chrono::Duration::minutes(1);
    let op = s
        .claim_operation("test", now, until)
        .await
        .unwrap()
        .unwrap();
    let change = store::ClusterChange {
        state: None,
        deleted: true,
        ..store::ClusterChange::default()
    };
    assert!(s
        .finish_operation(
            op.id,
            "test",
            OperationState::Succeeded,
            None,
            &change,
            &[],
            now
        )
        .await
        .unwrap());
    assert_eq!(pending().await, 0);
    let history = store::ApprovalFilter {
        cluster: Some(c.id),
        ..store::ApprovalFilter::default()
    };
    assert_eq!(s.approvals(&history, 10).await.unwrap().len(), 1);
}

/// Rollouts: recorded with their clusters and tally; a cluster is in one open rollout at a
/// time (checked in the write); moves are conditional on the state read (one winner); an
/// abort skips the waiting clusters; the driver's list and the tenant filter.
async fn rollouts_hold_their_clusters_and_move_once(s: &dyn Store) {
    use kqueen_core::rollout::{
        MemberState, MemberTally, Rollout, RolloutFilter, RolloutMember, RolloutState,
    };
    use kqueen_core::store::{MemberChange, RolloutChange};
    let a = tenant("team-a", "A");
    s.create_tenant(&a, &created(&a)).await.unwrap();
    let (provider, _) = catalog(s).await;
    let clusters: Vec<Cluster> = (0..3)
        .map(|i| cluster(&a, provider.id, &format!("c{i}"), ClusterState::Ready))
        .collect();
    for c in &clusters {
        insert(s, c).await;
    }
    let now = kqueen_core::clock::now();
    let rollout = |tenant_id: Option<Uuid>| Rollout {
        id: Uuid::now_v7(),
        tenant_id,
        target_version: "1.21".into(),
        wave_size: 2,
        filter: RolloutFilter {
            version: Some("1.20".into()),
            ..RolloutFilter::default()
        },
        state: RolloutState::Running,
        wave: 0,
        waves: 2,
        reason: None,
        created_by: "alice".into(),
        created_at: now,
        updated_at: now,
        tally: MemberTally::default(),
    };
    let members = |r: &Rollout, of: &[Cluster]| -> Vec<RolloutMember> {
        of.iter()
            .enumerate()
            .map(|(i, c)| RolloutMember {
                rollout_id: r.id,
                cluster_id: c.id,
                cluster_name: c.name.to_string(),
                tenant_id: a.id,
                tenant_slug: "team-a".into(),
                wave: u32::try_from(i / 2).unwrap(),
                position: u32::try_from(i % 2).unwrap(),
                from_version: "1.20".into(),
                state: MemberState::Waiting,
                operation_id: None,
                reason: None,
                updated_at: now,
            })
            .collect()
    };
    let audit = || {
        AuditEvent::now(
            &Actor::system(),
            action::ROLLOUT_START,
            "r",
            Outcome::Success,
        )
    };
    let first = rollout(Some(a.id));
    s.create_rollout(&first, &members(&first, &clusters), &audit())
        .await
        .unwrap();
    let read = s.rollout(first.id).await.unwrap();
    assert_eq!(read.filter, first.filter);
    assert_eq!((read.tally.waiting, read.tally.total()), (3, 3));
    let m = s.rollout_members(first.id).await.unwrap();
    assert_eq!(
        m.iter()
            .map(|m| (m.cluster_name.as_str(), m.wave))
            .collect::<Vec<_>>(),
        vec![("c0", 0), ("c1", 0), ("c2", 1)]
    );
    assert_eq!(s.clusters_in_rollouts().await.unwrap().len(), 3);
    assert_eq!(s.driven_rollouts().await.unwrap(), vec![first.id]);

    // A second rollout over c2 is refused, nothing of it written.
    let second = rollout(None);
    let taken = s
        .create_rollout(&second, &members(&second, &clusters[2..]), &audit())
        .await;
    assert!(
        matches!(&taken, Err(Error::Conflict(m)) if m.contains("c2")),
        "{taken:?}"
    );
    assert!(matches!(
        s.rollout(second.id).await,
        Err(Error::NotFound(_))
    ));

    // One winner per move.
    let op = Uuid::now_v7();
    let upgrading = MemberChange {
        state: MemberState::Upgrading,
        operation_id: None,
        reason: None,
        at: now,
    };
    let c0 = clusters[0].id;
    assert!(s
        .move_member(first.id, c0, MemberState::Waiting, &upgrading)
        .await
        .unwrap());
    assert!(!s
        .move_member(first.id, c0, MemberState::Waiting, &upgrading)
        .await
        .unwrap());
    let with_op = MemberChange {
        operation_id: Some(op),
        ..upgrading.clone()
    };
    assert!(s
        .move_member(first.id, c0, MemberState::Upgrading, &with_op)
        .await
        .unwrap());
    let failed = MemberChange {
        state: MemberState::Failed,
        operation_id: None,
        reason: Some("broken"),
        at: now,
    };
    assert!(s
        .move_member(first.id, c0, MemberState::Upgrading, &failed)
        .await
        .unwrap());
    let m0 = s.rollout_members(first.id).await.unwrap().remove(0);
    assert_eq!(
        (m0.state, m0.operation_id, m0.reason.as_deref()),
        (MemberState::Failed, Some(op), Some("broken"))
    );
    // Back to waiting forgets the operation.
    let again = MemberChange {
        state: MemberState::Waiting,
        operation_id: None,
        reason: Some("tried again"),
        at: now,
    };
    assert!(s
        .move_member(first.id, c0, MemberState::Failed, &again)
        .await
        .unwrap());
    assert_eq!(
        s.rollout_members(first.id).await.unwrap()[0].operation_id,
        None
    );

    let next_wave = RolloutChange {
        state: RolloutState::Running,
        wave: Some(1),
        reason: None,
        at: now,
    };
    assert!(s
        .move_rollout(first.id, &[RolloutState::Running], &next_wave, None)
        .await
        .unwrap());
    let paused = RolloutChange {
        state: RolloutState::Paused,
        wave: None,
        reason: Some("wave 1 of 2: c0: broken"),
        at: now,
    };
    assert!(s
        .move_rollout(first.id, &[RolloutState::Running], &paused, Some(&audit()))
        .await
        .unwrap());
    // A person's pause keeps the wave a driver turn moved to.
    assert_eq!(s.rollout(first.id).await.unwrap().wave, 1);
    assert!(!s
        .move_rollout(first.id, &[RolloutState::Running], &paused, None)
        .await
        .unwrap());
    // Paused, with nothing upgrading: the driver leaves it alone.
    assert!(s.driven_rollouts().await.unwrap().is_empty());
    let aborted = RolloutChange {
        state: RolloutState::Aborted,
        wave: None,
        reason: Some("aborted by alice"),
        at: now,
    };
    assert!(s
        .move_rollout(
            first.id,
            &[RolloutState::Running, RolloutState::Paused],
            &aborted,
            None
        )
        .await
        .unwrap());
    let read = s.rollout(first.id).await.unwrap();
    assert_eq!((read.state, read.tally.skipped), (RolloutState::Aborted, 3));
    assert!(s.clusters_in_rollouts().await.unwrap().is_empty());

    // Now free: the second rollout takes c2. Tenant admins see their tenant's only.
    s.create_rollout(&second, &members(&second, &clusters[2..]), &audit())
        .await
        .unwrap();
    let all: Vec<Uuid> = s
        .rollouts(None, 10)
        .await
        .unwrap()
        .iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(all, vec![second.id, first.id]);
    let of_a: Vec<Uuid> = s
        .rollouts(Some(&[a.id]), 10)
        .await
        .unwrap()
        .iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(of_a, vec![first.id]);
    assert!(s.rollouts(Some(&[]), 10).await.unwrap().is_empty());
}

/// A cluster's autoscaling: set (replacing what earlier turns left), turns recorded with
/// their samples and timeline entries, old samples forgotten, the longest-waiting cluster
/// first, turned off once.
async fn autoscaling_keeps_settings_turns_and_samples(s: &dyn Store) {
    use kqueen_core::autoscale::{AutoscaleSettings, Autoscaling, Sample};
    use kqueen_core::store::AutoscaleTurn;
    let a = tenant("team-a", "A");
    s.create_tenant(&a, &created(&a)).await.unwrap();
    let (provider, _) = catalog(s).await;
    let (one, two) = (
        cluster(&a, provider.id, "one", ClusterState::Ready),
        cluster(&a, provider.id, "two", ClusterState::Ready),
    );
    insert(s, &one).await;
    insert(s, &two).await;
    let audit = || {
        AuditEvent::now(
            &Actor::system(),
            action::AUTOSCALE_SET,
            "x",
            Outcome::Success,
        )
    };
    let now = kqueen_core::clock::now();
    let on = |c: &Cluster, max_nodes| Autoscaling {
        cluster_id: c.id,
        tenant_id: c.tenant_id,
        settings: AutoscaleSettings {
            max_nodes,
            ..AutoscaleSettings::default()
        },
        underused: Default::default(),
        last_reason: None,
        last_turn_at: None,
        updated_by: "tim".into(),
        updated_at: now,
    };
    assert_eq!(s.autoscaling(one.id).await.unwrap(), None);
    s.put_autoscaling(&on(&one, 4), &audit()).await.unwrap();
    s.put_autoscaling(&on(&two, 5), &audit()).await.unwrap();
    assert_eq!(s.autoscaling(one.id).await.unwrap(), Some(on(&one, 4)));

    // A turn at `one`: what it leaves, a sample, a timeline entry.
    let underused = [("w-1".to_owned(), now - chrono::Duration::minutes(3))].into();
    let sample = |minutes: i64, nodes| Sample {
        taken_at: now - chrono::Duration::minutes(minutes),
        wanted: nodes,
        nodes,
        ready: nodes,
        pending_pods: 1,
    };
    let event = ClusterEvent::new(one.id, None, EventKind::Log, "Autoscaling: held", now);
    for (minutes, nodes) in [(60 * 24 * 8, 1), (30, 2), (1, 3)] {
        let taken = sample(minutes, nodes);
        s.record_autoscale_turn(
            AutoscaleTurn {
                cluster_id: one.id,
                underused: &underused,
                reason: "held",
                at: now,
                sample: Some(&taken),
                event: (minutes == 1).then_some(&event),
            },
            now - chrono::Duration::days(7),
        )
        .await
        .unwrap();
    }
    let kept = s.autoscaling(one.id).await.unwrap().unwrap();
    assert_eq!(kept.underused, underused);
    assert_eq!(kept.last_reason.as_deref(), Some("held"));
    assert_eq!(kept.last_turn_at, Some(now));
    // The eight-day-old sample is gone; the newest last, the limit takes the newest.
    let since = now - chrono::Duration::days(7);
    let samples = s.autoscale_samples(one.id, since, 10).await.unwrap();
    assert_eq!(samples, vec![sample(30, 2), sample(1, 3)]);
    assert_eq!(
        s.autoscale_samples(one.id, since, 1).await.unwrap(),
        vec![sample(1, 3)]
    );
    let events = s.events_of(one.id, None, 10).await.unwrap();
    assert!(
        events.iter().any(|e| e.message == "Autoscaling: held"),
        "{events:?}"
    );
    // Setting it again forgets what the turns left.
    s.put_autoscaling(&on(&one, 6), &audit()).await.unwrap();
    assert_eq!(s.autoscaling(one.id).await.unwrap(), Some(on(&one, 6)));

    // Never turned first, then the longest ago.
    let order: Vec<Uuid> = s
        .autoscaled_clusters(10)
        .await
        .unwrap()
        .iter()
        .map(|a| a.cluster_id)
        .collect();
    assert_eq!(order.len(), 2);
    s.record_autoscale_turn(
        AutoscaleTurn {
            cluster_id: one.id,
            underused: &Default::default(),
            reason: "x",
            at: now,
            sample: None,
            event: None,
        },
        since,
    )
    .await
    .unwrap();
    let first = s.autoscaled_clusters(1).await.unwrap();
    assert_eq!(first[0].cluster_id, two.id, "never turned comes first");

    assert!(s.remove_autoscaling(two.id, &audit()).await.unwrap());
    assert!(!s.remove_autoscaling(two.id, &audit()).await.unwrap());
    assert_eq!(s.autoscaled_clusters(10).await.unwrap().len(), 1);
}

scenarios!(
    concurrent_session_loads_each_get_their_own_session,
    autoscaling_keeps_settings_turns_and_samples,
    cluster_history_matches_the_separate_reads,
    rollouts_hold_their_clusters_and_move_once,
    pending_requests_of_a_deleted_cluster_are_not_listed,
    a_delete_never_cancels_a_node_replacement,
    approval_races_have_one_winner,
    approval_requests_are_decided_once_and_listed_by_filter,
    production_marks_are_kept_and_spare_clusters_from_their_ttl,
    backups_are_listed_by_tenant_and_removed_once_ended,
    job_leases_go_to_one_replica_at_a_time,
    templates_keep_their_admin_access,
    tenants_round_trip,
    tenant_list_filters_and_pages,
    tenants_by_ids,
    audit_is_newest_first_and_filtered,
    users_round_trip,
    cluster_list_pages_and_totals,
    cluster_list_keeps_every_field,
    stale_accesses_follow_memberships,
);

/// After bulk writes the planner's statistics are refreshed without anyone running ANALYZE
/// (PostgreSQL, even with autovacuum off as on these machines); once only. SQLite: `PRAGMA
/// optimize` runs and nothing is named.
async fn planner_statistics_follow_bulk_writes(s: &dyn Store) {
    for i in 0..600 {
        let e = AuditEvent::now(
            &Actor::system(),
            "system.bulk",
            format!("n{i}"),
            Outcome::Success,
        );
        s.record_audit(&e).await.unwrap();
    }
    if s.backend() == Backend::Sqlite {
        assert_eq!(s.refresh_statistics().await.unwrap(), Vec::<String>::new());
        return;
    }
    // PostgreSQL publishes a backend's row counts within about a second.
    let mut analysed = Vec::new();
    for _ in 0..50 {
        analysed = s.refresh_statistics().await.unwrap();
        if analysed.iter().any(|t| t == "audit_events") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(analysed.iter().any(|t| t == "audit_events"), "{analysed:?}");
    let again = s.refresh_statistics().await.unwrap();
    assert!(!again.iter().any(|t| t == "audit_events"), "{again:?}");
}

mod planner_statistics {
    #[tokio::test]
    async fn sqlite() {
        let db = super::TestDatabase::sqlite();
        super::planner_statistics_follow_bulk_writes(&db.connect().await).await;
    }

    #[tokio::test]
    async fn postgres() {
        let Some(db) = super::TestDatabase::postgres().await else {
            return;
        };
        let s = db.connect().await;
        // Where autovacuum runs it could analyse the table first: not on this one.
        let pool = sqlx::PgPool::connect(db.url()).await.unwrap();
        sqlx::query("ALTER TABLE audit_events SET (autovacuum_enabled = off)")
            .execute(&pool)
            .await
            .unwrap();
        pool.close().await;
        super::planner_statistics_follow_bulk_writes(&s).await;
        super::Store::close(&s).await;
    }
}

/// Names and total of a cluster list page.
async fn listed(s: &SqlStore, filter: &ClusterFilter) -> (Vec<String>, u64) {
    let (list, total) = s
        .list_clusters(filter, None, Page::default())
        .await
        .unwrap();
    (list.iter().map(|c| c.name.to_string()).collect(), total)
}

/// Slugs of a tenant list page (of `member`'s tenants when given).
async fn tenant_slugs(s: &SqlStore, member: Option<Uuid>) -> Vec<String> {
    let list = s
        .list_tenants(&TenantFilter::default(), member, Page::default())
        .await
        .unwrap();
    list.iter().map(|t| t.slug.to_string()).collect()
}

/// List pages come from memory while nothing they read has changed, and never after a
/// write: by the same store, or by another process on the same database (`b`).
async fn list_pages_follow_writes_of_every_process(a: &SqlStore, b: &SqlStore) {
    let t = tenant("team-a", "A");
    a.create_tenant(&t, &created(&t)).await.unwrap();
    let (provider, _) = catalog(a).await;
    let one = cluster(&t, provider.id, "one", ClusterState::Ready);
    insert(a, &one).await;
    let all = ClusterFilter::default();
    let v = |names: &[&str], total| (names.iter().map(|n| n.to_string()).collect(), total);
    assert_eq!(listed(a, &all).await, v(&["one"], 1));
    let hits = a.list_cache_hits();
    assert_eq!(listed(a, &all).await, v(&["one"], 1));
    assert_eq!(
        a.list_cache_hits(),
        hits + 1,
        "an unchanged page comes from memory"
    );

    // A cluster inserted by another process.
    insert(b, &cluster(&t, provider.id, "two", ClusterState::Ready)).await;
    assert_eq!(listed(a, &all).await, v(&["one", "two"], 2));
    // A cluster's state changed by another process: the state filter follows.
    let deleting = ClusterFilter {
        state: Some(ClusterState::Deleting),
        ..ClusterFilter::default()
    };
    assert_eq!(listed(a, &deleting).await, v(&[], 0));
    // The same cluster by id: from memory while unchanged, then as the other process left it.
    assert_eq!(a.cluster(one.id).await.unwrap().state, ClusterState::Ready);
    let hits = a.list_cache_hits();
    assert_eq!(a.cluster(one.id).await.unwrap().state, ClusterState::Ready);
    assert_eq!(a.list_cache_hits(), hits + 1, "an unchanged cluster");
    queue_delete(b, &one).await.unwrap();
    assert_eq!(listed(a, &deleting).await, v(&["one"], 1));
    assert_eq!(
        a.cluster(one.id).await.unwrap().state,
        ClusterState::Deleting
    );
    // The same page from the writer itself, which had it in memory too.
    assert_eq!(listed(b, &deleting).await, v(&["one"], 1));

    // Tenants: one created elsewhere, then a membership granted elsewhere.
    assert_eq!(tenant_slugs(a, None).await, ["team-a"]);
    let other = tenant("team-b", "B");
    b.create_tenant(&other, &created(&other)).await.unwrap();
    assert_eq!(tenant_slugs(a, None).await, ["team-a", "team-b"]);
    let user = User {
        id: Uuid::now_v7(),
        subject: "local:dev".into(),
        username: "dev".into(),
        email: None,
        display_name: None,
        is_operator: false,
        disabled: false,
        created_at: kqueen_core::clock::now(),
        last_login_at: None,
    };
    let audit = AuditEvent::now(&Actor::system(), "user.create", "dev", Outcome::Success);
    a.create_user(&user, None, &audit).await.unwrap();
    assert!(tenant_slugs(a, Some(user.id)).await.is_empty());
    let audit = AuditEvent::now(&Actor::system(), "member.put", "dev", Outcome::Success);
    b.put_membership(
        other.id,
        user.id,
        Role::Member,
        MembershipSource::Manual,
        &audit,
    )
    .await
    .unwrap();
    assert_eq!(tenant_slugs(a, Some(user.id)).await, ["team-b"]);
    let hits = a.list_cache_hits();
    assert_eq!(tenant_slugs(a, Some(user.id)).await, ["team-b"]);
    assert_eq!(a.list_cache_hits(), hits + 1);

    // The catalog's rows by id: from memory while unchanged, changed by another process.
    let mut template = a
        .template_by_name("small")
        .await
        .unwrap()
        .expect("the catalog's template");
    assert_eq!(a.template(template.id).await.unwrap(), template);
    assert_eq!(a.provider(provider.id).await.unwrap(), provider);
    let hits = a.list_cache_hits();
    assert_eq!(a.template(template.id).await.unwrap(), template);
    assert_eq!(a.provider(provider.id).await.unwrap(), provider);
    assert_eq!(
        a.list_cache_hits(),
        hits + 2,
        "unchanged rows come from memory"
    );
    template.admin_access = AdminAccess::ClusterAdmin;
    template.tenants = vec![other.id];
    let audit = AuditEvent::now(
        &Actor::system(),
        "template.update",
        "small",
        Outcome::Success,
    );
    b.update_template(&template, &audit).await.unwrap();
    assert_eq!(a.template(template.id).await.unwrap(), template);
    let mut changed = provider.clone();
    changed.description = "moved to the new lab".into();
    changed.disabled = true;
    let audit = AuditEvent::now(&Actor::system(), "provider.update", "lab", Outcome::Success);
    b.update_provider(&changed, &audit).await.unwrap();
    let read = a.provider(provider.id).await.unwrap();
    assert_eq!(
        (read.description, read.disabled),
        (changed.description, true)
    );
}

mod list_cache {
    #[tokio::test]
    async fn sqlite() {
        let db = super::TestDatabase::sqlite();
        let (a, b) = (db.connect().await, db.connect().await);
        super::list_pages_follow_writes_of_every_process(&a, &b).await;
    }

    #[tokio::test]
    async fn postgres() {
        let Some(db) = super::TestDatabase::postgres().await else {
            return;
        };
        let (a, b) = (db.connect().await, db.connect().await);
        super::list_pages_follow_writes_of_every_process(&a, &b).await;
        super::Store::close(&a).await;
        super::Store::close(&b).await;
    }
}

#[tokio::test]
async fn migrations_are_idempotent_and_data_survives_reopen() {
    let db = TestDatabase::sqlite();
    let s = db.connect().await;
    let a = tenant("team-a", "A");
    s.create_tenant(&a, &created(&a)).await.unwrap();
    s.close().await;
    let again = db.connect().await;
    assert_eq!(again.tenant_by_slug(&a.slug).await.unwrap(), a);
}

#[tokio::test]
async fn unsupported_urls_are_refused_without_echoing_them() {
    for url in [
        "mysql://u:secret@h/db",
        "secret-but-no-scheme",
        "postgres://u:secret@h:notaport/db",
    ] {
        let e = store::connect(url).await.unwrap_err();
        assert!(matches!(e, Error::UnsupportedDatabase(_)), "{url}: {e:?}");
        assert!(!e.to_string().contains("secret"), "{e}");
    }
}

/// A write whose caller goes away while its transaction begins (a client that disconnects, an
/// operation aborted when the engine stops) leaves no pooled connection inside a transaction:
/// later writes neither wait out the busy timeout (SQLite's write lock) nor stay uncommitted.
/// The write is dropped after 1 to 4 polls with pauses that let the driver move on in
/// between; one of them lands between `BEGIN` and the driver's check of it.
async fn cancelled_writes_leave_no_transaction_open(db: &TestDatabase) {
    use kqueen_core::store::SessionStore;
    use std::time::Duration;
    let (s, other) = (db.connect().await, db.connect().await);
    let now = kqueen_core::clock::now();
    let expires = now + chrono::Duration::hours(1);
    let mut n = 0;
    for polls in 1..=4 {
        for pause in [0, 200, 2_000] {
            n += 1;
            let t = tenant(&format!("dropped-{n}"), "Dropped");
            let audit = created(&t);
            {
                let mut write = std::pin::pin!(s.create_tenant(&t, &audit));
                for _ in 0..polls {
                    if futures::poll!(write.as_mut()).is_ready() {
                        break;
                    }
                    // The driver's thread (SQLite) or the server (Postgres) goes on meanwhile.
                    std::thread::sleep(Duration::from_micros(pause));
                }
            }
            let at = format!("after {polls} polls, {pause} µs apart");
            for i in 0..4 {
                let id = format!("after-{n}-{i}");
                let saved = tokio::time::timeout(
                    Duration::from_secs(20),
                    s.session_save(&id, "{}", expires),
                )
                .await;
                assert!(matches!(saved, Ok(Ok(()))), "write {i} {at}: {saved:?}");
                let seen = other.session_load(&id, now).await.unwrap();
                assert!(seen.is_some(), "write {i} {at} is not committed");
            }
            let kept = tenant(&format!("kept-{n}"), "Kept");
            let audit = created(&kept);
            let begun =
                tokio::time::timeout(Duration::from_secs(20), s.create_tenant(&kept, &audit)).await;
            assert!(matches!(begun, Ok(Ok(()))), "transaction {at}: {begun:?}");
            other.tenant_by_slug(&kept.slug).await.unwrap();
        }
    }
    Store::close(&s).await;
    Store::close(&other).await;
}

mod cancelled_writes {
    #[tokio::test]
    async fn sqlite() {
        super::cancelled_writes_leave_no_transaction_open(&super::TestDatabase::sqlite()).await;
    }

    #[tokio::test]
    async fn postgres() {
        let Some(db) = super::TestDatabase::postgres().await else {
            return;
        };
        super::cancelled_writes_leave_no_transaction_open(&db).await;
    }
}
