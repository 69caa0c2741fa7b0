//! What can go wrong in a client command, and the exit code each kind ends with.

/// A failed command. The message is for people; the exit code for scripts:
/// 1 local trouble (files, the terminal), 2 usage, 3 not logged in or the token is refused,
/// 4 forbidden, 5 not found, 6 refused as invalid or conflicting, 7 the portal cannot be
/// reached, 8 the portal failed.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error("{0}")]
    Local(String),
    #[error("{0}")]
    Usage(String),
    #[error("{0}")]
    NotLoggedIn(String),
    #[error("forbidden: {0}")]
    Forbidden(String),
    #[error("not found: {0}")]
    NotFound(String),
    #[error("refused: {0}")]
    Refused(String),
    #[error("cannot reach the portal: {0}")]
    Unreachable(String),
    #[error("the portal failed: {0}")]
    Server(String),
}

impl CliError {
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Local(_) => 1,
            CliError::Usage(_) => 2,
            CliError::NotLoggedIn(_) => 3,
            CliError::Forbidden(_) => 4,
            CliError::NotFound(_) => 5,
            CliError::Refused(_) => 6,
            CliError::Unreachable(_) => 7,
            CliError::Server(_) => 8,
        }
    }

    /// A failure of the portal's answer with HTTP `status` and the API's error `message`.
    pub fn from_status(status: u16, message: String) -> Self {
        match status {
            401 => CliError::NotLoggedIn(format!(
                "the portal refused the token ({message}); run `kqueen login` again"
            )),
            403 => CliError::Forbidden(message),
            404 => CliError::NotFound(message),
            400..=499 => CliError::Refused(message),
            _ => CliError::Server(format!("HTTP {status}: {message}")),
        }
    }

    pub(crate) fn local(what: &str, e: impl std::fmt::Display) -> Self {
        CliError::Local(format!("{what}: {e}"))
    }
}

pub type Result<T, E = CliError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_map_to_distinct_exit_codes() {
        let code = |s| CliError::from_status(s, "m".into()).exit_code();
        assert_eq!(code(401), 3);
        assert_eq!(code(403), 4);
        assert_eq!(code(404), 5);
        assert_eq!(code(400), 6);
        assert_eq!(code(409), 6);
        assert_eq!(code(422), 6);
        assert_eq!(code(500), 8);
        assert_eq!(code(503), 8);
    }
}
