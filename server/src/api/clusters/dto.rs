//! The wire types of providers, templates, clusters, operations and quotas.

pub use kqueen_dto::clusters::{
    Capabilities as CapabilitiesOut, Event as EventOut, Operation as OperationOut,
    SharedStorage as SharedStorageOut,
};
use std::collections::BTreeMap;

use kqueen_core::cluster::{Cluster, Operation, Provider, ProviderInput, TemplateInput};
use kqueen_core::provisioner::schema::params_from_json;
use kqueen_core::provisioner::{ParamKind, ParamSchema, Params};
use kqueen_core::ValidationError;
use kqueen_core::{ClusterDetail, Error, KindInfo, TemplateView};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

pub use crate::api::schemas::{AdminAccessIn, ClusterStateFilter, ParamValue};
use uuid::Uuid;

/// A provisioner kind: what it can do and the schemas of its settings and requests.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct KindOut {
    /// The provisioner kind.
    #[schema(value_type = kqueen_dto::kinds::ProviderKind)]
    pub kind: String,
    pub capabilities: CapabilitiesOut,
    /// Settings of a provider of this kind (`[{name, label, type, ...}]`).
    #[schema(value_type = Vec<Object>)]
    pub provider_schema: serde_json::Value,
    /// Parameters of a cluster request.
    #[schema(value_type = Vec<Object>)]
    pub cluster_schema: serde_json::Value,
}

pub(super) fn json_of<T: Serialize>(v: &T) -> serde_json::Value {
    serde_json::to_value(v).unwrap_or_default()
}

impl From<KindInfo> for KindOut {
    fn from(k: KindInfo) -> Self {
        Self {
            kind: k.kind.to_string(),
            capabilities: k.capabilities.into(),
            provider_schema: json_of(&k.provider_schema),
            cluster_schema: json_of(&k.cluster_schema),
        }
    }
}

/// A provider. Secret settings are never returned: `secret_fields` names those that are set.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ProviderOut {
    pub id: Uuid,
    pub name: String,
    #[schema(value_type = kqueen_dto::kinds::ProviderKind)]
    pub kind: String,
    pub description: String,
    pub settings: BTreeMap<String, String>,
    pub secret_fields: Vec<String>,
    pub disabled: bool,
    pub created_at: String,
    pub updated_at: String,
}

impl From<Provider> for ProviderOut {
    fn from(p: Provider) -> Self {
        Self {
            id: p.id,
            name: p.name,
            kind: p.kind.to_string(),
            description: p.description,
            settings: p.config,
            secret_fields: p.secret_fields,
            disabled: p.disabled,
            created_at: p.created_at.to_rfc3339(),
            updated_at: p.updated_at.to_rfc3339(),
        }
    }
}

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
pub struct TemplateOut {
    pub id: Uuid,
    pub name: String,
    pub description: String,
    pub provider: String,
    #[schema(value_type = kqueen_dto::kinds::ProviderKind)]
    pub kind: String,
    pub capabilities: CapabilitiesOut,
    /// The provisioner's cluster parameters as narrowed by this template.
    #[schema(value_type = Object)]
    pub overrides: serde_json::Value,
    /// What a request may set: `[{name, label, type, default, min, max, options, ...}]`.
    #[schema(value_type = Vec<Object>)]
    pub parameters: serde_json::Value,
    /// Values the template fixes.
    pub fixed: BTreeMap<String, String>,
    /// Tenants it is offered to; empty: every tenant.
    pub tenants: Vec<String>,
    /// How long an operation may run before it fails.
    #[schema(minimum = 1, maximum = 10080)]
    pub timeout_minutes: u32,
    /// What tenant admins' kubeconfigs may do in clusters made from it: `namespaced`
    /// (`admin` in the tenant's namespaces) or `cluster-admin` (the whole cluster).
    #[schema(example = "namespaced")]
    pub admin_access: String,
    pub disabled: bool,
}

impl From<TemplateView> for TemplateOut {
    fn from(v: TemplateView) -> Self {
        Self {
            id: v.template.id,
            overrides: json_of(&v.template.overrides),
            name: v.template.name,
            description: v.template.description,
            provider: v.provider_name,
            kind: v.provider_kind.to_string(),
            capabilities: v.capabilities.into(),
            parameters: json_of(&v.schema),
            fixed: v.fixed,
            tenants: v.tenant_slugs,
            timeout_minutes: v.template.timeout_minutes,
            admin_access: v.template.admin_access.to_string(),
            disabled: v.template.disabled,
        }
    }
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

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ClusterOut {
    pub id: Uuid,
    pub tenant: String,
    pub name: String,
    pub template: String,
    #[schema(value_type = kqueen_dto::kinds::ProviderKind)]
    pub kind: String,
    /// `provisioning`, `ready`, `updating`, `deleting`, `error` or `unknown`.
    pub state: String,
    pub parameters: BTreeMap<String, String>,
    pub node_count: u32,
    pub endpoint: Option<String>,
    pub error: Option<String>,
    /// When the tenant's time-to-live deletes the cluster.
    pub expires_at: Option<String>,
    pub created_by: String,
    pub created_at: String,
    /// Progress of the current (or last) operation.
    pub progress: Option<u8>,
    pub current_step: Option<String>,
}

impl ClusterOut {
    pub(super) fn new(c: Cluster, op: Option<&Operation>) -> Self {
        Self {
            id: c.id,
            tenant: c.tenant_slug,
            name: c.name.to_string(),
            template: c.template_name,
            kind: c.provider_kind.to_string(),
            state: c.state.to_string(),
            parameters: c.parameters,
            node_count: c.node_count,
            endpoint: c.endpoint,
            error: c.error,
            expires_at: c.expires_at.map(|t| t.to_rfc3339()),
            created_by: c.created_by,
            created_at: c.created_at.to_rfc3339(),
            progress: op.map(|o| o.progress),
            current_step: op.map(|o| o.step.clone()),
        }
    }
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ClusterDetailOut {
    #[serde(flatten)]
    pub cluster: ClusterOut,
    pub capabilities: CapabilitiesOut,
    /// Newest first.
    pub operations: Vec<OperationOut>,
    /// The timeline, oldest first (the newest 300 entries).
    pub events: Vec<EventOut>,
    /// What tenant admins' personal kubeconfigs may do in the cluster: `namespaced`
    /// (`admin` in the tenant's namespaces) or `cluster-admin`, as its template says.
    /// Members always get `edit` in the tenant's namespaces.
    #[schema(example = "namespaced")]
    pub admin_access: String,
    /// Operators, hosted clusters: the etcd key space's keys and bytes, last measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_storage: Option<SharedStorageOut>,
}

impl From<ClusterDetail> for ClusterDetailOut {
    fn from(d: ClusterDetail) -> Self {
        Self {
            admin_access: d.admin_access.to_string(),
            shared_storage: d.shared_storage.map(Into::into),
            cluster: ClusterOut::new(d.cluster, d.operations.first()),
            capabilities: d.capabilities.into(),
            operations: d.operations.into_iter().map(Into::into).collect(),
            events: d.events.into_iter().map(Into::into).collect(),
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
