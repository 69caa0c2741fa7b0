//! A command provider's settings: the commands, the shell switch, the timeout, the secret
//! environment (`NAME=value` lines).

use std::time::Duration;

use crate::provisioner::command::{Action, DEFAULT_TIMEOUT_SECS, MAX_TIMEOUT_SECS};
use crate::provisioner::{OpContext, Params};

/// The provider's secret setting with environment variables for every command.
pub(super) const ENVIRONMENT: &str = "environment";

/// `NAME=value` lines (blank lines and `#` comments skipped). Names are upper-case shell
/// variable names; KQueen's own (`KQ_…`) and `PATH`/`HOME` cannot be replaced. Messages name
/// the line and never quote a value.
pub(super) fn parse_environment(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let n = i + 1;
        let Some((name, value)) = line.split_once('=') else {
            return Err(format!("line {n} is not NAME=value"));
        };
        let name = name.trim();
        let valid = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_uppercase() || c == '_')
            && name
                .chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
        if !valid {
            return Err(format!(
                "line {n}: the name must be upper-case letters, digits and _"
            ));
        }
        if name.starts_with("KQ_") || matches!(name, "PATH" | "HOME") {
            return Err(format!("line {n}: {name} is set by KQueen"));
        }
        if value.contains('\0') {
            return Err(format!("line {n}: the value holds a NUL byte"));
        }
        out.push((name.to_owned(), value.to_owned()));
    }
    Ok(out)
}

/// The configured command line of `action`, if any.
pub(super) fn command_line(ctx: &OpContext, action: Action) -> Option<String> {
    ctx.provider_config
        .get(action.setting())
        .filter(|l| !l.trim().is_empty())
        .cloned()
}

/// The provider settings that shape a run.
pub(super) struct Settings {
    pub(super) shell: bool,
    pub(super) timeout: Duration,
}

impl Settings {
    pub(super) fn from_config(config: &Params) -> Self {
        let shell = config.get("shell").is_some_and(|v| v.trim() == "true");
        let secs = config
            .get("timeout_seconds")
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(DEFAULT_TIMEOUT_SECS)
            .clamp(1, MAX_TIMEOUT_SECS);
        Self {
            shell,
            timeout: Duration::from_secs(secs),
        }
    }
}
