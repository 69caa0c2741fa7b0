//! The TokenRequest call and the kubeconfig handed to the user.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::PostParams;
use kube::config::{AuthInfo, Context, Kubeconfig};
use kube::config::{NamedAuthInfo, NamedCluster, NamedContext};
use kube::Resource;

use super::objects::{map_error, TOKENS_NOT_SERVED};
use super::{AccessError, USERS_NAMESPACE};
use crate::kubernetes::kubeconfig::write_kubeconfig;
use crate::kubernetes::ClusterEndpoint;
use crate::vault::Secret;

/// Calls the TokenRequest API. The request is sent by hand so that an unreadable answer
/// (which would hold the token) is never logged by the client library.
pub(super) async fn request_token(
    client: &kube::Client,
    sa_name: &str,
    ttl: Duration,
) -> Result<(String, DateTime<Utc>), AccessError> {
    let seconds = i64::try_from(ttl.as_secs()).unwrap_or(i64::MAX);
    let body = TokenRequest {
        metadata: ObjectMeta::default(),
        spec: TokenRequestSpec {
            audiences: Vec::new(),
            bound_object_ref: None,
            expiration_seconds: Some(seconds),
        },
        status: None,
    };
    let bytes = serde_json::to_vec(&body)
        .map_err(|_| AccessError::Unsupported("the token request could not be written".into()))?;
    let path = ServiceAccount::url_path(&(), Some(USERS_NAMESPACE));
    let http_request = kube::core::Request::new(path)
        .create_subresource("token", sa_name, &PostParams::default(), bytes)
        .map_err(|_| AccessError::Unsupported("the token request could not be built".into()))?;
    let text = client
        .request_text(http_request)
        .await
        .map_err(|e| map_error(&e, "request service account tokens", TOKENS_NOT_SERVED))?;
    let unreadable =
        || AccessError::Unsupported("the cluster answered the token request unreadably".into());
    let answer: TokenRequest = serde_json::from_str(&text).map_err(|_| unreadable())?;
    let status = answer.status.ok_or_else(unreadable)?;
    if status.token.is_empty() {
        return Err(unreadable());
    }
    let expires_at = crate::kubernetes::utc(&status.expiration_timestamp).ok_or_else(unreadable)?;
    Ok((status.token, expires_at))
}

/// A kubeconfig for `token` that reaches the cluster as `endpoint` says: the stored
/// kubeconfig's server, CA, TLS server name, insecure flag and proxy, so it works with kubectl
/// wherever the stored one does.
pub(super) fn user_kubeconfig(
    context: &str,
    endpoint: &ClusterEndpoint,
    token: &Secret,
) -> Result<Secret, AccessError> {
    let token = std::str::from_utf8(token.expose())
        .map_err(|_| AccessError::Unsupported("the cluster issued an unreadable token".into()))?
        .to_owned();
    let config = Kubeconfig {
        api_version: Some("v1".into()),
        kind: Some("Config".into()),
        clusters: vec![NamedCluster {
            name: context.into(),
            cluster: Some(endpoint.to_cluster()),
            other: BTreeMap::new(),
        }],
        auth_infos: vec![NamedAuthInfo {
            name: context.into(),
            auth_info: Some(AuthInfo {
                token: Some(token.into()),
                ..AuthInfo::default()
            }),
            other: BTreeMap::new(),
        }],
        contexts: vec![NamedContext {
            name: context.into(),
            context: Some(Context {
                cluster: context.into(),
                user: Some(context.into()),
                namespace: None,
                extensions: None,
                other: BTreeMap::new(),
            }),
            other: BTreeMap::new(),
        }],
        current_context: Some(context.into()),
        ..Kubeconfig::default()
    };
    write_kubeconfig(&config)
        .map(Secret::new)
        .map_err(|_| AccessError::Unsupported("the kubeconfig could not be written".into()))
}

pub(super) fn default_context_name(tenant: &str, server: &str) -> String {
    let host = server
        .parse::<http::Uri>()
        .ok()
        .and_then(|u| u.authority().map(|a| a.as_str().to_owned()))
        .unwrap_or_default()
        .replace(':', "-");
    if host.is_empty() {
        format!("kqueen-{tenant}")
    } else {
        format!("kqueen-{tenant}-{host}")
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::kubernetes::parse_kubeconfig;

    fn issued(endpoint: &ClusterEndpoint) -> kube::config::Cluster {
        let yaml = user_kubeconfig("ctx", endpoint, &Secret::new(b"user-token".to_vec())).unwrap();
        let text = std::str::from_utf8(yaml.expose()).unwrap().to_owned();
        let config = Kubeconfig::from_yaml(&text).unwrap();
        config.clusters[0].cluster.clone().unwrap()
    }

    #[test]
    fn the_stored_kubeconfigs_tls_and_proxy_settings_are_carried_over() {
        let stored = "apiVersion: v1\nkind: Config\ncurrent-context: c\n\
            clusters: [{name: c, cluster: {server: 'https://10.0.0.1:6443', \
              insecure-skip-tls-verify: true, tls-server-name: api.internal}}]\n\
            contexts: [{name: c, context: {cluster: c, user: u}}]\n\
            users: [{name: u, user: {token: admin-token}}]\n";
        let parsed = parse_kubeconfig(stored, None, false).unwrap();
        let cluster = issued(&parsed.endpoint());
        assert_eq!(cluster.server.as_deref(), Some("https://10.0.0.1:6443"));
        assert_eq!(cluster.insecure_skip_tls_verify, Some(true));
        assert_eq!(cluster.tls_server_name.as_deref(), Some("api.internal"));
        assert_eq!(cluster.certificate_authority_data, None);
    }

    #[test]
    fn every_endpoint_setting_reaches_the_issued_kubeconfig() {
        let endpoint = ClusterEndpoint {
            server: "https://k8s.example.test".into(),
            ca_data: Some("Q0E=".into()),
            insecure_skip_tls_verify: false,
            tls_server_name: Some("kubernetes.default".into()),
            proxy_url: Some("http://proxy.example.test:3128".into()),
        };
        let cluster = issued(&endpoint);
        assert_eq!(cluster.certificate_authority_data.as_deref(), Some("Q0E="));
        assert_eq!(
            cluster.insecure_skip_tls_verify, None,
            "only written when set"
        );
        assert_eq!(
            cluster.tls_server_name.as_deref(),
            Some("kubernetes.default")
        );
        assert_eq!(
            cluster.proxy_url.as_deref(),
            Some("http://proxy.example.test:3128")
        );
        assert_eq!(cluster.certificate_authority, None);
    }
}
