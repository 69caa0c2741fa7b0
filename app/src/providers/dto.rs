//! What the providers server functions send to the browser: Providers, templates and provisioner kinds.

use std::collections::BTreeMap;

use crate::clusters::dto::ParamDto;
use kqueen_dto::clusters::Capabilities;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderDto {
    pub name: String,
    pub kind: String,
    pub description: String,
    pub settings: Vec<(String, String)>,
    pub secret_fields: Vec<String>,
    pub disabled: bool,
    pub updated: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TemplateDto {
    pub name: String,
    pub description: String,
    pub provider: String,
    pub kind: String,
    pub overrides: String,
    pub tenants: Vec<String>,
    pub timeout_minutes: u32,
    /// `namespaced` or `cluster-admin`.
    pub admin_access: String,
    pub disabled: bool,
    pub params: Vec<ParamDto>,
    pub fixed: Vec<(String, String)>,
    /// Its refinements of the provider's cluster parameters, by parameter (what `overrides`
    /// says, for the refinements form).
    pub refinements: BTreeMap<String, RefinementDto>,
}

/// A template's refinement of one cluster parameter (the core's `ParamOverride`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefinementDto {
    pub default: Option<String>,
    pub min: Option<i64>,
    pub max: Option<i64>,
    /// The options offered (a choice parameter), or the choices (a text parameter).
    pub options: Option<Vec<String>>,
    /// A value tenants cannot change.
    pub fixed: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KindDto {
    pub kind: String,
    pub capabilities: Capabilities,
    pub provider_params: Vec<ParamDto>,
    pub cluster_params: Vec<ParamDto>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProvidersPageDto {
    pub providers: Vec<ProviderDto>,
    pub templates: Vec<TemplateDto>,
    pub kinds: Vec<KindDto>,
    /// The provider or template form as it was refused, with the error.
    pub kept: Option<crate::kept::KeptForm>,
}
