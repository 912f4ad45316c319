//! What the server installs in the instance's shared state: how to end a client's
//! connection (KILL), and which databases it may serve now (a fleet server's fence, see
//! crates/server/src/fence.rs). Used embedded, with neither installed, there is no
//! connection to end and every database is served.

use std::sync::Arc;

use parking_lot::Mutex;

use super::Shared;

/// Ends the connection of session `spid` (its running request is cancelled, its
/// transaction rolls back); false when no connection has that session.
pub type KillHook = Arc<dyn Fn(i32) -> bool + Send + Sync>;

/// Whether this server may serve the named database now.
pub type AdmitHook = Arc<dyn Fn(&str) -> bool + Send + Sync>;

#[derive(Default)]
pub(super) struct Hooks {
    kill: Mutex<Option<KillHook>>,
    admit: Mutex<Option<AdmitHook>>,
}

impl Shared {
    /// Installs what ends a connection (KILL).
    pub fn set_kill_hook(&self, hook: KillHook) {
        *self.hooks.kill.lock() = Some(hook);
    }

    /// Ends session `spid`'s connection; false when there is none to end.
    pub fn kill(&self, spid: i32) -> bool {
        let hook = self.hooks.kill.lock().clone();
        hook.is_some_and(|h| h(spid))
    }

    /// Installs what says which databases this server may serve (USE asks it).
    pub fn set_admit_hook(&self, hook: AdmitHook) {
        *self.hooks.admit.lock() = Some(hook);
    }

    /// Whether this server may serve `database` now (true unless a hook says otherwise).
    pub fn admits(&self, database: &str) -> bool {
        let hook = self.hooks.admit.lock().clone();
        hook.is_none_or(|h| h(database))
    }
}
