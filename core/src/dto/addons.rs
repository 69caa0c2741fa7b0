//! How addons travel: the `kqueen_dto::addons` types the REST API and the portal both send,
//! filled from the domain's own (and back, for definitions operators submit).

use kqueen_dto::addons as dto;

use crate::workloads::addons::installed::FleetAddon;
use crate::workloads::addons::{AddonDefinition, AddonParam, HealthRule, ParamType, WellKnown};
use crate::{ClusterAddonView, ValidationError};

impl From<AddonParam> for dto::AddonParam {
    fn from(p: AddonParam) -> Self {
        Self {
            name: p.name,
            kind: match p.kind {
                ParamType::String => "string",
                ParamType::Integer => "integer",
                ParamType::Boolean => "boolean",
                ParamType::Enum => "enum",
            }
            .to_owned(),
            default: p.default,
            description: p.description,
            min: p.min,
            max: p.max,
            pattern: p.pattern,
            options: p.options,
        }
    }
}

fn well_known(w: WellKnown) -> dto::WellKnown {
    dto::WellKnown {
        kind: w.kind,
        namespace: w.namespace,
        name: w.name,
    }
}

impl From<AddonDefinition> for dto::AddonDefinition {
    fn from(d: AddonDefinition) -> Self {
        Self {
            name: d.name,
            version: d.version,
            description: d.description,
            namespace: d.namespace,
            parameters: d.parameters.into_iter().map(Into::into).collect(),
            health: dto::HealthRule {
                workloads: d.health.workloads.into_iter().map(well_known).collect(),
                api_services: d.health.api_services,
            },
            requires: d.requires,
            detect: d.detect.into_iter().map(well_known).collect(),
            manifests: d.manifests,
            builtin: d.builtin,
        }
    }
}

/// A definition as an operator submits it; unknown parameter types are refused.
impl TryFrom<dto::AddonDefinition> for AddonDefinition {
    type Error = ValidationError;
    fn try_from(d: dto::AddonDefinition) -> Result<Self, ValidationError> {
        let from_known = |w: dto::WellKnown| WellKnown {
            kind: w.kind,
            namespace: w.namespace,
            name: w.name,
        };
        let parameters = d
            .parameters
            .into_iter()
            .map(|p| {
                let kind = match p.kind.as_str() {
                    "string" => ParamType::String,
                    "integer" => ParamType::Integer,
                    "boolean" => ParamType::Boolean,
                    "enum" => ParamType::Enum,
                    _ => {
                        return Err(ValidationError::at(
                            "parameters",
                            p.name.clone(),
                            "type must be string, integer, boolean or enum",
                        ))
                    }
                };
                Ok(AddonParam {
                    name: p.name,
                    kind,
                    default: p.default,
                    description: p.description,
                    min: p.min,
                    max: p.max,
                    pattern: p.pattern,
                    options: p.options,
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            name: d.name,
            version: d.version,
            description: d.description,
            namespace: d.namespace,
            parameters,
            health: HealthRule {
                workloads: d.health.workloads.into_iter().map(from_known).collect(),
                api_services: d.health.api_services,
            },
            requires: d.requires,
            detect: d.detect.into_iter().map(from_known).collect(),
            manifests: d.manifests,
            builtin: false,
        })
    }
}

impl From<ClusterAddonView> for dto::ClusterAddon {
    fn from(v: ClusterAddonView) -> Self {
        Self {
            name: v.name,
            description: v.newest.description.clone(),
            state: v.state.as_str().to_owned(),
            state_label: v.state.label().to_owned(),
            reason: v.reason,
            version: v.installed.as_ref().map(|i| i.version.clone()),
            parameters: v.installed.map(|i| i.parameters).unwrap_or_default(),
            versions: v.versions,
            upgrade_available: v.upgrade_available,
            parameter_specs: v.newest.parameters.into_iter().map(Into::into).collect(),
            requires: v.newest.requires,
        }
    }
}

impl FleetAddon {
    /// The fleet row as it travels, with the newest catalog version when it is newer.
    pub fn into_dto(self, newer: Option<String>) -> dto::FleetAddon {
        let row = self;
        dto::FleetAddon {
            cluster_id: row.addon.cluster_id.to_string(),
            cluster: row.cluster_name,
            tenant: row.tenant_slug,
            addon: row.addon.name,
            version: row.addon.version,
            state: row.addon.state.to_string(),
            error: row.addon.error,
            upgrade_available: newer,
        }
    }
}

impl From<crate::BulkOutcome> for dto::BulkResult {
    fn from(o: crate::BulkOutcome) -> Self {
        let (operation, error) = match o.result {
            Ok(op) => (Some(op.id.to_string()), None),
            Err(e) => (None, Some(e.public().message)),
        };
        Self {
            cluster_id: o.cluster_id.to_string(),
            cluster: o.cluster_name,
            operation,
            error,
        }
    }
}
