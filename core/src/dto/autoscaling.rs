//! A cluster's autoscaling as the API and the portal send it, and as they take it.

use kqueen_dto::autoscaling;

use crate::autoscale::{AutoscaleSettings, Sample};
use crate::service::AutoscalingView;

impl From<Sample> for autoscaling::NodeSample {
    fn from(s: Sample) -> Self {
        Self {
            taken_at: s.taken_at.to_rfc3339(),
            wanted: s.wanted,
            nodes: s.nodes,
            ready: s.ready,
            pending_pods: s.pending_pods,
        }
    }
}

impl From<AutoscalingView> for autoscaling::Autoscaling {
    fn from(v: AutoscalingView) -> Self {
        let (settings, last_decision, last_turn_at) = match v.autoscaling {
            Some(a) => (
                Some(autoscaling::AutoscalingSettings {
                    min_nodes: a.settings.min_nodes,
                    max_nodes: a.settings.max_nodes,
                    scale_down_utilisation: u32::from(a.settings.scale_down_utilisation),
                    scale_down_after_secs: a.settings.scale_down_after_secs,
                    updated_by: a.updated_by,
                    updated_at: a.updated_at.to_rfc3339(),
                }),
                a.last_reason,
                a.last_turn_at.map(|t| t.to_rfc3339()),
            ),
            None => (None, None, None),
        };
        Self {
            cluster_id: v.cluster.id.to_string(),
            cluster: v.cluster.name.to_string(),
            node_count: v.cluster.asked_nodes(),
            settings,
            last_decision,
            last_turn_at,
            can_scale: v.can_scale,
            can_change: v.can_change,
            samples: v.samples.into_iter().map(Into::into).collect(),
        }
    }
}

/// The settings asked for, the scale-down rule's defaults where it is left out. A threshold
/// beyond a byte is kept out of range (255), so that `check` names it.
impl From<&autoscaling::AutoscalingInput> for AutoscaleSettings {
    fn from(i: &autoscaling::AutoscalingInput) -> Self {
        let defaults = AutoscaleSettings::default();
        Self {
            min_nodes: i.min_nodes,
            max_nodes: i.max_nodes,
            scale_down_utilisation: i
                .scale_down_utilisation
                .map_or(defaults.scale_down_utilisation, |v| {
                    u8::try_from(v).unwrap_or(u8::MAX)
                }),
            scale_down_after_secs: i
                .scale_down_after_secs
                .unwrap_or(defaults.scale_down_after_secs),
        }
    }
}
