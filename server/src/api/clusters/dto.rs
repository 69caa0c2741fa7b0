//! What the API sends is `kqueen_dto`'s (the portal sends the same types); what it reads to
//! request and change clusters, and their queries, are here. Providers' and templates'
//! inputs are in `provider_in.rs` and `template_in.rs`.

pub use kqueen_dto::clusters::{
    Cluster as ClusterOut, ClusterAccepted, ClusterDetail as ClusterDetailOut, ClusterList,
    Event as EventOut, Operation as OperationOut, Scale as ScaleIn, Upgrade as UpgradeIn,
};
pub use kqueen_dto::providers::{
    Kind as KindOut, Provider as ProviderOut, Template as TemplateOut,
};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

pub use crate::api::schemas::{ClusterStateFilter, ParamValue};

/// `Debug` of a JSON object of settings or parameters: the names, no values.
pub(super) struct RedactedJson<'a>(pub(super) &'a serde_json::Map<String, serde_json::Value>);

impl std::fmt::Debug for RedactedJson<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map()
            .entries(self.0.keys().map(|k| (k, format_args!("[redacted]"))))
            .finish()
    }
}

/// `Debug` names the parameters but shows none of their values (one may be a kubeconfig).
#[derive(Serialize, Deserialize, ToSchema)]
pub struct ClusterIn {
    /// Tenant slug. Optional when the caller belongs to exactly one tenant where they may
    /// create clusters: that one is used. Otherwise 400.
    #[serde(default)]
    pub tenant: Option<String>,
    /// DNS-1123 label, unique among the tenant's clusters.
    #[schema(format = "dns-label", max_length = 63, example = "dev")]
    pub name: String,
    /// Template name.
    pub template: String,
    /// Parameter name -> value (strings, numbers or booleans), as the template's
    /// `parameters` at `/api/v1/templates/{name}` describe them; checked against them (400
    /// naming the parameter).
    #[serde(default)]
    #[schema(value_type = BTreeMap<String, ParamValue>)]
    pub parameters: serde_json::Map<String, serde_json::Value>,
}

impl std::fmt::Debug for ClusterIn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterIn")
            .field("tenant", &self.tenant)
            .field("name", &self.name)
            .field("template", &self.template)
            .field("parameters", &RedactedJson(&self.parameters))
            .finish()
    }
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ClusterQuery {
    /// Tenant slug.
    pub tenant: Option<String>,
    /// Cluster state.
    #[param(value_type = Option<ClusterStateFilter>, inline)]
    pub state: Option<String>,
    /// Substring of the name.
    pub name: Option<String>,
    #[param(value_type = Option<u64>, maximum = 4294967295_i64)]
    pub limit: Option<u32>,
    #[param(value_type = Option<u64>, maximum = 4294967295_i64)]
    pub offset: Option<u32>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct EventsQuery {
    /// Only entries after this event id.
    pub after: Option<Uuid>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AccessQuery {
    /// Whose access to revoke (tenant admins, operators); default: the caller's own.
    pub user: Option<String>,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::ClusterIn;

    #[test]
    fn debug_never_shows_parameters() {
        let request: ClusterIn = serde_json::from_value(serde_json::json!({
            "name": "prod", "template": "import",
            "parameters": {"kubeconfig": "users: [{user: {token: uploaded-admin-token}}]"}
        }))
        .unwrap();
        let shown = format!("{request:?}");
        assert!(
            !shown.contains("uploaded-admin-token") && shown.contains("kubeconfig"),
            "{shown}"
        );
    }
}
