//! Server functions: The providers and templates page. Each one takes the request's actor, calls one use
//! case, and maps the result to a DTO.

use leptos::prelude::*;

use crate::providers::dto::ProvidersPageDto;
use crate::AppError;

/// Providers, templates and the provisioner kinds (operators).
#[server(prefix = "/sfn", endpoint = "providers")]
pub async fn providers_page() -> Result<ProvidersPageDto, AppError> {
    use kqueen_core::page::Page;

    use crate::providers::dto::{KindDto, ProviderDto, TemplateDto};

    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let kinds = k.catalog().provider_kinds(&actor).await?;
    let providers = k
        .catalog()
        .list_providers(&actor, Page::new(Page::MAX_LIMIT, 0))
        .await?;
    let templates = k
        .catalog()
        .list_templates(&actor, None, Page::new(Page::MAX_LIMIT, 0))
        .await?;
    Ok(ProvidersPageDto {
        providers: providers
            .into_iter()
            .map(|p| ProviderDto {
                name: p.name,
                kind: p.kind.to_string(),
                description: p.description,
                settings: p.config.into_iter().collect(),
                secret_fields: p.secret_fields,
                disabled: p.disabled,
                updated: crate::ssr::time(p.updated_at),
            })
            .collect(),
        templates: templates
            .into_iter()
            .map(|v| TemplateDto {
                name: v.template.name.clone(),
                description: v.template.description.clone(),
                provider: v.provider_name.clone(),
                kind: v.provider_kind.to_string(),
                overrides: if v.template.overrides.is_empty() {
                    String::new()
                } else {
                    serde_json::to_string_pretty(&v.template.overrides).unwrap_or_default()
                },
                tenants: v.tenant_slugs.clone(),
                timeout_minutes: v.template.timeout_minutes,
                admin_access: v.template.admin_access.as_str().to_owned(),
                disabled: v.template.disabled,
                params: crate::clusters::sfn::map::params(&v.schema),
                fixed: v.fixed.clone().into_iter().collect(),
                refinements: v
                    .template
                    .overrides
                    .iter()
                    .map(|(name, o)| (name.clone(), crate::providers::refine::dto(o)))
                    .collect(),
            })
            .collect(),
        kinds: kinds
            .into_iter()
            .map(|i| KindDto {
                kind: i.kind.to_string(),
                capabilities: i.capabilities.into(),
                provider_params: crate::clusters::sfn::map::params(&i.provider_schema),
                cluster_params: crate::clusters::sfn::map::params(&i.cluster_schema),
            })
            .collect(),
        kept: crate::kept::take().await,
    })
}
