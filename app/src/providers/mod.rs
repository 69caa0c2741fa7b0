//! Providers and templates (operators). Its page (`page.rs`, with its forms in
//! `provider_form.rs`, `template_form.rs` and `refine_view.rs`), its server functions (`sfn`)
//! and their DTOs.

pub mod actions;
mod adopt;
pub mod adopt_sfn;
pub mod dto;
mod page;
mod provider_form;
pub mod refine;
mod refine_view;
pub mod sfn;
mod template_form;

pub use adopt::ProviderClusters;
pub use page::Providers;
