//! Query strings of the portal's links.

/// Percent-encodes a query-string value (RFC 3986 unreserved characters stay as they are).
pub fn encode_query_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::encode_query_value;

    #[test]
    fn query_values_are_percent_encoded() {
        assert_eq!(encode_query_value("team-a_1.~"), "team-a_1.~");
        assert_eq!(encode_query_value("a b&c=d/é"), "a%20b%26c%3Dd%2F%C3%A9");
    }
}
