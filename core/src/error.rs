//! The domain's error type. Web layers map it to HTTP statuses in one place; internal causes
//! (`Store`, `Migrate`) are logged there and shown to users only as an opaque message.

use std::fmt;

/// `Result` with the domain's [`Error`] as the default error type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// An input that failed validation: which field, and a message meant for the person who typed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidationError {
    pub field: &'static str,
    /// The entry of a map-valued field the error concerns (a parameter of `parameters`, a
    /// setting of `settings`), so that forms show it at that entry's input.
    pub key: Option<String>,
    /// What is wrong, in words for the person who typed it, without the field's name.
    pub message: String,
}

impl ValidationError {
    pub fn new(field: &'static str, message: impl Into<String>) -> Self {
        Self {
            field,
            key: None,
            message: message.into(),
        }
    }

    /// An error about the entry `key` of the map-valued `field`.
    pub fn at(field: &'static str, key: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field,
            key: Some(key.into()),
            message: message.into(),
        }
    }

    /// The same error, said of the map-valued `field` (a schema's errors name `parameters`;
    /// a provider's settings are checked with the same schemas).
    pub fn within(mut self, field: &'static str) -> Self {
        self.field = field;
        self
    }
}

impl fmt::Display for ValidationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.key {
            Some(key) => write!(f, "{}.{key}: {}", self.field, self.message),
            None => write!(f, "{}: {}", self.field, self.message),
        }
    }
}

impl std::error::Error for ValidationError {}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("invalid input: {0}")]
    Invalid(ValidationError),
    #[error("{0} not found")]
    NotFound(&'static str),
    /// No valid session or token.
    #[error("authentication required")]
    Unauthenticated,
    /// Logged in, but not allowed to do this.
    #[error("permission denied")]
    Forbidden,
    /// Allowed in general, but refused to this caller for a reason they are told (the one
    /// who asked for an approval cannot give it).
    #[error("{0}")]
    Refused(String),
    #[error("{0}")]
    Conflict(String),
    #[error("storage error")]
    Store(#[source] sqlx::Error),
    #[error("database migration failed")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// Data in the store that the domain refuses to read (written by something else, or a bug).
    #[error("corrupt stored data: {0}")]
    Corrupt(String),
    #[error("unsupported database URL: {0}")]
    UnsupportedDatabase(String),
    /// A storage backend other than SQL (etcd) failed: unreachable, refused, misconfigured.
    /// The message names no secret; show users an opaque message and log this one.
    #[error("storage backend error: {0}")]
    Backend(String),
    /// A secret could not be sealed or opened (wrong or missing key, tampering).
    #[error(transparent)]
    Vault(#[from] VaultError),
}

/// Vault failures. None of them carries key material or plaintext.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum VaultError {
    #[error("vault key specification: {0}")]
    Spec(String),
    #[error("sealed with key '{0}', which is not in the keyring")]
    UnknownKey(String),
    #[error("sealed secret is malformed")]
    Malformed,
    #[error("sealed secret does not open (wrong key, tampered, or moved)")]
    Open,
    #[error("vault key file: {0}")]
    File(String),
}

impl From<ValidationError> for Error {
    fn from(e: ValidationError) -> Self {
        Error::Invalid(e)
    }
}

impl From<sqlx::Error> for Error {
    /// Store boundary: missing rows become `NotFound`, unique violations `Conflict`; anything
    /// else stays an opaque storage error.
    fn from(e: sqlx::Error) -> Self {
        match &e {
            sqlx::Error::RowNotFound => Error::NotFound("record"),
            sqlx::Error::Database(db) if db.is_unique_violation() => {
                Error::Conflict("already exists".into())
            }
            _ => Error::Store(e),
        }
    }
}

/// What kind of failure a caller is told about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The input was refused (a field and a message for the person who typed it).
    Invalid,
    NotFound,
    /// The request contradicts the current state (a name taken, a cluster not Ready…).
    Conflict,
    Unauthenticated,
    Forbidden,
    /// Something failed inside; the details are logged, never shown.
    Internal,
}

/// An error as every adapter (REST, server functions, form posts) shows it: its kind and a
/// message safe to show to anyone allowed to make the request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicError {
    pub kind: ErrorKind,
    pub message: String,
    /// The field an `Invalid` input concerns.
    pub field: Option<&'static str>,
}

impl Error {
    /// The kind and the safe message of this error. Internal causes are logged here (once,
    /// with their details) and answered with an opaque message.
    pub fn public(&self) -> PublicError {
        let (kind, message, field) = match self {
            Error::Invalid(v) => (ErrorKind::Invalid, v.to_string(), Some(v.field)),
            Error::NotFound(what) => (ErrorKind::NotFound, format!("{what} not found"), None),
            Error::Conflict(m) => (ErrorKind::Conflict, m.clone(), None),
            Error::Unauthenticated => (
                ErrorKind::Unauthenticated,
                "authentication required".to_owned(),
                None,
            ),
            Error::Forbidden => (ErrorKind::Forbidden, "permission denied".to_owned(), None),
            Error::Refused(m) => (ErrorKind::Forbidden, m.clone(), None),
            other => {
                tracing::error!(error = ?other, "request failed");
                (
                    ErrorKind::Internal,
                    "the server could not complete this request; try again later".to_owned(),
                    None,
                )
            }
        };
        PublicError {
            kind,
            message,
            field,
        }
    }

    /// True for errors caused by the caller's input rather than by the system.
    pub fn is_client_error(&self) -> bool {
        matches!(
            self,
            Error::Invalid(_) | Error::NotFound(_) | Error::Conflict(_) | Error::Refused(_)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_errors_say_what_is_safe() {
        let invalid = Error::from(ValidationError::new("name", "is required")).public();
        assert_eq!(
            (invalid.kind, invalid.message.as_str(), invalid.field),
            (ErrorKind::Invalid, "name: is required", Some("name"))
        );
        assert_eq!(
            Error::NotFound("cluster").public().message,
            "cluster not found"
        );
        assert_eq!(Error::Forbidden.public().kind, ErrorKind::Forbidden);
        let internal = Error::Backend("etcd at 10.0.0.1 refused user root".into()).public();
        assert_eq!(internal.kind, ErrorKind::Internal);
        assert!(
            !internal.message.contains("10.0.0.1"),
            "{}",
            internal.message
        );
    }
}
