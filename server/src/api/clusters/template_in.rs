//! What creates or edits a template, and the template list's query.

use kqueen_core::cluster::TemplateInput;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::api::schemas::AdminAccessIn;

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

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct TemplateQuery {
    /// Only templates offered to this tenant (required for non-operators).
    pub tenant: Option<String>,
}
