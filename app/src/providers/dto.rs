//! What the providers page's server function sends to the browser: `kqueen_dto`'s providers,
//! templates and provisioner kinds (what `/api/v1` sends too), and the refused form.

use kqueen_dto::providers::{Kind, Provider, Template};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProvidersPageDto {
    pub providers: Vec<Provider>,
    pub templates: Vec<Template>,
    pub kinds: Vec<Kind>,
    /// The provider or template form as it was refused, with the error.
    pub kept: Option<crate::kept::KeptForm>,
}
