//! The applications' writes (preview, deploy, delete), as server functions behind
//! `ActionForm`: they post and redirect without JavaScript, and run in place with it.

use leptos::prelude::*;

use crate::AppError;

/// The deploy form's element id: the kept form of a refused preview or deploy.
pub const FORM: &str = "app-form";

#[cfg(feature = "ssr")]
fn form_page(cluster_id: &str) -> String {
    format!(
        "/clusters/{}/apps/new",
        crate::query::form_escape(cluster_id)
    )
}

/// The form's inputs, as typed, for the kept form.
#[cfg(feature = "ssr")]
fn inputs(r: &kqueen_dto::apps::DeployRequest) -> std::collections::BTreeMap<String, String> {
    [
        ("name", r.name.clone()),
        ("version", r.version.clone()),
        ("namespace", r.namespace.clone().unwrap_or_default()),
        ("manifests", r.manifests.clone()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect()
}

/// An error about one document of the manifests (`manifests`, entry `document 3`) concerns
/// the manifests' input: said there, its message already names the document.
#[cfg(feature = "ssr")]
fn at_input(e: kqueen_core::Error) -> kqueen_core::Error {
    match e {
        kqueen_core::Error::Invalid(mut v) if v.key.is_some() => {
            v.key = None;
            kqueen_core::Error::Invalid(v)
        }
        other => other,
    }
}

/// Runs the server-side dry run of a deploy with the caller's rights, keeps the request and
/// its diff sealed in the session, and opens the preview; a refused request comes back to
/// the form as typed, with the error at its field ([`crate::kept`]).
#[server(prefix = "/sfn", endpoint = "preview_app")]
pub async fn preview_app(
    id: String,
    name: String,
    version: String,
    namespace: Option<String>,
    manifests: String,
) -> Result<(), AppError> {
    use super::pending::{self, Pending};

    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let request = kqueen_dto::apps::DeployRequest {
        name,
        version,
        namespace: namespace.filter(|n| !n.trim().is_empty()),
        manifests,
    };
    let previewed = k.apps().preview(&actor, &id, &request.clone().into()).await;
    let kept = match previewed {
        Ok(preview) => {
            let pending = Pending {
                cluster_id: id.clone(),
                request: request.clone(),
                preview: preview.into(),
            };
            match pending::put(&pending).await {
                Ok(()) => {
                    let page = format!("/clusters/{}/apps/preview", crate::query::form_escape(&id));
                    leptos_axum::redirect(&page);
                    return Ok(());
                }
                Err(e) => e,
            }
        }
        Err(e) => at_input(e),
    };
    crate::kept::refused(&form_page(&id), FORM, inputs(&request), kept).await;
    Ok(())
}

/// Queues the deploy the caller previewed in this cluster and opens the version's page; a
/// refused deploy comes back to the form with the request as it was.
#[server(prefix = "/sfn", endpoint = "deploy_app")]
pub async fn deploy_app(id: String) -> Result<(), AppError> {
    use super::pending;

    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let Some(p) = pending::get(&id).await else {
        let gone = kqueen_core::Error::Conflict(
            "nothing to deploy: the preview is no longer available; preview again".into(),
        );
        crate::ssr::back(&form_page(&id), Err(gone));
        return Ok(());
    };
    match k
        .apps()
        .deploy(&actor, &id, &p.request.clone().into())
        .await
    {
        Ok((app, _)) => {
            pending::clear().await;
            let page = super::version_path(&crate::query::form_escape(&id), &app.id.to_string());
            leptos_axum::redirect(&page);
        }
        Err(e) => {
            crate::kept::refused(&form_page(&id), FORM, inputs(&p.request), at_input(e)).await
        }
    }
    Ok(())
}

/// Removes a version (everything it created, and its namespace when KQueen made it); the
/// version's page then follows the removal.
#[server(prefix = "/sfn", endpoint = "delete_app")]
pub async fn delete_app(id: String, app: String) -> Result<(), AppError> {
    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let result = k.apps().delete(&actor, &id, &app).await.map(|_| ());
    let page = super::version_path(
        &crate::query::form_escape(&id),
        &crate::query::form_escape(&app),
    );
    crate::ssr::back(&page, result);
    Ok(())
}
