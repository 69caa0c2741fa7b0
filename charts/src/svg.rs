//! The SVG around a chart: its id, the accessible root element, and message charts.

#[allow(clippy::wildcard_imports)]
use super::*;

/// A stable id (FNV-1a of the input) so several charts on one page keep distinct ARIA ids.
pub(crate) fn chart_id(chart: &BarChart) -> String {
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

pub(crate) fn svg_open(id: &str, chart: &BarChart, height: u32, desc: &str) -> String {
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
pub(crate) fn message_svg(id: &str, chart: &BarChart, message: &str) -> String {
    let title = escape(&fit(&chart.title, TITLE_FONT, TITLE_MAX));
    format!(
        "{}<rect x=\"0\" y=\"0\" width=\"{WIDTH}\" height=\"120\" fill=\"#FFFFFF\"/>\n\
         <text x=\"{PAD}\" y=\"28\" font-size=\"{TITLE_FONT}\" font-weight=\"bold\" fill=\"#333333\">{title}</text>\n\
         <text x=\"{}\" y=\"80\" text-anchor=\"middle\" font-size=\"{FONT}\" fill=\"#767676\">{message}</text>\n</svg>\n",
        svg_open(id, chart, 120, &format!("{message}.")),
        WIDTH / 2,
    )
}
