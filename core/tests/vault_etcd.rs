//! The credential vault over the etcd backend, against a real etcd (the official binary from
//! `etcd-bin-vendored`, on free loopback ports with a temporary data dir): round trip, wrong
//! key fails closed, rotation, delete, the key layout, paging, and per-tenant isolation both
//! by key prefix and by etcd roles.

#![allow(clippy::unwrap_used)]

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine;
use etcd_client::{Client, ConnectOptions, GetOptions, Permission};
use futures::StreamExt;
use kqueen_core::vault::{
    EtcdBackend, Keyring, Secret, SecretBackend, SecretRef, Vault, VaultError,
};
use kqueen_core::Error;
use uuid::Uuid;

/// A throw-away etcd; killed (and its data dir removed) on drop.
struct Etcd {
    child: Child,
    endpoint: String,
    _data: tempfile::TempDir,
}

impl Drop for Etcd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Etcd {
    async fn start() -> Self {
        let bin = etcd_bin_vendored::etcd_bin_path().unwrap();
        // A port picked free may be taken again before etcd binds it: try a few times.
        for _ in 0..5 {
            let data = tempfile::tempdir().unwrap();
            let (client, peer) = (free_port(), free_port());
            let endpoint = format!("http://127.0.0.1:{client}");
            let peer_url = format!("http://127.0.0.1:{peer}");
            let child = Command::new(bin)
                .arg("--name=kq")
                .arg(format!("--data-dir={}", data.path().join("etcd").display()))
                .arg(format!("--listen-client-urls={endpoint}"))
                .arg(format!("--advertise-client-urls={endpoint}"))
                .arg(format!("--listen-peer-urls={peer_url}"))
                .arg(format!("--initial-advertise-peer-urls={peer_url}"))
                .arg(format!("--initial-cluster=kq={peer_url}"))
                .arg("--log-level=error")
                .arg("--unsafe-no-fsync")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let mut etcd = Etcd {
                child,
                endpoint,
                _data: data,
            };
            if etcd.ready().await {
                return etcd;
            }
        }
        panic!("etcd did not start");
    }

    async fn ready(&mut self) -> bool {
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if self.child.try_wait().unwrap().is_some() {
                return false;
            }
            let options = ConnectOptions::new()
                .with_connect_timeout(Duration::from_millis(500))
                .with_timeout(Duration::from_secs(1));
            if let Ok(mut c) = Client::connect([&self.endpoint], Some(options)).await {
                if c.get("ready-probe", None).await.is_ok() {
                    return true;
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        false
    }

    async fn raw(&self) -> Client {
        Client::connect([&self.endpoint], None).await.unwrap()
    }

    async fn backend(&self, prefix: &str) -> EtcdBackend {
        EtcdBackend::connect(std::slice::from_ref(&self.endpoint), prefix, None)
            .await
            .unwrap()
    }
}

async fn keys_under(c: &mut Client, prefix: &str) -> Vec<String> {
    let resp = c
        .get(
            prefix,
            Some(GetOptions::new().with_prefix().with_keys_only()),
        )
        .await
        .unwrap();
    resp.kvs()
        .iter()
        .map(|kv| kv.key_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn vault_on_etcd() {
    let etcd = Etcd::start().await;
    let store = Arc::new(etcd.backend("/kqueen/").await);
    assert_eq!(store.prefix(), "/kqueen");
    let (old, new) = (Keyring::generate_entry(), Keyring::generate_entry());
    let vault = Vault::new(Keyring::parse(&old).unwrap(), store.clone());
    let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
    let kubeconfig = Secret::new(b"apiVersion: v1\nkind: Config\n".to_vec());
    let at_a = SecretRef::tenant(a, "cluster/1/kubeconfig");
    let at_b = SecretRef::tenant(b, "cluster/1/kubeconfig");
    let global = SecretRef::global("provider-jenkins");
    vault.put(&at_a, &kubeconfig).await.unwrap();
    vault
        .put(&global, &Secret::new(b"token".to_vec()))
        .await
        .unwrap();
    assert_eq!(vault.get(&at_a).await.unwrap(), Some(kubeconfig.clone()));
    assert_eq!(vault.get(&at_b).await.unwrap(), None);

    // The layout, and no plaintext at rest.
    let mut raw = etcd.raw().await;
    let key_a = format!("/kqueen/tenants/{a}/secrets/cluster/1/kubeconfig");
    let resp = raw.get(key_a.as_str(), None).await.unwrap();
    let stored = resp.kvs()[0].value_str().unwrap().to_owned();
    assert!(stored.starts_with("kqv1.") && !stored.contains("apiVersion"));
    assert_eq!(
        keys_under(&mut raw, "/kqueen/global/").await,
        ["/kqueen/global/secrets/provider-jenkins"]
    );

    // Copied into tenant B's slot, it does not open there.
    store.put_sealed(&at_b, &stored).await.unwrap();
    assert!(matches!(
        vault.get(&at_b).await,
        Err(Error::Vault(VaultError::Open))
    ));

    // Per-tenant prefixes: a range read of A's prefix never returns B's keys.
    assert_eq!(store.tenant_prefix(a), format!("/kqueen/tenants/{a}/"));
    assert_eq!(keys_under(&mut raw, &store.tenant_prefix(a)).await, [key_a]);
    assert_eq!(
        keys_under(&mut raw, &store.tenant_prefix(b)).await,
        [format!("/kqueen/tenants/{b}/secrets/cluster/1/kubeconfig")]
    );
    assert!(vault.delete(&at_b).await.unwrap());
    assert!(!vault.delete(&at_b).await.unwrap(), "already gone");
    assert_eq!(vault.get(&at_b).await.unwrap(), None);

    // Wrong keys fail closed: an unrelated ring, and the same key id with other material.
    kqueen_testkit::vault::stranger_fails_closed(store.clone(), &at_a).await;
    let id = old.split(':').next().unwrap();
    let other_material = base64::engine::general_purpose::STANDARD.encode([7u8; 32]);
    let impostor = Vault::new(
        Keyring::parse(&format!("{id}:{other_material}")).unwrap(),
        store.clone(),
    );
    assert!(matches!(
        impostor.get(&at_a).await,
        Err(Error::Vault(VaultError::Open))
    ));

    // Other data under a tenant is not a secret: listing skips it.
    raw.put(format!("/kqueen/tenants/{a}/clusters/c1"), "{}", None)
        .await
        .unwrap();
    let listed = store.list_sealed().await.unwrap();
    let mut addresses: Vec<_> = listed.iter().map(|(at, _)| at.clone()).collect();
    addresses.sort_by(|x, y| (&x.scope, &x.name).cmp(&(&y.scope, &y.name)));
    assert_eq!(addresses, [global.clone(), at_a.clone()]);

    // Rotation: the new key seals, the old one still opens until everything is re-sealed.
    let new_only =
        kqueen_testkit::vault::rotation_reseals(store.clone(), (&old, &new), &at_a, &kubeconfig)
            .await;
    assert!(matches!(
        vault.get(&at_a).await,
        Err(Error::Vault(VaultError::UnknownKey(_)))
    ));
    assert_eq!(
        new_only.get(&global).await.unwrap(),
        Some(Secret::new(b"token".to_vec()))
    );

    // Compare-and-swap, which rotation writes with: only over the value it read, and never
    // where there is nothing (a secret deleted meanwhile stays deleted).
    let current = store.get_sealed(&global).await.unwrap().unwrap();
    assert!(!store
        .replace_sealed(&global, "kqv1.stale", "kqv1.x")
        .await
        .unwrap());
    assert_eq!(
        store.get_sealed(&global).await.unwrap(),
        Some(current.clone())
    );
    let missing = SecretRef::global("provider/none");
    assert!(!store.replace_sealed(&missing, "", "kqv1.x").await.unwrap());
    assert_eq!(store.get_sealed(&missing).await.unwrap(), None);
    assert!(store
        .replace_sealed(&global, &current, &current)
        .await
        .unwrap());

    // Addresses the layout cannot hold are refused before etcd is asked.
    for bad in [
        SecretRef::tenant(a, "a//b"),
        SecretRef::tenant(a, "../b"),
        SecretRef::tenant(a, "a/"),
        SecretRef::tenant(a, ""),
        SecretRef::tenant(a, "line\nbreak"),
        SecretRef {
            scope: "tenants/x".into(),
            name: "n".into(),
        },
        SecretRef {
            scope: format!("tenant/{}", a.to_string().to_uppercase()),
            name: "n".into(),
        },
        SecretRef {
            scope: "tenant/not-a-uuid".into(),
            name: "n".into(),
        },
    ] {
        assert!(
            matches!(
                store.put_sealed(&bad, "kqv1.x.y").await,
                Err(Error::Invalid(_))
            ),
            "{bad:?}"
        );
        assert!(matches!(
            store.get_sealed(&bad).await,
            Err(Error::Invalid(_))
        ));
    }

    // A secret-looking key that does not parse makes listing (and so rotation) fail loudly.
    raw.put("/kqueen/tenants/nope/secrets/x", "kqv1.x.y", None)
        .await
        .unwrap();
    assert!(matches!(store.list_sealed().await, Err(Error::Corrupt(_))));
}

#[tokio::test]
async fn listing_pages_through_many_secrets() {
    let etcd = Etcd::start().await;
    let store = etcd.backend("/paging").await;
    let tenant = Uuid::now_v7();
    // More than one page (500) in each of the two ranges listing reads.
    let results: Vec<_> = futures::stream::iter(0..1100)
        .map(|i| {
            let store = store.clone();
            async move {
                let name = format!("s{i:04}");
                let at = if i % 2 == 0 {
                    SecretRef::global(&name)
                } else {
                    SecretRef::tenant(tenant, &name)
                };
                store.put_sealed(&at, &format!("sealed-{name}")).await
            }
        })
        .buffer_unordered(64)
        .collect()
        .await;
    assert!(results.iter().all(Result::is_ok));
    let listed = store.list_sealed().await.unwrap();
    assert_eq!(listed.len(), 1100);
    let mut names: Vec<&str> = listed.iter().map(|(at, _)| at.name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), 1100, "no key listed twice");
    assert!(listed
        .iter()
        .all(|(at, sealed)| *sealed == format!("sealed-{}", at.name)));
    assert_eq!(
        listed.iter().filter(|(at, _)| at.scope == "global").count(),
        550
    );
}

#[tokio::test]
async fn an_etcd_role_confines_a_tenant_to_its_prefix() {
    let etcd = Etcd::start().await;
    let store = etcd.backend("/kq").await;
    let ring = Keyring::generate_entry();
    let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
    let (at_a, at_b) = (
        SecretRef::tenant(a, "kubeconfig"),
        SecretRef::tenant(b, "kubeconfig"),
    );
    let vault = Vault::new(Keyring::parse(&ring).unwrap(), Arc::new(store.clone()));
    vault
        .put(&at_a, &Secret::new(b"a-config".to_vec()))
        .await
        .unwrap();
    vault
        .put(&at_b, &Secret::new(b"b-config".to_vec()))
        .await
        .unwrap();

    // Root, a role for tenant A's prefix only, a user with that role; then auth on.
    let mut root = etcd.raw().await;
    root.user_add("root", "root-pw", None).await.unwrap();
    root.user_grant_role("root", "root").await.unwrap();
    root.role_add("tenant-a").await.unwrap();
    root.role_grant_permission(
        "tenant-a",
        Permission::read_write(store.tenant_prefix(a)).with_prefix(),
    )
    .await
    .unwrap();
    root.user_add("alice", "alice-pw", None).await.unwrap();
    root.user_grant_role("alice", "tenant-a").await.unwrap();
    root.auth_enable().await.unwrap();

    let endpoints = [etcd.endpoint.clone()];
    let as_alice =
        EtcdBackend::connect(&endpoints, "/kq", Some(("alice".into(), "alice-pw".into())))
            .await
            .unwrap();
    let alice = Vault::new(Keyring::parse(&ring).unwrap(), Arc::new(as_alice.clone()));
    assert_eq!(
        alice.get(&at_a).await.unwrap(),
        Some(Secret::new(b"a-config".to_vec()))
    );
    alice
        .put(&at_a, &Secret::new(b"a-config-2".to_vec()))
        .await
        .unwrap();
    let denied = |r: Result<(), Error>| match r {
        Err(Error::Backend(m)) => assert!(m.contains("permission denied"), "{m}"),
        other => panic!("expected a refusal, got {other:?}"),
    };
    denied(alice.get(&at_b).await.map(|_| ()));
    denied(alice.put(&at_b, &Secret::new(b"mine now".to_vec())).await);
    denied(alice.delete(&at_b).await.map(|_| ()));
    denied(as_alice.list_sealed().await.map(|_| ()));

    // Without credentials nothing is readable any more; root still reads everything.
    assert!(
        matches!(vault.get(&at_a).await, Err(Error::Backend(_))),
        "etcd refuses anonymous reads once auth is on"
    );
    let as_root = EtcdBackend::connect(&endpoints, "/kq", Some(("root".into(), "root-pw".into())))
        .await
        .unwrap();
    let root_vault = Vault::new(Keyring::parse(&ring).unwrap(), Arc::new(as_root));
    assert_eq!(
        root_vault.get(&at_b).await.unwrap(),
        Some(Secret::new(b"b-config".to_vec()))
    );
    assert_eq!(
        root_vault.get(&at_a).await.unwrap(),
        Some(Secret::new(b"a-config-2".to_vec()))
    );

    // A wrong password fails at connect, and the error does not repeat it.
    match EtcdBackend::connect(&endpoints, "/kq", Some(("alice".into(), "guess-pw".into()))).await {
        Err(Error::Backend(m)) => assert!(!m.contains("guess-pw"), "{m}"),
        other => panic!("wrong password accepted: {other:?}"),
    }
}

#[tokio::test]
async fn connect_fails_when_etcd_is_not_there() {
    let endpoint = format!("http://127.0.0.1:{}", free_port());
    let started = Instant::now();
    assert!(matches!(
        EtcdBackend::connect(&[endpoint], "/kq", None).await,
        Err(Error::Backend(_))
    ));
    assert!(started.elapsed() < Duration::from_secs(30));
    assert!(matches!(
        EtcdBackend::connect(&[], "/kq", None).await,
        Err(Error::Backend(_))
    ));
}
