//! The checks of the chosen cluster and user entries.

use base64::Engine;
use kube::config::{AuthInfo, Cluster};
use secrecy::ExposeSecret;

use super::{invalid, quote, AuthKind};
use crate::ValidationError;

/// Checks the cluster entry; returns the server URL.
pub(super) fn check_cluster(cluster: &Cluster, name: &str) -> Result<String, ValidationError> {
    let server = cluster
        .server
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| invalid(format!("cluster {} has no server URL", quote(name))))?;
    check_server_url(server)?;
    if cluster.certificate_authority.is_some() {
        return Err(invalid(format!(
            "cluster {} refers to a certificate-authority file, which would be read on the \
             KQueen server; embed the CA as certificate-authority-data instead",
            quote(name)
        )));
    }
    if let Some(data) = &cluster.certificate_authority_data {
        let pem = decode_base64(data).ok_or_else(|| {
            invalid(format!(
                "certificate-authority-data of cluster {} is not valid base64",
                quote(name)
            ))
        })?;
        if !contains(&pem, b"-----BEGIN CERTIFICATE-----") {
            return Err(invalid(format!(
                "certificate-authority-data of cluster {} holds no PEM certificate",
                quote(name)
            )));
        }
        if cluster.insecure_skip_tls_verify == Some(true) {
            return Err(invalid(format!(
                "cluster {} sets both certificate-authority-data and insecure-skip-tls-verify; \
                 keep one",
                quote(name)
            )));
        }
    }
    if cluster.proxy_url.as_deref().is_some_and(|p| !p.is_empty()) {
        return Err(invalid(format!(
            "cluster {} uses a proxy-url, which KQueen does not support",
            quote(name)
        )));
    }
    Ok(server.to_owned())
}

/// The server must be an absolute http(s) URL without credentials, query or fragment.
fn check_server_url(server: &str) -> Result<(), ValidationError> {
    let bad = |why: &str| invalid(format!("server {} {why}", quote(server)));
    let uri: http::Uri = server.parse().map_err(|_| bad("is not a URL"))?;
    match uri.scheme_str() {
        Some("https") | Some("http") => {}
        _ => return Err(bad("must start with https:// (or http://)")),
    }
    let authority = uri.authority().ok_or_else(|| bad("has no host"))?;
    if authority.as_str().contains('@') {
        return Err(invalid(
            "the server URL must not contain credentials (user:password@)",
        ));
    }
    if authority.host().is_empty() {
        return Err(bad("has no host"));
    }
    if uri.query().is_some() || server.contains('#') {
        return Err(bad("must not have a query or fragment"));
    }
    Ok(())
}

/// Checks the user entry; returns how it authenticates (kube's order of precedence).
pub(super) fn check_user(
    user: &AuthInfo,
    name: &str,
    allow_exec: bool,
) -> Result<AuthKind, ValidationError> {
    let who = quote(name);
    if user.token_file.is_some() {
        return Err(invalid(format!(
            "user {who} refers to a tokenFile, which would be read on the KQueen server; \
             put the token itself in the kubeconfig"
        )));
    }
    if user.client_certificate.is_some() || user.client_key.is_some() {
        return Err(invalid(format!(
            "user {who} refers to client-certificate/client-key files, which would be read on \
             the KQueen server; embed them as client-certificate-data and client-key-data"
        )));
    }
    if let Some(provider) = &user.auth_provider {
        if !allow_exec {
            return Err(invalid(format!(
                "user {who} authenticates with the {} auth-provider, which may run commands on \
                 the KQueen server; use a token or client certificate, or ask an operator to \
                 allow credential plugins for this provider",
                quote(&provider.name)
            )));
        }
    }
    if let Some(exec) = &user.exec {
        if !allow_exec {
            let command = exec.command.as_deref().unwrap_or("");
            return Err(invalid(format!(
                "user {who} gets its credentials by running a command ({}) — an exec plugin, \
                 which would run on the KQueen server; use a token or client certificate, or ask \
                 an operator to allow credential plugins for this provider",
                quote(command)
            )));
        }
        if exec.command.as_deref().is_none_or(|c| c.trim().is_empty()) {
            return Err(invalid(format!(
                "user {who} has an exec plugin without a command"
            )));
        }
    }
    check_header_values(user, &who)?;

    let token = user
        .token
        .as_ref()
        .map(|t| t.expose_secret())
        .filter(|t| !t.is_empty());
    if let Some(token) = token {
        if http::HeaderValue::from_str(&format!("Bearer {token}")).is_err() {
            return Err(invalid(format!(
                "the token of user {who} contains characters that are not allowed in a token \
                 (a line break or a non-ASCII character?)"
            )));
        }
    }
    let has_password = user
        .password
        .as_ref()
        .is_some_and(|p| !p.expose_secret().is_empty());
    let has_username = user.username.as_deref().is_some_and(|u| !u.is_empty());
    if has_username != has_password {
        return Err(invalid(format!(
            "user {who} has a username without a password (or the reverse)"
        )));
    }
    let cert = user
        .client_certificate_data
        .as_deref()
        .filter(|c| !c.is_empty());
    let key = user
        .client_key_data
        .as_ref()
        .map(|k| k.expose_secret())
        .filter(|k| !k.is_empty());
    match (cert, key) {
        (Some(cert), Some(key)) => {
            let cert_ok = decode_base64(cert)
                .is_some_and(|pem| contains(&pem, b"-----BEGIN CERTIFICATE-----"));
            if !cert_ok {
                return Err(invalid(format!(
                    "client-certificate-data of user {who} is not a base64-encoded PEM \
                     certificate"
                )));
            }
            let key_ok = decode_base64(key).is_some_and(|pem| contains(&pem, b"PRIVATE KEY-----"));
            if !key_ok {
                return Err(invalid(format!(
                    "client-key-data of user {who} is not a base64-encoded PEM private key"
                )));
            }
        }
        (Some(_), None) => {
            return Err(invalid(format!(
                "user {who} has client-certificate-data but no client-key-data"
            )))
        }
        (None, Some(_)) => {
            return Err(invalid(format!(
                "user {who} has client-key-data but no client-certificate-data"
            )))
        }
        (None, None) => {}
    }

    // The same order kube uses to pick credentials.
    let kind = if user.auth_provider.is_some() {
        AuthKind::AuthProvider
    } else if has_username {
        AuthKind::Basic
    } else if token.is_some() {
        AuthKind::Token
    } else if user.exec.is_some() {
        AuthKind::Exec
    } else if cert.is_some() {
        AuthKind::ClientCertificate
    } else {
        return Err(invalid(format!(
            "user {who} has no credentials (a token, a client certificate and key, or a \
             username and password)"
        )));
    };
    Ok(kind)
}

/// Impersonation settings become HTTP headers: refuse what a header cannot carry.
fn check_header_values(user: &AuthInfo, who: &str) -> Result<(), ValidationError> {
    let extra = user
        .impersonate_user_extra
        .iter()
        .flat_map(|m| m.iter())
        .flat_map(|(k, vs)| std::iter::once(k).chain(vs.iter()));
    let all = user
        .impersonate
        .iter()
        .chain(user.impersonate_uid.iter())
        .chain(user.impersonate_groups.iter().flatten())
        .chain(extra);
    for value in all {
        if http::HeaderValue::from_str(value).is_err() {
            return Err(invalid(format!(
                "the impersonation settings (as, as-groups…) of user {who} contain characters \
                 that cannot be sent in an HTTP header"
            )));
        }
    }
    Ok(())
}

fn decode_base64(data: &str) -> Option<Vec<u8>> {
    base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .ok()
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}
