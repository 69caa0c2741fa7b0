//! Step charts: counts that hold from one moment until the next change (node counts over
//! time), as accessible SVG like the bar charts: a `<title>`, a `<desc>` that says every
//! change in words, a legend, and dashed or solid lines besides colour.

use std::fmt::Write as _;
use std::panic::{catch_unwind, AssertUnwindSafe};

use chrono::{DateTime, Utc};
use plotters::drawing::DrawingAreaErrorKind;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::text::{escape, fit, font, styled};
use crate::{INK, MIN_FONT, MUTED, PAD, PALETTE, TITLE_FONT, TITLE_MAX, WIDTH};

/// One line: a count that holds from each point until the next.
#[derive(Debug, Clone, PartialEq)]
pub struct StepSeries {
    pub name: String,
    /// In time order.
    pub points: Vec<(DateTime<Utc>, f64)>,
    /// Drawn dashed (the line that says what was asked for, beside what is).
    pub dashed: bool,
}

/// A step chart over `from`..`to`, with horizontal marks (bounds such as "max 6").
#[derive(Debug, Clone, PartialEq)]
pub struct StepChart {
    pub title: String,
    pub value_label: String,
    pub series: Vec<StepSeries>,
    pub marks: Vec<(String, f64)>,
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
}

const HEIGHT: u32 = 300;
/// Changes listed in words at most (the newest).
const DESCRIBED: usize = 30;

/// Draws `chart` as a complete `<svg>…</svg>` string. Never panics.
#[must_use]
pub fn step_chart(chart: &StepChart) -> String {
    let id = chart_id(chart);
    let points = chart.series.iter().map(|s| s.points.len()).sum::<usize>();
    if points == 0 || chart.to <= chart.from {
        return message(&id, chart, "No data");
    }
    let mut body = String::new();
    let drawn = catch_unwind(AssertUnwindSafe(|| draw(chart, &mut body)));
    match drawn {
        Ok(Ok(())) => {
            if let Some((_, rest)) = body.split_once(">\n") {
                return open(&id, chart, HEIGHT, &describe(chart)) + rest;
            }
        }
        Ok(Err(error)) => tracing::warn!(%error, title = %chart.title, "chart drawing failed"),
        Err(_) => tracing::warn!(title = %chart.title, "chart drawing panicked"),
    }
    message(&id, chart, "Chart unavailable")
}

/// The steps of a series as drawn: each value held until the next point, the last until `to`.
fn steps(points: &[(DateTime<Utc>, f64)], from: f64, to: f64) -> Vec<(f64, f64)> {
    let mut out = Vec::with_capacity(points.len() * 2 + 1);
    for (i, (at, v)) in points.iter().enumerate() {
        let x = secs(*at).clamp(from, to);
        if i > 0 {
            if let Some(&(_, before)) = out.last() {
                out.push((x, before));
            }
        }
        out.push((x, *v));
    }
    if let Some(&(_, last)) = out.last() {
        out.push((to, last));
    }
    out
}

#[allow(clippy::cast_precision_loss)] // seconds since 1970 are far below 2^52
fn secs(t: DateTime<Utc>) -> f64 {
    t.timestamp() as f64
}

fn draw(chart: &StepChart, buf: &mut String) -> Result<(), DrawingAreaErrorKind<std::io::Error>> {
    let (from, to) = (secs(chart.from), secs(chart.to));
    let top = chart
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .chain(chart.marks.iter().map(|m| m.1))
        .filter(|v| v.is_finite())
        .fold(1.0_f64, f64::max);
    let hi = (top + 1.0).ceil();
    let root = SVGBackend::with_string(buf, (WIDTH, HEIGHT)).into_drawing_area();
    root.fill(&WHITE)?;
    let title = styled(TITLE_FONT, FontStyle::Bold, INK).pos(Pos::new(HPos::Left, VPos::Top));
    root.draw_text(&fit(&chart.title, TITLE_FONT, TITLE_MAX), &title, (PAD, 12))?;
    let label = font(MIN_FONT, INK).pos(Pos::new(HPos::Left, VPos::Center));
    let mut x = PAD;
    for (i, s) in chart.series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let y = 44;
        root.draw(&PathElement::new(
            vec![(x, y), (x + 16, y)],
            color.stroke_width(3),
        ))?;
        root.draw_text(&s.name, &label, (x + 20, y))?;
        #[allow(clippy::cast_possible_truncation)] // a legend entry is a few hundred px
        let width = crate::text::text_width(&s.name, MIN_FONT) as i32;
        x += 32 + width;
    }
    let (_, lower) = root.split_vertically(60);
    let span = to - from;
    let mut plot = ChartBuilder::on(&lower)
        .margin_left(PAD.unsigned_abs())
        .margin_right(24)
        .margin_bottom(8)
        .x_label_area_size(40)
        .y_label_area_size(36)
        .build_cartesian_2d(from..to, 0.0..hi)?;
    let day = span > 36.0 * 3600.0;
    let y_labels = usize::try_from(hi as i64).unwrap_or(5).clamp(1, 10) + 1;
    plot.configure_mesh()
        .x_labels(4)
        .y_labels(y_labels)
        .set_all_tick_mark_size(4)
        .bold_line_style(BLACK.mix(0.18))
        .light_line_style(BLACK.mix(0.06))
        .axis_style(MUTED)
        .label_style(font(MIN_FONT, INK))
        .axis_desc_style(font(MIN_FONT, INK))
        .x_label_formatter(&|v| clock(*v, day))
        .y_label_formatter(&|v| format!("{v:.0}"))
        .y_desc(chart.value_label.as_str())
        .draw()?;
    for (name, v) in &chart.marks {
        plot.draw_series(LineSeries::new(
            [(from, *v), (to, *v)],
            MUTED.stroke_width(1),
        ))?;
        let style = font(MIN_FONT, MUTED).pos(Pos::new(HPos::Right, VPos::Bottom));
        plot.plotting_area().draw(
            &(EmptyElement::at((to, *v)) + Text::new(format!("{name} {v:.0}"), (-2, -2), style)),
        )?;
    }
    for (i, s) in chart.series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let line = steps(&s.points, from, to);
        if s.dashed {
            plot.draw_series(DashedLineSeries::new(line, 6, 4, color.stroke_width(2)))?;
        } else {
            plot.draw_series(LineSeries::new(line, color.stroke_width(3)))?;
        }
    }
    root.present()
}

/// "14:05" within a day and a half, "11-28 14:05" beyond.
fn clock(v: f64, day: bool) -> String {
    #[allow(clippy::cast_possible_truncation)] // the axis spans days, not eons
    let Some(t) = DateTime::<Utc>::from_timestamp(v as i64, 0) else {
        return String::new();
    };
    if day {
        t.format("%m-%d %H:%M").to_string()
    } else {
        t.format("%H:%M").to_string()
    }
}

/// Every series in words: "Worker nodes: 2 at 11-28 14:00 UTC, 3 at 11-28 14:05 UTC."
fn describe(chart: &StepChart) -> String {
    let mut out = format!(
        "From {} to {} UTC.",
        chart.from.format("%Y-%m-%d %H:%M"),
        chart.to.format("%Y-%m-%d %H:%M")
    );
    for s in &chart.series {
        let skip = s.points.len().saturating_sub(DESCRIBED);
        let _ = write!(out, " {}:", s.name);
        if skip > 0 {
            let _ = write!(out, " ({skip} earlier changes)");
        }
        let changes: Vec<String> = s.points[skip..]
            .iter()
            .map(|(at, v)| format!("{v:.0} at {} UTC", at.format("%m-%d %H:%M")))
            .collect();
        let _ = write!(out, " {}.", changes.join(", "));
    }
    for (name, v) in &chart.marks {
        let _ = write!(out, " {name}: {v:.0}.");
    }
    out
}

/// A stable id (FNV-1a of the input) so several charts on one page keep distinct ARIA ids.
fn chart_id(chart: &StepChart) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for b in bytes.iter().chain([0xff].iter()) {
            hash = (hash ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
        }
    };
    eat(chart.title.as_bytes());
    eat(&chart.from.timestamp().to_le_bytes());
    eat(&chart.to.timestamp().to_le_bytes());
    for s in &chart.series {
        eat(s.name.as_bytes());
        for (at, v) in &s.points {
            eat(&at.timestamp().to_le_bytes());
            eat(&v.to_bits().to_le_bytes());
        }
    }
    format!("kq-steps-{hash:016x}")
}

fn open(id: &str, chart: &StepChart, height: u32, desc: &str) -> String {
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{height}\" \
         viewBox=\"0 0 {WIDTH} {height}\" role=\"img\" aria-labelledby=\"{id}-title {id}-desc\" \
         font-family=\"sans-serif\">\n<title id=\"{id}-title\">{}</title>\n\
         <desc id=\"{id}-desc\">{}</desc>\n",
        escape(&chart.title),
        escape(desc),
    )
}

fn message(id: &str, chart: &StepChart, message: &str) -> String {
    let title = escape(&fit(&chart.title, TITLE_FONT, TITLE_MAX));
    format!(
        "{}<rect x=\"0\" y=\"0\" width=\"{WIDTH}\" height=\"120\" fill=\"#FFFFFF\"/>\n\
         <text x=\"{PAD}\" y=\"28\" font-size=\"{TITLE_FONT}\" font-weight=\"bold\" fill=\"#333333\">{title}</text>\n\
         <text x=\"{}\" y=\"80\" text-anchor=\"middle\" font-size=\"{MIN_FONT}\" fill=\"#767676\">{message}</text>\n</svg>\n",
        open(id, chart, 120, &format!("{message}.")),
        WIDTH / 2,
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn at(minutes: i64) -> DateTime<Utc> {
        DateTime::<Utc>::from_timestamp(1_795_000_000, 0).unwrap()
            + chrono::Duration::minutes(minutes)
    }

    fn chart(points: Vec<(DateTime<Utc>, f64)>) -> StepChart {
        StepChart {
            title: "Nodes over time".into(),
            value_label: "Nodes".into(),
            series: vec![
                StepSeries {
                    name: "Worker nodes".into(),
                    points: points.clone(),
                    dashed: false,
                },
                StepSeries {
                    name: "Asked for".into(),
                    points,
                    dashed: true,
                },
            ],
            marks: vec![("max".into(), 4.0)],
            from: at(0),
            to: at(60),
        }
    }

    #[test]
    fn a_value_holds_until_the_next_change() {
        let line = steps(&[(at(10), 1.0), (at(20), 3.0)], secs(at(0)), secs(at(60)));
        assert_eq!(
            line,
            vec![
                (secs(at(10)), 1.0),
                (secs(at(20)), 1.0),
                (secs(at(20)), 3.0),
                (secs(at(60)), 3.0)
            ]
        );
        // Points before the window start at its edge.
        let early = steps(&[(at(-30), 2.0)], secs(at(0)), secs(at(60)));
        assert_eq!(early, vec![(secs(at(0)), 2.0), (secs(at(60)), 2.0)]);
    }

    #[test]
    fn it_draws_an_accessible_chart_with_every_change_in_words() {
        let svg = step_chart(&chart(vec![(at(5), 1.0), (at(25), 3.0), (at(45), 2.0)]));
        assert!(svg.starts_with("<svg"), "{svg}");
        assert!(svg.contains("role=\"img\""));
        assert!(svg.contains("<title id=\"kq-steps-"));
        assert!(svg.contains("Worker nodes: 1 at"), "{svg}");
        assert!(svg.contains("3 at"), "{svg}");
        assert!(svg.contains("max: 4."), "{svg}");
        assert!(svg.contains("stroke-dasharray") || svg.matches("<polyline").count() > 2);
        assert!(!svg.contains("Chart unavailable"));
        assert!(svg.ends_with("</svg>\n"));
    }

    #[test]
    fn nothing_to_draw_says_so() {
        let svg = step_chart(&chart(Vec::new()));
        assert!(svg.contains("No data"), "{svg}");
        let mut backwards = chart(vec![(at(5), 1.0)]);
        backwards.to = backwards.from;
        assert!(step_chart(&backwards).contains("No data"));
    }
}
