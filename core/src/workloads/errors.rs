//! Why applying objects to a cluster failed, in words for the person who wrote them.

use crate::ValidationError;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WorkloadError {
    /// The manifests do not fit this cluster or the rules (unknown kind, another namespace,
    /// a cluster-scoped object where none is allowed). Said before anything is applied.
    #[error("{0}")]
    Invalid(ValidationError),
    /// The cluster refused an object (RBAC forbids it, the object is invalid). Trying again
    /// does not help until the manifests or the rights change.
    #[error("{0}")]
    Refused(String),
    /// Network trouble or a busy server: trying again later may work.
    #[error("{0}")]
    Transient(String),
}

impl WorkloadError {
    pub fn is_transient(&self) -> bool {
        matches!(self, WorkloadError::Transient(_))
    }
}

/// An API error while trying to `what` ("apply Deployment shop/web"). The server's message
/// is kept (it names the field or the missing permission); credentials never appear in it.
pub fn api_error(e: kube::Error, what: &str) -> WorkloadError {
    match e {
        kube::Error::Api(s) => {
            let message = s.message.chars().take(600).collect::<String>();
            match s.code {
                403 => WorkloadError::Refused(format!("not allowed to {what}: {message}")),
                // The server could not build the typed object: the manifest's fault, whatever
                // the status says (1.20 answers 500).
                _ if message.contains("failed to create typed patch object") => {
                    WorkloadError::Refused(format!("cannot {what}: {message}"))
                }
                429 | 500..=599 => {
                    WorkloadError::Transient(format!("cannot {what} now: {message}"))
                }
                _ => WorkloadError::Refused(format!("cannot {what}: {message}")),
            }
        }
        other => WorkloadError::Transient(format!("cannot {what}: {}", short(&other))),
    }
}

fn short(e: &kube::Error) -> String {
    e.to_string().chars().take(300).collect()
}
