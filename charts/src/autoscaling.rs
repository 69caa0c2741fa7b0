//! The autoscaling figure: a cluster's node counts over time, from its samples.

use chrono::{DateTime, Utc};
use kqueen_core::autoscale::Sample;

use crate::steps::{step_chart, StepChart, StepSeries};

/// Worker nodes, Ready ones and the count asked for, from `from` to `to`, with the bounds
/// when autoscaling is on.
#[must_use]
pub fn node_count_chart(
    samples: &[Sample],
    bounds: Option<(u32, u32)>,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> String {
    let series = |name: &str, dashed: bool, value: fn(&Sample) -> u32| StepSeries {
        name: name.to_owned(),
        points: samples
            .iter()
            .map(|s| (s.taken_at, f64::from(value(s))))
            .collect(),
        dashed,
    };
    let marks = bounds
        .map(|(min, max)| {
            vec![
                ("min".to_owned(), f64::from(min)),
                ("max".to_owned(), f64::from(max)),
            ]
        })
        .unwrap_or_default();
    step_chart(&StepChart {
        title: "Nodes over time".to_owned(),
        value_label: "Nodes".to_owned(),
        series: vec![
            series("Worker nodes", false, |s| s.nodes),
            series("Ready", false, |s| s.ready),
            series("Asked for", true, |s| s.wanted),
        ],
        marks,
        from,
        to,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn each_count_is_a_line_and_the_bounds_are_marked() {
        let t0 = DateTime::<Utc>::from_timestamp(1_795_000_000, 0).unwrap();
        let sample = |min: i64, wanted, nodes, ready| Sample {
            taken_at: t0 + chrono::Duration::minutes(min),
            wanted,
            nodes,
            ready,
            pending_pods: 0,
        };
        let svg = node_count_chart(
            &[
                sample(0, 1, 1, 1),
                sample(5, 2, 1, 1),
                sample(8, 2, 2, 1),
                sample(9, 2, 2, 2),
            ],
            Some((1, 3)),
            t0,
            t0 + chrono::Duration::minutes(30),
        );
        for words in [
            "Worker nodes: 1 at",
            "Ready: 1 at",
            "Asked for: 1 at",
            "min: 1.",
            "max: 3.",
        ] {
            assert!(svg.contains(words), "{words}: {svg}");
        }
        let none = node_count_chart(&[], None, t0, t0 + chrono::Duration::hours(1));
        assert!(none.contains("No data"));
    }
}
