//! Where each kind of secret lives in the vault: one name per secret, used by the use cases
//! that write them and by the engine that reads them.

use uuid::Uuid;

use super::SecretRef;

/// The name of a cluster's admin kubeconfig within its tenant.
pub fn kubeconfig_name(cluster: Uuid) -> String {
    format!("cluster/{cluster}/kubeconfig")
}

/// A cluster's admin kubeconfig.
pub fn cluster_kubeconfig(tenant: Uuid, cluster: Uuid) -> SecretRef {
    SecretRef::tenant(tenant, kubeconfig_name(cluster))
}

/// A secret parameter of a cluster request (a pasted kubeconfig, a password).
pub fn cluster_param(tenant: Uuid, cluster: Uuid, name: &str) -> SecretRef {
    SecretRef::tenant(tenant, format!("cluster/{cluster}/param/{name}"))
}

/// A secret a provisioner keeps for one of its clusters (a hosted control plane's PKI).
pub fn cluster_provisioner_secret(tenant: Uuid, cluster: Uuid, name: &str) -> SecretRef {
    SecretRef::tenant(tenant, format!("cluster/{cluster}/provisioner/{name}"))
}

/// A secret field of a provider's settings (credentials of the system it drives).
pub fn provider_field(provider: Uuid, field: &str) -> SecretRef {
    SecretRef::global(format!("provider/{provider}/{field}"))
}

/// The manifests of one application version (they may hold Secrets).
pub fn application_manifests(tenant: Uuid, application: Uuid) -> SecretRef {
    SecretRef::tenant(tenant, format!("application/{application}/manifests"))
}

/// The Secrets of one backup, when it was asked to keep them.
pub fn backup_secrets(tenant: Uuid, backup: Uuid) -> SecretRef {
    SecretRef::tenant(tenant, format!("backup/{backup}/secrets"))
}

/// The key space a key-space backup copied (every value its API server wrote, Secrets too).
pub fn backup_key_space(tenant: Uuid, backup: Uuid) -> SecretRef {
    SecretRef::tenant(tenant, format!("backup/{backup}/key-space"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_stay_as_stored() {
        // Renaming any of these orphans every secret already stored under the old name.
        let (t, c) = (Uuid::nil(), Uuid::max());
        assert_eq!(
            cluster_kubeconfig(t, c),
            SecretRef::tenant(t, format!("cluster/{c}/kubeconfig"))
        );
        assert_eq!(
            cluster_param(t, c, "kubeconfig"),
            SecretRef::tenant(t, format!("cluster/{c}/param/kubeconfig"))
        );
        assert_eq!(
            cluster_provisioner_secret(t, c, "pki"),
            SecretRef::tenant(t, format!("cluster/{c}/provisioner/pki"))
        );
        assert_eq!(
            provider_field(c, "token"),
            SecretRef::global(format!("provider/{c}/token"))
        );
        assert_eq!(
            backup_secrets(t, c),
            SecretRef::tenant(t, format!("backup/{c}/secrets"))
        );
    }
}
