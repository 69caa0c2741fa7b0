//! A cluster credential as the REST API sends it to kubectl's credential plugin.

use kqueen_dto::credentials::Credential;

use crate::kubernetes::StaticCredential;
use crate::ClusterCredential;

impl From<ClusterCredential> for Credential {
    fn from(c: ClusterCredential) -> Self {
        let text = |s: &crate::vault::Secret| String::from_utf8_lossy(s.expose()).into_owned();
        let (token, client_certificate_data, client_key_data) = match &c.secret {
            StaticCredential::Token(t) => (Some(text(t)), None, None),
            StaticCredential::ClientCertificate {
                certificate_data,
                key_data,
            } => (None, Some(certificate_data.clone()), Some(text(key_data))),
        };
        Self {
            cluster: c.cluster_id.to_string(),
            context: c.context,
            server: c.endpoint.server,
            certificate_authority_data: c.endpoint.ca_data,
            tls_server_name: c.endpoint.tls_server_name,
            insecure_skip_tls_verify: c.endpoint.insecure_skip_tls_verify,
            proxy_url: c.endpoint.proxy_url,
            token,
            client_certificate_data,
            client_key_data,
            expires_at: c
                .expires_at
                .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            identity: c.identity,
        }
    }
}
