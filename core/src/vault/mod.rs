//! The credential vault: kubeconfigs and provider secrets encrypted at rest.
//!
//! Secrets are sealed with XChaCha20-Poly1305 (RustCrypto `chacha20poly1305`) under the
//! current key of a [`Keyring`], with the secret's address (scope and name) as associated
//! data, so a ciphertext copied to another slot does not open. Sealed form:
//! `kqv1.<key id>.<base64url(nonce ‖ ciphertext)>`. Rotation: a new key becomes current, old
//! keys stay in the ring to open old ciphertexts until [`Vault::rotate`] re-seals them.
//! Backends store only sealed strings ([`SecretBackend`]).

mod etcd;
mod keyring;
pub mod names;

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;

/// The first key after every key with a prefix (etcd range ends), also for hosted key spaces.
pub(crate) use etcd::range_end;
pub use etcd::EtcdBackend;
pub use keyring::{Keyring, VaultError};

use crate::counter::{OutcomeCounter, Outcomes};
use crate::Result;

/// Where a secret lives: a tenant's (`tenant/<uuid>`) or installation-wide (`global`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SecretRef {
    pub scope: String,
    pub name: String,
}

impl SecretRef {
    pub fn global(name: impl Into<String>) -> Self {
        Self {
            scope: "global".into(),
            name: name.into(),
        }
    }

    pub fn tenant(tenant: uuid::Uuid, name: impl Into<String>) -> Self {
        Self {
            scope: format!("tenant/{tenant}"),
            name: name.into(),
        }
    }

    /// The associated data that binds a ciphertext to this address.
    fn aad(&self) -> Vec<u8> {
        format!("kqueen-secret:{}/{}", self.scope, self.name).into_bytes()
    }
}

/// A decrypted secret. `Debug` and `Display` never show it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(Vec<u8>);

impl Secret {
    pub fn new(bytes: impl Into<Vec<u8>>) -> Self {
        Self(bytes.into())
    }

    pub fn expose(&self) -> &[u8] {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret([redacted])")
    }
}

/// Storage of sealed secrets.
#[async_trait]
pub trait SecretBackend: Send + Sync {
    async fn put_sealed(&self, at: &SecretRef, sealed: &str) -> Result<()>;
    /// Replaces the secret at `at` with `sealed` only while it still holds `expected`
    /// (compare-and-swap); false, changing nothing, when it was changed or deleted meanwhile.
    async fn replace_sealed(&self, at: &SecretRef, expected: &str, sealed: &str) -> Result<bool>;
    async fn get_sealed(&self, at: &SecretRef) -> Result<Option<String>>;
    /// False when there was nothing.
    async fn delete_sealed(&self, at: &SecretRef) -> Result<bool>;
    /// Every stored secret (for rotation).
    async fn list_sealed(&self) -> Result<Vec<(SecretRef, String)>>;
}

/// Seals and opens secrets in a backend.
#[derive(Clone)]
pub struct Vault {
    keyring: Arc<Keyring>,
    backend: Arc<dyn SecretBackend>,
    counts: Arc<VaultCounters>,
}

/// What this process's vault did, by operation and outcome (for `/metrics`). A read that
/// finds nothing is a success; one that does not open is a failure.
#[derive(Debug, Default)]
struct VaultCounters {
    put: OutcomeCounter,
    get: OutcomeCounter,
    delete: OutcomeCounter,
}

/// [`Vault::counts`]: each operation's successes and failures since the process started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VaultCounts {
    pub put: Outcomes,
    pub get: Outcomes,
    pub delete: Outcomes,
}

impl Vault {
    pub fn new(keyring: Keyring, backend: Arc<dyn SecretBackend>) -> Self {
        Self {
            keyring: Arc::new(keyring),
            backend,
            counts: Arc::default(),
        }
    }

    /// This process's vault operations so far.
    pub fn counts(&self) -> VaultCounts {
        VaultCounts {
            put: self.counts.put.get(),
            get: self.counts.get.get(),
            delete: self.counts.delete.get(),
        }
    }

    pub async fn put(&self, at: &SecretRef, secret: &Secret) -> Result<()> {
        let put = async {
            let sealed = self.keyring.seal(&at.aad(), secret.expose())?;
            self.backend.put_sealed(at, &sealed).await
        };
        self.counts.put.track(put.await)
    }

    /// The secret at `at`, or `None`. Fails closed: a ciphertext that does not open (unknown
    /// key, wrong key, tampered, moved) is an error, never garbage.
    pub async fn get(&self, at: &SecretRef) -> Result<Option<Secret>> {
        let get = async {
            match self.backend.get_sealed(at).await? {
                Some(sealed) => Ok(Some(Secret(self.keyring.open(&at.aad(), &sealed)?))),
                None => Ok(None),
            }
        };
        self.counts.get.track(get.await)
    }

    /// Seals a short-lived value kept outside the backend (what a refused form held, in the
    /// caller's session until the form is shown again), bound to `purpose`.
    pub fn seal_transient(&self, purpose: &str, plaintext: &[u8]) -> Result<String> {
        Ok(self
            .keyring
            .seal(format!("transient:{purpose}").as_bytes(), plaintext)?)
    }

    /// Opens what [`Vault::seal_transient`] sealed for the same `purpose`.
    pub fn open_transient(&self, purpose: &str, sealed: &str) -> Result<Secret> {
        Ok(Secret(
            self.keyring
                .open(format!("transient:{purpose}").as_bytes(), sealed)?,
        ))
    }

    pub async fn delete(&self, at: &SecretRef) -> Result<bool> {
        self.counts
            .delete
            .track(self.backend.delete_sealed(at).await)
    }

    /// Re-seals every secret not sealed under the current key; returns how many. Each
    /// secret is replaced by compare-and-swap: one written meanwhile by a running portal
    /// (a provider's new credentials, a kubeconfig) is read again and re-sealed as it is now,
    /// never overwritten with its old value; one deleted meanwhile stays deleted.
    pub async fn rotate(&self) -> Result<usize> {
        const ATTEMPTS: usize = 5;
        let mut n = 0;
        for (at, mut sealed) in self.backend.list_sealed().await? {
            let mut attempt = 0;
            while !self.keyring.is_current(&sealed) {
                let plain = self.keyring.open(&at.aad(), &sealed)?;
                let resealed = self.keyring.seal(&at.aad(), &plain)?;
                if self.backend.replace_sealed(&at, &sealed, &resealed).await? {
                    n += 1;
                    break;
                }
                attempt += 1;
                if attempt == ATTEMPTS {
                    return Err(crate::Error::Conflict(format!(
                        "the secret {}/{} changed {ATTEMPTS} times during the rotation; run it again",
                        at.scope, at.name
                    )));
                }
                match self.backend.get_sealed(&at).await? {
                    Some(now) => sealed = now,
                    None => break,
                }
            }
        }
        Ok(n)
    }
}
