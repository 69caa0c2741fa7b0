//! Times as the pages show them, from the RFC 3339 strings the DTOs carry (always UTC).

/// `2026-11-25 10:47:24`.
pub fn to_second(rfc3339: &str) -> String {
    shown(rfc3339, 19, "")
}

/// `2026-11-25 10:47`.
pub fn to_minute(rfc3339: &str) -> String {
    shown(rfc3339, 16, "")
}

/// `2026-11-25 10:47 UTC`.
pub fn to_minute_utc(rfc3339: &str) -> String {
    shown(rfc3339, 16, " UTC")
}

/// `2026-11-25`.
pub fn to_day(rfc3339: &str) -> String {
    shown(rfc3339, 10, "")
}

/// `10:47:24` (the time of day alone, for a timeline).
pub fn to_clock(rfc3339: &str) -> String {
    match rfc3339.get(11..19) {
        Some(t) if rfc3339.as_bytes().get(10) == Some(&b'T') => t.to_owned(),
        _ => rfc3339.to_owned(),
    }
}

/// The first `len` bytes of an RFC 3339 time with a space for its `T`, then `suffix`; any
/// other text as it is, then `suffix`. Copied in one allocation: list pages show two times
/// per row, and `replacen` plus `format!` cost ~900 instructions a time (callgrind of
/// `/clusters`, 3 % of the page).
fn shown(rfc3339: &str, len: usize, suffix: &str) -> String {
    let mut out = String::with_capacity(len + suffix.len());
    match rfc3339.get(..len) {
        // Byte 10 is the ASCII `T`: 10 and 11 are character boundaries.
        Some(t) if rfc3339.as_bytes().get(10) == Some(&b'T') => {
            out.push_str(t.get(..10).unwrap_or(t));
            if let Some(time) = t.get(11..) {
                out.push(' ');
                out.push_str(time);
            }
        }
        _ => out.push_str(rfc3339),
    }
    out.push_str(suffix);
    out
}

#[cfg(test)]
mod tests {
    use super::{to_clock, to_day, to_minute, to_minute_utc, to_second};

    #[test]
    fn times_show_in_utc_to_the_second_or_minute() {
        let t = "2026-11-25T10:47:24.855222+00:00";
        assert_eq!(to_second(t), "2026-11-25 10:47:24");
        assert_eq!(to_minute(t), "2026-11-25 10:47");
        assert_eq!(to_minute_utc(t), "2026-11-25 10:47 UTC");
        assert_eq!(
            to_second("2026-11-25T10:47:24+00:00"),
            "2026-11-25 10:47:24"
        );
        assert_eq!(to_second("not a time"), "not a time");
        assert_eq!(to_minute(""), "");
        assert_eq!(to_day(t), "2026-11-25");
        assert_eq!(to_clock(t), "10:47:24");
        assert_eq!(to_clock("10:47"), "10:47");
        assert_eq!(to_minute_utc("not a time"), "not a time UTC");
        assert_eq!(to_minute_utc("2026-11-25T10"), "2026-11-25T10 UTC");
        assert_eq!(to_day("2026-11-25T10:47:24Z"), "2026-11-25");
        assert_eq!(to_day("2026-11-25"), "2026-11-25");
        assert_eq!(to_second("2026-11-25T10:47:24Z"), "2026-11-25 10:47:24");
        assert_eq!(to_second("2026-11-25 10:47:24Z"), "2026-11-25 10:47:24Z");
        assert_eq!(
            to_minute("2026-11-25T10:4€7"),
            "2026-11-25T10:4€7",
            "no char split"
        );
    }
}
