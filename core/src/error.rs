//! The domain's error type. Web layers map it to HTTP statuses in one place; internal causes
//! (`Store`, `Migrate`) are logged there and shown to users only as an opaque message.

use std::fmt;

/// `Result` with the domain's [`Error`] as the default error type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// An input that failed validation: which field, and a message meant for the person who typed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidationError {
    pub field: &'static str,
    pub message: String,
}

impl ValidationError {
    pub fn new(field: &'static str, message: impl Into<String>) -> Self {
        Self {
            field,
            message: message.into(),
        }
    }
}

impl fmt::Display for ValidationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
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
    Vault(#[from] crate::vault::VaultError),
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

impl Error {
    /// True for errors caused by the caller's input rather than by the system.
    pub fn is_client_error(&self) -> bool {
        matches!(
            self,
            Error::Invalid(_) | Error::NotFound(_) | Error::Conflict(_)
        )
    }
}
