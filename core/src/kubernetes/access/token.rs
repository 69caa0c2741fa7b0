//! The TokenRequest call and the kubeconfig handed to the user.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::PostParams;
use kube::config::{AuthInfo, Cluster, Context, Kubeconfig};
use kube::config::{NamedAuthInfo, NamedCluster, NamedContext};
use kube::Resource;

use super::objects::{map_error, TOKENS_NOT_SERVED};
use super::{AccessError, USERS_NAMESPACE};
use crate::kubernetes::kubeconfig::write_kubeconfig;
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
    let at = status.expiration_timestamp.0;
    let nanos = u32::try_from(at.subsec_nanosecond()).unwrap_or(0);
    let expires_at =
        DateTime::<Utc>::from_timestamp(at.as_second(), nanos).ok_or_else(unreadable)?;
    Ok((status.token, expires_at))
}

pub(super) fn user_kubeconfig(
    context: &str,
    server: &str,
    ca_data: Option<&str>,
    token: String,
) -> Result<Secret, AccessError> {
    let config = Kubeconfig {
        api_version: Some("v1".into()),
        kind: Some("Config".into()),
        clusters: vec![NamedCluster {
            name: context.into(),
            cluster: Some(Cluster {
                server: Some(server.into()),
                certificate_authority_data: ca_data.map(str::to_owned),
                ..Cluster::default()
            }),
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
