//! The vault scenario every secret backend must pass.

use std::sync::Arc;

use kqueen_core::vault::{Keyring, Secret, SecretBackend, SecretRef, Vault};

/// Key rotation on `backend`, which holds two secrets sealed under `old` (one of them
/// `expected` at `at`): a vault keyed `new,old` opens them, re-seals both under `new` (a
/// second pass finds nothing left), and afterwards a vault with `new` alone opens `at`.
/// Returns that vault.
pub async fn rotation_reseals(
    backend: Arc<dyn SecretBackend>,
    (old, new): (&str, &str),
    at: &SecretRef,
    expected: &Secret,
) -> Vault {
    let rotating = Vault::new(
        Keyring::parse(&format!("{new},{old}")).expect("keyring"),
        backend.clone(),
    );
    assert_eq!(rotating.get(at).await.unwrap(), Some(expected.clone()));
    assert_eq!(rotating.rotate().await.unwrap(), 2);
    assert_eq!(
        rotating.rotate().await.unwrap(),
        0,
        "nothing left under the old key"
    );
    let new_only = Vault::new(Keyring::parse(new).expect("keyring"), backend);
    assert_eq!(new_only.get(at).await.unwrap(), Some(expected.clone()));
    new_only
}

/// A vault with an unrelated key fails closed on `at` (sealed by another ring on `backend`).
pub async fn stranger_fails_closed(backend: Arc<dyn SecretBackend>, at: &SecretRef) {
    let stranger = Vault::new(
        Keyring::parse(&Keyring::generate_entry()).expect("keyring"),
        backend,
    );
    assert!(matches!(
        stranger.get(at).await,
        Err(kqueen_core::Error::Vault(
            kqueen_core::vault::VaultError::UnknownKey(_)
        ))
    ));
}
