//! Providers (a provisioner backend with its settings) and templates (what tenants may
//! request), as stored and as operators write them.

use std::collections::BTreeMap;
use std::fmt;

use chrono::{DateTime, Utc};
use kqueen_dto::kinds::ProviderKind;
use uuid::Uuid;

use super::params::{ParamOverride, Params};
use crate::cluster::AdminAccess;
use crate::tenant::TenantSlug;
use crate::ValidationError;

/// A provider or template name: 1-63 characters of a-z, 0-9 and '-' (a DNS-1123 label),
/// exactly as given (surrounding spaces are refused, see [`TenantSlug`]).
pub fn parse_object_name(raw: &str) -> Result<String, ValidationError> {
    TenantSlug::parse(raw)
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
