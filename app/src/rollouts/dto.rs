//! What the rollouts' pages receive besides the API's own types (`kqueen_dto::rollouts`).

use kqueen_dto::rollouts::{Rollout, RolloutPlan};
use serde::{Deserialize, Serialize};

/// The "New rollout" form's values, as typed (`tenant` empty: the whole fleet).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RolloutForm {
    pub tenant: String,
    pub provider: String,
    pub version: String,
    pub target_version: String,
    pub wave_size: String,
}

/// `/rollouts`: the rollouts the caller may see, and the form with its preview.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RolloutsPageDto {
    /// Newest first.
    pub rollouts: Vec<Rollout>,
    /// The tenants the caller may roll out in (None: too many to choose from, the form asks
    /// for a slug).
    pub tenants: Option<Vec<String>>,
    /// The caller may roll out across the whole fleet (operators).
    pub fleet: bool,
    /// Provider names to filter by.
    pub providers: Vec<String>,
    pub form: RolloutForm,
    /// The plan of the form's values, once previewed.
    pub plan: Option<RolloutPlan>,
    /// Why the preview was refused: at an input of the form (its name), or above it.
    pub field: Option<String>,
    pub error: Option<String>,
}

impl RolloutsPageDto {
    /// The refusal shown at input `name`.
    pub fn error_at(&self, name: &str) -> Option<String> {
        (self.field.as_deref() == Some(name))
            .then(|| self.error.clone())
            .flatten()
    }

    /// The refusal that concerns no input.
    pub fn form_error(&self) -> Option<String> {
        self.field.is_none().then(|| self.error.clone()).flatten()
    }
}
