//! The addons' writes, as server functions behind `ActionForm`: they post and redirect
//! without JavaScript, and run in place with it. Each install, upgrade and removal queues a
//! durable operation (its progress and events are the cluster page's); a refused install
//! comes back with its input kept and the error at its field ([`crate::kept`]).

// The catalog's form posts eight fields; the server macro's generated client function
// carries them all, where an item-level allow does not reach.
#![allow(clippy::too_many_arguments)]

use std::collections::BTreeMap;

use leptos::prelude::*;

use crate::AppError;

/// The element id of an addon's install form (and of its kept form).
pub fn install_form(addon: &str) -> String {
    format!("addon-{addon}-form")
}

/// A cluster's checkbox in the bulk form. Its key starts with a letter: the form decoder
/// reads a key that starts with a digit (as a UUID may) as a list index, and refuses it.
pub fn cluster_input(cluster_id: &str) -> String {
    format!("c[cluster-{cluster_id}]")
}

/// The bulk upgrade form's id.
pub const BULK_FORM: &str = "addon-bulk-form";
/// The catalog's form (a new addon version).
pub const DEFINE_FORM: &str = "addon-define-form";

#[cfg(feature = "ssr")]
fn cluster_page(id: &str) -> String {
    format!("/clusters/{}", crate::query::form_escape(id))
}

/// Installs an addon in a cluster (`version`: the newest when empty) with the form's
/// parameters (`p[<name>]`; unchecked checkboxes named in `p_shown` count as false).
#[server(prefix = "/sfn", endpoint = "install_addon")]
pub async fn install_addon(
    id: String,
    name: String,
    version: Option<String>,
    p: Option<BTreeMap<String, String>>,
    p_shown: Option<BTreeMap<String, String>>,
) -> Result<(), AppError> {
    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let params = crate::schema_form::form_params(p, p_shown);
    let version = version.filter(|v| !v.trim().is_empty());
    let result = k
        .addons()
        .install(&actor, &id, &name, version.as_deref(), &params)
        .await;
    let page = cluster_page(&id);
    match result {
        Ok(_) => leptos_axum::redirect(&page),
        Err(e) => {
            let values = [("version".to_owned(), version.unwrap_or_default())]
                .into_iter()
                .chain(params.into_iter().map(|(k, v)| (format!("p[{k}]"), v)))
                .collect();
            crate::kept::refused(&page, &install_form(&name), values, e).await;
        }
    }
    Ok(())
}

/// Moves an installed addon to `version`, keeping its parameters.
#[server(prefix = "/sfn", endpoint = "upgrade_addon")]
pub async fn upgrade_addon(id: String, name: String, version: String) -> Result<(), AppError> {
    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let result = k
        .addons()
        .install(&actor, &id, &name, Some(&version), &BTreeMap::new())
        .await
        .map(|_| ());
    crate::ssr::back(&cluster_page(&id), result);
    Ok(())
}

/// Removes an addon KQueen installed: everything it applied, nothing else (confirmed first).
#[server(prefix = "/sfn", endpoint = "remove_addon")]
pub async fn remove_addon(id: String, name: String) -> Result<(), AppError> {
    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let result = k.addons().remove(&actor, &id, &name).await.map(|_| ());
    crate::ssr::back(&cluster_page(&id), result);
    Ok(())
}

/// Upgrades `addon` to `version` on the checked clusters ([`cluster_input`]), one result
/// per cluster, shown by `/fleet/addons` once.
#[server(prefix = "/sfn", endpoint = "bulk_upgrade_addon")]
pub async fn bulk_upgrade_addon(
    addon: String,
    version: String,
    c: Option<BTreeMap<String, String>>,
) -> Result<(), AppError> {
    use crate::addons::dto::BulkOutcomeDto;

    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let page = format!("/fleet/addons?addon={}", crate::query::form_escape(&addon));
    let clusters: Vec<String> = c
        .unwrap_or_default()
        .into_keys()
        .map(|k| k.strip_prefix("cluster-").map(str::to_owned).unwrap_or(k))
        .collect();
    // `clusters` names the fieldset, so that an error about the choice is said there.
    let values: BTreeMap<String, String> = [
        ("version".to_owned(), version.clone()),
        ("clusters".to_owned(), String::new()),
    ]
    .into_iter()
    .chain(
        clusters
            .iter()
            .map(|id| (cluster_input(id), "true".to_owned())),
    )
    .collect();
    // An empty list means "every cluster running another version" to the use case; here it
    // means every box was unchecked.
    if clusters.is_empty() {
        let none = kqueen_core::ValidationError::new("clusters", "choose at least one cluster");
        crate::kept::refused(&page, BULK_FORM, values, none.into()).await;
        return Ok(());
    }
    match k
        .addons()
        .bulk_upgrade(&actor, &addon, &version, &clusters)
        .await
    {
        Ok(outcomes) => {
            let outcome = BulkOutcomeDto {
                addon,
                version,
                results: outcomes.into_iter().map(Into::into).collect(),
            };
            super::bulk::put(&outcome).await;
            leptos_axum::redirect(&page);
        }
        Err(e) => crate::kept::refused(&page, BULK_FORM, values, e).await,
    }
    Ok(())
}

/// The form's "Kind namespace/name" lines as workloads.
pub fn parse_workloads(text: &str) -> Result<Vec<kqueen_dto::addons::WellKnown>, String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(|line| {
            let bad = || format!("\"{line}\" is not \"Kind namespace/name\"");
            let (kind, rest) = line.split_once(char::is_whitespace).ok_or_else(bad)?;
            let (namespace, name) = rest.trim().split_once('/').ok_or_else(bad)?;
            if namespace.is_empty() || name.is_empty() || name.contains(char::is_whitespace) {
                return Err(bad());
            }
            Ok(kqueen_dto::addons::WellKnown {
                kind: kind.to_owned(),
                namespace: namespace.to_owned(),
                name: name.to_owned(),
            })
        })
        .collect()
}

/// Adds an addon version to the catalog (operators). Parameters are JSON (a list of
/// `{"name", "type", "default", …}`), health workloads one "Kind namespace/name" a line,
/// requires a comma-separated list.
#[server(prefix = "/sfn", endpoint = "define_addon")]
pub async fn define_addon(
    name: String,
    version: String,
    description: String,
    namespace: String,
    parameters: String,
    health: String,
    requires: String,
    manifests: String,
) -> Result<(), AppError> {
    use kqueen_core::{Error, ValidationError};
    use kqueen_dto::addons::{AddonDefinition, HealthRule};

    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let values: BTreeMap<String, String> = [
        ("name", &name),
        ("version", &version),
        ("description", &description),
        ("namespace", &namespace),
        ("parameters", &parameters),
        ("health", &health),
        ("requires", &requires),
        ("manifests", &manifests),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.clone()))
    .collect();
    let result = async {
        let params = if parameters.trim().is_empty() {
            Vec::new()
        } else {
            serde_json::from_str(&parameters).map_err(|e| {
                ValidationError::new(
                    "parameters",
                    format!("is not a JSON list of parameters: {e}"),
                )
            })?
        };
        let workloads = parse_workloads(&health).map_err(|m| ValidationError::new("health", m))?;
        let def = AddonDefinition {
            name: name.trim().to_owned(),
            version: version.trim().to_owned(),
            description: description.trim().to_owned(),
            namespace: namespace.trim().to_owned(),
            parameters: params,
            health: HealthRule {
                workloads,
                api_services: Vec::new(),
            },
            requires: requires
                .split(',')
                .map(str::trim)
                .filter(|r| !r.is_empty())
                .map(str::to_owned)
                .collect(),
            detect: Vec::new(),
            manifests,
            builtin: false,
        };
        let def = kqueen_core::workloads::addons::AddonDefinition::try_from(def)?;
        k.addons().define(&actor, def).await
    }
    .await;
    match result {
        Ok(()) => leptos_axum::redirect("/addons"),
        // An error about one parameter or one manifest concerns that whole input here.
        Err(Error::Invalid(mut v)) => {
            if let Some(key) = v.key.take() {
                v.message = format!("{key}: {}", v.message);
            }
            crate::kept::refused("/addons", DEFINE_FORM, values, Error::Invalid(v)).await;
        }
        Err(e) => crate::kept::refused("/addons", DEFINE_FORM, values, e).await,
    }
    Ok(())
}

/// Deletes an operator-defined addon version (confirmed first).
#[server(prefix = "/sfn", endpoint = "undefine_addon")]
pub async fn undefine_addon(name: String, version: String) -> Result<(), AppError> {
    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let result = k.addons().undefine(&actor, &name, &version).await;
    crate::ssr::back("/addons", result);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::parse_workloads;

    #[test]
    fn workloads_are_read_one_a_line() {
        let w = parse_workloads("Deployment kube-system/metrics-server\n\n  DaemonSet a/b \n")
            .expect("two workloads");
        assert_eq!(w.len(), 2);
        assert_eq!(
            (
                w[1].kind.as_str(),
                w[1].namespace.as_str(),
                w[1].name.as_str()
            ),
            ("DaemonSet", "a", "b")
        );
        assert!(parse_workloads("Deployment metrics-server").is_err());
        assert!(parse_workloads("Deployment /x").is_err());
    }
}
