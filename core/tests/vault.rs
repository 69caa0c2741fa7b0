//! The credential vault over the SQL backend, on SQLite and Postgres: round trip, wrong key
//! fails closed, rotation, and secrets bound to their slot.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use kqueen_core::vault::{Keyring, Secret, SecretBackend, SecretRef, Vault, VaultError};
use kqueen_core::Error;
use kqueen_testkit::TestDatabase;
use uuid::Uuid;

async fn scenario(db: TestDatabase) {
    let store = Arc::new(db.connect().await);
    let (old, new) = (Keyring::generate_entry(), Keyring::generate_entry());
    let vault = Vault::new(Keyring::parse(&old).unwrap(), store.clone());
    let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
    let kubeconfig = Secret::new(b"apiVersion: v1\nkind: Config\n".to_vec());
    let at_a = SecretRef::tenant(a, "cluster-1/kubeconfig");
    vault.put(&at_a, &kubeconfig).await.unwrap();
    vault
        .put(
            &SecretRef::global("provider/jenkins"),
            &Secret::new(b"token".to_vec()),
        )
        .await
        .unwrap();
    assert_eq!(vault.get(&at_a).await.unwrap(), Some(kubeconfig.clone()));
    assert_eq!(
        vault
            .get(&SecretRef::tenant(b, "cluster-1/kubeconfig"))
            .await
            .unwrap(),
        None
    );

    // At rest: no plaintext in the database.
    let stored = store.get_sealed(&at_a).await.unwrap().unwrap();
    assert!(stored.starts_with("kqv1.") && !stored.contains("apiVersion"));
    // Copied into tenant B's slot, it does not open there.
    let at_b = SecretRef::tenant(b, "cluster-1/kubeconfig");
    store.put_sealed(&at_b, &stored).await.unwrap();
    assert!(matches!(
        vault.get(&at_b).await,
        Err(Error::Vault(VaultError::Open))
    ));
    assert!(vault.delete(&at_b).await.unwrap());

    // A vault with an unrelated key fails closed.
    kqueen_testkit::vault::stranger_fails_closed(store.clone(), &at_a).await;

    // Rotation: the new key seals, the old one still opens until everything is re-sealed.
    let new_only =
        kqueen_testkit::vault::rotation_reseals(store.clone(), (&old, &new), &at_a, &kubeconfig)
            .await;
    assert!(
        matches!(
            vault.get(&at_a).await,
            Err(Error::Vault(VaultError::UnknownKey(_)))
        ),
        "old-only ring"
    );
    assert!(!format!("{:?}", new_only.get(&at_a).await.unwrap()).contains("apiVersion"));
}

/// What another portal process does while a rotation runs, right after the rotation read the
/// secrets: it writes new credentials to one slot (still under the old key: it has not got
/// the new one yet) and deletes another.
struct RacingBackend {
    inner: Arc<dyn SecretBackend>,
    other_process: Vault,
    changed: (SecretRef, Secret),
    deleted: SecretRef,
}

#[async_trait::async_trait]
impl SecretBackend for RacingBackend {
    async fn put_sealed(&self, at: &SecretRef, sealed: &str) -> kqueen_core::Result<()> {
        self.inner.put_sealed(at, sealed).await
    }
    async fn replace_sealed(
        &self,
        at: &SecretRef,
        expected: &str,
        sealed: &str,
    ) -> kqueen_core::Result<bool> {
        self.inner.replace_sealed(at, expected, sealed).await
    }
    async fn get_sealed(&self, at: &SecretRef) -> kqueen_core::Result<Option<String>> {
        self.inner.get_sealed(at).await
    }
    async fn delete_sealed(&self, at: &SecretRef) -> kqueen_core::Result<bool> {
        self.inner.delete_sealed(at).await
    }
    async fn list_sealed(&self) -> kqueen_core::Result<Vec<(SecretRef, String)>> {
        let listed = self.inner.list_sealed().await?;
        let (at, secret) = &self.changed;
        self.other_process.put(at, secret).await?;
        assert!(self.other_process.delete(&self.deleted).await?);
        Ok(listed)
    }
}

/// A rotation never overwrites a secret written meanwhile (it re-seals what is there now) nor
/// brings back a deleted one.
async fn rotation_keeps_concurrent_writes(db: TestDatabase) {
    let store: Arc<dyn SecretBackend> = Arc::new(db.connect().await);
    let (old, new) = (Keyring::generate_entry(), Keyring::generate_entry());
    let before = Vault::new(Keyring::parse(&old).unwrap(), store.clone());
    let (changed, deleted, kept) = (
        SecretRef::global("provider/jenkins"),
        SecretRef::tenant(Uuid::now_v7(), "cluster/1/kubeconfig"),
        SecretRef::global("provider/other"),
    );
    for at in [&changed, &deleted, &kept] {
        before.put(at, &Secret::new(b"old".to_vec())).await.unwrap();
    }
    let fresh = Secret::new(b"new credentials".to_vec());
    let racing = Arc::new(RacingBackend {
        inner: store.clone(),
        other_process: before,
        changed: (changed.clone(), fresh.clone()),
        deleted: deleted.clone(),
    });
    let both = || Keyring::parse(&format!("{new},{old}")).unwrap();
    let rotating = Vault::new(both(), racing);
    assert_eq!(
        rotating.rotate().await.unwrap(),
        2,
        "the untouched one, and the changed one as it is now"
    );
    let new_only = Vault::new(Keyring::parse(&new).unwrap(), store.clone());
    assert_eq!(new_only.get(&changed).await.unwrap(), Some(fresh));
    assert_eq!(
        new_only.get(&deleted).await.unwrap(),
        None,
        "not brought back"
    );
    assert_eq!(
        new_only.get(&kept).await.unwrap(),
        Some(Secret::new(b"old".to_vec()))
    );
    assert_eq!(Vault::new(both(), store).rotate().await.unwrap(), 0);
}

#[tokio::test]
async fn rotation_keeps_concurrent_writes_on_sqlite() {
    rotation_keeps_concurrent_writes(TestDatabase::sqlite()).await;
}

#[tokio::test]
async fn rotation_keeps_concurrent_writes_on_postgres() {
    let Some(db) = TestDatabase::postgres().await else {
        return;
    };
    rotation_keeps_concurrent_writes(db).await;
}

#[tokio::test]
async fn vault_on_sqlite() {
    scenario(TestDatabase::sqlite()).await;
}

#[tokio::test]
async fn vault_on_postgres() {
    let Some(db) = TestDatabase::postgres().await else {
        return;
    };
    scenario(db).await;
}

#[tokio::test]
async fn transient_values_open_only_for_their_purpose() {
    let store = Arc::new(TestDatabase::sqlite().connect().await);
    let vault = Vault::new(
        Keyring::parse(&Keyring::generate_entry()).unwrap(),
        store.clone(),
    );
    let sealed = vault
        .seal_transient("form:provider-form", b"api_token=hunter2")
        .unwrap();
    assert!(sealed.starts_with("kqv1.") && !sealed.contains("hunter2"));
    assert_eq!(
        vault
            .open_transient("form:provider-form", &sealed)
            .unwrap()
            .expose(),
        b"api_token=hunter2"
    );
    assert!(matches!(
        vault.open_transient("form:cluster-form", &sealed),
        Err(Error::Vault(VaultError::Open))
    ));
    let stranger = Vault::new(Keyring::parse(&Keyring::generate_entry()).unwrap(), store);
    assert!(stranger
        .open_transient("form:provider-form", &sealed)
        .is_err());
}
