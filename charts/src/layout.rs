//! Where everything goes: bars per band, the chart plan, the description in words, the
//! legend, and the drawing itself.

#[allow(clippy::wildcard_imports)]
use super::*;

/// Bars of category `i` as (series, from, to): each from zero, or stacked (positive values
/// rightwards, negative leftwards).
pub(crate) fn bars(values: &[Vec<Option<f64>>], i: usize, stacked: bool) -> Vec<(usize, f64, f64)> {
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
pub(crate) struct Plan {
    pub(crate) title: String,
    pub(crate) axis_label: String,
    pub(crate) categories: Vec<String>,
    pub(crate) legend: Vec<String>,
    /// `values[series][category]`, finite, clamped and scaled.
    pub(crate) values: Vec<Vec<Option<f64>>>,
    /// The fill of each series.
    pub(crate) colors: Vec<RGBColor>,
    pub(crate) stacked: bool,
    pub(crate) axis: ValueAxis,
    pub(crate) label_area: u32,
    pub(crate) top: u32,
    pub(crate) band: f64,
    pub(crate) bar: f64,
    pub(crate) height: u32,
    pub(crate) desc: String,
}

impl Plan {
    pub(crate) fn new(chart: &BarChart) -> Self {
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
                .map(|s| fit(&s.name, FONT, 160.0))
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
            .map(|c| fit(c, FONT, CATEGORY_LABEL_MAX))
            .collect();
        let widest = categories
            .iter()
            .map(|c| text_width(c, FONT))
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
            title: fit(&chart.title, TITLE_FONT, TITLE_MAX),
            axis_label: fit(&axis_label, FONT, TITLE_MAX),
            legend,
            desc: describe(chart, &values, &scale),
            values,
            colors: (chart.series.iter().enumerate())
                .map(|(i, s)| {
                    s.color
                        .map_or(PALETTE[i % PALETTE.len()], |[r, g, b]| RGBColor(r, g, b))
                })
                .collect(),
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
pub(crate) fn describe(chart: &BarChart, values: &[Vec<Option<f64>>], scale: &Scale) -> String {
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
pub(crate) fn to_px(v: f64) -> u32 {
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // clamped first
    let px = v.round().clamp(0.0, 1e6) as u32;
    px
}

/// Legend items as (x, row), wrapping at the chart width.
pub(crate) fn legend_layout(names: &[String]) -> Vec<(i32, u32)> {
    let (mut x, mut row) = (PAD, 0);
    let mut out = Vec::with_capacity(names.len());
    for name in names {
        let w = 30 + i32::try_from(to_px(text_width(name, FONT))).unwrap_or(0);
        if x > PAD && x + w > i32::try_from(WIDTH).unwrap_or(0) - PAD {
            (x, row) = (PAD, row + 1);
        }
        out.push((x, row));
        x += w;
    }
    out
}

pub(crate) fn draw(
    plan: &Plan,
    buf: &mut String,
) -> Result<(), DrawingAreaErrorKind<std::io::Error>> {
    let root = SVGBackend::with_string(buf, (WIDTH, plan.height)).into_drawing_area();
    root.fill(&WHITE)?;
    let title = styled(TITLE_FONT, FontStyle::Bold, INK).pos(Pos::new(HPos::Left, VPos::Top));
    root.draw_text(&plan.title, &title, (PAD, 12))?;
    let label = font(FONT, INK).pos(Pos::new(HPos::Left, VPos::Center));
    let legend = plan.legend.iter().zip(legend_layout(&plan.legend));
    for (i, (name, (x, row))) in legend.enumerate() {
        let y = 44 + i32::try_from(row).unwrap_or(0) * 20;
        // A polygon, not a rect: every filled palette `<rect>` in the output is a bar.
        let swatch = vec![(x, y - 6), (x + 12, y - 6), (x + 12, y + 6), (x, y + 6)];
        root.draw(&Polygon::new(swatch, plan.colors[i].filled()))?;
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
        .label_style(font(FONT, INK))
        .axis_desc_style(font(FONT, INK))
        .x_desc(plan.axis_label.as_str())
        .draw()?;

    // The number after a bar (or "unknown" where it would be), so colour is not the only cue.
    let note = |text: String, at: f64, y: f64, color: RGBColor| {
        let (dx, h) = if at < 0.0 {
            (-4, HPos::Right)
        } else {
            (4, HPos::Left)
        };
        let style = font(FONT, color).pos(Pos::new(h, VPos::Center));
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
            let style = plan.colors[s].filled();
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
