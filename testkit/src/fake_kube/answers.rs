//! Answers shaped like the real server's (objects, `Status` errors) and small helpers.

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

use crate::fake_kube::Target;

pub(super) fn ok(code: u16, body: Value) -> Response {
    (
        StatusCode::from_u16(code).unwrap_or(StatusCode::OK),
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// A `Status` error like the real server's.
pub(super) fn status(
    code: u16,
    reason: &str,
    message: &str,
    details: Option<(&str, &str)>,
) -> Response {
    let mut body = json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {},
        "status": "Failure", "message": message, "reason": reason, "code": code,
    });
    if let Some((kind, name)) = details {
        body["details"] = json!({"name": name, "kind": kind});
    }
    (
        StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

pub(super) fn not_found(t: &Target, name: &str) -> Response {
    status(
        404,
        "NotFound",
        &format!("{} \"{name}\" not found", t.plural),
        Some((&t.plural, name)),
    )
}

pub(super) fn injected(code: u16) -> Response {
    let (reason, message) = match code {
        401 => ("Unauthorized", "Unauthorized"),
        403 => ("Forbidden", "forbidden by the fake (injected)"),
        404 => (
            "NotFound",
            "the server could not find the requested resource",
        ),
        409 => ("Conflict", "conflict (injected)"),
        429 => ("TooManyRequests", "too many requests (injected)"),
        500 => ("InternalError", "internal error (injected)"),
        503 => ("ServiceUnavailable", "unavailable (injected)"),
        _ => ("", "injected failure"),
    };
    status(code, reason, message, None)
}

pub(super) fn split_version(v: &str) -> (String, String) {
    let mut parts = v.trim_start_matches('v').split('.');
    let major = parts.next().unwrap_or("1").to_owned();
    let minor = parts.next().unwrap_or("0").to_owned();
    (major, minor)
}

pub(super) fn is_dns_subdomain(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric())
}

pub(super) fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
                match u8::from_str_radix(hex, 16) {
                    Ok(b) => {
                        out.push(b);
                        i += 3;
                    }
                    Err(_) => {
                        out.push(b'%');
                        i += 1;
                    }
                }
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}
