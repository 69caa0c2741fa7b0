//! A tenant's shared-storage quota against the real thing: a hosted cluster on a shared etcd
//! (TLS, client certificates, auth on) with the real kube-apiserver and
//! kube-controller-manager (`KQUEEN_TEST_KUBE_*`, see `node_lab::cluster::Binaries`).
//! An operator sets a quota smaller than what the cluster keeps in etcd; the next inventory
//! round makes the cluster's etcd role read-only, its API server refuses writes (and still
//! answers reads), and the timeline, the audit trail and the fleet dashboard say so. A raised
//! quota, and a removed one, give write access back at the following round.
#![allow(clippy::unwrap_used, clippy::print_stdout)]

mod support;

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Namespace;
use kqueen_core::audit::{AuditEvent, AuditFilter};
use kqueen_core::cluster::{ClusterState, EventKind, Quota};
use kqueen_core::hosted::etcd::{KeySpace, SharedEtcd};
use kqueen_core::inventory::fleet::FleetFilter;
use kqueen_core::page::Page;
use kqueen_core::{Actor, Kqueen};
use kqueen_testkit::hosted::HostedKqueen;
use kqueen_testkit::node_lab::cluster::Binaries;
use kqueen_testkit::tls_etcd::TlsEtcd;
use kube::api::{Api, PostParams};
use support::kube_client::client_of;

async fn create_namespace(client: &kube::Client, name: &str) -> kube::Result<Namespace> {
    let ns: Namespace =
        serde_json::from_value(serde_json::json!({"metadata": {"name": name}})).unwrap();
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
}

async fn set_storage_quota(k: &Kqueen, bytes: Option<u64>) {
    let ops = Actor::cli(Some("ops".into()));
    let quota = Quota {
        max_shared_storage_bytes: bytes,
        ..Quota::default()
    };
    k.tenancy().set_quota(&ops, "team-a", quota).await.unwrap();
}

/// One inventory round; every cluster is read.
async fn sync(k: &Kqueen) {
    let synced = k.fleet().sync_inventory().await.unwrap();
    assert!(synced.iter().all(|s| s.error.is_none()), "{synced:?}");
}

async fn storage_audit(k: &Kqueen, action: &str) -> Vec<AuditEvent> {
    let ops = Actor::cli(Some("ops".into()));
    let query = k
        .audit()
        .audit_query(
            &ops,
            &AuditFilter {
                action: Some(action.into()),
                ..AuditFilter::default()
            },
        )
        .await
        .unwrap();
    k.audit()
        .audit_events(&ops, &query, Page::first(100))
        .await
        .unwrap()
}

/// Timeline entries of the cluster that are about its shared storage, oldest first.
async fn storage_events(k: &Kqueen, id: &str) -> Vec<(EventKind, String)> {
    let ops = Actor::cli(Some("ops".into()));
    k.clusters()
        .cluster_detail(&ops, id)
        .await
        .unwrap()
        .events
        .into_iter()
        .filter(|e| e.message.contains("of shared etcd"))
        .map(|e| (e.kind, e.message))
        .collect()
}

#[tokio::test]
async fn over_its_storage_quota_a_tenants_hosted_cluster_refuses_writes_until_it_is_under_again() {
    let Some(binaries) = Binaries::or_skip() else {
        return;
    };
    let h = HostedKqueen::start(TlsEtcd::start().await, "team-a=team-a:member").await;
    let (k, ops, etcd) = (&h.k, &h.ops, &h.etcd);
    let alice = h.person("alice", "team-a").await;
    let versions = binaries.process_versions();
    h.offer("shared", &[("versions", &versions)], ("hosted-small", ""))
        .await;
    let id = h
        .request(&alice, ("team-a", "dev", "hosted-small"), Some("1.20"))
        .await;
    let cluster = k.clusters().cluster_detail(ops, &id).await.unwrap().cluster;
    let _guard = h.processes_of(&id);
    let engine = k.engine(h.engine_config());
    let started = Instant::now();
    loop {
        engine.run_until_idle().await.unwrap();
        let c = k.clusters().cluster_detail(ops, &id).await.unwrap().cluster;
        assert_ne!(c.state, ClusterState::Error, "{:?}", c.error);
        if c.state == ClusterState::Ready {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(120), "still {c:?}");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let admin = k.access().admin_kubeconfig(ops, &id).await.unwrap();
    let admin = client_of(admin.yaml.expose(), Duration::from_secs(5)).await;
    create_namespace(&admin, "before").await.unwrap();
    let space = KeySpace::for_cluster(cluster.id);
    let etcd_admin = SharedEtcd::connect(&etcd.root_access(), Duration::from_secs(5))
        .await
        .unwrap();

    // Without a quota the round measures and changes nothing.
    sync(k).await;
    let (_, used) = k.tenancy().quota(&alice, "team-a").await.unwrap();
    assert!(used.shared_storage_bytes > 1024, "{used:?}");
    assert_eq!(etcd_admin.writable(&space).await.unwrap(), Some(true));
    assert!(storage_events(k, &id).await.is_empty());

    // A quota far below what the cluster keeps: the next round takes write away.
    set_storage_quota(k, Some(1024)).await;
    sync(k).await;
    assert_eq!(etcd_admin.writable(&space).await.unwrap(), Some(false));
    let refused = create_namespace(&admin, "while-over").await;
    assert!(refused.is_err(), "{refused:?}");
    let names: Vec<String> = Api::<Namespace>::all(admin.clone())
        .list(&Default::default())
        .await
        .expect("reads still work")
        .items
        .into_iter()
        .filter_map(|n| n.metadata.name)
        .collect();
    assert!(names.contains(&"before".into()), "{names:?}");
    let events = storage_events(k, &id).await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].0, EventKind::Error);
    assert!(
        events[0].1.starts_with("tenant team-a uses ")
            && events[0]
                .1
                .ends_with(" of shared etcd, quota 1 KiB (1024 bytes): writes refused"),
        "{events:?}"
    );
    let audited = storage_audit(k, "cluster.storage.read_only").await;
    assert_eq!(audited.len(), 1, "{audited:?}");
    assert_eq!(audited[0].actor, "system");
    assert_eq!(audited[0].target, "dev");
    assert_eq!(audited[0].tenant_id, Some(cluster.tenant_id));
    assert_eq!(audited[0].detail.as_deref(), Some(events[0].1.as_str()));
    let stored = k
        .clusters()
        .cluster_detail(ops, &id)
        .await
        .unwrap()
        .shared_storage
        .unwrap();
    assert!(!stored.usage.writable);

    // The fleet dashboard shows it to operators: per cluster, per tenant against its quota,
    // and among the clusters needing attention. A tenant member sees none of it.
    let fleet = k
        .fleet()
        .fleet_overview(ops, &FleetFilter::default(), false, Page::default())
        .await
        .unwrap();
    let row = fleet
        .clusters
        .iter()
        .map(|a| &a.cluster)
        .find(|c| c.name == "dev")
        .unwrap();
    assert!(row
        .shared_storage
        .is_some_and(|s| !s.usage.writable && s.usage.bytes > 1024));
    assert_eq!(fleet.storage.len(), 1);
    assert_eq!(fleet.storage[0].tenant, "team-a");
    assert_eq!(fleet.storage[0].quota, Some(1024));
    assert!(!fleet.storage[0].writable());
    assert!(fleet
        .attention
        .iter()
        .any(|a| a.cluster.name == "dev" && a.reasons.iter().any(|r| r.contains("read-only"))));

    // Another round over the quota switches nothing again.
    sync(k).await;
    assert_eq!(storage_events(k, &id).await.len(), 1);

    // Raised above what it keeps: write access is back at the next round.
    set_storage_quota(k, Some(1 << 30)).await;
    sync(k).await;
    assert_eq!(etcd_admin.writable(&space).await.unwrap(), Some(true));
    create_namespace(&admin, "after-raise").await.unwrap();
    let events = storage_events(k, &id).await;
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(events[1].0, EventKind::State);
    assert!(
        events[1]
            .1
            .ends_with(" of shared etcd, quota 1 GiB (1073741824 bytes): writes allowed again"),
        "{events:?}"
    );
    let audited = storage_audit(k, "cluster.storage.writable").await;
    assert_eq!(audited.len(), 1, "{audited:?}");
    assert_eq!(audited[0].actor, "system");

    // Over again, then the quota removed: write access is back too.
    set_storage_quota(k, Some(1024)).await;
    sync(k).await;
    assert!(create_namespace(&admin, "over-again").await.is_err());
    set_storage_quota(k, None).await;
    sync(k).await;
    create_namespace(&admin, "after-removal").await.unwrap();
    let events = storage_events(k, &id).await;
    assert_eq!(events.len(), 4, "{events:?}");
    assert!(
        events[3].1.ends_with("no quota: writes allowed again"),
        "{events:?}"
    );
    assert_eq!(storage_audit(k, "cluster.storage.").await.len(), 4);
}
