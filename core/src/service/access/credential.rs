//! Credentials for kubectl's credential plugin (`kqueen get-token`): the identity a downloaded
//! kubeconfig would carry, handed out without a file. kubectl asks again when it expires, so
//! a kubeconfig that names the plugin never needs to be downloaded again, and access ends when
//! the user loses it in the portal (the next request is refused, the ServiceAccount is gone).

use std::fmt;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::Access;
use crate::audit::{action, AuditEvent};
use crate::kubernetes::{ClusterEndpoint, StaticCredential};
use crate::policy::{self, Permission};
use crate::{Actor, Error, Result};

/// Appended to the audit detail of a credential handed to the plugin, to tell it from a
/// download.
const CREDENTIAL_PURPOSE: &str = ", for kubectl's credential plugin";

/// What a credential plugin hands kubectl, and where kubectl should send it. `Debug` never
/// shows the secret.
#[derive(Clone)]
pub struct ClusterCredential {
    pub cluster_id: Uuid,
    /// The context name a kubeconfig download would use: `<tenant>-<cluster>`.
    pub context: String,
    pub endpoint: ClusterEndpoint,
    pub secret: StaticCredential,
    /// When to ask again: the token's expiry for members; for operators (whose credential is
    /// the cluster's admin one, which may live longer) after the personal token lifetime, so
    /// that losing the operator role is noticed as soon.
    pub expires_at: DateTime<Utc>,
    /// Whom the cluster sees, for people: `ServiceAccount kqueen-users/amy-0a1b2c3d4e` or
    /// `the cluster's admin credential`.
    pub identity: String,
}

impl fmt::Debug for ClusterCredential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClusterCredential")
            .field("cluster_id", &self.cluster_id)
            .field("context", &self.context)
            .field("endpoint", &self.endpoint)
            .field("secret", &self.secret)
            .field("expires_at", &self.expires_at)
            .field("identity", &self.identity)
            .finish()
    }
}

impl Access {
    /// The caller's credential for a cluster, as kubectl's credential plugin wants it: tenant
    /// members get a fresh token of their own ServiceAccount (bound and audited exactly like
    /// a kubeconfig download); operators the cluster's admin credential when it is a token
    /// or a client certificate (audited like an admin kubeconfig download).
    pub async fn credential(&self, actor: &Actor, id: &str) -> Result<ClusterCredential> {
        if policy::check(actor, Permission::AdminKubeconfig).is_ok() {
            return self.admin_credential(actor, id).await;
        }
        self.for_member(
            actor,
            id,
            CREDENTIAL_PURPOSE,
            |cluster, issued, endpoint| ClusterCredential {
                cluster_id: cluster.id,
                context: format!("{}-{}", cluster.tenant_slug, cluster.name),
                endpoint,
                identity: format!(
                    "ServiceAccount {}/{}",
                    crate::kubernetes::USERS_NAMESPACE,
                    issued.service_account
                ),
                secret: StaticCredential::Token(issued.token),
                expires_at: issued.expires_at,
            },
        )
        .await
    }

    async fn admin_credential(&self, actor: &Actor, id: &str) -> Result<ClusterCredential> {
        let (cluster, yaml) = self.authorized_admin_kubeconfig(actor, id).await?;
        // Credential plugins are parsed (they may be allowed on the server) only to be refused
        // below: the plugin's command would run on the operator's machine instead.
        let parsed = crate::service::cluster_admin::parse_stored(&yaml, true)?;
        let secret = parsed.static_credential().ok_or_else(|| {
            Error::Conflict(format!(
                "the cluster's admin kubeconfig authenticates with {}, which only works where \
                 it was configured; download the admin kubeconfig instead",
                parsed.auth_kind()
            ))
        })?;
        let audit = AuditEvent::success(actor, action::KUBECONFIG_ADMIN, cluster.name.as_str())
            .in_tenant(cluster.tenant_id)
            .with_detail(CREDENTIAL_PURPOSE.trim_start_matches(", ").to_owned());
        self.deps.store.record_audit(&audit).await?;
        let ttl = chrono::Duration::from_std(self.deps.settings.user_token_ttl)
            .unwrap_or(chrono::Duration::hours(1));
        Ok(ClusterCredential {
            cluster_id: cluster.id,
            context: format!("{}-{}", cluster.tenant_slug, cluster.name),
            endpoint: parsed.endpoint(),
            secret,
            expires_at: Utc::now() + ttl,
            identity: "the cluster's admin credential".into(),
        })
    }
}
