//! Tenants: the tenant page (members, quota) and the operators' admin page. Its page, its server functions (`sfn`) and their DTOs.

pub mod actions;
mod admin;
pub mod dto;
pub mod sfn;
mod tenant;

pub use admin::Admin;
pub use tenant::TenantPage;
