//! Users: the operators' user list, where local accounts are created or invited, and the page
//! where an invited person sets their password. Its pages, server functions (`sfn`) and DTOs.

pub mod actions;
pub mod dto;
mod invite;
mod page;
pub mod sfn;

pub use dto::PublicUrl;
pub use invite::AcceptInvite;
pub use page::Users;
