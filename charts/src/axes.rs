//! The value and category axes plotters draws along.

#[allow(clippy::wildcard_imports)]
use super::*;

/// Linear value axis with "nice" ticks (1, 2 or 5 × 10^n; whole numbers for counts).
#[derive(Clone)]
pub(crate) struct ValueAxis {
    pub(crate) lo: f64,
    pub(crate) hi: f64,
    pub(crate) step: f64,
}

impl ValueAxis {
    pub(crate) fn new(min: f64, max: f64, unit: Unit) -> Self {
        let fallback = Self {
            lo: 0.0,
            hi: 1.0,
            step: if unit == Unit::Count { 1.0 } else { 0.2 },
        };
        let raw = (max - min) / 5.0;
        if !(raw.is_finite() && raw > 0.0) {
            return fallback;
        }
        let magnitude = 10f64.powf(raw.log10().floor());
        let step = match raw / magnitude {
            n if n <= 1.0 => 1.0,
            n if n <= 2.0 => 2.0,
            n if n <= 5.0 => 5.0,
            _ => 10.0,
        } * magnitude;
        let step = if unit == Unit::Count {
            step.max(1.0)
        } else {
            step
        };
        let (lo, hi) = ((min / step).floor() * step, (max / step).ceil() * step);
        if [step, lo, hi].iter().all(|v| v.is_finite()) && step > 0.0 && hi > lo {
            Self { lo, hi, step }
        } else {
            fallback
        }
    }

    pub(crate) fn ticks(&self, offset: f64) -> Vec<f64> {
        let first = (self.lo / self.step).round();
        (0..=100)
            .map(|k| (first + f64::from(k) + offset) * self.step)
            .take_while(|v| *v <= self.hi + self.step * 1e-9)
            .collect()
    }
}

/// Maps `fraction` (0..=1) of the way from `from` to `to`, in whole pixels.
pub(crate) fn lerp(from: i32, to: i32, fraction: f64) -> i32 {
    let fraction = if fraction.is_finite() {
        fraction.clamp(0.0, 1.0)
    } else {
        0.0
    };
    #[allow(clippy::cast_possible_truncation)] // between two i32s
    let px = (f64::from(from) + f64::from(to - from) * fraction).round() as i32;
    px
}

impl Ranged for ValueAxis {
    type FormatOption = NoDefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        lerp(limit.0, limit.1, (value - self.lo) / (self.hi - self.lo))
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            self.ticks(0.5)
        } else {
            self.ticks(0.0)
        }
    }

    fn range(&self) -> Range<f64> {
        self.lo..self.hi
    }
}

impl ValueFormatter<f64> for ValueAxis {
    fn format(value: &f64) -> String {
        fmt_num(*value)
    }
}

/// Category axis: category `i` is the band `i..i + 1`, the first at the top.
pub(crate) struct CategoryAxis(pub(crate) Vec<String>);

impl Ranged for CategoryAxis {
    type FormatOption = NoDefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        #[allow(clippy::cast_precision_loss)]
        let n = self.0.len().max(1) as f64;
        // The y limit runs bottom to top; categories read top to bottom.
        lerp(limit.1, limit.0, value / n)
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            return Vec::new();
        }
        #[allow(clippy::cast_precision_loss)]
        (0..self.0.len()).map(|i| i as f64 + 0.5).collect()
    }

    fn range(&self) -> Range<f64> {
        #[allow(clippy::cast_precision_loss)]
        let n = self.0.len() as f64;
        0.0..n
    }
}

impl ValueFormatter<f64> for CategoryAxis {
    fn format(_: &f64) -> String {
        String::new()
    }

    fn format_ext(&self, value: &f64) -> String {
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // key points are i + 0.5
        let i = value.floor().max(0.0) as usize;
        self.0.get(i).cloned().unwrap_or_default()
    }
}
