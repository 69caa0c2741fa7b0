//! Form routes of the cluster, provider and template pages (post/redirect/get, like
//! [`super`]), and the kubeconfig download link.

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Extension, Form, Router};
use kqueen_core::cluster::{ClusterRequest, ProviderInput, Quota, TemplateInput};
use kqueen_core::provisioner::Params;
use kqueen_core::{Actor, Error, ValidationError};

use super::back;
use crate::api::kubeconfig_response;
use crate::escape::query_escape;
use crate::state::AppState;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/clusters/request", post(request_cluster))
        .route("/clusters/{id}/delete", post(delete_cluster))
        .route("/clusters/{id}/scale", post(scale_cluster))
        .route("/clusters/{id}/upgrade", post(upgrade_cluster))
        .route("/clusters/{id}/revoke", post(revoke_access))
        .route("/clusters/{id}/inventory/sync", post(sync_inventory))
        .route("/clusters/{id}/kubeconfig", get(download_kubeconfig))
        .route("/providers/create", post(create_provider))
        .route("/providers/{name}/update", post(update_provider))
        .route("/providers/{name}/delete", post(delete_provider))
        .route("/templates/create", post(create_template))
        .route("/templates/{name}/update", post(update_template))
        .route("/templates/{name}/delete", post(delete_template))
        .route("/tenants/{slug}/quota", post(set_quota))
}

/// The form's fields, in order (repeated names keep the last value).
type Fields = Vec<(String, String)>;

fn field<'a>(fields: &'a Fields, name: &str) -> &'a str {
    fields
        .iter()
        .rev()
        .find(|(k, _)| k == name)
        .map_or("", |(_, v)| v.as_str())
}

/// Fields named `<prefix><name>` as parameters (a checked checkbox wins over its hidden
/// `false`: the last value counts).
fn prefixed(fields: &Fields, prefix: &str) -> Params {
    let mut out = Params::new();
    for (k, v) in fields {
        if let Some(name) = k.strip_prefix(prefix) {
            out.insert(name.to_owned(), v.clone());
        }
    }
    out
}

fn checked(fields: &Fields, name: &str) -> bool {
    field(fields, name) == "true"
}

async fn request_cluster(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Form(fields): Form<Fields>,
) -> Response {
    let params = prefixed(&fields, "p.");
    let req = ClusterRequest {
        tenant: Some(field(&fields, "tenant").to_owned()),
        name: field(&fields, "name").to_owned(),
        template: field(&fields, "template").to_owned(),
        parameters: params.clone(),
    };
    match state.kqueen.request_cluster(&actor, req).await {
        Ok((cluster, _)) => Redirect::to(&format!("/clusters/{}", cluster.id)).into_response(),
        Err(e) => {
            // Back to the form with what was typed (secret fields excepted: they never travel
            // in URLs), so nothing but the secret has to be entered again.
            let secret: Vec<String> = match state
                .kqueen
                .template(&actor, field(&fields, "template"))
                .await
            {
                Ok(v) => v
                    .schema
                    .specs()
                    .iter()
                    .filter(|s| s.secret)
                    .map(|s| s.name.clone())
                    .collect(),
                Err(_) => params.keys().cloned().collect(),
            };
            let mut page = format!(
                "/clusters/new?tenant={}&template={}&name={}",
                query_escape(field(&fields, "tenant")),
                query_escape(field(&fields, "template")),
                query_escape(field(&fields, "name"))
            );
            for (k, v) in params.iter().filter(|(k, _)| !secret.contains(k)) {
                page.push_str(&format!("&p.{}={}", query_escape(k), query_escape(v)));
            }
            back(&page, Err(e))
        }
    }
}

fn cluster_page(id: &str) -> String {
    format!("/clusters/{}", query_escape(id))
}

async fn delete_cluster(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(id): Path<String>,
) -> Response {
    let result = state.kqueen.delete_cluster(&actor, &id).await.map(|_| ());
    back(&cluster_page(&id), result)
}

async fn scale_cluster(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(id): Path<String>,
    Form(fields): Form<Fields>,
) -> Response {
    let result = match field(&fields, "node_count").trim().parse::<u32>() {
        Ok(n) => state.kqueen.scale_cluster(&actor, &id, n).await.map(|_| ()),
        Err(_) => Err(ValidationError::new("node_count", "must be a whole number").into()),
    };
    back(&cluster_page(&id), result)
}

/// Syncs the cluster's inventory now (bounded by the inventory timeout); a failed sync is
/// shown on the cluster page as the last sync's error.
async fn sync_inventory(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(id): Path<String>,
) -> Response {
    let result = state.kqueen.sync_cluster_inventory(&actor, &id).await;
    back(&cluster_page(&id), result.map(|_| ()))
}

async fn upgrade_cluster(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(id): Path<String>,
    Form(fields): Form<Fields>,
) -> Response {
    let v = field(&fields, "kubernetes_version");
    let result = state
        .kqueen
        .upgrade_cluster(&actor, &id, v)
        .await
        .map(|_| ());
    back(&cluster_page(&id), result)
}

async fn revoke_access(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(id): Path<String>,
    Form(fields): Form<Fields>,
) -> Response {
    let user = Some(field(&fields, "user")).filter(|u| !u.is_empty());
    let result = state.kqueen.revoke_access(&actor, &id, user).await;
    back(&cluster_page(&id), result)
}

async fn download_kubeconfig(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(id): Path<String>,
) -> Response {
    match state.kqueen.kubeconfig(&actor, &id).await {
        Ok(d) => kubeconfig_response(d),
        Err(e) => back(&cluster_page(&id), Err(e)),
    }
}

fn provider_input(fields: &Fields) -> ProviderInput {
    ProviderInput {
        name: field(fields, "name").to_owned(),
        kind: field(fields, "kind").to_owned(),
        description: field(fields, "description").to_owned(),
        settings: prefixed(fields, "s."),
        disabled: checked(fields, "disabled"),
    }
}

async fn create_provider(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Form(fields): Form<Fields>,
) -> Response {
    let result = state
        .kqueen
        .create_provider(&actor, provider_input(&fields))
        .await
        .map(|_| ());
    let page = format!("/providers?kind={}", query_escape(field(&fields, "kind")));
    match result {
        Ok(()) => Redirect::to("/providers").into_response(),
        Err(e) => back(&page, Err(e)),
    }
}

async fn update_provider(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(name): Path<String>,
    Form(fields): Form<Fields>,
) -> Response {
    let result = state
        .kqueen
        .update_provider(&actor, &name, provider_input(&fields))
        .await
        .map(|_| ());
    match result {
        Ok(()) => Redirect::to("/providers").into_response(),
        Err(e) => back(&format!("/providers?edit={}", query_escape(&name)), Err(e)),
    }
}

async fn delete_provider(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(name): Path<String>,
) -> Response {
    back(
        "/providers",
        state.kqueen.delete_provider(&actor, &name).await,
    )
}

fn template_input(fields: &Fields) -> Result<TemplateInput, Error> {
    let timeout = field(fields, "timeout_minutes").trim();
    let timeout_minutes = if timeout.is_empty() {
        None
    } else {
        Some(timeout.parse::<u32>().map_err(|_| {
            Error::from(ValidationError::new(
                "timeout_minutes",
                "must be a whole number",
            ))
        })?)
    };
    Ok(TemplateInput {
        name: field(fields, "name").to_owned(),
        provider: field(fields, "provider").to_owned(),
        description: field(fields, "description").to_owned(),
        overrides: field(fields, "overrides").to_owned(),
        tenants: field(fields, "tenants")
            .split([',', ' ', '\n'])
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(str::to_owned)
            .collect(),
        timeout_minutes,
        admin_access: field(fields, "admin_access").to_owned(),
        disabled: checked(fields, "disabled"),
    })
}

async fn create_template(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Form(fields): Form<Fields>,
) -> Response {
    let result = match template_input(&fields) {
        Ok(input) => state
            .kqueen
            .create_template(&actor, input)
            .await
            .map(|_| ()),
        Err(e) => Err(e),
    };
    match result {
        Ok(()) => Redirect::to("/providers").into_response(),
        Err(e) => back("/providers", Err(e)),
    }
}

async fn update_template(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(name): Path<String>,
    Form(fields): Form<Fields>,
) -> Response {
    let result = match template_input(&fields) {
        Ok(input) => state
            .kqueen
            .update_template(&actor, &name, input)
            .await
            .map(|_| ()),
        Err(e) => Err(e),
    };
    match result {
        Ok(()) => Redirect::to("/providers").into_response(),
        Err(e) => back(
            &format!("/providers?template={}", query_escape(&name)),
            Err(e),
        ),
    }
}

async fn delete_template(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(name): Path<String>,
) -> Response {
    back(
        "/providers",
        state.kqueen.delete_template(&actor, &name).await,
    )
}

async fn set_quota(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(slug): Path<String>,
    Form(fields): Form<Fields>,
) -> Response {
    let page = format!("/tenants/{}", query_escape(&slug));
    let number = |name: &'static str| -> Result<Option<u32>, Error> {
        let v = field(&fields, name).trim();
        if v.is_empty() {
            return Ok(None);
        }
        v.parse()
            .map(Some)
            .map_err(|_| ValidationError::new(name, "must be a whole number or empty").into())
    };
    let quota = (|| {
        Ok::<_, Error>(Quota {
            max_clusters: number("max_clusters")?,
            max_nodes: number("max_nodes")?,
            cluster_ttl_hours: number("cluster_ttl_hours")?,
        })
    })();
    let result = match quota {
        Ok(q) => state.kqueen.set_quota(&actor, &slug, q).await.map(|_| ()),
        Err(e) => Err(e),
    };
    back(&page, result)
}
