//! `kqueen login` through the identity provider's device flow (RFC 8628), relayed by the
//! portal: show the user where to sign in and the code, poll until they have, keep the
//! personal token the portal then issues.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde::Deserialize;
use serde_json::json;

use super::progress;
use crate::api::Api;
use crate::error::{CliError, Result};

/// The portal's start of a device login.
#[derive(Deserialize)]
pub struct Started {
    user_code: String,
    verification_uri: String,
    verification_uri_complete: Option<String>,
    expires_in: u64,
    interval: u64,
    device_code: String,
}

/// A poll's answer: `status`/`interval` while pending (202), the token once done (200).
#[derive(Deserialize)]
struct Polled {
    status: Option<String>,
    interval: Option<u64>,
    username: Option<String>,
    secret: Option<String>,
}

/// Whom the portal signed in, and their new token.
pub struct DeviceLogin {
    pub username: String,
    pub token: String,
}

/// Starts a device login at the portal; `None` when it offers none (no single sign-on,
/// or an identity provider without device logins).
pub async fn start(api: &Api) -> Result<Option<Started>> {
    match api
        .post::<Started>("/api/v1/login/device", &json!({}))
        .await
    {
        Ok(started) => Ok(Some(started)),
        Err(CliError::NotFound(_)) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Runs a started device login to its end: prints where to sign in, polls the portal at the
/// pace it asks for, until the user signed in, refused, or the code expired.
pub async fn finish(api: &Api, started: Started, days: u32) -> Result<DeviceLogin> {
    let page = started
        .verification_uri_complete
        .as_deref()
        .unwrap_or(&started.verification_uri);
    progress(&format!(
        "To sign in, open {page} and check that it shows the code {}.",
        started.user_code
    ));
    progress("Waiting for you to sign in there (Ctrl-C to give up)...");
    let deadline = Instant::now() + Duration::from_secs(started.expires_in.clamp(10, 3600));
    let mut interval = started.interval.clamp(1, 60);
    let body = json!({
        "device_code": started.device_code,
        "name": token_name(),
        "days": days,
    });
    while Instant::now() < deadline {
        tokio::time::sleep(Duration::from_secs(interval)).await;
        let (status, polled) = match api
            .post_with_status::<Polled>("/api/v1/login/device/token", &body)
            .await
        {
            Ok(answer) => answer,
            // The portal or its provider failing for a moment: the code lives on.
            Err(e @ (CliError::Unreachable(_) | CliError::Server(_))) => {
                progress(&format!("{e}; trying again"));
                continue;
            }
            Err(e) => return Err(refused_login(e)),
        };
        if status == StatusCode::OK {
            return match (polled.username, polled.secret) {
                (Some(username), Some(token)) => Ok(DeviceLogin { username, token }),
                _ => Err(CliError::Server(
                    "a device login answered without a token".into(),
                )),
            };
        }
        interval = next_interval(interval, polled.status.as_deref(), polled.interval);
    }
    Err(CliError::Refused(
        "the code expired before you signed in; run `kqueen login` again".into(),
    ))
}

/// Seconds to the next poll: never shorter than before, 5 more after "slow down" (RFC 8628
/// section 3.5), the portal's figure when longer, at most a minute.
fn next_interval(now: u64, status: Option<&str>, asked: Option<u64>) -> u64 {
    let slower = if status == Some("slow_down") {
        now + 5
    } else {
        now
    };
    slower.max(asked.unwrap_or(0)).min(60)
}

/// A login the portal refused, said as such (not "run `kqueen login` again" for a 401).
fn refused_login(e: CliError) -> CliError {
    match e {
        CliError::NotLoggedIn(_) => {
            CliError::Forbidden("login refused: your account is disabled on the portal".into())
        }
        CliError::Forbidden(m) => CliError::Forbidden(format!("login refused: {m}")),
        other => other,
    }
}

/// The token's name on the portal's Tokens page: which machine it is for.
fn token_name() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("COMPUTERNAME").ok())
        .map(|h| {
            h.trim()
                .chars()
                .filter(|c| !c.is_control())
                .take(60)
                .collect::<String>()
        })
        .filter(|h| !h.is_empty());
    match host {
        Some(host) => format!("kqueen CLI on {host}"),
        None => "kqueen CLI".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_polling_interval_only_grows_and_stays_under_a_minute() {
        assert_eq!(super::next_interval(5, Some("pending"), Some(5)), 5);
        assert_eq!(super::next_interval(5, Some("slow_down"), Some(10)), 10);
        assert_eq!(
            super::next_interval(10, Some("pending"), Some(5)),
            10,
            "never faster"
        );
        assert_eq!(super::next_interval(58, Some("slow_down"), Some(10)), 60);
        assert_eq!(super::next_interval(60, Some("slow_down"), None), 60);
        assert_eq!(super::next_interval(3, None, Some(600)), 60);
    }

    #[test]
    fn tokens_are_named_after_the_machine_within_the_limit() {
        let name = super::token_name();
        assert!(name.starts_with("kqueen CLI"), "{name}");
        assert!(name.chars().count() <= 100);
        assert!(!name.chars().any(char::is_control));
    }
}
