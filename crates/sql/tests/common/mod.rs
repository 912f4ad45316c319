//! What the session-level tests share: an instance on a fresh engine in a temporary
//! directory (32 MiB pool, no background threads), and a session of `sa` in master.

use tessera_database::{Engine, EngineConfig};
use tessera_sql::Session;

/// A session of `sa` in master on a new instance; the directory lives as long as the
/// returned guard.
pub fn session() -> (tempfile::TempDir, Session) {
    let dir = tempfile::tempdir().unwrap();
    let mut config = EngineConfig::new(dir.path());
    config.pool_bytes = 32 << 20;
    config.background = false;
    let engine = Engine::open(config).unwrap();
    let shared = tessera_sql::start_instance(engine).unwrap();
    let s = Session::new(shared, "sa", "master").unwrap();
    (dir, s)
}
