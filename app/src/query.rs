//! Query strings of the portal's links and redirects.

/// Percent-encodes a query-string value (RFC 3986 unreserved characters stay as they are).
pub fn encode_query_value(value: &str) -> String {
    escape(value, false)
}

/// Percent-encodes a query-string value as HTML forms do (`application/x-www-form-urlencoded`:
/// a space becomes `+`), for the redirects that end a write (on the server).
#[cfg(feature = "ssr")]
pub fn form_escape(value: &str) -> String {
    escape(value, true)
}

fn escape(value: &str, form: bool) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        let kept = match b {
            b'-' | b'.' | b'_' => true,
            b'~' => !form,
            b'*' => form,
            b => b.is_ascii_alphanumeric(),
        };
        if kept {
            out.push(char::from(b));
        } else if form && b == b' ' {
            out.push('+');
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

    #[cfg(feature = "ssr")]
    #[test]
    fn form_escape_writes_what_forms_write() {
        assert_eq!(
            super::form_escape("a b&c=d/é*-._~"),
            "a+b%26c%3Dd%2F%C3%A9*-._%7E"
        );
    }
}
