//! Times as the pages show them, from the RFC 3339 strings the DTOs carry (always UTC).

/// `2026-11-25 10:47:24`.
pub fn to_second(rfc3339: &str) -> String {
    shown(rfc3339, 19)
}

/// `2026-11-25 10:47`.
pub fn to_minute(rfc3339: &str) -> String {
    shown(rfc3339, 16)
}

/// `2026-11-25 10:47 UTC`.
pub fn to_minute_utc(rfc3339: &str) -> String {
    format!("{} UTC", to_minute(rfc3339))
}

/// `2026-11-25`.
pub fn to_day(rfc3339: &str) -> String {
    shown(rfc3339, 10)
}

/// `10:47:24` (the time of day alone, for a timeline).
pub fn to_clock(rfc3339: &str) -> String {
    match rfc3339.get(11..19) {
        Some(t) if rfc3339.as_bytes().get(10) == Some(&b'T') => t.to_owned(),
        _ => rfc3339.to_owned(),
    }
}

fn shown(rfc3339: &str, len: usize) -> String {
    match rfc3339.get(..len) {
        Some(t) if rfc3339.as_bytes().get(10) == Some(&b'T') => t.replacen('T', " ", 1),
        _ => rfc3339.to_owned(),
    }
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
    }
}
