//! Escaping of values placed into URLs.

/// Percent-encodes a query-string value.
pub fn query_escape(value: &str) -> String {
    url::form_urlencoded::byte_serialize(value.as_bytes()).collect()
}
