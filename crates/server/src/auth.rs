//! Logins and their passwords. Passwords are kept only as salted Argon2id hashes (PHC
//! strings); verification is a slow hash by design, so the session runs it on a blocking
//! thread and the server bounds how many run at once (login floods queue, they do not
//! starve query execution).
//!
//! This session's scope is the `sa` login; CREATE/ALTER/DROP LOGIN will store their
//! hashes through the same functions.

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;

/// A salted Argon2id hash of `password` in PHC string form.
pub fn hash_password(password: &str) -> Result<String, String> {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 16];
    ring::rand::SystemRandom::new().fill(&mut bytes).map_err(|_| "no random source for the salt".to_string())?;
    let salt = SaltString::encode_b64(&bytes).map_err(|e| e.to_string())?;
    Argon2::default().hash_password(password.as_bytes(), &salt).map(|h| h.to_string()).map_err(|e| e.to_string())
}

/// Whether `password` matches the PHC hash `hash` (false for a malformed hash).
pub fn verify_password(password: &str, hash: &str) -> bool {
    match PasswordHash::new(hash) {
        Ok(h) => Argon2::default().verify_password(password.as_bytes(), &h).is_ok(),
        Err(_) => false,
    }
}

/// The logins the server accepts.
pub struct Logins {
    sa_hash: String,
}

impl Logins {
    pub fn new(sa_password: &str) -> Result<Logins, String> {
        Ok(Logins { sa_hash: hash_password(sa_password)? })
    }

    /// The canonical login name if `user`/`password` is a valid SQL login.
    pub fn check(&self, user: &str, password: &str) -> Option<&'static str> {
        if user.eq_ignore_ascii_case("sa") && verify_password(password, &self.sa_hash) {
            Some("sa")
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_verify() {
        let l = Logins::new("Secret1!").unwrap();
        assert_eq!(l.check("SA", "Secret1!"), Some("sa"));
        assert_eq!(l.check("sa", "secret1!"), None);
        assert_eq!(l.check("bob", "Secret1!"), None);
        assert!(!verify_password("x", "not a hash"));
    }
}
