//! Applications: versions of a tenant's applications deployed into a cluster. The cluster
//! page's section listing them, the deploy form (`/clusters/:id/apps/new`), the dry run's
//! diff (`…/apps/preview`), and a version's page with its rollout (`…/apps/:app`).
//!
//! A preview holds up to 1 MiB of manifests, too much for a URL: the previewed request is
//! kept sealed in the caller's session ([`pending`]) until the deploy takes it.

pub mod actions;
pub mod dto;
mod new;
#[cfg(feature = "ssr")]
mod pending;
mod preview;
mod section;
pub mod sfn;
mod version;

pub use new::NewApp;
pub use preview::AppPreview;
pub use section::ClusterApps;
pub use version::AppVersion;

/// The words for an operation kind of the cluster's timeline and operations table
/// (`app-deploy` → "Application deploy").
pub fn operation_label(kind: &str) -> String {
    match kind {
        "app-deploy" => "Application deploy".to_owned(),
        "app-delete" => "Application removal".to_owned(),
        "addon-apply" => "Addon install".to_owned(),
        "addon-remove" => "Addon removal".to_owned(),
        "replace-node" => "Node replacement".to_owned(),
        other => {
            let mut c = other.chars();
            c.next()
                .map(|f| f.to_uppercase().chain(c).collect())
                .unwrap_or_default()
        }
    }
}

/// The version's page.
pub(crate) fn version_path(cluster_id: &str, app_id: &str) -> String {
    format!("/clusters/{cluster_id}/apps/{app_id}")
}

#[cfg(test)]
mod tests {
    #[test]
    fn operation_kinds_read_as_words() {
        assert_eq!(super::operation_label("app-deploy"), "Application deploy");
        assert_eq!(super::operation_label("app-delete"), "Application removal");
        assert_eq!(super::operation_label("replace-node"), "Node replacement");
        assert_eq!(super::operation_label("scale"), "Scale");
        assert_eq!(super::operation_label(""), "");
    }
}
