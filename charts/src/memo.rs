//! Charts drawn lately, kept by what they show.
//!
//! A chart is a pure function of its [`BarChart`] (the output is deterministic), and pages ask
//! for the same few over and over: the fleet dashboard's five on every view, a cluster page's
//! node and pod charts at every poll. Drawing one costs far more than comparing its input, so
//! the last charts drawn are kept and handed out again while their input is equal.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use crate::BarChart;

/// Charts kept at most; past that the memory starts afresh (a few MB at most: a chart's SVG
/// weighs a few KB).
pub(crate) const KEPT: usize = 256;

/// Drawn charts by their id (a hash of what they show, `svg::chart_id`); the input itself is
/// kept and compared, so two charts under one id only draw each other anew.
#[derive(Default)]
pub(crate) struct Memo {
    drawn: Mutex<HashMap<String, (BarChart, Arc<str>)>>,
}

impl Memo {
    /// The SVG of `chart` (whose id is `id`): the kept one when an equal chart was drawn
    /// lately, else `draw`'s (kept from now on). Drawing happens outside the lock.
    pub(crate) fn get_or_draw(
        &self,
        id: &str,
        chart: &BarChart,
        draw: impl FnOnce() -> String,
    ) -> String {
        let kept = {
            let drawn = self.drawn.lock().unwrap_or_else(PoisonError::into_inner);
            drawn
                .get(id)
                .filter(|(input, _)| input == chart)
                .map(|(_, svg)| svg.clone())
        };
        if let Some(svg) = kept {
            return svg.to_string();
        }
        let svg = draw();
        let mut drawn = self.drawn.lock().unwrap_or_else(PoisonError::into_inner);
        if drawn.len() >= KEPT {
            drawn.clear();
        }
        drawn.insert(id.to_owned(), (chart.clone(), Arc::from(svg.as_str())));
        svg
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;
    use crate::svg::chart_id;
    use crate::{Series, Unit};

    /// `memo`'s SVG of `chart`, drawn by `draw` when not kept.
    fn get(memo: &Memo, chart: &BarChart, draw: impl FnOnce() -> String) -> String {
        memo.get_or_draw(&chart_id(chart), chart, draw)
    }

    fn chart(title: &str, value: f64) -> BarChart {
        BarChart {
            title: title.to_owned(),
            value_label: "Clusters".to_owned(),
            unit: Unit::Count,
            categories: vec!["Ready".to_owned()],
            series: vec![Series {
                name: "Clusters".to_owned(),
                values: vec![Some(value)],
                color: None,
            }],
            stacked: false,
        }
    }

    #[test]
    fn an_equal_chart_is_not_drawn_again() {
        let memo = Memo::default();
        let draws = Cell::new(0);
        let draw = |c: &BarChart| {
            draws.set(draws.get() + 1);
            format!("<svg>{}</svg>", c.title)
        };
        let a = chart("Clusters by state", 3.0);
        assert_eq!(get(&memo, &a, || draw(&a)), "<svg>Clusters by state</svg>");
        assert_eq!(
            get(&memo, &a.clone(), || draw(&a)),
            "<svg>Clusters by state</svg>"
        );
        assert_eq!(draws.get(), 1);
        // Any change to what it shows draws it anew: a value, a colour, a title.
        let b = chart("Clusters by state", 4.0);
        get(&memo, &b, || draw(&b));
        let mut c = a.clone();
        c.series[0].color = Some([0, 0, 0]);
        get(&memo, &c, || draw(&c));
        let d = chart("Clusters by provider", 3.0);
        assert_eq!(
            get(&memo, &d, || draw(&d)),
            "<svg>Clusters by provider</svg>"
        );
        assert_eq!(draws.get(), 4);
        // A value that equals nothing (NaN) is drawn every time, never mistaken.
        let nan = chart("Clusters by state", f64::NAN);
        get(&memo, &nan, || draw(&nan));
        get(&memo, &nan, || draw(&nan));
        assert_eq!(draws.get(), 6);
    }

    #[test]
    fn it_keeps_a_bounded_number() {
        let memo = Memo::default();
        for i in 0..KEPT * 3 {
            let c = chart("n", i as f64);
            get(&memo, &c, String::new);
            let kept = memo
                .drawn
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .len();
            assert!(kept <= KEPT, "{kept}");
        }
    }
}
