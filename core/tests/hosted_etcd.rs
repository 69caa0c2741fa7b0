//! Hosted control planes' key spaces on a real shared etcd (TLS, client certificates, auth
//! on): each control plane's certificate reads and writes only its own prefix (`/c1/` never
//! covers `/c12/`), usage is counted, write is taken away and given back, and removing a key
//! space leaves no key, no role and no user.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use etcd_client::{DeleteOptions, GetOptions};
use kqueen_core::hosted::etcd::{KeySpace, SharedEtcd, SpaceUsage};
use kqueen_testkit::tls_etcd::TlsEtcd;

const TIMEOUT: Duration = Duration::from_secs(5);

fn denied<T: std::fmt::Debug>(r: Result<T, etcd_client::Error>, what: &str) {
    match r {
        Err(e) => assert!(e.to_string().contains("permission denied"), "{what}: {e}"),
        Ok(v) => panic!("{what}: allowed ({v:?})"),
    }
}

#[tokio::test]
async fn each_control_plane_reads_and_writes_only_its_own_key_space() {
    let etcd = TlsEtcd::start().await;
    let admin = SharedEtcd::connect(&etcd.root_access(), TIMEOUT)
        .await
        .unwrap();
    let (c1, c12) = (KeySpace::new("c1").unwrap(), KeySpace::new("c12").unwrap());
    admin.open(&c1).await.unwrap();
    admin.open(&c12).await.unwrap();
    // Opening again is harmless.
    admin.open(&c1).await.unwrap();

    let mut one = etcd.raw(&etcd.client_cert(&c1.user())).await.unwrap();
    let mut twelve = etcd.raw(&etcd.client_cert(&c12.user())).await.unwrap();
    let key = |space: &KeySpace, k: &str| format!("{}{k}", space.prefix());
    one.put(key(&c1, "registry/ns/a"), "one", None)
        .await
        .unwrap();
    twelve
        .put(key(&c12, "registry/ns/b"), "twelve", None)
        .await
        .unwrap();
    let got = one.get(key(&c1, "registry/ns/a"), None).await.unwrap();
    assert_eq!(got.kvs()[0].value(), b"one");

    // c1's user cannot reach c12's keys, nor the range that would cover both.
    denied(one.get(key(&c12, "registry/ns/b"), None).await, "read c12");
    denied(one.put(key(&c12, "x"), "mine", None).await, "write c12");
    denied(
        one.get("/kqueen/hosted/c1", Some(GetOptions::new().with_prefix()))
            .await,
        "read the prefix without its slash (covers c12)",
    );
    denied(
        one.put("/kqueen/hosted/c1", "x", None).await,
        "write beside",
    );
    denied(
        one.delete(key(&c12, ""), Some(DeleteOptions::new().with_prefix()))
            .await,
        "delete c12",
    );
    denied(one.user_list().await, "administer etcd");
    // A certificate from another CA is not let in at all.
    let stranger = kqueen_core::hosted::pki::Authority::generate("stranger", 1)
        .unwrap()
        .client("root", None, 1)
        .unwrap();
    let refused = match etcd.raw(&stranger).await {
        Err(_) => true,
        Ok(mut c) => c.get("anything", None).await.is_err(),
    };
    assert!(refused, "a certificate from another CA reaches etcd");

    // Usage: keys and bytes (keys plus values) under each space.
    for i in 0..1_205 {
        one.put(key(&c1, &format!("registry/pods/p{i:04}")), "x", None)
            .await
            .unwrap();
    }
    let usage = admin.usage(&c1).await.unwrap();
    let pod_bytes: u64 = (0..1_205)
        .map(|i| (key(&c1, &format!("registry/pods/p{i:04}")).len() + 1) as u64)
        .sum();
    assert_eq!(
        usage,
        SpaceUsage {
            keys: 1_206,
            bytes: pod_bytes + (key(&c1, "registry/ns/a").len() + 3) as u64,
        }
    );
    assert_eq!(admin.usage(&c12).await.unwrap().keys, 1);

    // Read only, then writable again.
    assert_eq!(admin.writable(&c1).await.unwrap(), Some(true));
    admin.set_writable(&c1, false).await.unwrap();
    assert_eq!(admin.writable(&c1).await.unwrap(), Some(false));
    denied(
        one.put(key(&c1, "registry/ns/c"), "no", None).await,
        "write while read only",
    );
    assert_eq!(
        one.get(key(&c1, "registry/ns/a"), None)
            .await
            .unwrap()
            .count(),
        1,
        "reads still work"
    );
    twelve
        .put(key(&c12, "registry/ns/c"), "still", None)
        .await
        .unwrap();
    admin.set_writable(&c1, true).await.unwrap();
    one.put(key(&c1, "registry/ns/c"), "yes", None)
        .await
        .unwrap();

    // Removal: no key, no role, no user; the neighbour keeps everything.
    let removed = admin.remove(&c1).await.unwrap();
    assert_eq!(removed, 1_207);
    assert_eq!(admin.usage(&c1).await.unwrap(), SpaceUsage::default());
    assert_eq!(admin.writable(&c1).await.unwrap(), None, "role gone");
    let mut root = etcd.raw(&etcd.client_cert("root")).await.unwrap();
    let users = root.user_list().await.unwrap();
    assert!(!users.users().contains(&c1.user()), "{:?}", users.users());
    assert!(users.users().contains(&c12.user()));
    let roles = root.role_list().await.unwrap();
    assert!(!roles.roles().contains(&c1.user()), "{:?}", roles.roles());
    assert_eq!(admin.usage(&c12).await.unwrap().keys, 2);
    // The old certificate no longer works; removing again is harmless.
    let gone = match etcd.raw(&etcd.client_cert(&c1.user())).await {
        Err(_) => true,
        Ok(mut c) => c.get(key(&c1, "registry/ns/a"), None).await.is_err(),
    };
    assert!(gone, "a removed user still reads");
    assert_eq!(admin.remove(&c1).await.unwrap(), 0);
}

#[tokio::test]
async fn connecting_needs_endpoints_and_a_usable_key() {
    let etcd = TlsEtcd::start().await;
    let mut access = etcd.root_access();
    access.endpoints.clear();
    assert!(SharedEtcd::connect(&access, TIMEOUT).await.is_err());
    let mut access = etcd.root_access();
    access.client.key_pem = kqueen_core::vault::Secret::new(vec![0xff, 0xfe]);
    assert!(SharedEtcd::connect(&access, TIMEOUT).await.is_err());
}
