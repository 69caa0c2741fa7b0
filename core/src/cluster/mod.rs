//! Clusters and what they are made from: providers (a provisioner backend with its settings),
//! templates (what tenants may request), clusters, their operations and timelines, and the
//! per-tenant quota.

mod catalog;
mod operation;
pub mod params;
mod quota;
mod refine;
pub mod storage_quota;
mod target;

use std::fmt;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::tenant::TenantSlug;
use crate::ValidationError;
pub use catalog::*;
pub use kqueen_dto::clusters::ClusterState;
pub use kqueen_dto::kinds::ProviderKind;
pub use operation::*;
pub use params::{ParamOverride, Params};
pub use quota::*;
pub use target::OperationTarget;

/// A cluster's name: a DNS-1123 label, unique among a tenant's live clusters, exactly as
/// given (surrounding spaces are refused, see [`TenantSlug`]).
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
    /// What an operation does.
    OperationKind {
        Create = "create",
        Delete = "delete",
        Scale = "scale",
        Upgrade = "upgrade",
        /// Replaces the machine of a dead (NotReady) node: the Node is removed from the
        /// cluster, then the provisioner brings a new machine in its place.
        ReplaceNode = "replace-node",
        /// Deploys (or re-deploys) one version of an application.
        AppDeploy = "app-deploy",
        /// Removes one version of an application and everything it created.
        AppDelete = "app-delete",
        /// Installs an addon, or moves it to another catalog version or parameters.
        AddonApply = "addon-apply",
        /// Removes an addon and everything it created.
        AddonRemove = "addon-remove",
        /// Takes a backup of what the cluster holds.
        Backup = "backup",
        /// Restores a backup (of this cluster or another) into the cluster.
        Restore = "restore",
    }
);

impl OperationKind {
    /// Operations on what runs in a cluster (applications, addons, backups, restores) rather than on the
    /// cluster itself: no provisioner takes part, and the cluster stays Ready whatever
    /// their outcome.
    pub fn is_workload(self) -> bool {
        matches!(
            self,
            OperationKind::AppDeploy
                | OperationKind::AppDelete
                | OperationKind::AddonApply
                | OperationKind::AddonRemove
                | OperationKind::Backup
                | OperationKind::Restore
        )
    }
}

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
    /// The nodes the cluster reports once its inventory is synced (what its request or last
    /// scale asked for before): see [`Cluster::asked_nodes`] for what was asked.
    pub node_count: u32,
    pub endpoint: Option<String>,
    pub provisioner_state: serde_json::Value,
    /// Why the cluster is in Error.
    pub error: Option<String>,
    /// When the time-to-live deletes it.
    pub expires_at: Option<DateTime<Utc>>,
    /// Production: deleting it, restoring over it or unmarking it needs a second person's
    /// approval ([`crate::approval`]); its time-to-live does not delete it.
    pub production: bool,
    pub created_by: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl Cluster {
    /// The node count its provider was last asked for (the request's, then each finished
    /// scale's `node_count` parameter); the reported count when it has none.
    pub fn asked_nodes(&self) -> u32 {
        self.parameters
            .get("node_count")
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or(self.node_count)
    }
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
        for bad in [" dev", "dev "] {
            let e = ClusterName::parse(bad).expect_err(bad);
            assert_eq!(
                (e.field, e.message.as_str()),
                ("name", "must not start or end with a space")
            );
            let e = parse_object_name(bad).expect_err(bad);
            assert_eq!(
                (e.field, e.message.as_str()),
                ("name", "must not start or end with a space")
            );
        }
    }

    #[test]
    fn quota_admits_within_limits() {
        let q = Quota {
            max_clusters: Some(2),
            max_nodes: Some(10),
            ..Quota::default()
        };
        assert!(q
            .admit(
                Usage {
                    clusters: 1,
                    nodes: 5,
                    ..Usage::default()
                },
                5
            )
            .is_ok());
        assert!(q
            .admit(
                Usage {
                    clusters: 2,
                    nodes: 0,
                    ..Usage::default()
                },
                1
            )
            .expect_err("clusters")
            .contains("at most 2 clusters"));
        assert!(q
            .admit(
                Usage {
                    clusters: 0,
                    nodes: 8,
                    ..Usage::default()
                },
                3
            )
            .expect_err("nodes")
            .contains("at most 10 nodes"));
        assert!(Quota::default()
            .admit(
                Usage {
                    clusters: 1000,
                    nodes: 1000,
                    ..Usage::default()
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
