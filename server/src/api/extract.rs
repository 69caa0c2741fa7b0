//! Request extractors of the API: the one way a body or a query string enters a handler.
//! axum's own answer a malformed request with plain text and serde's wording; these answer
//! the API's error shape, `{"error": "...", "status": N}`, naming the field in plain words
//! (`node_count: must be a whole number from 0 to 4294967295`).

use axum::body::Bytes;
use axum::extract::rejection::QueryRejection;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::Response;
use serde::de::DeserializeOwned;
use serde::Deserialize;

use super::error_response;

/// A JSON request body: 415 without a JSON content type, 413 over the body limit, 400 for a
/// body that is not JSON or not of the expected shape (the message names the field).
#[derive(Debug, Clone, Copy, Default)]
pub struct ApiJson<T>(pub T);

impl<T, S> FromRequest<S> for ApiJson<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = Response;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        if !is_json(req.headers()) {
            return Err(error_response(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "the body must be JSON, sent with Content-Type: application/json",
            ));
        }
        let bytes = Bytes::from_request(req, state).await.map_err(|r| {
            let status = r.status();
            let message = if status == StatusCode::PAYLOAD_TOO_LARGE {
                "the body is larger than the 2 MiB the API accepts"
            } else {
                "the body could not be read"
            };
            error_response(status, message)
        })?;
        parse_json(&bytes)
            .map(Self)
            .map_err(|message| error_response(StatusCode::BAD_REQUEST, &message))
    }
}

/// `application/json` or any `+json` type, as axum's `Json` accepts.
fn is_json(headers: &HeaderMap) -> bool {
    let Some(value) = headers.get(header::CONTENT_TYPE) else {
        return false;
    };
    let essence = value
        .to_str()
        .unwrap_or_default()
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    match essence.split_once('/') {
        Some(("application", sub)) => sub == "json" || sub.ends_with("+json"),
        _ => false,
    }
}

/// Parses a JSON body into `T`, or says in plain words what is wrong and where. A number
/// with nothing after its decimal point (`3.0`) is the whole number it is, as JSON Schema's
/// `integer` (and so the OpenAPI document) has it.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let mut value =
        serde_json::Value::deserialize(&mut de).map_err(|e| plain_json_error("", &e))?;
    de.end()
        .map_err(|_| "the body has more after its JSON value".to_owned())?;
    whole_numbers(&mut value);
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        plain_json_error(&path, e.inner())
    })
}

/// Turns every integral floating-point number (`3.0`, `-1.0`) into an integer.
fn whole_numbers(value: &mut serde_json::Value) {
    use serde_json::Value;
    match value {
        Value::Number(n) if n.is_f64() => {
            let f = n.as_f64().unwrap_or(f64::NAN);
            // Exactly representable: below 2^53 in magnitude.
            if f.fract() == 0.0 && f.abs() < 9_007_199_254_740_992.0 {
                #[allow(clippy::cast_possible_truncation)]
                let whole = f as i64;
                *value = Value::from(whole);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(whole_numbers),
        Value::Object(map) => map.values_mut().for_each(whole_numbers),
        _ => {}
    }
}

fn plain_json_error(path: &str, e: &serde_json::Error) -> String {
    use serde_json::error::Category;
    let at = format!("line {}, column {}", e.line(), e.column());
    match e.classify() {
        Category::Eof => format!("the body ends before its JSON does ({at})"),
        Category::Syntax | Category::Io => format!("the body is not valid JSON ({at})"),
        Category::Data => {
            let text = e.to_string();
            let text = text.split(" at line ").next().unwrap_or_default();
            if let Some(field) = between(text, "missing field `", "`") {
                return format!("{}: is required", join(path, field));
            }
            if path == "." || path.is_empty() {
                return format!("the body {}", what_is_expected(text));
            }
            format!("{path}: {}", what_is_expected(text))
        }
    }
}

/// serde's "invalid type: integer `1`, expected a string" as "must be text".
fn what_is_expected(serde_text: &str) -> String {
    let expected = serde_text
        .rsplit_once("expected ")
        .map_or(serde_text, |(_, e)| e);
    let words = match expected {
        "a string" | "a borrowed string" => "must be text",
        "u8" => "must be a whole number from 0 to 255",
        "u16" => "must be a whole number from 0 to 65535",
        "u32" => "must be a whole number from 0 to 4294967295",
        "u64" => "must be a whole number from 0 to 18446744073709551615",
        "i32" | "i64" => "must be a whole number",
        "a boolean" => "must be true or false",
        "a sequence" => "must be a list",
        "a map" => "must be an object",
        e if e.starts_with("struct ") => "must be an object",
        e if e.contains("UUID") => "must be a UUID",
        e if e.starts_with("one of ") || e.starts_with("variant ") => {
            return format!("must be {e}").replace('`', "");
        }
        _ => "has the wrong type",
    };
    words.to_owned()
}

fn between<'a>(text: &'a str, start: &str, end: &str) -> Option<&'a str> {
    let rest = &text[text.find(start)? + start.len()..];
    Some(&rest[..rest.find(end)?])
}

fn join(path: &str, field: &str) -> String {
    if path == "." || path.is_empty() {
        field.to_owned()
    } else {
        format!("{path}.{field}")
    }
}

/// Query-string parameters ([`axum::extract::Query`]): 400 naming the parameter when they do
/// not parse.
#[derive(Debug, Clone, Copy, Default)]
pub struct ApiQuery<T>(pub T);

impl<T, S> FromRequestParts<S> for ApiQuery<T>
where
    axum::extract::Query<T>: FromRequestParts<S, Rejection = QueryRejection>,
    S: Send + Sync,
{
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match axum::extract::Query::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Query(value)) => Ok(Self(value)),
            Err(rejection) => Err(error_response(
                rejection.status(),
                &plain_query_error(&rejection.body_text()),
            )),
        }
    }
}

/// axum's "Failed to deserialize query string: limit: invalid digit found in string" as
/// "limit: must be a whole number".
fn plain_query_error(axum_text: &str) -> String {
    let text = axum_text
        .split_once("query string: ")
        .map_or(axum_text, |(_, t)| t);
    let (field, serde_text) = text.split_once(": ").unwrap_or(("query", text));
    let words = if serde_text.contains("digit")
        || serde_text.contains("integer")
        || serde_text.contains("number too")
    {
        "must be a whole number from 0 to 4294967295".to_owned()
    } else if serde_text.contains("`true` or `false`") {
        "must be true or false".to_owned()
    } else if serde_text.contains("UUID") || serde_text.contains("expected one of `[0-9a-fA-F-]`") {
        "must be a UUID".to_owned()
    } else if serde_text.contains("expected ") {
        what_is_expected(serde_text)
    } else {
        "has the wrong type".to_owned()
    };
    format!("{field}: {words}")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct Body {
        name: String,
        #[serde(default)]
        node_count: Option<u32>,
        #[serde(default)]
        tags: Vec<String>,
    }

    fn err(body: &str) -> String {
        parse_json::<Body>(body.as_bytes()).unwrap_err()
    }

    #[test]
    fn malformed_bodies_are_named_in_plain_words() {
        assert_eq!(err(r#"{"name": 1}"#), "name: must be text");
        assert_eq!(
            err(r#"{"name": "a", "node_count": -1}"#),
            "node_count: must be a whole number from 0 to 4294967295"
        );
        assert_eq!(
            err(r#"{"name": "a", "node_count": 1.5}"#),
            "node_count: must be a whole number from 0 to 4294967295"
        );
        assert_eq!(
            err(r#"{"name": "a", "tags": [1]}"#),
            "tags[0]: must be text"
        );
        assert_eq!(err(r#"{"node_count": 1}"#), "name: is required");
        assert_eq!(err("[]"), "the body must be an object");
        assert_eq!(
            err(r#"{"name": "#),
            "the body ends before its JSON does (line 1, column 9)"
        );
        assert_eq!(
            err("{name}"),
            "the body is not valid JSON (line 1, column 2)"
        );
        assert_eq!(
            err(r#"{"name": "a"} x"#),
            "the body has more after its JSON value"
        );
        let whole: Body = parse_json(br#"{"name": "a", "node_count": 3.0}"#).unwrap();
        assert_eq!(whole.node_count, Some(3));
    }

    #[test]
    fn malformed_queries_are_named_in_plain_words() {
        assert_eq!(
            plain_query_error(
                "Failed to deserialize query string: limit: invalid digit found in string"
            ),
            "limit: must be a whole number from 0 to 4294967295"
        );
        assert_eq!(
            plain_query_error("Failed to deserialize query string: download: provided string was not `true` or `false`"),
            "download: must be true or false"
        );
    }

    #[test]
    fn json_content_types() {
        let with = |ct: &str| {
            let mut h = HeaderMap::new();
            h.insert(header::CONTENT_TYPE, ct.parse().unwrap());
            is_json(&h)
        };
        assert!(with("application/json"));
        assert!(with("application/json; charset=utf-8"));
        assert!(with("application/merge-patch+json"));
        assert!(!with("text/plain"));
        assert!(!with("application/jsonx"));
        assert!(!is_json(&HeaderMap::new()));
    }
}
