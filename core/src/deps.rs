//! The handles every use case and the operation engine share: the store, the vault, the
//! provisioners and the installation's cluster settings. Cheap to clone.
//!
//! Time comes from [`crate::clock::now`], the one clock of the domain (a function: it has no
//! state to share).

use std::sync::Arc;

use crate::provisioner::{Registry, RegistryOptions};
use crate::store::Store;
use crate::vault::{Keyring, SecretBackend, Vault};

#[derive(Clone)]
pub struct Deps {
    pub store: Arc<dyn Store>,
    pub vault: Vault,
    pub registry: Arc<Registry>,
    pub settings: Arc<ClusterSettings>,
}

impl Deps {
    /// Handles over `store`, with the built-in provisioners, default settings, and a vault on
    /// the same database under a key that lives only as long as this process (servers replace
    /// it with the configured one).
    pub fn new(store: Arc<dyn Store>) -> Self {
        let backend: Arc<dyn SecretBackend> = store.clone();
        let keyring = Keyring::parse(&Keyring::generate_entry()).expect("a generated key parses");
        Self {
            vault: Vault::new(keyring, backend),
            store,
            registry: Arc::new(Registry::builtin(&RegistryOptions::default())),
            settings: Arc::new(ClusterSettings::default()),
        }
    }
}

/// Installation-wide settings of cluster management.
#[derive(Debug, Clone)]
pub struct ClusterSettings {
    /// Lifetime of per-user kubeconfig tokens.
    pub user_token_ttl: std::time::Duration,
    /// How long request-time checks (an imported cluster's /version) may take.
    pub request_check_timeout: std::time::Duration,
    /// Where provisioners' per-cluster working directories live.
    pub work_dir: std::path::PathBuf,
    /// Where backup archives are kept: a directory or an S3-compatible bucket.
    pub archives: crate::backup::storage::Archives,
}

impl Default for ClusterSettings {
    fn default() -> Self {
        Self {
            user_token_ttl: std::time::Duration::from_secs(8 * 3600),
            request_check_timeout: std::time::Duration::from_secs(15),
            work_dir: std::env::temp_dir().join("kqueen-work"),
            archives: std::sync::Arc::new(crate::backup::storage::ArchiveDir::new(
                std::env::temp_dir().join("kqueen-backups"),
            )),
        }
    }
}
