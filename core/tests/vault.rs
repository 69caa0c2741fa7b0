//! The credential vault over the SQL backend, on SQLite and Postgres: round trip, wrong key
//! fails closed, rotation, and secrets bound to their slot.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use kqueen_core::testing::TestDatabase;
use kqueen_core::vault::{Keyring, Secret, SecretBackend, SecretRef, Vault, VaultError};
use kqueen_core::Error;
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
    let stranger = Vault::new(
        Keyring::parse(&Keyring::generate_entry()).unwrap(),
        store.clone(),
    );
    assert!(matches!(
        stranger.get(&at_a).await,
        Err(Error::Vault(VaultError::UnknownKey(_)))
    ));

    // Rotation: the new key seals, the old one still opens until everything is re-sealed.
    let rotating = Vault::new(
        Keyring::parse(&format!("{new},{old}")).unwrap(),
        store.clone(),
    );
    assert_eq!(rotating.get(&at_a).await.unwrap(), Some(kubeconfig.clone()));
    assert_eq!(rotating.rotate().await.unwrap(), 2);
    assert_eq!(
        rotating.rotate().await.unwrap(),
        0,
        "nothing left under the old key"
    );
    let new_only = Vault::new(Keyring::parse(&new).unwrap(), store.clone());
    assert_eq!(new_only.get(&at_a).await.unwrap(), Some(kubeconfig));
    assert!(
        matches!(
            vault.get(&at_a).await,
            Err(Error::Vault(VaultError::UnknownKey(_)))
        ),
        "old-only ring"
    );
    assert!(!format!("{:?}", new_only.get(&at_a).await.unwrap()).contains("apiVersion"));
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
