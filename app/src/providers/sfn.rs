//! Server functions: The providers and templates page. Each one takes the request's actor, calls one use
//! case, and maps the result to a DTO.

use leptos::prelude::*;

use crate::providers::dto::ProvidersPageDto;
use crate::AppError;

/// Providers, templates and the provisioner kinds (operators).
#[server(prefix = "/sfn", endpoint = "providers")]
pub async fn providers_page() -> Result<ProvidersPageDto, AppError> {
    use kqueen_core::page::Page;

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
        providers: providers.into_iter().map(Into::into).collect(),
        templates: templates.into_iter().map(Into::into).collect(),
        kinds: kinds.into_iter().map(Into::into).collect(),
        kept: crate::kept::take().await,
    })
}
