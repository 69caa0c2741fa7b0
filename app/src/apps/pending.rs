//! The previewed deploy, between the preview and the deploy: the request (manifests may
//! hold Secrets) and its dry run, sealed by the vault in the caller's session under a key of
//! its own, as [`crate::kept`] keeps a refused form. One per session: a new preview replaces
//! it, the deploy takes it.

use kqueen_dto::apps::{DeployPreview, DeployRequest};
use serde::{Deserialize, Serialize};

const SESSION_KEY: &str = "kq.app_deploy";
const PURPOSE: &str = "app-deploy";

#[derive(Serialize, Deserialize)]
pub struct Pending {
    pub cluster_id: String,
    pub request: DeployRequest,
    pub preview: DeployPreview,
}

fn unkept(what: &str) -> kqueen_core::Error {
    kqueen_core::Error::Backend(format!("cannot keep the previewed deploy: {what}"))
}

fn session() -> Option<tower_sessions::Session> {
    let session = crate::ssr::session();
    if session.is_none() {
        tracing::warn!("no session for a previewed deploy");
    }
    session
}

/// Keeps `pending` for the preview page and the deploy.
pub async fn put(pending: &Pending) -> Result<(), kqueen_core::Error> {
    let k = crate::ssr::kqueen().map_err(|_| unkept("no domain"))?;
    let session = session().ok_or_else(|| unkept("no session"))?;
    let json = serde_json::to_vec(pending).map_err(|e| unkept(&e.to_string()))?;
    let sealed = k.vault().seal_transient(PURPOSE, &json)?;
    session
        .insert(SESSION_KEY, sealed)
        .await
        .map_err(|e| unkept(&e.to_string()))
}

/// The previewed deploy of cluster `cluster_id`, if the caller has one.
pub async fn get(cluster_id: &str) -> Option<Pending> {
    let sealed: String = session()?.get(SESSION_KEY).await.ok().flatten()?;
    let k = crate::ssr::kqueen().ok()?;
    let opened = k.vault().open_transient(PURPOSE, &sealed).ok()?;
    serde_json::from_slice::<Pending>(opened.expose())
        .ok()
        .filter(|p| p.cluster_id == cluster_id)
}

/// Forgets the previewed deploy (it was deployed).
pub async fn clear() {
    if let Some(s) = session() {
        let _ = s.remove::<String>(SESSION_KEY).await;
    }
}
