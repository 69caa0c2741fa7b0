//! The OAuth 2.0 device authorization grant (RFC 8628) with the identity provider, for logins
//! from a terminal (`kqueen login`): the portal is the client (its secret never leaves it), the
//! command line shows the user a code and polls the portal, the portal polls the provider once
//! per poll and verifies the ID token it finally gets. Nothing is kept between calls: the
//! device code travels with each poll, so any replica can answer.

use base64::Engine;
use kqueen_core::ExternalLogin;
use openidconnect::{AccessToken, Nonce};
use secrecy::ExposeSecret;
use serde::Deserialize;

use super::oidc::{error_chain, Oidc, OidcError};

/// The grant type of a device code (RFC 8628 section 3.4).
const DEVICE_CODE_GRANT: &str = "urn:ietf:params:oauth:grant-type:device_code";

/// What the user is shown and what the terminal keeps (RFC 8628 section 3.2). `Debug` leaves
/// the device code out.
#[derive(Clone, Deserialize)]
pub struct DeviceStart {
    pub device_code: String,
    pub user_code: String,
    pub verification_uri: String,
    pub verification_uri_complete: Option<String>,
    pub expires_in: u64,
    /// Seconds between polls (5 when the provider does not say).
    #[serde(default = "default_interval")]
    pub interval: u64,
}

impl std::fmt::Debug for DeviceStart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceStart")
            .field("user_code", &self.user_code)
            .field("verification_uri", &self.verification_uri)
            .finish_non_exhaustive()
    }
}

fn default_interval() -> u64 {
    5
}

/// One poll's outcome.
#[derive(Debug)]
pub enum DevicePoll {
    /// The user has not finished at the provider yet.
    Pending,
    /// Polled too often: wait 5 seconds longer from now on.
    SlowDown,
    /// The user signed in: who they are, verified.
    Done(ExternalLogin),
}

/// Why a device login cannot go on.
#[derive(Debug, thiserror::Error)]
pub enum DeviceError {
    #[error("the identity provider offers no device login (RFC 8628); use a personal API token")]
    NotOffered,
    #[error("the login was refused at the identity provider")]
    Denied,
    #[error("the code expired before the login finished; start again")]
    Expired,
    #[error("unknown or already used device code")]
    UnknownCode,
    #[error(transparent)]
    Oidc(#[from] OidcError),
}

/// A token endpoint's answer: a token, or an error code (RFC 6749 section 5.2). No `Debug`:
/// it holds tokens.
#[derive(Deserialize)]
struct TokenAnswer {
    access_token: Option<String>,
    id_token: Option<String>,
    error: Option<String>,
    error_description: Option<String>,
}

impl Oidc {
    /// Starts a device login: asks the provider for a device and a user code.
    pub async fn device_start(&self) -> Result<DeviceStart, DeviceError> {
        let d = self.discovered().await?;
        let endpoint = d
            .extra
            .device_authorization_endpoint
            .clone()
            .ok_or(DeviceError::NotOffered)?;
        // `openid` always (the browser login's library adds it too): no ID token without it.
        let mut scopes = vec!["openid"];
        scopes.extend(
            self.config
                .scopes
                .iter()
                .map(String::as_str)
                .filter(|s| *s != "openid"),
        );
        let scopes = scopes.join(" ");
        let res = self
            .client_request(endpoint.as_str())
            .form(&[
                ("client_id", self.config.client_id.as_str()),
                ("scope", &scopes),
            ])
            .send()
            .await
            .map_err(|e| OidcError::Provider(error_chain(&e)))?;
        let status = res.status();
        let body = res
            .bytes()
            .await
            .map_err(|e| OidcError::Provider(error_chain(&e)))?;
        if !status.is_success() {
            return Err(OidcError::Provider(provider_error(status, &body)).into());
        }
        let start: DeviceStart = serde_json::from_slice(&body).map_err(|e| {
            OidcError::Provider(format!("unreadable device authorization answer: {e}"))
        })?;
        if start.device_code.is_empty() || start.user_code.is_empty() {
            return Err(OidcError::Provider("device authorization without codes".into()).into());
        }
        Ok(start)
    }

    /// Asks the provider once whether the user behind `device_code` has signed in.
    pub async fn device_poll(&self, device_code: &str) -> Result<DevicePoll, DeviceError> {
        let d = self.discovered().await?;
        if d.extra.device_authorization_endpoint.is_none() {
            return Err(DeviceError::NotOffered);
        }
        let token_url = d
            .client
            .token_uri()
            .ok_or_else(|| OidcError::Config("the provider has no token endpoint".into()))?
            .url()
            .clone();
        let res = self
            .client_request(token_url.as_str())
            .form(&[
                ("grant_type", DEVICE_CODE_GRANT),
                ("device_code", device_code),
                ("client_id", self.config.client_id.as_str()),
            ])
            .send()
            .await
            .map_err(|e| OidcError::Exchange(error_chain(&e)))?;
        let status = res.status();
        let body = res
            .bytes()
            .await
            .map_err(|e| OidcError::Exchange(error_chain(&e)))?;
        let answer: TokenAnswer = serde_json::from_slice(&body)
            .map_err(|_| OidcError::Exchange(provider_error(status, &body)))?;
        match answer.error.as_deref() {
            Some("authorization_pending") => return Ok(DevicePoll::Pending),
            Some("slow_down") => return Ok(DevicePoll::SlowDown),
            Some("access_denied") => return Err(DeviceError::Denied),
            Some("expired_token") => return Err(DeviceError::Expired),
            Some("invalid_grant") => return Err(DeviceError::UnknownCode),
            Some(other) => {
                let description = answer.error_description.unwrap_or_default();
                return Err(
                    OidcError::Exchange(format!("{other} {description}").trim().into()).into(),
                );
            }
            None if !status.is_success() => {
                return Err(
                    OidcError::Exchange(format!("HTTP {status} without an error code")).into(),
                )
            }
            None => {}
        }
        let id_token = answer
            .id_token
            .ok_or_else(|| OidcError::IdToken("missing (was the openid scope granted?)".into()))?;
        // No nonce in a device flow (RFC 8628 has no authorization request to carry one); the
        // token came straight from the token endpoint over our own authenticated request.
        let no_nonce = |_: Option<&Nonce>| -> Result<(), String> { Ok(()) };
        let login = self.verify_id_token_with(&id_token, no_nonce).await?;
        let login = match answer.access_token {
            Some(token) => self.with_userinfo(AccessToken::new(token), login).await?,
            None => login,
        };
        Ok(DevicePoll::Done(login))
    }

    /// A POST to one of the provider's endpoints, authenticated as the portal
    /// (`client_secret_basic`: both parts form-encoded, RFC 6749 section 2.3.1).
    fn client_request(&self, url: &str) -> reqwest::RequestBuilder {
        let id = form_encode(&self.config.client_id);
        let secret = form_encode(self.config.client_secret.expose_secret());
        let basic = base64::engine::general_purpose::STANDARD.encode(format!("{id}:{secret}"));
        self.http
            .post(url)
            .header(reqwest::header::AUTHORIZATION, format!("Basic {basic}"))
            .header(reqwest::header::ACCEPT, "application/json")
    }
}

/// `application/x-www-form-urlencoded` of one value.
fn form_encode(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// A provider's error answer in a line: its `error` and description, else the status.
fn provider_error(status: reqwest::StatusCode, body: &[u8]) -> String {
    let json: Option<serde_json::Value> = serde_json::from_slice(body).ok();
    let field = |name: &str| {
        json.as_ref()
            .and_then(|j| j.get(name))
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned)
    };
    match field("error") {
        Some(error) => format!("{error} {}", field("error_description").unwrap_or_default())
            .trim()
            .to_owned(),
        None => format!("HTTP {status}"),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn client_credentials_are_form_encoded_before_basic() {
        assert_eq!(super::form_encode("a b:c/é"), "a+b%3Ac%2F%C3%A9");
    }

    #[test]
    fn provider_errors_read_in_one_line() {
        let e = super::provider_error(
            reqwest::StatusCode::BAD_REQUEST,
            br#"{"error":"invalid_client","error_description":"no such client"}"#,
        );
        assert_eq!(e, "invalid_client no such client");
        let e = super::provider_error(reqwest::StatusCode::BAD_GATEWAY, b"<html>");
        assert_eq!(e, "HTTP 502 Bad Gateway");
    }
}
