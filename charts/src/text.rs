//! Text and numbers in the charts: fonts, generous width estimates, truncation, escaping,
//! number formats and value scales.

#[allow(clippy::wildcard_imports)]
use super::*;

/// Font in SVG pixels. The naive font backend writes `font-size = size / 1.24`.
pub(crate) fn font(px: f64, color: RGBColor) -> TextStyle<'static> {
    styled(px, FontStyle::Normal, color)
}

pub(crate) fn styled(px: f64, style: FontStyle, color: RGBColor) -> TextStyle<'static> {
    ("sans-serif", px * 1.24, style).into_font().color(&color)
}

/// Generous width estimate (the naive backend guesses narrower) so labels do not collide.
pub(crate) fn text_width(text: &str, px: f64) -> f64 {
    #[allow(clippy::cast_precision_loss)] // label lengths are far below 2^52
    let chars = text.chars().count() as f64;
    chars * px * CHAR_EM
}

/// Shortens `text` to fit `max` pixels, ending in `…`; control characters become spaces.
pub(crate) fn fit(text: &str, px: f64, max: f64) -> String {
    let clean: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if text_width(&clean, px) <= max {
        return clean;
    }
    let keep = usize::try_from(to_px((max / (px * CHAR_EM)).floor() - 1.0)).unwrap_or(0);
    clean.chars().take(keep).collect::<String>() + "…"
}

pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// Short number: three significant digits or so, scientific outside `1e-3..1e6`.
pub(crate) fn fmt_num(v: f64) -> String {
    let trim = |digits: &str| {
        digits
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_owned()
    };
    let magnitude = v.abs();
    if magnitude == 0.0 || !magnitude.is_finite() {
        return "0".to_owned();
    }
    if !(1e-3..1e6).contains(&magnitude) {
        let sci = format!("{v:.2e}");
        return match sci.split_once('e') {
            Some((mantissa, exp)) => format!("{}e{exp}", trim(mantissa)),
            None => sci,
        };
    }
    let decimals = match magnitude {
        m if m >= 100.0 => 0,
        m if m >= 10.0 => 1,
        m if m >= 1.0 => 2,
        _ => 4,
    };
    let fixed = format!("{v:.decimals$}");
    if fixed.contains('.') {
        trim(&fixed)
    } else {
        fixed
    }
}

/// How values are scaled and named: the divisor and the unit appended to values and the axis
/// label (empty for counts).
pub(crate) struct Scale(pub(crate) f64, pub(crate) &'static str);

impl Scale {
    pub(crate) fn new(unit: Unit, max_abs: f64) -> Self {
        match unit {
            Unit::Count => Self(1.0, ""),
            Unit::Cores => Self(1.0, "cores"),
            Unit::Bytes => ["PiB", "TiB", "GiB", "MiB", "KiB"]
                .into_iter()
                .zip((1..=5).rev().map(|p| 1024f64.powi(p)))
                .find(|(_, divisor)| max_abs >= *divisor)
                .map_or(Self(1.0, "B"), |(suffix, divisor)| Self(divisor, suffix)),
        }
    }

    /// A scaled value in words, e.g. "3.8 cores", "1 core", "8 GiB", "12".
    /// The number and the suffix are joined in place: the fleet dashboard writes four of
    /// these per row, and `format!` cost more than the number itself.
    pub(crate) fn words(&self, v: f64) -> String {
        let mut n = fmt_num(v);
        match self.1 {
            "" => n,
            "cores" if n == "1" => "1 core".to_owned(),
            suffix => {
                n.reserve_exact(1 + suffix.len());
                n.push(' ');
                n.push_str(suffix);
                n
            }
        }
    }
}
