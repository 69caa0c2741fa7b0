//! The addons KQueen ships, pinned by version: each is `builtin/<name>/addon.json` (what
//! [`AddonDefinition`] holds besides the manifests) and `builtin/<name>/manifests.yaml`,
//! written for KQueen with the projects' official images.

use super::AddonDefinition;

const BUILTIN: &[(&str, &str)] = &[
    (
        include_str!("builtin/metrics-server/addon.json"),
        include_str!("builtin/metrics-server/manifests.yaml"),
    ),
    (
        include_str!("builtin/ingress-nginx/addon.json"),
        include_str!("builtin/ingress-nginx/manifests.yaml"),
    ),
    (
        include_str!("builtin/cert-manager/addon.json"),
        include_str!("builtin/cert-manager/manifests.yaml"),
    ),
    (
        include_str!("builtin/kubernetes-dashboard/addon.json"),
        include_str!("builtin/kubernetes-dashboard/manifests.yaml"),
    ),
];

/// The built-in catalog. A definition that does not parse is left out with a warning (the
/// unit tests make sure none does).
pub fn catalog() -> Vec<AddonDefinition> {
    BUILTIN
        .iter()
        .filter_map(
            |(meta, manifests)| match serde_json::from_str::<AddonDefinition>(meta) {
                Ok(mut d) => {
                    d.manifests = (*manifests).to_owned();
                    d.builtin = true;
                    Some(d)
                }
                Err(e) => {
                    tracing::warn!(error = %e, "a built-in addon definition does not parse");
                    None
                }
            },
        )
        .collect()
}
