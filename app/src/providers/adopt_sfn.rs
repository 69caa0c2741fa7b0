//! Server functions of a provider's existing clusters (operators): the page's read (what the
//! provider's infrastructure holds, the tenants and the provider's templates) and the
//! adoption of one cluster into a tenant, behind `ActionForm`.

use kqueen_dto::adopt::AdoptableCluster;
use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use crate::AppError;

/// The id of the adopt forms' kept input ([`crate::kept`]); which row it belongs to is its
/// value `adopting` (the cluster's reference).
pub const ADOPT_FORM: &str = "adopt-form";

/// What `/providers/:name/clusters` shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdoptionPageDto {
    pub provider: String,
    pub kind: String,
    /// What the provider's infrastructure holds, adopted or not.
    pub clusters: Vec<AdoptableCluster>,
    /// Why the clusters could not be listed (the management cluster is unreachable, the
    /// provider's kind adopts nothing), in words for the operator.
    pub unlisted: Option<String>,
    /// Tenants an adopted cluster can go to; none when there are too many to choose from (a
    /// slug is typed instead).
    pub tenants: Option<Vec<String>>,
    /// The provider's templates, by name.
    pub templates: Vec<String>,
    /// An adopt form as it was refused, with the error.
    pub kept: Option<crate::kept::KeptForm>,
}

/// A provider's existing clusters, with what adopting one needs (operators).
#[server(prefix = "/sfn", endpoint = "provider_clusters")]
pub async fn provider_clusters(provider: String) -> Result<AdoptionPageDto, AppError> {
    use kqueen_core::page::Page;
    use kqueen_core::Error;

    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let p = k.catalog().provider(&actor, &provider).await?;
    // A provider whose clusters cannot be listed still has its page: the reason is its banner.
    let (clusters, unlisted) = match k.clusters().adoptable_clusters(&actor, &p.name).await {
        Ok(found) => (found.into_iter().map(Into::into).collect(), None),
        Err(e @ (Error::Conflict(_) | Error::Invalid(_))) => {
            (Vec::new(), Some(crate::kept::sentence(&e.public().message)))
        }
        Err(e) => return Err(e.into()),
    };
    let templates = k
        .catalog()
        .list_templates(&actor, None, Page::new(Page::MAX_LIMIT, 0))
        .await?
        .into_iter()
        .filter(|t| t.provider_name == p.name)
        .map(|t| t.template.name)
        .collect();
    Ok(AdoptionPageDto {
        provider: p.name,
        kind: p.kind.to_string(),
        clusters,
        unlisted,
        tenants: crate::ssr::filter_tenants(&k, &actor).await?,
        templates,
        kept: crate::kept::take().await,
    })
}

/// Adopts the cluster `adopting` (its reference) of `provider` into `tenant`, held to
/// `template`, as `name`; opens the new cluster's page, or comes back to the form with the
/// values as typed and the error at its input.
#[server(prefix = "/sfn", endpoint = "adopt_cluster")]
pub async fn adopt_cluster(
    provider: String,
    adopting: String,
    tenant: Option<String>,
    template: Option<String>,
    name: Option<String>,
) -> Result<(), AppError> {
    use kqueen_dto::adopt::AdoptRequest;

    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let req = AdoptRequest {
        tenant: tenant.unwrap_or_default(),
        name: name.unwrap_or_default(),
        template: template.unwrap_or_default(),
        reference: adopting,
    };
    match k.clusters().adopt_cluster(&actor, req.clone().into()).await {
        Ok((cluster, _)) => leptos_axum::redirect(&format!(
            "/clusters/{}",
            crate::query::form_escape(&cluster.id.to_string())
        )),
        Err(e) => {
            let page = format!(
                "/providers/{}/clusters",
                crate::query::form_escape(&provider)
            );
            // `adopting` names no input: an error about the reference is the form's.
            let values = [
                ("adopting", req.reference),
                ("tenant", req.tenant),
                ("template", req.template),
                ("name", req.name),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect();
            crate::kept::refused(&page, ADOPT_FORM, values, e).await;
        }
    }
    Ok(())
}
