//! Provisioner kinds, providers and templates: what an operator defines and what tenants
//! request clusters from.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::clusters::Capabilities;
use crate::kinds::ProviderKind;
use crate::params::{ParamOverride, ParamSpec};

/// A provisioner kind: what it can do and the schemas of its settings and requests.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = KindOut))]
pub struct Kind {
    pub kind: ProviderKind,
    pub capabilities: Capabilities,
    /// Settings of a provider of this kind (`[{name, label, type, ...}]`).
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<Object>))]
    pub provider_schema: Vec<ParamSpec>,
    /// Parameters of a cluster request.
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<Object>))]
    pub cluster_schema: Vec<ParamSpec>,
}

/// A provider. Secret settings are never sent: `secret_fields` names those that are set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ProviderOut))]
pub struct Provider {
    /// UUID.
    #[cfg_attr(feature = "openapi", schema(format = Uuid))]
    pub id: String,
    pub name: String,
    pub kind: ProviderKind,
    pub description: String,
    pub settings: BTreeMap<String, String>,
    pub secret_fields: Vec<String>,
    pub disabled: bool,
    /// RFC 3339 (UTC), like every time below.
    pub created_at: String,
    pub updated_at: String,
}

/// A template: a provider and how far tenants may set its cluster parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = TemplateOut))]
pub struct Template {
    /// UUID.
    #[cfg_attr(feature = "openapi", schema(format = Uuid))]
    pub id: String,
    pub name: String,
    pub description: String,
    /// The provider's name.
    pub provider: String,
    pub kind: ProviderKind,
    pub capabilities: Capabilities,
    /// The provisioner's cluster parameters as narrowed by this template, by parameter.
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub overrides: BTreeMap<String, ParamOverride>,
    /// What a request may set: `[{name, label, type, default, min, max, options, ...}]`.
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<Object>))]
    pub parameters: Vec<ParamSpec>,
    /// Values the template fixes.
    pub fixed: BTreeMap<String, String>,
    /// Tenants it is offered to; empty: every tenant.
    pub tenants: Vec<String>,
    /// How long an operation may run before it fails.
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 10080))]
    pub timeout_minutes: u32,
    /// What tenant admins' kubeconfigs may do in clusters made from it: `namespaced`
    /// (`admin` in the tenant's namespaces) or `cluster-admin` (the whole cluster).
    #[cfg_attr(feature = "openapi", schema(example = "namespaced"))]
    pub admin_access: String,
    pub disabled: bool,
}
