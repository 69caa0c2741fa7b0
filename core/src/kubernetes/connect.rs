//! Clients for clusters and the `/version` probe, with failures told in words a person can
//! act on (connection refused, TLS, timeout, HTTP status) and never with credentials.

use std::error::Error as StdError;
use std::time::Duration;

use kube::config::{KubeConfigOptions, Kubeconfig};

use super::kubeconfig::ParsedKubeconfig;

/// Why a cluster's API server could not be reached or used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProbeError {
    /// The kubeconfig cannot be turned into a client (bad certificate data, plugin failure).
    #[error("the kubeconfig cannot be used: {0}")]
    Config(String),
    /// No connection (refused, unreachable, DNS).
    #[error("could not connect to {server}: {reason}")]
    Connect { server: String, reason: String },
    /// The TLS handshake failed (unknown CA, wrong host name, not TLS at all).
    #[error("TLS with {server} failed: {reason}")]
    Tls { server: String, reason: String },
    #[error("the API server did not answer /version within {}", seconds(*.after))]
    Timeout { server: String, after: Duration },
    /// The server answered with an HTTP error.
    #[error("{}", http_message(*.status, .message))]
    Http { status: u16, message: String },
    /// Something answered, but not like a Kubernetes API server.
    #[error("{server} answered /version, but not like a Kubernetes API server ({detail})")]
    Unexpected { server: String, detail: String },
}

impl ProbeError {
    /// True when trying again later may help (network trouble, server errors).
    pub fn is_transient(&self) -> bool {
        match self {
            ProbeError::Connect { .. } | ProbeError::Timeout { .. } => true,
            ProbeError::Http { status, .. } => *status == 429 || *status >= 500,
            _ => false,
        }
    }
}

fn seconds(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

fn http_message(status: u16, message: &str) -> String {
    let what = match status {
        401 => "the API server rejected the credentials (HTTP 401 Unauthorized)".to_owned(),
        403 => "the credentials are not allowed to read /version (HTTP 403 Forbidden)".to_owned(),
        0 => "the API server answered with an error".to_owned(),
        s => format!("the API server answered /version with HTTP {s}"),
    };
    if message.is_empty() {
        what
    } else {
        format!("{what}: {message}")
    }
}

/// A client for the kubeconfig's cluster. Every connection attempt and every read is bounded
/// by `timeout`. Exec plugins (when the kubeconfig was accepted with them) run here.
pub async fn client(
    parsed: &ParsedKubeconfig,
    timeout: Duration,
) -> Result<kube::Client, ProbeError> {
    client_from(parsed.kubeconfig().clone(), parsed.context(), timeout).await
}

pub(crate) async fn client_from(
    kubeconfig: Kubeconfig,
    context: &str,
    timeout: Duration,
) -> Result<kube::Client, ProbeError> {
    // kube builds its TLS config from rustls' process-wide provider; make sure there is one
    // even if some other dependency enables a second provider (then none is the default).
    let _ = rustls::crypto::ring::default_provider().install_default();

    let options = KubeConfigOptions {
        context: Some(context.to_owned()),
        ..KubeConfigOptions::default()
    };
    let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &options)
        .await
        .map_err(|e| ProbeError::Config(e.to_string()))?;
    // Proxies are refused in kubeconfigs; one from HTTPS_PROXY would make every client fail
    // (this build of kube has no proxy support), so clusters are reached directly.
    config.proxy_url = None;
    config.connect_timeout = Some(timeout);
    config.read_timeout = Some(timeout);
    // Count the read timeout from each request, not from when a pooled connection went idle.
    config.reset_reader_on_write = true;
    config.write_timeout = Some(timeout);

    // Building the client runs exec plugins (blocking), and kube panics on some malformed
    // credentials: keep both off the async workers and turn a panic into an error.
    let built = tokio::task::spawn_blocking(move || kube::Client::try_from(config)).await;
    match built {
        Ok(Ok(client)) => Ok(client),
        Ok(Err(e)) => Err(ProbeError::Config(config_error(&e))),
        Err(_) => Err(ProbeError::Config(
            "the credentials could not be loaded".into(),
        )),
    }
}

/// Asks the API server for its version (`GET /version`) within `timeout`; returns its
/// `gitVersion` (e.g. `v1.33.2`).
pub async fn probe_version(
    parsed: &ParsedKubeconfig,
    timeout: Duration,
) -> Result<String, ProbeError> {
    let server = parsed.server().to_owned();
    let started = tokio::time::Instant::now();
    let client = tokio::time::timeout(timeout, client(parsed, timeout))
        .await
        .map_err(|_| ProbeError::Timeout {
            server: server.clone(),
            after: timeout,
        })??;
    let left = timeout.saturating_sub(started.elapsed());
    let info = tokio::time::timeout(left, client.apiserver_version())
        .await
        .map_err(|_| ProbeError::Timeout {
            server: server.clone(),
            after: timeout,
        })?
        .map_err(|e| match classify(&e) {
            Failure::Timeout => ProbeError::Timeout {
                server: server.clone(),
                after: timeout,
            },
            Failure::Connect(reason) => ProbeError::Connect {
                server: server.clone(),
                reason,
            },
            Failure::Tls(reason) => ProbeError::Tls {
                server: server.clone(),
                reason,
            },
            Failure::Api { code, message, .. } => ProbeError::Http {
                status: code,
                message,
            },
            Failure::Credentials(reason) => ProbeError::Config(reason),
            Failure::Other(detail) => ProbeError::Unexpected {
                server: server.clone(),
                detail,
            },
        })?;
    if info.git_version.trim().is_empty() {
        return Err(ProbeError::Unexpected {
            server,
            detail: "no gitVersion".into(),
        });
    }
    Ok(info.git_version)
}

/// What went wrong with one request, sorted for the callers' own error types.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Failure {
    Timeout,
    Connect(String),
    Tls(String),
    /// An HTTP error status with the server's `Status` (reason may be empty).
    Api {
        code: u16,
        reason: String,
        message: String,
    },
    /// The credentials could not be produced (exec plugin, auth-provider).
    Credentials(String),
    Other(String),
}

pub(crate) fn classify(e: &kube::Error) -> Failure {
    match e {
        kube::Error::Api(status) => Failure::Api {
            code: status.code,
            reason: status.reason.clone(),
            message: one_line(&status.message, 300),
        },
        kube::Error::HyperError(_) | kube::Error::Service(_) => classify_transport(e),
        // Auth errors may carry a plugin's output: describe, don't quote.
        kube::Error::Auth(_) => Failure::Credentials(
            "the exec plugin or auth-provider did not produce credentials".into(),
        ),
        kube::Error::SerdeError(_) | kube::Error::FromUtf8(_) => {
            Failure::Other("the answer could not be read".into())
        }
        other => Failure::Other(one_line(&other.to_string(), 300)),
    }
}

fn classify_transport(e: &kube::Error) -> Failure {
    let mut innermost: Option<String> = None;
    let mut dns = false;
    let mut current: Option<&(dyn StdError + 'static)> = Some(e);
    while let Some(err) = current {
        if let Some(tls) = err.downcast_ref::<rustls::Error>() {
            return Failure::Tls(tls_reason(tls));
        }
        // An io::Error's source() skips the error it wraps: walk into that one instead.
        let mut next = err.source();
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            match io.kind() {
                std::io::ErrorKind::TimedOut => return Failure::Timeout,
                std::io::ErrorKind::ConnectionRefused => {
                    return Failure::Connect("connection refused".into())
                }
                std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::ConnectionAborted => {
                    return Failure::Connect("the connection was reset".into())
                }
                _ => {}
            }
            if let Some(inner) = io.get_ref() {
                next = Some(inner as &(dyn StdError + 'static));
            }
        }
        let text = err.to_string();
        if text.starts_with("dns error") {
            dns = true;
        }
        innermost = Some(text);
        current = next;
    }
    let detail = one_line(&innermost.unwrap_or_default(), 200);
    if dns {
        Failure::Connect(format!("the host name could not be resolved ({detail})"))
    } else {
        Failure::Connect(detail)
    }
}

fn tls_reason(e: &rustls::Error) -> String {
    use rustls::CertificateError as C;
    match e {
        rustls::Error::InvalidCertificate(c) => match c {
            C::UnknownIssuer => "the server's certificate is not signed by a trusted \
                                 authority (check certificate-authority-data)"
                .into(),
            C::NotValidForName | C::NotValidForNameContext { .. } => {
                "the server's certificate is not valid for this host name".into()
            }
            C::Expired | C::ExpiredContext { .. } => "the server's certificate has expired".into(),
            C::NotValidYet | C::NotValidYetContext { .. } => {
                "the server's certificate is not valid yet (check the clocks)".into()
            }
            other => format!("the server's certificate was refused ({other:?})"),
        },
        rustls::Error::InvalidMessage(_)
        | rustls::Error::InappropriateMessage { .. }
        | rustls::Error::InappropriateHandshakeMessage { .. } => {
            "the server does not speak TLS here (is it an http:// URL?)".into()
        }
        rustls::Error::AlertReceived(alert) => {
            format!("the server ended the handshake ({alert:?}); is the client certificate valid?")
        }
        other => one_line(&other.to_string(), 200),
    }
}

/// Why the client could not be built, without quoting credentials.
fn config_error(e: &kube::Error) -> String {
    match e {
        kube::Error::Auth(_) => {
            "the exec plugin or auth-provider did not produce credentials".into()
        }
        kube::Error::RustlsTls(inner) => inner.to_string(),
        kube::Error::InferKubeconfig(inner) => inner.to_string(),
        kube::Error::HttpError(_) => "a setting cannot be sent as an HTTP header".into(),
        other => one_line(&other.to_string(), 200),
    }
}

/// At most `max` characters on one line.
pub(crate) fn one_line(s: &str, max: usize) -> String {
    let flat: String = s
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .take(max)
        .collect();
    flat
}
