//! The autoscaling section's writes, as server functions behind `ActionForm` (they post and
//! redirect without JavaScript, and run in place with it).

use leptos::prelude::*;

use crate::AppError;

/// Turns the cluster's autoscaling on or changes it, from the section's form (the delay in
/// minutes, as people think of it).
#[server(prefix = "/sfn", endpoint = "set_autoscaling")]
pub async fn set_autoscaling(
    id: String,
    min_nodes: String,
    max_nodes: String,
    scale_down_utilisation: String,
    scale_down_after_minutes: String,
) -> Result<(), AppError> {
    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let result = async {
        let minutes = crate::ssr::whole("scale_down_after_secs", &scale_down_after_minutes)?;
        let input = kqueen_dto::autoscaling::AutoscalingInput {
            min_nodes: crate::ssr::whole("min_nodes", &min_nodes)?,
            max_nodes: crate::ssr::whole("max_nodes", &max_nodes)?,
            scale_down_utilisation: Some(crate::ssr::whole(
                "scale_down_utilisation",
                &scale_down_utilisation,
            )?),
            scale_down_after_secs: Some(minutes.saturating_mul(60)),
        };
        k.autoscaler()
            .set(
                &actor,
                &id,
                kqueen_core::autoscale::AutoscaleSettings::from(&input),
            )
            .await
            .map(|_| ())
    }
    .await;
    crate::ssr::back(
        &format!("/clusters/{}", crate::query::form_escape(&id)),
        result,
    );
    Ok(())
}

/// Turns the cluster's autoscaling off.
#[server(prefix = "/sfn", endpoint = "disable_autoscaling")]
pub async fn disable_autoscaling(id: String) -> Result<(), AppError> {
    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let result = k.autoscaler().disable(&actor, &id).await;
    crate::ssr::back(
        &format!("/clusters/{}", crate::query::form_escape(&id)),
        result,
    );
    Ok(())
}
