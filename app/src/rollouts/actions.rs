//! The rollouts' writes, as server functions behind `ActionForm`: they post and redirect
//! without JavaScript, and run in place with it. A start leads to the new rollout's page, or
//! back to the previewed form; pause, resume and abort come back to the rollout's page, with
//! the refusal said there.

use leptos::prelude::*;

use crate::AppError;

/// A rollout's page.
#[cfg(feature = "ssr")]
fn rollout_path(id: &str) -> String {
    format!("/rollouts/{}", crate::query::form_escape(id))
}

/// Starts the rollout the form previewed: its plan is made again and recorded, and its first
/// wave starts. Refused, the browser goes back to the preview: an input's error is said at
/// that input (the preview finds it again), any other above the form.
#[server(prefix = "/sfn", endpoint = "start_rollout")]
pub async fn start_rollout(
    tenant: Option<String>,
    provider: Option<String>,
    version: Option<String>,
    target_version: String,
    wave_size: String,
) -> Result<(), AppError> {
    use super::dto::RolloutForm;
    use super::sfn::ssr;

    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let typed = |v: Option<String>| v.map(|v| v.trim().to_owned()).unwrap_or_default();
    let form = RolloutForm {
        tenant: typed(tenant),
        provider: typed(provider),
        version: typed(version),
        target_version: target_version.trim().to_owned(),
        wave_size: wave_size.trim().to_owned(),
    };
    let preview = super::preview_path(&form);
    match k.rollouts().start(&actor, &ssr::input(&form)).await {
        Ok(view) => leptos_axum::redirect(&rollout_path(&view.rollout.id.to_string())),
        Err(e) => match ssr::refusal(&form, e) {
            Ok((Some(_), _)) => leptos_axum::redirect(&preview),
            Ok((None, message)) => leptos_axum::redirect(&format!(
                "{preview}&error={}",
                crate::query::form_escape(&message)
            )),
            Err(AppError::Unauthenticated) => {
                crate::ssr::back(&preview, Err(kqueen_core::Error::Unauthenticated))
            }
            Err(e) => return Err(e),
        },
    }
    Ok(())
}

/// Pauses running rollout `id`: upgrades under way finish, no new one starts.
#[server(prefix = "/sfn", endpoint = "pause_rollout")]
pub async fn pause_rollout(id: String) -> Result<(), AppError> {
    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let result = k.rollouts().pause(&actor, &id).await.map(drop);
    crate::ssr::back(&rollout_path(&id), result);
    Ok(())
}

/// Resumes paused rollout `id`: its failed clusters that are Ready again are tried again,
/// and the waves go on.
#[server(prefix = "/sfn", endpoint = "resume_rollout")]
pub async fn resume_rollout(id: String) -> Result<(), AppError> {
    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let result = k.rollouts().resume(&actor, &id).await.map(drop);
    crate::ssr::back(&rollout_path(&id), result);
    Ok(())
}

/// Aborts rollout `id` for good: upgrades under way finish, the waiting clusters are skipped.
#[server(prefix = "/sfn", endpoint = "abort_rollout")]
pub async fn abort_rollout(id: String) -> Result<(), AppError> {
    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let result = k.rollouts().abort(&actor, &id).await.map(drop);
    crate::ssr::back(&rollout_path(&id), result);
    Ok(())
}
