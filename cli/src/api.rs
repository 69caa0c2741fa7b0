//! The one way the client talks to the portal: `/api/v1` with a bearer token. Answers are
//! read as the server's own transfer types (kqueen-dto) where it has them, else as JSON.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::config::ClientConfig;
use crate::error::{CliError, Result};

/// A logged-in client of one portal.
#[derive(Clone)]
pub struct Api {
    url: String,
    /// None: the open routes only (logging in).
    token: Option<String>,
    http: reqwest::Client,
}

impl std::fmt::Debug for Api {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Api")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

impl Api {
    /// A client with `url` and `token`.
    pub fn new(url: &str, token: &str) -> Result<Self> {
        let mut api = Self::anonymous(url)?;
        api.token = Some(token.to_owned());
        Ok(api)
    }

    /// A client of `url` without a token, for the routes that log one in.
    pub fn anonymous(url: &str) -> Result<Self> {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(120))
            .user_agent(concat!("kqueen-cli/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| CliError::local("cannot build an HTTP client", e))?;
        Ok(Self {
            url: url.to_owned(),
            token: None,
            http,
        })
    }

    /// A client from the saved login.
    pub fn from_config(config: &ClientConfig) -> Result<Self> {
        let (url, token) = config.credentials()?;
        Self::new(url, token)
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    pub async fn get<T: DeserializeOwned>(&self, path: &str) -> Result<T> {
        self.call(Method::GET, path, None::<&()>).await
    }

    pub async fn post<T: DeserializeOwned>(&self, path: &str, body: &impl Serialize) -> Result<T> {
        self.call(Method::POST, path, Some(body)).await
    }

    pub async fn put<T: DeserializeOwned>(&self, path: &str, body: &impl Serialize) -> Result<T> {
        self.call(Method::PUT, path, Some(body)).await
    }

    pub async fn delete<T: DeserializeOwned>(&self, path: &str) -> Result<T> {
        self.call(Method::DELETE, path, None::<&()>).await
    }

    /// `GET` of a non-JSON answer (a kubeconfig).
    pub async fn get_text(&self, path: &str) -> Result<String> {
        let res = self.send(Method::GET, path, None::<&()>).await?;
        res.text()
            .await
            .map_err(|e| CliError::Unreachable(format!("{}: {e}", self.url)))
    }

    /// `POST` whose successful answers differ by status (202 "not yet", 200 "done").
    pub async fn post_with_status<T: DeserializeOwned>(
        &self,
        path: &str,
        body: &impl Serialize,
    ) -> Result<(StatusCode, T)> {
        self.call_with_status(Method::POST, path, Some(body)).await
    }

    async fn call<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: Option<&impl Serialize>,
    ) -> Result<T> {
        Ok(self.call_with_status(method, path, body).await?.1)
    }

    async fn call_with_status<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: Option<&impl Serialize>,
    ) -> Result<(StatusCode, T)> {
        let res = self.send(method, path, body).await?;
        let status = res.status();
        let bytes = res
            .bytes()
            .await
            .map_err(|e| CliError::Unreachable(format!("{}: {e}", self.url)))?;
        // 204 and other empty answers read as JSON null (for `()` and `Option`s).
        let bytes: &[u8] = if bytes.is_empty() { b"null" } else { &bytes };
        let answer = serde_json::from_slice(bytes).map_err(|e| {
            CliError::Server(format!(
                "HTTP {status} with an answer this client cannot read ({e}); is {} a KQueen \
                 portal of the same version?",
                self.url
            ))
        })?;
        Ok((status, answer))
    }

    async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<&impl Serialize>,
    ) -> Result<reqwest::Response> {
        // URLs resolve `.` and `..`: a name like that would call another route.
        if path.split(['/', '?']).any(|p| p == "." || p == "..") {
            return Err(CliError::Usage(format!(
                "{path:?} holds a name that is only dots"
            )));
        }
        let mut req = self.http.request(method, format!("{}{path}", self.url));
        if let Some(token) = &self.token {
            req = req.bearer_auth(token);
        }
        if let Some(body) = body {
            req = req.json(body);
        }
        let res = req
            .send()
            .await
            .map_err(|e| CliError::Unreachable(format!("{}: {}", self.url, error_chain(&e))))?;
        let status = res.status();
        if status.is_success() {
            return Ok(res);
        }
        let text = res.text().await.unwrap_or_default();
        Err(CliError::from_status(
            status.as_u16(),
            error_message(status, &text),
        ))
    }
}

/// The API's error message (`{"error": "..."}`), or the status' reason.
fn error_message(status: StatusCode, body: &str) -> String {
    serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v.get("error").and_then(|e| e.as_str()).map(str::to_owned))
        .filter(|m| !m.is_empty())
        .unwrap_or_else(|| status.canonical_reason().unwrap_or("error").to_owned())
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// One path segment, percent-encoded (names and ids go into paths).
pub fn segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A query string from pairs whose value is set.
pub fn query(pairs: &[(&str, Option<&str>)]) -> String {
    let parts: Vec<String> = pairs
        .iter()
        .filter_map(|(k, v)| v.map(|v| format!("{k}={}", segment(v))))
        .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!("?{}", parts.join("&"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_and_queries_are_encoded() {
        assert_eq!(segment("a b/c"), "a%20b%2Fc");
        assert_eq!(segment("v1.2-x_y~"), "v1.2-x_y~");
        assert_eq!(
            query(&[
                ("tenant", Some("team a")),
                ("state", None),
                ("q", Some("x&y"))
            ]),
            "?tenant=team%20a&q=x%26y"
        );
        assert_eq!(query(&[("a", None)]), "");
    }

    #[test]
    fn error_messages_come_from_the_api_body() {
        let m = error_message(StatusCode::CONFLICT, r#"{"error":"busy","status":409}"#);
        assert_eq!(m, "busy");
        assert_eq!(error_message(StatusCode::NOT_FOUND, "<html>"), "Not Found");
    }
}
