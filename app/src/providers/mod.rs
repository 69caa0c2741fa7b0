//! Providers and templates (operators). Its page, its server functions (`sfn`) and their DTOs.

pub mod actions;
mod adopt;
pub mod adopt_sfn;
pub mod dto;
mod page;
pub mod refine;
pub mod sfn;

pub use adopt::ProviderClusters;
pub use page::Providers;
