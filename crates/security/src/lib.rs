//! Who may do what in a tessera server. See README.md.

pub mod logins;
pub mod principals;
pub mod server_permissions;
pub mod verified;
