//! The catalog as the REST API and the portal send it: provisioner kinds, providers and
//! templates.

use kqueen_dto::providers;

impl From<crate::KindInfo> for providers::Kind {
    fn from(k: crate::KindInfo) -> Self {
        Self {
            kind: k.kind,
            capabilities: k.capabilities.into(),
            provider_schema: k.provider_schema.0,
            cluster_schema: k.cluster_schema.0,
        }
    }
}

/// Secret settings stay out: `secret_fields` names those that are set.
impl From<crate::cluster::Provider> for providers::Provider {
    fn from(p: crate::cluster::Provider) -> Self {
        Self {
            id: p.id.to_string(),
            name: p.name,
            kind: p.kind,
            description: p.description,
            settings: p.config,
            secret_fields: p.secret_fields,
            disabled: p.disabled,
            created_at: p.created_at.to_rfc3339(),
            updated_at: p.updated_at.to_rfc3339(),
        }
    }
}

impl From<crate::TemplateView> for providers::Template {
    fn from(v: crate::TemplateView) -> Self {
        Self {
            id: v.template.id.to_string(),
            name: v.template.name,
            description: v.template.description,
            provider: v.provider_name,
            kind: v.provider_kind,
            capabilities: v.capabilities.into(),
            overrides: v.template.overrides,
            parameters: v.schema.0,
            fixed: v.fixed,
            tenants: v.tenant_slugs,
            timeout_minutes: v.template.timeout_minutes,
            admin_access: v.template.admin_access.to_string(),
            disabled: v.template.disabled,
        }
    }
}
