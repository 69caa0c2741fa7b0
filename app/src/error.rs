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
    /// What was not found, said as a sentence ("cluster not found").
    #[error("{0}")]
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

    /// Arguments that cannot be read (a field missing or of the wrong type: a script, an old
    /// tab) are the client's mistake: [`AppError::Invalid`] with a plain message, and on the
    /// server a 400 (the function never ran, nothing was written).
    fn from_server_fn_error(value: ServerFnErrorErr) -> Self {
        match value {
            ServerFnErrorErr::Args(why) | ServerFnErrorErr::MissingArg(why) => {
                #[cfg(feature = "ssr")]
                refuse_malformed();
                AppError::Invalid(format!("malformed request: {}", why.replace('`', "")))
            }
            other => AppError::Transport(other.to_string()),
        }
    }
}

#[cfg(feature = "ssr")]
/// Answers this server function's call with 400 Bad Request: its arguments could not be
/// read. A plain form post (no JavaScript, `Accept: text/html`) keeps the redirect back to
/// its page that every failed write gets.
fn refuse_malformed() {
    let html = crate::context::with::<http::request::Parts, _>(|parts| {
        parts
            .headers
            .get(http::header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.contains("text/html"))
    })
    .unwrap_or(false);
    if !html {
        if let Some(response) = crate::context::get::<leptos_axum::ResponseOptions>() {
            response.set_status(http::StatusCode::BAD_REQUEST);
        }
    }
}

#[cfg(feature = "ssr")]
impl From<kqueen_core::Error> for AppError {
    fn from(e: kqueen_core::Error) -> Self {
        use kqueen_core::ErrorKind as K;
        let public = e.public();
        match public.kind {
            K::Invalid => AppError::Invalid(public.message),
            K::NotFound => AppError::NotFound(public.message),
            K::Conflict => AppError::Conflict(public.message),
            K::Unauthenticated => AppError::Unauthenticated,
            K::Forbidden => AppError::Forbidden,
            K::Internal => AppError::Internal,
        }
    }
}
