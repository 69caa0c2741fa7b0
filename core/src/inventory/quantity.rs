//! Kubernetes resource quantities (`500m`, `2`, `1.5`, `512Mi`, `4Gi`, `1e3`, `128974848`) as
//! integers: CPU in millicores, memory in bytes. Unparseable or negative quantities give
//! `None`: a malformed object in one cluster must not abort its inventory.

/// CPU quantity in millicores, rounded up like the scheduler does (`0.1m` → 1).
pub fn cpu_millis(q: &str) -> Option<u64> {
    to_int(parse(q)?, 1000.0)
}

/// Memory (or storage) quantity in bytes.
pub fn bytes(q: &str) -> Option<u64> {
    to_int(parse(q)?, 1.0)
}

fn to_int(value: f64, scale: f64) -> Option<u64> {
    let v = (value * scale).ceil();
    // f64 → u64 `as` saturates; the range check keeps absurd values out.
    (v.is_finite() && (0.0..1.0e19).contains(&v)).then_some(v as u64)
}

/// The quantity's value in base units (cores, bytes).
fn parse(q: &str) -> Option<f64> {
    let q = q.trim();
    let split = q
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+' || c == '-'))
        .unwrap_or(q.len());
    let (number, suffix) = q.split_at(split);
    if number.is_empty() || number.starts_with('-') {
        return None;
    }
    let n: f64 = number.parse().ok()?;
    let factor = match suffix {
        "" => 1.0,
        "n" => 1e-9,
        "u" => 1e-6,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        "Ki" => 1024.0,
        "Mi" => 1024.0 * 1024.0,
        "Gi" => 1024.0 * 1024.0 * 1024.0,
        "Ti" => 1024.0_f64.powi(4),
        "Pi" => 1024.0_f64.powi(5),
        "Ei" => 1024.0_f64.powi(6),
        exp if exp.starts_with(['e', 'E']) => 10f64.powi(exp[1..].parse::<i32>().ok()?),
        _ => return None,
    };
    let v = n * factor;
    v.is_finite().then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_forms() {
        assert_eq!(cpu_millis("500m"), Some(500));
        assert_eq!(cpu_millis("2"), Some(2000));
        assert_eq!(cpu_millis("1.5"), Some(1500));
        assert_eq!(cpu_millis("0.1m"), Some(1));
        assert_eq!(cpu_millis("250000u"), Some(250));
        assert_eq!(cpu_millis("12345678n"), Some(13));
        assert_eq!(cpu_millis(" 4 "), Some(4000));
    }

    #[test]
    fn memory_forms() {
        assert_eq!(bytes("512Mi"), Some(512 * 1024 * 1024));
        assert_eq!(bytes("4Gi"), Some(4 << 30));
        assert_eq!(bytes("1k"), Some(1000));
        assert_eq!(bytes("1Ki"), Some(1024));
        assert_eq!(bytes("1e3"), Some(1000));
        assert_eq!(bytes("128974848"), Some(128_974_848));
        assert_eq!(bytes("16380628Ki"), Some(16_380_628 * 1024));
    }

    #[test]
    fn garbage_is_none_not_a_panic() {
        for q in ["", "m", "-1", "1Qi", "abc", "1e999", "1e", "..", "1.2.3"] {
            assert_eq!(bytes(q), None, "{q}");
        }
        assert_eq!(cpu_millis("-500m"), None);
    }
}
