//! Passwords already verified, so that a login that connects again is checked in
//! microseconds rather than at the cost of an Argon2 hash (tens of milliseconds and
//! 19 MiB). Without it a reconnect storm — every pooled connection of an application
//! logging in again after a restart or a failover — waits on password hashing: 5,000
//! logins take about 50 s of CPU on two cores.
//!
//! Invariants:
//! - Nothing stored lets anyone learn a password: an entry is a SHA-256 keyed with a
//!   secret drawn at start and never written anywhere, over the login's stored Argon2
//!   hash and the password. It matches only the same password against the same stored
//!   hash, so a changed password (a new hash, a new salt) never matches an old entry.
//! - Only successes are remembered: a wrong password always costs a full Argon2 hash,
//!   so guessing stays as slow as it was.
//! - At most [`MAX_ENTRIES`] entries (one per login); past that the table starts over.

use std::collections::HashMap;

use parking_lot::Mutex;
use rand::RngCore;
use sha2::{Digest, Sha256};

/// Logins remembered at most.
pub const MAX_ENTRIES: usize = 65_536;

/// The passwords verified since the server started, by login name.
pub struct Verified {
    key: [u8; 32],
    entries: Mutex<HashMap<String, [u8; 32]>>,
}

impl Default for Verified {
    fn default() -> Verified {
        let mut key = [0u8; 32];
        rand::rng().fill_bytes(&mut key);
        Verified { key, entries: Mutex::new(HashMap::new()) }
    }
}

impl Verified {
    fn digest(&self, stored_hash: &str, password: &str) -> [u8; 32] {
        let mut h = Sha256::new();
        h.update(self.key);
        h.update((stored_hash.len() as u64).to_le_bytes());
        h.update(stored_hash.as_bytes());
        h.update(password.as_bytes());
        h.finalize().into()
    }

    /// Whether `password` was verified against `stored_hash`, the current hash of `login`.
    pub fn holds(&self, login: &str, stored_hash: &str, password: &str) -> bool {
        let Some(entry) = self.entries.lock().get(login).copied() else { return false };
        let digest = self.digest(stored_hash, password);
        // Compared in full whatever differs first.
        entry.iter().zip(digest).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
    }

    /// Remembers that `password` matched `stored_hash`, the current hash of `login`.
    pub fn remember(&self, login: &str, stored_hash: &str, password: &str) {
        let digest = self.digest(stored_hash, password);
        let mut entries = self.entries.lock();
        if entries.len() >= MAX_ENTRIES && !entries.contains_key(login) {
            entries.clear();
        }
        entries.insert(login.to_string(), digest);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_same_password_against_the_same_hash_holds() {
        let v = Verified::default();
        assert!(!v.holds("app", "$argon2id$one", "pw"));
        v.remember("app", "$argon2id$one", "pw");
        assert!(v.holds("app", "$argon2id$one", "pw"));
        assert!(!v.holds("app", "$argon2id$one", "pw2"), "another password");
        assert!(!v.holds("app", "$argon2id$two", "pw"), "the password changed: a new hash");
        assert!(!v.holds("other", "$argon2id$one", "pw"), "another login");
        assert!(!Verified::default().holds("app", "$argon2id$one", "pw"), "another server's secret");
    }

    #[test]
    fn the_table_is_bounded() {
        let v = Verified::default();
        for i in 0..MAX_ENTRIES + 1 {
            v.remember(&format!("login{i}"), "h", "pw");
        }
        assert!(v.entries.lock().len() <= MAX_ENTRIES);
        assert!(v.holds(&format!("login{MAX_ENTRIES}"), "h", "pw"), "the newest is kept");
    }
}
