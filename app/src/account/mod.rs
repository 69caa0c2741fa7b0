//! Accounts: login, the logged-in user, API tokens. Its page, its server functions (`sfn`) and their DTOs.

pub mod actions;
pub mod dto;
mod login;
pub mod sfn;
mod tokens;

pub use login::Login;
pub use tokens::Tokens;
