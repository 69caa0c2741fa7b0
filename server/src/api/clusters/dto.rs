//! The wire types of providers, templates, clusters, operations and quotas.

//! What the API sends is `kqueen_dto`'s (the portal sends the same types); what it reads,
//! and its query strings, are here.

pub use kqueen_dto::clusters::{
    Cluster as ClusterOut, ClusterDetail as ClusterDetailOut, Event as EventOut,
    Operation as OperationOut,
};
pub use kqueen_dto::providers::{
    Kind as KindOut, Provider as ProviderOut, Template as TemplateOut,
};

use kqueen_core::cluster::{ProviderInput, TemplateInput};
use kqueen_core::provisioner::schema::params_from_json;
use kqueen_core::provisioner::{ParamKind, ParamSchema, Params};
use kqueen_core::Error;
use kqueen_core::ValidationError;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

pub use crate::api::schemas::{AdminAccessIn, ClusterStateFilter, ParamValue};
use uuid::Uuid;

/// Creates a provider (`POST`), or edits one (`PUT`: `kind` is ignored, secret settings left
/// out keep their stored value).
#[derive(Serialize, Deserialize, ToSchema)]
pub struct ProviderIn {
    /// DNS-1123 label.
    #[schema(format = "dns-label", max_length = 63, example = "lab")]
    pub name: String,
    #[serde(default)]
    #[schema(value_type = kqueen_dto::kinds::ProviderKind, required = true)]
    pub kind: String,
    #[serde(default)]
    #[schema(max_length = 500)]
    pub description: String,
    /// Setting name -> value (strings, numbers or booleans), as the kind's `provider_schema`
    /// at `/api/v1/provider-kinds` describes them; checked against it (400 naming the setting).
    #[serde(default)]
    #[schema(value_type = BTreeMap<String, ParamValue>)]
    pub settings: serde_json::Map<String, serde_json::Value>,
    #[serde(default)]
    pub disabled: bool,
}

impl std::fmt::Debug for ProviderIn {
    /// Names the settings, shows none of their values (some are secrets).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderIn")
            .field("name", &self.name)
            .field("kind", &self.kind)
            .field("description", &self.description)
            .field("settings", &RedactedJson(&self.settings))
            .field("disabled", &self.disabled)
            .finish()
    }
}

/// `Debug` of a JSON object of settings or parameters: the names, no values.
struct RedactedJson<'a>(&'a serde_json::Map<String, serde_json::Value>);

impl std::fmt::Debug for RedactedJson<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map()
            .entries(self.0.keys().map(|k| (k, format_args!("[redacted]"))))
            .finish()
    }
}

/// Edits a provider: its kind stays; secret settings left out keep their stored value. (The
/// document describes this body per kind, `provider_schemas`.)
#[derive(Serialize, Deserialize, ToSchema)]
pub struct ProviderUpdateIn {
    /// DNS-1123 label (a new name renames it).
    #[schema(format = "dns-label", max_length = 63, example = "lab")]
    pub name: String,
    /// The provider's kind, which cannot change (another one answers 409): required, so that
    /// the settings are read as that kind's.
    #[serde(default)]
    #[schema(value_type = Option<kqueen_dto::kinds::ProviderKind>)]
    pub kind: Option<String>,
    #[serde(default)]
    #[schema(max_length = 500)]
    pub description: String,
    /// Setting name -> value, as the kind's `provider_schema` at `/api/v1/provider-kinds`
    /// describes them; checked against it (400 naming the setting).
    #[serde(default)]
    #[schema(value_type = BTreeMap<String, ParamValue>)]
    pub settings: serde_json::Map<String, serde_json::Value>,
    #[serde(default)]
    pub disabled: bool,
}

impl std::fmt::Debug for ProviderUpdateIn {
    /// Names the settings, shows none of their values (some are secrets).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderUpdateIn")
            .field("name", &self.name)
            .field("kind", &self.kind)
            .field("description", &self.description)
            .field("settings", &RedactedJson(&self.settings))
            .field("disabled", &self.disabled)
            .finish()
    }
}

impl ProviderUpdateIn {
    /// The input to the core, the settings taken as `schema` (the stored kind's) types them.
    pub(crate) fn into_input(self, schema: &ParamSchema) -> Result<ProviderInput, Error> {
        ProviderIn {
            name: self.name,
            kind: String::new(),
            description: self.description,
            settings: self.settings,
            disabled: self.disabled,
        }
        .into_input(Some(schema))
    }
}

impl ProviderIn {
    /// The input to the core. With the kind's `schema`, each setting must have the JSON type
    /// the document gives it (a boolean, a whole number or text; null leaves it out).
    pub(crate) fn into_input(self, schema: Option<&ParamSchema>) -> Result<ProviderInput, Error> {
        let settings = match schema {
            Some(schema) => typed_settings(schema, &self.settings)?,
            None => params_from_json(&self.settings)?,
        };
        Ok(ProviderInput {
            name: self.name,
            kind: self.kind,
            description: self.description,
            settings,
            disabled: self.disabled,
        })
    }
}

/// Settings as text for the core, each checked to be of the JSON type its kind's schema
/// gives it. Names the schema lacks pass as text: the core refuses them by name.
fn typed_settings(
    schema: &ParamSchema,
    settings: &serde_json::Map<String, serde_json::Value>,
) -> Result<Params, ValidationError> {
    use serde_json::Value;
    let mut out = Params::new();
    for (name, value) in settings {
        let Some(spec) = schema.get(name) else {
            let one = serde_json::Map::from_iter([(name.clone(), value.clone())]);
            out.extend(params_from_json(&one)?);
            continue;
        };
        let wrong = |what: &str| ValidationError::new("settings", format!("{name}: {what}"));
        let text = match (&spec.kind, value) {
            (_, Value::Null) => continue,
            (ParamKind::Boolean { .. }, Value::Bool(b)) => b.to_string(),
            (ParamKind::Boolean { .. }, _) => return Err(wrong("must be true or false")),
            (ParamKind::Integer { .. }, Value::Number(n)) if n.is_i64() => n.to_string(),
            (ParamKind::Integer { .. }, _) => return Err(wrong("must be a whole number")),
            (_, Value::String(s)) => s.clone(),
            _ => return Err(wrong("must be text")),
        };
        out.insert(name.clone(), text);
    }
    Ok(out)
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct TemplateIn {
    /// DNS-1123 label.
    #[schema(format = "dns-label", max_length = 63, example = "small")]
    pub name: String,
    /// Provider name.
    pub provider: String,
    #[serde(default)]
    #[schema(max_length = 500)]
    pub description: String,
    /// Parameter name -> `{default, min, max, options, fixed}`, refining the provider kind's
    /// `cluster_schema` at `/api/v1/provider-kinds`; checked against it (400 naming it).
    #[serde(default)]
    #[schema(value_type = Object)]
    pub overrides: serde_json::Map<String, serde_json::Value>,
    /// Tenant slugs; empty: every tenant.
    #[serde(default)]
    pub tenants: Vec<String>,
    /// How long an operation may run before it fails, 1 minute to a week (default 60).
    #[schema(minimum = 1, maximum = 10080)]
    pub timeout_minutes: Option<u32>,
    /// `namespaced` (the default, also when empty) or `cluster-admin`: what tenant admins'
    /// kubeconfigs may do in clusters made from this template.
    #[serde(default)]
    #[schema(value_type = AdminAccessIn)]
    pub admin_access: String,
    #[serde(default)]
    pub disabled: bool,
}

impl From<TemplateIn> for TemplateInput {
    fn from(t: TemplateIn) -> Self {
        TemplateInput {
            name: t.name,
            provider: t.provider,
            description: t.description,
            overrides: serde_json::Value::Object(t.overrides).to_string(),
            tenants: t.tenants,
            timeout_minutes: t.timeout_minutes,
            admin_access: t.admin_access,
            disabled: t.disabled,
        }
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

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ClusterAccepted {
    pub cluster: ClusterOut,
    pub operation: OperationOut,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ClusterList {
    pub items: Vec<ClusterOut>,
    pub total: u64,
    pub limit: u32,
    pub offset: u32,
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
pub struct TemplateQuery {
    /// Only templates offered to this tenant (required for non-operators).
    pub tenant: Option<String>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct EventsQuery {
    /// Only entries after this event id.
    pub after: Option<Uuid>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ScaleIn {
    #[schema(minimum = 1, maximum = 1000)]
    pub node_count: u32,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct UpgradeIn {
    /// Such as `1.34` or `v1.34.2`.
    #[schema(pattern = "^[A-Za-z0-9.+-]{1,20}$", example = "v1.34.2")]
    pub kubernetes_version: String,
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

    use super::*;

    #[test]
    fn debug_never_shows_settings_or_parameters() {
        let provider: ProviderIn = serde_json::from_value(serde_json::json!({
            "name": "ci", "kind": "jenkins", "settings": {"api_token": "11aa22bb-jenkins-token"}
        }))
        .unwrap();
        let shown = format!("{provider:?}");
        assert!(
            !shown.contains("11aa22bb") && shown.contains("api_token"),
            "{shown}"
        );
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
