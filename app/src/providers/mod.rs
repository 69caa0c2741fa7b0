//! Providers and templates (operators). Its page, its server functions (`sfn`) and their DTOs.

pub mod actions;
pub mod dto;
mod page;
pub mod refine;
pub mod sfn;

pub use page::Providers;
