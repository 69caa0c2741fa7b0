//! Server-side bar charts as self-contained SVG strings, drawn with `plotters`.
//!
//! Pages embed the returned `<svg>` directly, so charts read without JavaScript.
//!
//! - **No font dependency.** `plotters` is built with only `svg_backend`. Without a font feature
//!   (`ttf`, `ab_glyph`) it uses a naive font that only *estimates* text extents, and the SVG
//!   backend writes every string as a real `<text>` element. The browser renders those with its
//!   own `sans-serif`, so the server needs no fonts or fontconfig. Because the estimate is crude,
//!   the layout here measures text itself, generously, and truncates long labels with `…`.
//! - **Accessibility.** The root has `role="img"` and `aria-labelledby` naming a `<title>` (the
//!   chart title) and a `<desc>` that lists every value in words, including full, untruncated
//!   names and unknown values. Colours come from the Okabe-Ito palette (safe for colour-blind
//!   readers), and bars carry their value as text, so colour is never the only cue.
//! - **Layout.** Bars are horizontal: long node and namespace names fit on the left, and the
//!   height grows with the number of categories. The width is fixed; `viewBox` lets CSS scale
//!   the chart (for example `width: 100%; height: auto`). Nothing uses inline `style`
//!   attributes, so a strict Content-Security-Policy is fine.
//! - **Robustness.** Non-finite values count as unknown, empty input gives a "No data" chart,
//!   and any drawing error (or panic inside `plotters`) gives a "Chart unavailable" chart. The
//!   output is deterministic.

pub mod figures;

use std::fmt::Write as _;
use std::ops::Range;
use std::panic::{catch_unwind, AssertUnwindSafe};

use plotters::coord::ranged1d::{KeyPointHint, NoDefaultFormatting, Ranged, ValueFormatter};
use plotters::drawing::DrawingAreaErrorKind;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// What a value axis measures; decides number formatting and the axis label suffix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Plain counts (pods, clusters). Axis ticks are whole numbers.
    Count,
    /// CPU cores, fractional (`2.5`).
    Cores,
    /// Bytes, shown in a binary unit picked from the largest value (`GiB`, `MiB`, …).
    Bytes,
}

/// One series: one value per category; `None` is unknown and not drawn.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    pub values: Vec<Option<f64>>,
}

/// A horizontal bar chart: one band per category, series grouped side by side or stacked.
#[derive(Debug, Clone, PartialEq)]
pub struct BarChart {
    /// Drawn at the top and used as the SVG `<title>`.
    pub title: String,
    /// Value-axis description such as "CPU"; the chart appends the unit.
    pub value_label: String,
    pub unit: Unit,
    pub categories: Vec<String>,
    pub series: Vec<Series>,
    pub stacked: bool,
}

/// Draws `chart` as a complete `<svg>…</svg>` string. Never panics.
#[must_use]
pub fn bar_chart(chart: &BarChart) -> String {
    let id = chart_id(chart);
    if chart.categories.is_empty() || chart.series.is_empty() {
        return message_svg(&id, chart, "No data");
    }
    let plan = Plan::new(chart);
    let mut body = String::new();
    // `plotters` has `panic!`s on some paths (e.g. the default `ValueFormatter::format`); none
    // are reachable from here, but a chart must never take a page down with it.
    let drawn = catch_unwind(AssertUnwindSafe(|| draw(&plan, &mut body)));
    match drawn {
        Ok(Ok(())) => {
            if let Some((_, rest)) = body.split_once(">\n") {
                // Replace the backend's bare `<svg>` tag with an accessible one.
                return svg_open(&id, chart, plan.height, &plan.desc) + rest;
            }
        }
        Ok(Err(error)) => tracing::warn!(%error, title = %chart.title, "chart drawing failed"),
        Err(_) => tracing::warn!(title = %chart.title, "chart drawing panicked"),
    }
    message_svg(&id, chart, "Chart unavailable")
}

/// A value in words as the charts print it ("3.8 cores", "1 core", "16 GiB", "12"), for
/// tables beside a chart.
#[must_use]
pub fn format_value(unit: Unit, v: f64) -> String {
    let scale = Scale::new(unit, v.abs());
    scale.words(v / scale.0)
}

const WIDTH: u32 = 640;
const PAD: i32 = 12;
/// Okabe-Ito, reordered so the first colours contrast best on white; repeats after eight.
const PALETTE: [RGBColor; 8] = [
    RGBColor(0x00, 0x72, 0xB2),
    RGBColor(0xE6, 0x9F, 0x00),
    RGBColor(0x00, 0x9E, 0x73),
    RGBColor(0xD5, 0x5E, 0x00),
    RGBColor(0xCC, 0x79, 0xA7),
    RGBColor(0x56, 0xB4, 0xE9),
    RGBColor(0xF0, 0xE4, 0x42),
    RGBColor(0x00, 0x00, 0x00),
];
const INK: RGBColor = RGBColor(0x33, 0x33, 0x33);
/// Grey with 4.5:1 contrast on white (WCAG AA) for "unknown".
const MUTED: RGBColor = RGBColor(0x76, 0x76, 0x76);
const BAR: f64 = 14.0;
/// Bar thickness when a band holds one bar (stacked or single series).
const SOLO_BAR: f64 = 18.0;
const BAND_GAP: f64 = 10.0;
const X_AXIS_H: u32 = 44;
const CATEGORY_LABEL_MAX: f64 = 200.0;
/// Right margin, room for the value printed after the longest bar.
const VALUE_ROOM: u32 = 64;
/// Assumed average glyph width in ems: generous, as the browser's font is unknown.
const CHAR_EM: f64 = 0.62;
const TITLE_MAX: f64 = 616.0;
/// Largest magnitude drawn; larger finite values are clamped so sums stay finite.
const LIMIT: f64 = 1e300;

/// Font in SVG pixels. The naive font backend writes `font-size = size / 1.24`.
fn font(px: f64, color: RGBColor) -> TextStyle<'static> {
    styled(px, FontStyle::Normal, color)
}

fn styled(px: f64, style: FontStyle, color: RGBColor) -> TextStyle<'static> {
    ("sans-serif", px * 1.24, style).into_font().color(&color)
}

/// Generous width estimate (the naive backend guesses narrower) so labels do not collide.
fn text_width(text: &str, px: f64) -> f64 {
    #[allow(clippy::cast_precision_loss)] // label lengths are far below 2^52
    let chars = text.chars().count() as f64;
    chars * px * CHAR_EM
}

/// Shortens `text` to fit `max` pixels, ending in `…`; control characters become spaces.
fn fit(text: &str, px: f64, max: f64) -> String {
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

fn escape(text: &str) -> String {
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
fn fmt_num(v: f64) -> String {
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
struct Scale(f64, &'static str);

impl Scale {
    fn new(unit: Unit, max_abs: f64) -> Self {
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
    fn words(&self, v: f64) -> String {
        match (fmt_num(v), self.1) {
            (n, "") => n,
            (n, "cores") if n == "1" => "1 core".to_owned(),
            (n, suffix) => format!("{n} {suffix}"),
        }
    }
}

/// Bars of category `i` as (series, from, to): each from zero, or stacked (positive values
/// rightwards, negative leftwards).
fn bars(values: &[Vec<Option<f64>>], i: usize, stacked: bool) -> Vec<(usize, f64, f64)> {
    let (mut pos, mut neg) = (0.0, 0.0);
    let mut out = Vec::with_capacity(values.len());
    for (s, series) in values.iter().enumerate() {
        let Some(v) = series[i] else { continue };
        let end = if v < 0.0 { &mut neg } else { &mut pos };
        let from = if stacked { *end } else { 0.0 };
        *end = from + v;
        out.push((s, from, from + v));
    }
    out
}

/// Everything needed to draw, in scaled units, with text already fitted.
struct Plan {
    title: String,
    axis_label: String,
    categories: Vec<String>,
    legend: Vec<String>,
    /// `values[series][category]`, finite, clamped and scaled.
    values: Vec<Vec<Option<f64>>>,
    stacked: bool,
    axis: ValueAxis,
    label_area: u32,
    top: u32,
    band: f64,
    bar: f64,
    height: u32,
    desc: String,
}

impl Plan {
    fn new(chart: &BarChart) -> Self {
        let finite = |s: &Series, i: usize| {
            let v = s.values.get(i).copied().flatten()?;
            v.is_finite().then(|| v.clamp(-LIMIT, LIMIT))
        };
        let n = chart.categories.len();
        let max_abs = (chart.series.iter())
            .flat_map(|s| (0..n).filter_map(move |i| finite(s, i)))
            .fold(0.0, |m: f64, v| m.max(v.abs()));
        let scale = Scale::new(chart.unit, max_abs);
        let values: Vec<Vec<Option<f64>>> = (chart.series.iter())
            .map(|s| (0..n).map(|i| finite(s, i).map(|v| v / scale.0)).collect())
            .collect();
        let all_bars = (0..n).flat_map(|i| bars(&values, i, chart.stacked));
        let (lo, hi) = all_bars.fold((0.0f64, 0.0f64), |(lo, hi), (_, _, end)| {
            (lo.min(end), hi.max(end))
        });

        let legend: Vec<String> = match chart.series.len() {
            1 => Vec::new(),
            _ => chart
                .series
                .iter()
                .map(|s| fit(&s.name, 12.0, 160.0))
                .collect(),
        };
        let legend_rows = legend_layout(&legend).last().map_or(0, |&(_, row)| row + 1);
        let top = if legend_rows == 0 {
            40
        } else {
            44 + legend_rows * 20
        };
        let categories: Vec<String> = chart
            .categories
            .iter()
            .map(|c| fit(c, 12.0, CATEGORY_LABEL_MAX))
            .collect();
        let widest = categories
            .iter()
            .map(|c| text_width(c, 12.0))
            .fold(0.0, f64::max);
        let count = |n: usize| f64::from(u32::try_from(n).unwrap_or(u32::MAX));
        let (bar, band) = if chart.stacked || chart.series.len() == 1 {
            (SOLO_BAR, SOLO_BAR + BAND_GAP)
        } else {
            (BAR, BAR * count(chart.series.len()) + BAND_GAP)
        };
        let axis_label = match scale.1 {
            "" => chart.value_label.clone(),
            suffix => format!("{} ({suffix})", chart.value_label),
        };
        Self {
            title: fit(&chart.title, 16.0, TITLE_MAX),
            axis_label: fit(&axis_label, 12.0, 400.0),
            legend,
            desc: describe(chart, &values, &scale),
            values,
            stacked: chart.stacked,
            axis: ValueAxis::new(lo, hi, chart.unit),
            label_area: to_px(widest.min(CATEGORY_LABEL_MAX) + 12.0),
            top,
            band,
            bar: bar / band,
            height: top + to_px((band * count(n)).max(40.0)) + X_AXIS_H + 8,
            categories,
        }
    }
}

/// The data in words: "node-1: capacity 4 cores, used unknown. node-2: …".
fn describe(chart: &BarChart, values: &[Vec<Option<f64>>], scale: &Scale) -> String {
    let mut desc = String::new();
    for (i, category) in chart.categories.iter().enumerate() {
        let _ = write!(
            desc,
            "{}{}: ",
            if i == 0 { "" } else { " " },
            category.trim()
        );
        for (s, series) in chart.series.iter().enumerate() {
            let words = values[s][i].map_or_else(|| "unknown".to_owned(), |v| scale.words(v));
            let _ = write!(
                desc,
                "{}{} {words}",
                if s == 0 { "" } else { ", " },
                series.name.trim()
            );
        }
        let known: Vec<f64> = values.iter().filter_map(|vs| vs[i]).collect();
        if chart.stacked && values.len() > 1 && !known.is_empty() {
            let _ = write!(desc, ", total {}", scale.words(known.iter().sum()));
        }
        desc.push('.');
    }
    desc
}

/// Rounds a non-negative, bounded layout length to whole pixels.
fn to_px(v: f64) -> u32 {
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // clamped first
    let px = v.round().clamp(0.0, 1e6) as u32;
    px
}

/// Legend items as (x, row), wrapping at the chart width.
fn legend_layout(names: &[String]) -> Vec<(i32, u32)> {
    let (mut x, mut row) = (PAD, 0);
    let mut out = Vec::with_capacity(names.len());
    for name in names {
        let w = 30 + i32::try_from(to_px(text_width(name, 12.0))).unwrap_or(0);
        if x > PAD && x + w > i32::try_from(WIDTH).unwrap_or(0) - PAD {
            (x, row) = (PAD, row + 1);
        }
        out.push((x, row));
        x += w;
    }
    out
}

fn draw(plan: &Plan, buf: &mut String) -> Result<(), DrawingAreaErrorKind<std::io::Error>> {
    let root = SVGBackend::with_string(buf, (WIDTH, plan.height)).into_drawing_area();
    root.fill(&WHITE)?;
    let title = styled(16.0, FontStyle::Bold, INK).pos(Pos::new(HPos::Left, VPos::Top));
    root.draw_text(&plan.title, &title, (PAD, 12))?;
    let label = font(12.0, INK).pos(Pos::new(HPos::Left, VPos::Center));
    let legend = plan.legend.iter().zip(legend_layout(&plan.legend));
    for (i, (name, (x, row))) in legend.enumerate() {
        let y = 44 + i32::try_from(row).unwrap_or(0) * 20;
        // A polygon, not a rect: every filled palette `<rect>` in the output is a bar.
        let swatch = vec![(x, y - 6), (x + 12, y - 6), (x + 12, y + 6), (x, y + 6)];
        root.draw(&Polygon::new(swatch, PALETTE[i % PALETTE.len()].filled()))?;
        root.draw_text(name, &label, (x + 16, y))?;
    }

    let (_, lower) = root.split_vertically(plan.top);
    let mut chart = ChartBuilder::on(&lower)
        .margin_left(PAD.unsigned_abs())
        .margin_right(VALUE_ROOM)
        .margin_bottom(8)
        .x_label_area_size(X_AXIS_H)
        .y_label_area_size(plan.label_area)
        .build_cartesian_2d(plan.axis.clone(), CategoryAxis(plan.categories.clone()))?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .set_all_tick_mark_size(4)
        .bold_line_style(BLACK.mix(0.18))
        .light_line_style(BLACK.mix(0.06))
        .axis_style(MUTED)
        .label_style(font(12.0, INK))
        .axis_desc_style(font(12.0, INK))
        .x_desc(plan.axis_label.as_str())
        .draw()?;

    // The number after a bar (or "unknown" where it would be), so colour is not the only cue.
    let note = |text: String, at: f64, y: f64, color: RGBColor| {
        let (dx, h) = if at < 0.0 {
            (-4, HPos::Right)
        } else {
            (4, HPos::Left)
        };
        let style = font(11.0, color).pos(Pos::new(h, VPos::Center));
        EmptyElement::at((at, y)) + Text::new(text, (dx, 0), style)
    };
    let area = chart.plotting_area();
    #[allow(clippy::cast_precision_loss)] // category and series counts are small
    for i in 0..plan.categories.len() {
        let top = i as f64 + BAND_GAP / 2.0 / plan.band;
        let row = |s: usize| {
            if plan.stacked {
                top
            } else {
                top + s as f64 * plan.bar
            }
        };
        let bars = bars(&plan.values, i, plan.stacked);
        for &(s, from, to) in &bars {
            let style = PALETTE[s % PALETTE.len()].filled();
            area.draw(&Rectangle::new(
                [(from, row(s)), (to, row(s) + plan.bar)],
                style,
            ))?;
            if !plan.stacked {
                area.draw(&note(fmt_num(to), to, row(s) + plan.bar / 2.0, INK))?;
            }
        }
        let middle = |s: usize| row(s) + plan.bar / 2.0;
        if plan.stacked && !bars.is_empty() {
            let total: f64 = bars.iter().map(|b| b.2 - b.1).sum();
            let ends = bars.iter().map(|b| b.2);
            let at = if total < 0.0 {
                ends.fold(0.0, f64::min)
            } else {
                ends.fold(0.0, f64::max)
            };
            area.draw(&note(fmt_num(total), at, middle(0), INK))?;
        }
        for s in (0..plan.values.len()).filter(|s| plan.values[*s][i].is_none()) {
            if !plan.stacked || (bars.is_empty() && s == 0) {
                area.draw(&note("unknown".to_owned(), 0.0, middle(s), MUTED))?;
            }
        }
    }
    root.present()
}

/// Linear value axis with "nice" ticks (1, 2 or 5 × 10^n; whole numbers for counts).
#[derive(Clone)]
struct ValueAxis {
    lo: f64,
    hi: f64,
    step: f64,
}

impl ValueAxis {
    fn new(min: f64, max: f64, unit: Unit) -> Self {
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

    fn ticks(&self, offset: f64) -> Vec<f64> {
        let first = (self.lo / self.step).round();
        (0..=100)
            .map(|k| (first + f64::from(k) + offset) * self.step)
            .take_while(|v| *v <= self.hi + self.step * 1e-9)
            .collect()
    }
}

/// Maps `fraction` (0..=1) of the way from `from` to `to`, in whole pixels.
fn lerp(from: i32, to: i32, fraction: f64) -> i32 {
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
struct CategoryAxis(Vec<String>);

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

/// A stable id (FNV-1a of the input) so several charts on one page keep distinct ARIA ids.
fn chart_id(chart: &BarChart) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for b in bytes.iter().chain([0xff].iter()) {
            hash = (hash ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
        }
    };
    eat(chart.title.as_bytes());
    eat(chart.value_label.as_bytes());
    eat(&[chart.unit as u8, u8::from(chart.stacked)]);
    chart.categories.iter().for_each(|c| eat(c.as_bytes()));
    for s in &chart.series {
        eat(s.name.as_bytes());
        s.values
            .iter()
            .for_each(|v| eat(&v.map_or(u64::MAX, f64::to_bits).to_le_bytes()));
    }
    format!("kq-chart-{hash:016x}")
}

fn svg_open(id: &str, chart: &BarChart, height: u32, desc: &str) -> String {
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{height}\" \
         viewBox=\"0 0 {WIDTH} {height}\" role=\"img\" aria-labelledby=\"{id}-title {id}-desc\" \
         font-family=\"sans-serif\">\n<title id=\"{id}-title\">{}</title>\n\
         <desc id=\"{id}-desc\">{}</desc>\n",
        escape(&chart.title),
        escape(desc),
    )
}

/// A chart with only the title and a message ("No data", "Chart unavailable").
fn message_svg(id: &str, chart: &BarChart, message: &str) -> String {
    let title = escape(&fit(&chart.title, 16.0, TITLE_MAX));
    format!(
        "{}<rect x=\"0\" y=\"0\" width=\"{WIDTH}\" height=\"120\" fill=\"#FFFFFF\"/>\n\
         <text x=\"{PAD}\" y=\"28\" font-size=\"16\" font-weight=\"bold\" fill=\"#333333\">{title}</text>\n\
         <text x=\"{}\" y=\"80\" text-anchor=\"middle\" font-size=\"14\" fill=\"#767676\">{message}</text>\n</svg>\n",
        svg_open(id, chart, 120, &format!("{message}.")),
        WIDTH / 2,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart(unit: Unit, categories: &[&str], series: &[(&str, &[Option<f64>])]) -> BarChart {
        BarChart {
            title: "CPU per node".to_owned(),
            value_label: "CPU".to_owned(),
            unit,
            categories: categories.iter().map(|c| (*c).to_owned()).collect(),
            series: (series.iter())
                .map(|(name, values)| Series {
                    name: (*name).to_owned(),
                    values: values.to_vec(),
                })
                .collect(),
            stacked: false,
        }
    }

    fn cpu_chart() -> BarChart {
        chart(
            Unit::Cores,
            &["node-1", "node-2"],
            &[
                ("capacity", &[Some(4.0), Some(8.0)]),
                ("allocatable", &[Some(3.8), Some(7.5)]),
                ("requested", &[Some(1.25), Some(0.0)]),
                ("used", &[None, None]),
            ],
        )
    }

    /// `[x, y, width, height]` of every bar of the given palette colour.
    fn bars_of(svg: &str, colour: usize) -> Vec<[i32; 4]> {
        let c = PALETTE[colour];
        let fill = format!("fill=\"#{:02X}{:02X}{:02X}\"", c.0, c.1, c.2);
        let num = |tag: &str, key: &str| -> i32 {
            let value = tag
                .split(&format!(" {key}=\""))
                .nth(1)
                .and_then(|v| v.split('"').next());
            value.and_then(|v| v.parse().ok()).unwrap_or(i32::MIN)
        };
        (svg.split("<rect")
            .skip(1)
            .filter_map(|r| r.split_once("/>")))
        .filter(|(tag, _)| tag.contains(&fill))
        .map(|(tag, _)| ["x", "y", "width", "height"].map(|key| num(tag, key)))
        .collect()
    }

    fn texts(svg: &str) -> Vec<&str> {
        (svg.split("<text").skip(1))
            .filter_map(|t| t.split_once('>')?.1.split_once("</text>"))
            .map(|(text, _)| text.trim())
            .collect()
    }

    #[test]
    fn title_is_accessible_and_visible() {
        let svg = bar_chart(&cpu_chart());
        let id = chart_id(&cpu_chart());
        let height = Plan::new(&cpu_chart()).height;
        assert!(svg.starts_with(&format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"640\" height=\"{height}\" \
             viewBox=\"0 0 640 {height}\" role=\"img\" \
             aria-labelledby=\"{id}-title {id}-desc\" font-family=\"sans-serif\">\n\
             <title id=\"{id}-title\">CPU per node</title>\n<desc id=\"{id}-desc\">"
        )));
        assert!(svg.ends_with("</svg>\n") && svg.matches("<svg").count() == 1);
        assert_eq!(texts(&svg)[0], "CPU per node");
    }

    #[test]
    fn desc_states_every_value_in_words() {
        assert!(bar_chart(&cpu_chart()).contains(
            ">node-1: capacity 4 cores, allocatable 3.8 cores, requested 1.25 cores, used unknown. \
             node-2: capacity 8 cores, allocatable 7.5 cores, requested 0 cores, used unknown.</desc>"
        ));
    }

    #[test]
    fn axis_legend_and_one_bar_per_known_value() {
        let svg = bar_chart(&cpu_chart());
        let texts = texts(&svg);
        let labels = [
            "CPU (cores)",
            "node-1",
            "node-2",
            "capacity",
            "allocatable",
            "used",
        ];
        for label in labels.into_iter().chain(["0", "2", "4", "6", "8"]) {
            assert!(texts.contains(&label), "missing {label}");
        }
        assert_eq!(texts.iter().filter(|t| **t == "unknown").count(), 2);
        assert_eq!(svg.matches("<polygon").count(), 4, "legend swatches");
        assert_eq!(
            (0..4).map(|c| bars_of(&svg, c).len()).collect::<Vec<_>>(),
            [2, 2, 2, 0]
        );
        let [node1, node2] = [0, 1].map(|i| bars_of(&svg, 0)[i]);
        assert_eq!(node2[2], 2 * node1[2], "8 cores is twice as long as 4");
        assert!(
            node1[1] + 4 * node1[3] <= node2[1],
            "node-1 on top, bars do not overlap"
        );
    }

    #[test]
    fn single_series_has_no_legend_and_whole_count_ticks() {
        let clusters: &[Option<f64>] = &[Some(2.0), Some(1.0)];
        let mut c = chart(Unit::Count, &["aws", "gce"], &[("clusters", clusters)]);
        c.value_label = "Clusters".to_owned();
        let svg = bar_chart(&c);
        assert!(!svg.contains("<polygon") && !texts(&svg).contains(&"clusters"));
        assert!(["Clusters", "0", "1", "2"]
            .iter()
            .all(|t| texts(&svg).contains(t)));
        assert!(
            !texts(&svg).contains(&"0.5"),
            "count axis has whole ticks only"
        );
        assert!(svg.contains(">aws: clusters 2. gce: clusters 1.</desc>"));
        assert_eq!(bars_of(&svg, 0).len(), 2);
        c.unit = Unit::Cores;
        assert!(
            texts(&bar_chart(&c)).contains(&"0.5"),
            "but cores have fractions"
        );
    }

    #[test]
    fn stacked_segments_follow_each_other_and_sum() {
        let phases: [(&str, &[Option<f64>]); 5] = [
            ("Running", &[Some(5.0), Some(2.0)]),
            ("Pending", &[Some(1.0), None]),
            ("Succeeded", &[Some(0.0), Some(3.0)]),
            ("Failed", &[Some(1.0), Some(0.0)]),
            ("Unknown", &[Some(0.0), Some(1.0)]),
        ];
        let mut pods = chart(Unit::Count, &["default", "kube-system"], &phases);
        pods.stacked = true;
        let svg = bar_chart(&pods);
        assert!(svg.contains(
            ">default: Running 5, Pending 1, Succeeded 0, Failed 1, Unknown 0, \
             total 7. kube-system: Running 2, Pending unknown, Succeeded 3, Failed 0, Unknown 1, \
             total 6.</desc>"
        ));
        assert!(texts(&svg).contains(&"7") && texts(&svg).contains(&"6"));
        let default: Vec<[i32; 4]> = (0..5).map(|c| bars_of(&svg, c)[0]).collect();
        assert_eq!(bars_of(&svg, 1).len(), 1, "no segment for an unknown phase");
        let start = default[0][0];
        let end = default.iter().fold(start, |x, bar| {
            assert_eq!(
                (bar[0], bar[1]),
                (x, default[0][1]),
                "contiguous, on one row"
            );
            x + bar[2]
        });
        // The axis runs to 8 (the last grid line), so the stack of 7 ends 7/8 of the way.
        let axis_end = (svg
            .split("<line")
            .filter_map(|l| l.split("x1=\"").nth(1)?.split('"').next()))
        .filter_map(|x| x.parse::<i32>().ok())
        .max()
        .unwrap_or(start);
        assert!(texts(&svg).contains(&"8"));
        assert!(
            ((end - start) * 8 - (axis_end - start) * 7).abs() <= 16,
            "stack ends at {end}"
        );
    }

    #[test]
    fn bytes_are_shown_in_binary_units() {
        let gib = 1024.0 * 1024.0 * 1024.0;
        let mut memory = chart(
            Unit::Bytes,
            &["node-1"],
            &[("capacity", &[Some(8.0 * gib)])],
        );
        memory.series.push(Series {
            name: "requested".to_owned(),
            values: vec![Some(gib / 2.0)],
        });
        memory.value_label = "Memory".to_owned();
        let svg = bar_chart(&memory);
        assert!(["Memory (GiB)", "8", "0.5"]
            .iter()
            .all(|t| texts(&svg).contains(t)));
        assert!(svg.contains(">node-1: capacity 8 GiB, requested 0.5 GiB.</desc>"));
        assert_eq!(Scale::new(Unit::Bytes, 3.0 * 1024.0 * 1024.0).1, "MiB");
        assert_eq!(Scale::new(Unit::Bytes, 100.0).1, "B");
    }

    #[test]
    fn non_finite_values_are_unknown_and_extremes_are_fine() {
        let mut c = cpu_chart();
        c.series[0].values = vec![Some(f64::NAN), Some(f64::INFINITY)];
        c.series[1].values = vec![Some(f64::NEG_INFINITY), Some(f64::MAX)];
        c.series[2].values = vec![Some(1e-300), Some(-2.0)];
        let svg = bar_chart(&c);
        let lower = svg.to_lowercase();
        assert!(!lower.contains("nan") && !lower.contains("inf"), "{svg}");
        assert!(svg.contains(">node-1: capacity unknown, allocatable unknown, requested 1e-300"));
        assert_eq!(
            (0..3).map(|c| bars_of(&svg, c).len()).collect::<Vec<_>>(),
            [0, 1, 2]
        );
    }

    #[test]
    fn all_zero_values_still_get_an_axis() {
        let mut c = cpu_chart();
        c.series
            .iter_mut()
            .for_each(|s| s.values = vec![Some(0.0), None]);
        assert!(["0", "0.2", "1"]
            .iter()
            .all(|t| texts(&bar_chart(&c)).contains(t)));
        assert_eq!(ValueAxis::new(0.0, 0.0, Unit::Count).ticks(0.0), [0.0, 1.0]);
    }

    #[test]
    fn empty_input_says_no_data_and_fallback_keeps_the_title() {
        let mut c = cpu_chart();
        c.categories.clear();
        let svg = bar_chart(&c);
        assert!(svg.contains(">No data</text>") && svg.contains(">CPU per node</title>"));
        assert!(svg.contains(" role=\"img\"") && svg.contains(">No data.</desc>"));
        c = cpu_chart();
        c.series.clear();
        assert!(bar_chart(&c).contains(">No data</text>"));
        let svg = message_svg("kq-chart-x", &c, "Chart unavailable");
        assert!(svg.contains(">CPU per node</text>") && svg.contains(">Chart unavailable</text>"));
    }

    #[test]
    fn labels_are_escaped_and_truncated() {
        let long = "ip-10-0-12-34.eu-west-1.compute.internal-with-a-very-long-suffix";
        let mut c = chart(
            Unit::Count,
            &["<&>\"", long],
            &[("s&p", &[Some(1.0), Some(2.0)])],
        );
        c.series.push(Series {
            name: "x'".to_owned(),
            values: vec![],
        });
        c.title = "<&>\" chart".to_owned();
        let svg = bar_chart(&c);
        assert!(svg.contains(">&lt;&amp;&gt;&quot; chart</title>"));
        assert!(svg.contains(">&lt;&amp;&gt;&quot;: s&amp;p 1, x&apos; unknown."));
        assert!(["&lt;&amp;&gt;&quot;", "s&amp;p"]
            .iter()
            .all(|t| texts(&svg).contains(t)));
        assert!(!svg.contains("<&") && !svg.contains("\"\""));
        assert!(
            svg.contains(&format!(" {long}: s&amp;p 2")),
            "full name in desc"
        );
        let shown = texts(&svg)
            .into_iter()
            .find(|t| t.starts_with("ip-10-0"))
            .unwrap_or("");
        assert!(shown.ends_with('…') && shown.len() < long.len(), "{shown}");
    }

    #[test]
    fn output_is_deterministic_and_ids_differ() {
        assert_eq!(bar_chart(&cpu_chart()), bar_chart(&cpu_chart()));
        let mut other = cpu_chart();
        other.series[0].values[0] = Some(4.5);
        assert_ne!(chart_id(&cpu_chart()), chart_id(&other));
    }

    #[test]
    fn values_in_words_pick_their_own_unit() {
        assert_eq!(
            format_value(Unit::Bytes, 16.0 * 1024.0 * 1024.0 * 1024.0),
            "16 GiB"
        );
        assert_eq!(format_value(Unit::Bytes, 512.0), "512 B");
        assert_eq!(format_value(Unit::Cores, 1.0), "1 core");
        assert_eq!(format_value(Unit::Cores, 3.6), "3.6 cores");
        assert_eq!(format_value(Unit::Count, 12.0), "12");
    }

    #[test]
    fn numbers_are_short() {
        let cases = [
            (2.5, "2.5"),
            (4.0, "4"),
            (0.25, "0.25"),
            (1234.4, "1234"),
            (12.34, "12.3"),
        ];
        for (v, s) in
            cases
                .into_iter()
                .chain([(1.5e9, "1.5e9"), (2e-7, "2e-7"), (0.1 + 0.2, "0.3")])
        {
            assert_eq!(fmt_num(v), s);
        }
    }

    #[test]
    fn many_categories_grow_the_height_without_overlap() {
        let names: Vec<String> = (0..40).map(|i| format!("namespace-{i}")).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let svg = bar_chart(&chart(Unit::Count, &names, &[("pods", &[Some(1.0); 40])]));
        let bars = bars_of(&svg, 0);
        assert_eq!(bars.len(), 40);
        assert!(bars.windows(2).all(|p| p[1][1] >= p[0][1] + p[0][3] + 8));
        let label_ys: Vec<i32> = (svg.split("<text").filter(|t| t.contains(">\nnamespace-")))
            .filter_map(|t| t.split(" y=\"").nth(1)?.split('"').next()?.parse().ok())
            .collect();
        assert_eq!(label_ys.len(), 40);
        assert!(
            label_ys.windows(2).all(|p| p[1] - p[0] >= 16),
            "labels do not overlap"
        );
    }
}
