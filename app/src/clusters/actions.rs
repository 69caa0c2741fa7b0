//! The cluster pages' writes (request, delete, scale, upgrade, revoke access), as server
//! functions behind `ActionForm`: they post and redirect without JavaScript, and run in place
//! with it.

use std::collections::BTreeMap;

use leptos::prelude::*;

use crate::AppError;

#[cfg(feature = "ssr")]
fn cluster_page(id: &str) -> String {
    format!("/clusters/{}", crate::query::form_escape(id))
}

/// Requests a cluster from a template; opens its page, or comes back to the form with
/// everything as it was typed and the error at its field ([`crate::kept`]).
#[server(prefix = "/sfn", endpoint = "request_cluster")]
pub async fn request_cluster(
    tenant: Option<String>,
    name: String,
    template: String,
    p: Option<BTreeMap<String, String>>,
    p_shown: Option<BTreeMap<String, String>>,
) -> Result<(), AppError> {
    use kqueen_core::cluster::ClusterRequest;

    use crate::query::form_escape;

    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let params = crate::schema_form::form_params(p, p_shown);
    let tenant = tenant.unwrap_or_default();
    let req = ClusterRequest {
        tenant: Some(tenant.clone()),
        name: name.clone(),
        template: template.clone(),
        parameters: params.clone(),
    };
    match k.clusters().request_cluster(&actor, req).await {
        Ok((cluster, _)) => leptos_axum::redirect(&cluster_page(&cluster.id.to_string())),
        Err(e) => {
            let page = format!(
                "/clusters/new?tenant={}&template={}",
                form_escape(&tenant),
                form_escape(&template),
            );
            let values = [("name".to_owned(), name)]
                .into_iter()
                .chain(params.into_iter().map(|(k, v)| (format!("p[{k}]"), v)))
                .collect();
            crate::kept::refused(&page, "request-form", values, e).await;
        }
    }
    Ok(())
}

/// Deletes a cluster (its provisioner decides what that removes). The portal's delete is
/// confirmed: when it removes machines, `confirm` must be the cluster's name, else the form
/// comes back with the message. (The REST API keeps its contract: tools do not type names.)
#[server(prefix = "/sfn", endpoint = "delete_cluster")]
pub async fn delete_cluster(id: String, confirm: Option<String>) -> Result<(), AppError> {
    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let confirmed = match k.clusters().cluster_detail(&actor, &id).await {
        Ok(d) => typed_name_confirms(
            d.cluster.name.as_str(),
            d.capabilities.deletes_infrastructure,
            confirm.as_deref(),
        ),
        // The delete itself refuses (and audits) a cluster the caller may not see.
        Err(_) => Ok(()),
    };
    let page = cluster_page(&id);
    match confirmed {
        Ok(()) => {
            let result = k.clusters().delete_cluster(&actor, &id).await.map(|_| ());
            crate::ssr::back(&page, result);
        }
        Err(e) => crate::ssr::back(&format!("{page}?confirm=delete"), Err(e)),
    }
    Ok(())
}

/// A delete that removes machines needs the cluster's name typed (surrounding spaces
/// aside); one that only forgets the cluster needs nothing more than the confirmation step.
#[cfg(feature = "ssr")]
fn typed_name_confirms(
    name: &str,
    deletes_infrastructure: bool,
    typed: Option<&str>,
) -> Result<(), kqueen_core::Error> {
    if !deletes_infrastructure || typed.map(str::trim) == Some(name) {
        return Ok(());
    }
    Err(kqueen_core::ValidationError::new(
        "confirmation",
        format!("type the cluster's name, {name}, to delete it and its machines"),
    )
    .into())
}

/// Scales a cluster to `node_count` nodes.
#[server(prefix = "/sfn", endpoint = "scale_cluster")]
pub async fn scale_cluster(id: String, node_count: String) -> Result<(), AppError> {
    use kqueen_core::ValidationError;

    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let result = match node_count.trim().parse::<u32>() {
        Ok(n) => k.clusters().scale_cluster(&actor, &id, n).await.map(|_| ()),
        Err(_) => Err(ValidationError::new("node_count", "must be a whole number").into()),
    };
    crate::ssr::back(&cluster_page(&id), result);
    Ok(())
}

/// Upgrades a cluster to `kubernetes_version`.
#[server(prefix = "/sfn", endpoint = "upgrade_cluster")]
pub async fn upgrade_cluster(id: String, kubernetes_version: String) -> Result<(), AppError> {
    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let result = k
        .clusters()
        .upgrade_cluster(&actor, &id, &kubernetes_version)
        .await
        .map(|_| ());
    crate::ssr::back(&cluster_page(&id), result);
    Ok(())
}

/// Revokes the caller's own access to a cluster, or `user`'s (tenant admins, operators).
#[server(prefix = "/sfn", endpoint = "revoke_access")]
pub async fn revoke_access(id: String, user: Option<String>) -> Result<(), AppError> {
    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let user = user.as_deref().filter(|u| !u.is_empty());
    let result = k.access().revoke_access(&actor, &id, user).await;
    crate::ssr::back(&cluster_page(&id), result);
    Ok(())
}

#[cfg(test)]
mod tests {
    #[cfg(feature = "ssr")]
    #[test]
    fn a_delete_that_removes_machines_needs_the_exact_name() {
        use super::typed_name_confirms as check;
        assert!(check("web", true, Some("web")).is_ok());
        assert!(check("web", true, Some(" web ")).is_ok());
        for wrong in [None, Some(""), Some("Web"), Some("web2"), Some("we")] {
            let e = check("web", true, wrong).expect_err("refused");
            assert!(e.public().message.contains("web"), "{wrong:?}");
        }
        // Only forgetting the cluster: the confirmation step is enough.
        assert!(check("web", false, None).is_ok());
        assert!(check("web", false, Some("other")).is_ok());
    }
}
