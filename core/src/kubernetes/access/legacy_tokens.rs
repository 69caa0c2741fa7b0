//! Long-lived ServiceAccount token Secrets in `kqueen-users`. Before Kubernetes 1.24 the
//! controller manager's token controller creates one for every ServiceAccount; whoever reads
//! it holds that user's identity until the ServiceAccount is deleted. KQueen never needs
//! them (it uses the TokenRequest API), so it disarms each: the token in the Secret is
//! replaced by a marker. Deleting the Secret would not do: the controller would at once
//! create another with a fresh token, whereas it leaves a Secret alone whose token field is
//! not empty. The API server (with `--service-account-lookup`, the default) compares a
//! presented legacy token with the one in its Secret, so the original token stops working.

use base64::Engine;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ListParams, Patch, PatchParams};

use super::objects::{map_error, CORE_NOT_SERVED};
use super::{AccessError, MANAGED_BY, MANAGED_BY_LABEL, USERS_NAMESPACE};

/// What a disarmed Secret holds instead of a token.
pub const DISARMED_TOKEN: &str = "disarmed-by-kqueen";
const TOKEN_TYPE: &str = "kubernetes.io/service-account-token";
const SA_NAME_ANNOTATION: &str = "kubernetes.io/service-account.name";

/// Disarms the token Secrets in `kqueen-users` (only those of ServiceAccount `only`, when
/// given). Returns how many were disarmed.
pub(super) async fn disarm_legacy_tokens(
    client: &kube::Client,
    only: Option<&str>,
) -> Result<usize, AccessError> {
    let api: Api<Secret> = Api::namespaced(client.clone(), USERS_NAMESPACE);
    let what = "manage secrets in kqueen-users";
    let secrets = match api.list(&ListParams::default()).await {
        Ok(list) => list.items,
        // The namespace does not exist yet: nothing to disarm.
        Err(kube::Error::Api(s)) if s.is_not_found() && s.message.contains("namespace") => {
            return Ok(0)
        }
        Err(e) => return Err(map_error(&e, what, CORE_NOT_SERVED)),
    };
    let mut disarmed = 0;
    for secret in secrets {
        if secret.type_.as_deref() != Some(TOKEN_TYPE) {
            continue;
        }
        let account = secret
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(SA_NAME_ANNOTATION));
        if only.is_some_and(|sa| account.map(String::as_str) != Some(sa)) {
            continue;
        }
        let token = secret.data.as_ref().and_then(|d| d.get("token"));
        if token.is_some_and(|t| t.0 == DISARMED_TOKEN.as_bytes()) {
            continue;
        }
        let Some(name) = secret.metadata.name.as_deref() else {
            continue;
        };
        let marker = base64::engine::general_purpose::STANDARD.encode(DISARMED_TOKEN);
        let patch = serde_json::json!({
            "metadata": { "labels": { MANAGED_BY_LABEL: MANAGED_BY } },
            "data": { "token": marker },
        });
        match api
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => disarmed += 1,
            // Deleted meanwhile (its ServiceAccount was revoked): nothing left to disarm.
            Err(kube::Error::Api(s)) if s.is_not_found() => {}
            Err(e) => return Err(map_error(&e, what, CORE_NOT_SERVED)),
        }
    }
    if disarmed > 0 {
        tracing::info!(disarmed, "disarmed long-lived ServiceAccount token secrets");
    }
    Ok(disarmed)
}
