//! The error every server function returns. Internal causes are logged on the server and
//! reach the browser only as an opaque message.

use serde::{Deserialize, Serialize};
use server_fn::codec::JsonEncoding;
use server_fn::error::{FromServerFnError, ServerFnErrorErr};

use leptos::server_fn;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum AppError {
    /// The request's input was refused; the message is meant for the user.
    #[error("{0}")]
    Invalid(String),
    #[error("{0} not found")]
    NotFound(String),
    #[error("{0}")]
    Conflict(String),
    #[error("please log in")]
    Unauthenticated,
    #[error("permission denied")]
    Forbidden,
    /// Something failed on the server; details are in the server's log only.
    #[error("the server could not complete this request; try again later")]
    Internal,
    /// Calling the server function failed (network, encoding).
    #[error("{0}")]
    Transport(String),
}

impl FromServerFnError for AppError {
    type Encoder = JsonEncoding;

    fn from_server_fn_error(value: ServerFnErrorErr) -> Self {
        AppError::Transport(value.to_string())
    }
}

#[cfg(feature = "ssr")]
impl From<kqueen_core::Error> for AppError {
    fn from(e: kqueen_core::Error) -> Self {
        use kqueen_core::Error as E;
        match e {
            E::Invalid(v) => AppError::Invalid(v.to_string()),
            E::NotFound(what) => AppError::NotFound(what.to_owned()),
            E::Conflict(m) => AppError::Conflict(m),
            E::Unauthenticated => AppError::Unauthenticated,
            E::Forbidden => AppError::Forbidden,
            other => {
                tracing::error!(error = ?other, "request failed");
                AppError::Internal
            }
        }
    }
}
