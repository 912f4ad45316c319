//! How much of the server each database, pool and statement may use. See README.md.

pub mod governor;
pub mod grant;
pub mod resource_governor;
