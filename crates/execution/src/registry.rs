//! Databases as the engine's registry knows them, open or not: what listings and
//! metadata functions (sys.databases, sp_databases, sp_helpdb, DB_NAME, DB_ID,
//! DATABASEPROPERTYEX) read, so that none of them opens (and recovers) a database.

use std::path::{Path, PathBuf};

use tessera_database::{DatabaseOptions, DbState, Engine};

/// A registered database.
pub struct Registered {
    pub name: String,
    pub id: u32,
    pub data_path: PathBuf,
    pub log_path: PathBuf,
    pub options: DatabaseOptions,
    pub state: DbState,
}

impl Registered {
    /// Bytes of its data file and of its log file as they are on disk.
    pub fn file_bytes(&self) -> (u64, u64) {
        let size = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
        (size(&self.data_path), size(&self.log_path))
    }
}

/// The database `name` (any case), if registered.
pub fn named(engine: &Engine, name: &str) -> Option<Registered> {
    let (data_path, log_path, options) = engine.database_info(name)?;
    let canonical = engine.database_names().into_iter().find(|n| n.eq_ignore_ascii_case(name))?;
    Some(Registered {
        id: engine.database_id(name)?,
        state: engine.database_state(name)?,
        name: canonical,
        data_path,
        log_path,
        options,
    })
}

/// Every registered database, in the registry's order.
pub fn all(engine: &Engine) -> Vec<Registered> {
    engine.database_names().iter().filter_map(|n| named(engine, n)).collect()
}

/// The registered database with this `database_id`.
pub fn by_id(engine: &Engine, id: i64) -> Option<Registered> {
    engine
        .database_names()
        .into_iter()
        .find(|n| engine.database_id(n).is_some_and(|d| i64::from(d) == id))
        .and_then(|n| named(engine, &n))
}
