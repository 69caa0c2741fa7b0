//! A cluster credential for kubectl's credential plugin (`kqueen get-token`).

use std::fmt;

use serde::{Deserialize, Serialize};

/// What kubectl needs to reach a cluster as the caller: where (the kubeconfig's cluster
/// entry) and as whom (a bearer token, or a client certificate and key). `Debug` never shows
/// the secrets.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Credential {
    /// The cluster's UUID.
    #[cfg_attr(feature = "openapi", schema(format = Uuid))]
    pub cluster: String,
    /// The context name a kubeconfig download uses: `<tenant>-<cluster>`.
    pub context: String,
    /// The API server URL.
    pub server: String,
    /// The cluster's CA bundle, base64 of PEM (`certificate-authority-data`).
    pub certificate_authority_data: Option<String>,
    /// The name the server certificate is checked against, when not the URL's host.
    pub tls_server_name: Option<String>,
    pub insecure_skip_tls_verify: bool,
    pub proxy_url: Option<String>,
    /// A bearer token; or else the two fields below.
    pub token: Option<String>,
    /// Base64 of PEM.
    pub client_certificate_data: Option<String>,
    /// Base64 of PEM.
    pub client_key_data: Option<String>,
    /// When to ask again (RFC 3339, UTC): a member's token expires then; an operator's admin
    /// credential may live longer, but is handed out again only while they are an operator.
    pub expires_at: String,
    /// Whom the cluster sees: `ServiceAccount kqueen-users/<name>` or the admin credential.
    pub identity: String,
}

impl fmt::Debug for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credential")
            .field("cluster", &self.cluster)
            .field("context", &self.context)
            .field("server", &self.server)
            .field("tls_server_name", &self.tls_server_name)
            .field("insecure_skip_tls_verify", &self.insecure_skip_tls_verify)
            .field("proxy_url", &self.proxy_url)
            .field("has_token", &self.token.is_some())
            .field(
                "has_client_certificate",
                &self.client_certificate_data.is_some(),
            )
            .field("expires_at", &self.expires_at)
            .field("identity", &self.identity)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_shows_no_secret() {
        let c = Credential {
            cluster: "id".into(),
            context: "team-a-prod".into(),
            server: "https://127.0.0.1:6443".into(),
            certificate_authority_data: None,
            tls_server_name: None,
            insecure_skip_tls_verify: false,
            proxy_url: None,
            token: Some("s3cr3t-token".into()),
            client_certificate_data: None,
            client_key_data: Some("s3cr3t-key".into()),
            expires_at: "2026-01-01T00:00:00Z".into(),
            identity: "ServiceAccount kqueen-users/amy".into(),
        };
        let shown = format!("{c:?}");
        assert!(!shown.contains("s3cr3t"), "{shown}");
        assert!(shown.contains("has_token: true"), "{shown}");
    }
}
