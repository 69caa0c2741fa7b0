//! Server-side bar charts (and step charts over time, [`steps`]) as self-contained SVG
//! strings, drawn with `plotters`.
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
//!   height grows with the number of categories. The width is fixed and narrow ([`WIDTH`], a
//!   phone's column) with every text at least [`MIN_FONT`] px, so a page may scale the chart
//!   with `viewBox` down to [`min_rendered_width`] and labels still read at 11 px or more.
//!   Nothing uses inline `style` attributes, so a strict Content-Security-Policy is fine.
//! - **Robustness.** Non-finite values count as unknown, empty input gives a "No data" chart,
//!   and any drawing error (or panic inside `plotters`) gives a "Chart unavailable" chart. The
//!   output is deterministic, so a chart asked for again is handed out as drawn (`memo`).

pub mod autoscaling;
mod axes;
pub mod figures;
mod layout;
mod memo;
pub mod steps;
mod svg;
mod text;

use std::fmt::Write as _;
use std::ops::Range;
use std::panic::{catch_unwind, AssertUnwindSafe};

use plotters::coord::ranged1d::{KeyPointHint, NoDefaultFormatting, Ranged, ValueFormatter};
use plotters::drawing::DrawingAreaErrorKind;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use axes::*;
use layout::*;
use svg::*;
use text::*;

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
    /// A fixed colour (`#RRGGBB` as bytes) where the series means the same as a colour
    /// elsewhere in the portal (a severity); `None` takes the next palette colour.
    pub color: Option<[u8; 3]>,
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

/// Draws `chart` as a complete `<svg>…</svg>` string (handed out again, not redrawn, while the
/// same chart is asked for: [`memo`]). Never panics.
#[must_use]
pub fn bar_chart(chart: &BarChart) -> String {
    static DRAWN: std::sync::LazyLock<memo::Memo> = std::sync::LazyLock::new(Default::default);
    let id = chart_id(chart);
    DRAWN.get_or_draw(&id, chart, || draw_chart(&id, chart))
}

fn draw_chart(id: &str, chart: &BarChart) -> String {
    if chart.categories.is_empty() || chart.series.is_empty() {
        return message_svg(id, chart, "No data");
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
                return svg_open(id, chart, plan.height, &plan.desc) + rest;
            }
        }
        Ok(Err(error)) => tracing::warn!(%error, title = %chart.title, "chart drawing failed"),
        Err(_) => tracing::warn!(title = %chart.title, "chart drawing panicked"),
    }
    message_svg(id, chart, "Chart unavailable")
}

/// A value in words as the charts print it ("3.8 cores", "1 core", "16 GiB", "12"), for
/// tables beside a chart.
#[must_use]
pub fn format_value(unit: Unit, v: f64) -> String {
    let scale = Scale::new(unit, v.abs());
    scale.words(v / scale.0)
}

/// Drawing width: about the column a 390 px phone leaves a chart, so it scales little there.
pub const WIDTH: u32 = 360;
/// The smallest font in a chart, in drawing units.
pub const MIN_FONT: f64 = 13.0;
/// Label font (categories, legend, axis ticks, values).
const FONT: f64 = MIN_FONT;
/// Title font.
const TITLE_FONT: f64 = 15.0;

/// The narrowest a chart may be rendered with its smallest text still `px` pixels tall; pages
/// keep charts at least this wide (`min-width` in the style sheet) and scroll below it.
#[must_use]
pub fn min_rendered_width(px: f64) -> f64 {
    f64::from(WIDTH) * px / MIN_FONT
}

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
const CATEGORY_LABEL_MAX: f64 = 130.0;
/// Right margin, room for the value printed after the longest bar ("unknown", "1.5e9").
const VALUE_ROOM: u32 = 60;
/// Assumed average glyph width in ems: generous, as the browser's font is unknown.
const CHAR_EM: f64 = 0.62;
/// `WIDTH` less the padding on both sides.
const TITLE_MAX: f64 = 336.0;
/// Largest magnitude drawn; larger finite values are clamped so sums stay finite.
const LIMIT: f64 = 1e300;

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
                    color: None,
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
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{height}\" \
             viewBox=\"0 0 {WIDTH} {height}\" role=\"img\" \
             aria-labelledby=\"{id}-title {id}-desc\" font-family=\"sans-serif\">\n\
             <title id=\"{id}-title\">CPU per node</title>\n<desc id=\"{id}-desc\">"
        )));
        assert!(svg.ends_with("</svg>\n") && svg.matches("<svg").count() == 1);
        assert_eq!(texts(&svg)[0], "CPU per node");
    }

    /// Every text, from titles to "unknown" notes, stays readable when a page shrinks the
    /// chart to its narrowest allowed width.
    #[test]
    fn no_text_is_smaller_than_the_minimum_font() {
        let mut empty = cpu_chart();
        empty.categories.clear();
        for svg in [bar_chart(&cpu_chart()), bar_chart(&empty)] {
            let sizes: Vec<f64> = (svg.split("font-size=\"").skip(1))
                .filter_map(|s| s.split('"').next()?.parse().ok())
                .collect();
            assert!(svg.matches("<text").count() > 1);
            assert_eq!(sizes.len(), svg.matches("<text").count(), "{svg}");
            assert!(sizes.iter().all(|px| *px >= MIN_FONT), "{sizes:?}");
        }
        assert!((min_rendered_width(11.0) - 304.6).abs() < 0.1);
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
        // Whole pixels: one may be lost to rounding.
        assert!(
            (node2[2] - 2 * node1[2]).abs() <= 1,
            "8 cores is twice as long as 4"
        );
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
            color: None,
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
            color: None,
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
