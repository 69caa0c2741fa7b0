//! The overview page, with the operators' first-run checklist. Its page, its server functions
//! (`sfn`) and their DTOs.

mod checklist;
pub mod dto;
mod page;
pub mod sfn;

pub use checklist::{NoTenantHelp, NoTenantNote};
pub use page::Overview;
