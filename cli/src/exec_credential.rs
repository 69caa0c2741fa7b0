//! `kqueen get-token`, kubectl's credential plugin: prints an ExecCredential for a cluster.
//!
//! The credential is cached per portal and cluster (a file readable by its owner only) until a
//! minute before it expires, so kubectl runs do not each ask the portal. kubectl runs the
//! plugin once per process, and again only when the API server refused the credential (401)
//! or it expired: so a second call from the same kubectl process (same parent PID) fetches a
//! fresh one instead of repeating the cached one.

use std::path::{Path, PathBuf};

use base64::Engine;
use chrono::{DateTime, Utc};
use kqueen_dto::credentials::Credential;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::api::{segment, Api};
use crate::config::{cache_dir, normalize_url, write_private, ClientConfig};
use crate::error::{CliError, Result};
use crate::kubeconfig::EXEC_API_VERSION;
use crate::resolve::is_uuid;

/// How long before expiry a cached credential is no longer handed out.
const EARLY: chrono::Duration = chrono::Duration::seconds(60);

/// The `status` of an ExecCredential, and to whom the cached one was last handed.
#[derive(Clone, Serialize, Deserialize)]
pub struct Cached {
    /// ExecCredential `status` (token or PEM client certificate and key, expiry).
    status: Value,
    expires_at: DateTime<Utc>,
    /// The PID of the kubectl process it was last printed for.
    served_to: Option<u32>,
}

impl Cached {
    /// The ExecCredential status for a credential from the portal.
    pub fn from_credential(credential: &Credential) -> Result<Self> {
        let expires_at = DateTime::parse_from_rfc3339(&credential.expires_at)
            .map_err(|_| CliError::Server("the credential's expiry is unreadable".into()))?
            .with_timezone(&Utc);
        let pem = |b64: &str, what: &str| -> Result<String> {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(b64.trim())
                .map_err(|_| CliError::Server(format!("the credential's {what} is not base64")))?;
            String::from_utf8(bytes)
                .map_err(|_| CliError::Server(format!("the credential's {what} is not PEM")))
        };
        let mut status = json!({
            "expirationTimestamp": expires_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        });
        match (
            &credential.token,
            &credential.client_certificate_data,
            &credential.client_key_data,
        ) {
            (Some(token), _, _) => status["token"] = json!(token),
            (None, Some(cert), Some(key)) => {
                status["clientCertificateData"] = json!(pem(cert, "certificate")?);
                status["clientKeyData"] = json!(pem(key, "key")?);
            }
            _ => return Err(CliError::Server("the credential holds no secret".into())),
        }
        Ok(Self {
            status,
            expires_at,
            served_to: None,
        })
    }

    fn usable_for(&self, ppid: u32, now: DateTime<Utc>) -> bool {
        self.expires_at - EARLY > now && self.served_to != Some(ppid)
    }
}

/// The cache file of `cluster` on the portal at `url` for the login `token` (another login,
/// even on the same portal, never gets this one's credential).
pub fn cache_path(url: &str, token: &str, cluster: &str) -> Result<PathBuf> {
    let digest = Sha256::digest(format!("{url}\n{token}").as_bytes());
    let hash: String = digest.iter().take(6).map(|b| format!("{b:02x}")).collect();
    Ok(cache_dir()?.join(format!("{cluster}-{hash}.json")))
}

fn read_cache(path: &Path) -> Option<Cached> {
    let bytes = std::fs::read(path).ok()?;
    serde_json::from_slice(&bytes).ok()
}

pub fn write_cache(path: &Path, cached: &Cached) -> Result<()> {
    let bytes = serde_json::to_vec(cached).map_err(|e| CliError::local("cache", e))?;
    write_private(path, &bytes)
}

/// The ExecCredential API version kubectl asked for (`KUBERNETES_EXEC_INFO`), else v1.
fn requested_api_version() -> String {
    std::env::var("KUBERNETES_EXEC_INFO")
        .ok()
        .and_then(|info| serde_json::from_str::<Value>(&info).ok())
        .and_then(|v| v.get("apiVersion")?.as_str().map(str::to_owned))
        .filter(|v| v.starts_with("client.authentication.k8s.io/"))
        .unwrap_or_else(|| EXEC_API_VERSION.to_owned())
}

/// Asks the portal for the caller's credential for `cluster`.
pub async fn fetch(api: &Api, cluster: &str) -> Result<Credential> {
    api.post(
        &format!("/api/v1/clusters/{}/credential", segment(cluster)),
        &json!({}),
    )
    .await
}

/// `kqueen get-token --cluster ID [--url URL]`: the ExecCredential JSON on standard output.
pub async fn get_token(cluster: &str, for_url: Option<&str>) -> Result<Value> {
    if !is_uuid(cluster) {
        return Err(CliError::Usage("--cluster takes the cluster's UUID".into()));
    }
    let config = ClientConfig::load()?;
    let (url, token) = config.credentials()?;
    if let Some(wanted) = for_url {
        let wanted = normalize_url(wanted)?;
        if wanted != url {
            return Err(CliError::NotLoggedIn(format!(
                "this context belongs to {wanted} but you are logged in to {url}: run \
                 `kqueen login {wanted}`"
            )));
        }
    }
    let path = cache_path(url, token, cluster)?;
    let ppid = std::os::unix::process::parent_id();
    let now = Utc::now();
    let cached = match read_cache(&path).filter(|c| c.usable_for(ppid, now)) {
        Some(c) => c,
        None => {
            let api = Api::from_config(&config)?;
            let credential = match fetch(&api, cluster).await {
                Ok(c) => c,
                Err(e) => {
                    // Refused: whatever was cached must not be handed out again.
                    if matches!(
                        e,
                        CliError::NotLoggedIn(_) | CliError::Forbidden(_) | CliError::NotFound(_)
                    ) {
                        let _ = std::fs::remove_file(&path);
                    }
                    return Err(e);
                }
            };
            Cached::from_credential(&credential)?
        }
    };
    let served = Cached {
        served_to: Some(ppid),
        ..cached
    };
    write_cache(&path, &served)?;
    Ok(json!({
        "apiVersion": requested_api_version(),
        "kind": "ExecCredential",
        "spec": {"interactive": false},
        "status": served.status,
    }))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn credential() -> Credential {
        Credential {
            cluster: "0195f0a2-7c3e-7d4a-9b1e-3f2a1c0d9e8f".into(),
            context: "team-a-prod".into(),
            server: "https://127.0.0.1:6443".into(),
            certificate_authority_data: None,
            tls_server_name: None,
            insecure_skip_tls_verify: false,
            proxy_url: None,
            token: None,
            client_certificate_data: Some("LS0tLS1CRUdJTiBDRVJU".into()),
            client_key_data: Some("LS0tLS1CRUdJTiBLRVk=".into()),
            expires_at: "2026-11-26T12:00:00+00:00".into(),
            identity: "the cluster's admin credential".into(),
        }
    }

    #[test]
    fn client_certificates_are_handed_over_as_pem() {
        let cached = Cached::from_credential(&credential()).unwrap();
        assert_eq!(cached.status["clientCertificateData"], "-----BEGIN CERT");
        assert_eq!(cached.status["clientKeyData"], "-----BEGIN KEY");
        assert_eq!(cached.status["expirationTimestamp"], "2026-11-26T12:00:00Z");
        assert!(cached.status.get("token").is_none());
    }

    #[test]
    fn a_credential_without_a_secret_is_refused() {
        let mut c = credential();
        c.client_key_data = None;
        assert!(Cached::from_credential(&c).is_err());
        c.expires_at = "soon".into();
        assert!(Cached::from_credential(&c).is_err());
    }

    #[test]
    fn the_cache_serves_each_kubectl_once_and_never_near_expiry() {
        let mut cached = Cached::from_credential(&credential()).unwrap();
        let before = cached.expires_at - chrono::Duration::minutes(5);
        assert!(cached.usable_for(100, before));
        cached.served_to = Some(100);
        // The same kubectl asks again: its credential was refused or expired.
        assert!(!cached.usable_for(100, before));
        assert!(cached.usable_for(101, before));
        assert!(!cached.usable_for(101, cached.expires_at - chrono::Duration::seconds(30)));
    }
}
