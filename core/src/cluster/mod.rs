//! Clusters and what they are made from: providers (a provisioner backend with its settings),
//! templates (what tenants may request), clusters, their operations and timelines, and the
//! per-tenant quota.

mod kind;
pub mod params;

use std::collections::BTreeMap;
use std::fmt;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::tenant::TenantSlug;
use crate::ValidationError;
pub use kind::ProviderKind;
pub use params::{ParamOverride, Params};

/// A cluster's name: a DNS-1123 label, unique among a tenant's live clusters.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ClusterName(String);

impl ClusterName {
    pub fn parse(raw: &str) -> Result<Self, ValidationError> {
        TenantSlug::parse(raw)
            .map(|s| Self(s.as_str().to_owned()))
            .map_err(|e| ValidationError::new("name", e.message))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ClusterName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A provider or template name: 1-63 characters of a-z, 0-9 and '-' (a DNS-1123 label).
pub fn parse_object_name(raw: &str) -> Result<String, ValidationError> {
    TenantSlug::parse(raw.trim())
        .map(|s| s.as_str().to_owned())
        .map_err(|e| ValidationError::new("name", e.message))
}

/// A free-text description: at most 500 characters.
pub fn parse_description(raw: &str) -> Result<String, ValidationError> {
    let d = raw.trim();
    if d.chars().count() > 500 {
        return Err(ValidationError::new(
            "description",
            "must be at most 500 characters",
        ));
    }
    Ok(d.to_owned())
}

macro_rules! string_enum {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(
            Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize,
            serde::Deserialize,
        )]
        pub enum $name { $($(#[$vm])* #[serde(rename = $text)] $variant),+ }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }

            pub fn parse(s: &str) -> Option<Self> {
                match s { $($text => Some($name::$variant),)+ _ => None }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

/// An enum stored and serialised as fixed texts, with `ALL`, `as_str`, `parse` and `Display`.
pub(crate) use string_enum;

string_enum!(
    /// Where a cluster is in its life.
    ClusterState {
        Provisioning = "provisioning",
        Ready = "ready",
        Updating = "updating",
        Deleting = "deleting",
        Error = "error",
        Unknown = "unknown",
    }
);

impl ClusterState {
    /// A human label ("Provisioning").
    pub fn label(self) -> &'static str {
        match self {
            ClusterState::Provisioning => "Provisioning",
            ClusterState::Ready => "Ready",
            ClusterState::Updating => "Updating",
            ClusterState::Deleting => "Deleting",
            ClusterState::Error => "Error",
            ClusterState::Unknown => "Unknown",
        }
    }
}

string_enum!(
    /// What an operation does.
    OperationKind {
        Create = "create",
        Delete = "delete",
        Scale = "scale",
        Upgrade = "upgrade",
    }
);

string_enum!(
    /// Where an operation is.
    OperationState {
        Pending = "pending",
        Running = "running",
        Succeeded = "succeeded",
        Failed = "failed",
    }
);

string_enum!(
    /// What a timeline entry records.
    EventKind {
        Step = "step",
        Log = "log",
        State = "state",
        Error = "error",
    }
);

string_enum!(
    /// What a tenant admin's personal kubeconfig may do in a cluster made from a template.
    /// Members always get `edit` in the tenant's namespaces only.
    #[derive(Default)]
    AdminAccess {
        /// `admin` in every namespace the tenant may use (not kube-*, kqueen-users, nor
        /// namespaces KQueen or an addon owns); read-only on nodes, namespaces, storage
        /// classes and CRDs. The default.
        #[default]
        Namespaced = "namespaced",
        /// `cluster-admin` on the whole cluster: for clusters the tenant owns outright
        /// (e.g. hosted control planes), chosen explicitly by an operator.
        ClusterAdmin = "cluster-admin",
    }
);

impl AdminAccess {
    /// A human label for pages and audit details.
    pub fn label(self) -> &'static str {
        match self {
            AdminAccess::Namespaced => "admin in the tenant's namespaces",
            AdminAccess::ClusterAdmin => "cluster-admin (the whole cluster)",
        }
    }
}

/// A provider as stored (secret settings are in the vault; only their names are here).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Provider {
    pub id: Uuid,
    pub name: String,
    pub kind: ProviderKind,
    pub description: String,
    pub config: Params,
    /// Names of the settings kept in the vault.
    pub secret_fields: Vec<String>,
    pub disabled: bool,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// Input to create or edit a provider. Secret fields left empty on edit keep their value.
/// `Debug` names the settings but shows none of their values.
#[derive(Clone, Default)]
pub struct ProviderInput {
    pub name: String,
    pub kind: String,
    pub description: String,
    /// Every setting by name, secret ones included (they go to the vault).
    pub settings: Params,
    pub disabled: bool,
}

impl fmt::Debug for ProviderInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProviderInput")
            .field("name", &self.name)
            .field("kind", &self.kind)
            .field("description", &self.description)
            .field("settings", &RedactedValues(&self.settings))
            .field("disabled", &self.disabled)
            .finish()
    }
}

/// `Debug` of a map of settings or parameters: the names, no values. Which ones are secret
/// (a Jenkins API token, an uploaded kubeconfig) is known only to the provisioner's schema.
pub struct RedactedValues<'a, V>(pub &'a BTreeMap<String, V>);

impl<V> fmt::Debug for RedactedValues<'_, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.0.keys().map(|k| (k, format_args!("[redacted]"))))
            .finish()
    }
}

/// A template as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    pub id: Uuid,
    pub provider_id: Uuid,
    pub name: String,
    pub description: String,
    pub overrides: BTreeMap<String, ParamOverride>,
    /// Tenants it is offered to; empty: every tenant.
    pub tenants: Vec<Uuid>,
    /// How long a create may take before the cluster goes to Error.
    pub timeout_minutes: u32,
    /// What tenant admins' kubeconfigs may do in clusters made from this template.
    pub admin_access: AdminAccess,
    pub disabled: bool,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// Input to create or edit a template.
#[derive(Debug, Clone, Default)]
pub struct TemplateInput {
    pub name: String,
    /// Provider name or id.
    pub provider: String,
    pub description: String,
    /// JSON object: parameter name -> [`ParamOverride`].
    pub overrides: String,
    /// Tenant slugs; empty: every tenant.
    pub tenants: Vec<String>,
    pub timeout_minutes: Option<u32>,
    /// What tenant admins get in the clusters: `namespaced` (also when empty) or
    /// `cluster-admin`.
    pub admin_access: String,
    pub disabled: bool,
}

/// A cluster as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cluster {
    pub id: Uuid,
    pub tenant_id: Uuid,
    pub tenant_slug: String,
    pub name: ClusterName,
    pub template_id: Option<Uuid>,
    pub template_name: String,
    pub provider_id: Uuid,
    pub provider_kind: ProviderKind,
    pub state: ClusterState,
    /// Validated, non-secret parameters.
    pub parameters: Params,
    pub node_count: u32,
    pub endpoint: Option<String>,
    pub provisioner_state: serde_json::Value,
    /// Why the cluster is in Error.
    pub error: Option<String>,
    /// When the time-to-live deletes it.
    pub expires_at: Option<DateTime<Utc>>,
    pub created_by: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// A cluster request. `Debug` names the parameters but shows none of their values (one may be
/// an uploaded kubeconfig).
#[derive(Clone, Default)]
pub struct ClusterRequest {
    /// Tenant slug; `None` (or blank): the caller's only tenant where they may create clusters.
    pub tenant: Option<String>,
    pub name: String,
    /// Template name or id.
    pub template: String,
    pub parameters: Params,
}

impl fmt::Debug for ClusterRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClusterRequest")
            .field("tenant", &self.tenant)
            .field("name", &self.name)
            .field("template", &self.template)
            .field("parameters", &RedactedValues(&self.parameters))
            .finish()
    }
}

/// What to list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClusterFilter {
    /// Tenant slug.
    pub tenant: Option<String>,
    pub state: Option<ClusterState>,
    /// Substring of the name.
    pub name: Option<String>,
}

/// A durable operation on a cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Operation {
    pub id: Uuid,
    pub cluster_id: Uuid,
    pub kind: OperationKind,
    pub state: OperationState,
    pub step: String,
    pub progress: u8,
    pub attempts: u32,
    pub error: Option<String>,
    /// Scale: the node count; upgrade: the version.
    pub target: Option<String>,
    pub checkpoint: serde_json::Value,
    pub requested_by: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub started_at: Option<DateTime<Utc>>,
    pub finished_at: Option<DateTime<Utc>>,
    pub deadline_at: DateTime<Utc>,
    pub run_after: DateTime<Utc>,
    pub lease_owner: Option<String>,
    pub lease_expires_at: Option<DateTime<Utc>>,
}

impl Operation {
    pub fn new(
        cluster_id: Uuid,
        kind: OperationKind,
        target: Option<String>,
        requested_by: &str,
        now: DateTime<Utc>,
        timeout: chrono::Duration,
    ) -> Self {
        Self {
            id: Uuid::now_v7(),
            cluster_id,
            kind,
            state: OperationState::Pending,
            step: "Waiting for a worker".into(),
            progress: 0,
            attempts: 0,
            error: None,
            target,
            checkpoint: serde_json::Value::Null,
            requested_by: requested_by.into(),
            created_at: now,
            updated_at: now,
            started_at: None,
            finished_at: None,
            deadline_at: now + timeout,
            run_after: now,
            lease_owner: None,
            lease_expires_at: None,
        }
    }

    pub fn is_finished(&self) -> bool {
        matches!(
            self.state,
            OperationState::Succeeded | OperationState::Failed
        )
    }
}

/// One entry of a cluster's timeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterEvent {
    pub id: Uuid,
    pub cluster_id: Uuid,
    pub operation_id: Option<Uuid>,
    pub occurred_at: DateTime<Utc>,
    pub kind: EventKind,
    pub message: String,
}

impl ClusterEvent {
    pub fn new(
        cluster_id: Uuid,
        operation_id: Option<Uuid>,
        kind: EventKind,
        message: impl Into<String>,
        at: DateTime<Utc>,
    ) -> Self {
        let mut message: String = message.into();
        if message.len() > 2000 {
            let mut cut = 2000;
            while !message.is_char_boundary(cut) {
                cut -= 1;
            }
            message.truncate(cut);
            message.push('…');
        }
        Self {
            id: Uuid::now_v7(),
            cluster_id,
            operation_id,
            occurred_at: at,
            kind,
            message,
        }
    }
}

/// A tenant's limits. `None`: unlimited.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Quota {
    pub max_clusters: Option<u32>,
    pub max_nodes: Option<u32>,
    /// Clusters of the tenant are deleted this many hours after creation.
    pub cluster_ttl_hours: Option<u32>,
}

/// What a tenant uses against its quota.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub clusters: u32,
    pub nodes: u32,
}

impl Quota {
    /// Refuses a new cluster of `nodes` nodes when it would exceed the quota.
    pub fn admit(&self, usage: Usage, nodes: u32) -> Result<(), String> {
        if let Some(max) = self.max_clusters {
            if usage.clusters + 1 > max {
                return Err(format!(
                    "quota exceeded: the tenant may have at most {max} clusters ({} in use)",
                    usage.clusters
                ));
            }
        }
        if let Some(max) = self.max_nodes {
            if usage.nodes + nodes > max {
                return Err(format!(
                    "quota exceeded: the tenant may have at most {max} nodes ({} in use, {nodes} requested)",
                    usage.nodes
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_provider_settings_or_request_parameters() {
        let provider = ProviderInput {
            name: "ci".into(),
            kind: "jenkins".into(),
            settings: [
                ("url".to_owned(), "https://ci.example.test".to_owned()),
                ("api_token".to_owned(), "11aa22bb-jenkins-token".to_owned()),
            ]
            .into(),
            ..ProviderInput::default()
        };
        let shown = format!("{provider:?}");
        assert!(!shown.contains("11aa22bb-jenkins-token"), "{shown}");
        assert!(
            shown.contains("api_token") && shown.contains("jenkins"),
            "{shown}"
        );

        let request = ClusterRequest {
            tenant: Some("team-a".into()),
            name: "prod".into(),
            template: "import".into(),
            parameters: [(
                "kubeconfig".to_owned(),
                "users: [{name: u, user: {token: uploaded-admin-token}}]".to_owned(),
            )]
            .into(),
        };
        let shown = format!("{request:?}");
        assert!(!shown.contains("uploaded-admin-token"), "{shown}");
        assert!(
            shown.contains("kubeconfig") && shown.contains("prod"),
            "{shown}"
        );
    }

    #[test]
    fn names_are_dns_labels() {
        assert!(ClusterName::parse("dev-1").is_ok());
        for bad in ["", "Dev", "-a", "a-", "a_b", &"a".repeat(64)] {
            let e = ClusterName::parse(bad).expect_err(bad);
            assert_eq!(e.field, "name");
        }
    }

    #[test]
    fn quota_admits_within_limits() {
        let q = Quota {
            max_clusters: Some(2),
            max_nodes: Some(10),
            cluster_ttl_hours: None,
        };
        assert!(q
            .admit(
                Usage {
                    clusters: 1,
                    nodes: 5
                },
                5
            )
            .is_ok());
        assert!(q
            .admit(
                Usage {
                    clusters: 2,
                    nodes: 0
                },
                1
            )
            .expect_err("clusters")
            .contains("at most 2 clusters"));
        assert!(q
            .admit(
                Usage {
                    clusters: 0,
                    nodes: 8
                },
                3
            )
            .expect_err("nodes")
            .contains("at most 10 nodes"));
        assert!(Quota::default()
            .admit(
                Usage {
                    clusters: 1000,
                    nodes: 1000
                },
                1000
            )
            .is_ok());
    }

    #[test]
    fn states_round_trip() {
        for s in ClusterState::ALL {
            assert_eq!(ClusterState::parse(s.as_str()), Some(*s));
        }
        for k in OperationKind::ALL {
            assert_eq!(OperationKind::parse(k.as_str()), Some(*k));
        }
    }

    #[test]
    fn long_event_messages_are_cut_on_a_char_boundary() {
        let e = ClusterEvent::new(
            Uuid::nil(),
            None,
            EventKind::Log,
            "é".repeat(3000),
            chrono::Utc::now(),
        );
        assert!(e.message.len() <= 2004);
    }
}
