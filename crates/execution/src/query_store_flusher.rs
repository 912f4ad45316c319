//! The instance's Query Store flusher: one thread that wakes each second and writes the
//! stores whose flush is due (their `DATA_FLUSH_INTERVAL_SECONDS` passed, their pending
//! rows grew past the limit, or their database closed with rows pending), opening a
//! closed database again for it. It ends with the instance. [`with_site`] is where a
//! store's plans are rendered (in its database, as its catalog names them).

use std::sync::{Arc, Weak};
use std::time::Duration;

use tessera_database::Database;
use tessera_semantics::catalog::{DbRef, Table};
use tessera_semantics::plan::PlanSite;

use crate::query_store::QueryStore;
use crate::runtime::Shared;

const TICK: Duration = Duration::from_secs(1);

/// Starts the flusher of `shared`'s stores.
pub fn start(shared: Weak<Shared>) {
    // Without the thread (the system refused one), stores are still flushed at
    // shutdown and when asked.
    let _ = std::thread::Builder::new().name("query-store-flush".into()).spawn(move || loop {
        std::thread::sleep(TICK);
        let Some(shared) = shared.upgrade() else { return };
        for store in shared.query_stores.due(false) {
            flush(&shared, &store);
        }
    });
}

/// Writes every store's pending rows (at shutdown).
pub fn flush_all(shared: &Shared) {
    for store in shared.query_stores.due(true) {
        flush(shared, &store);
    }
}

/// Calls `f` with the site plans are rendered in for database `db`: its name, and each
/// table as its current catalog defines it (the definition the plan was bound to when the
/// catalog no longer has it).
pub fn with_site<T>(shared: &Shared, db: &Arc<Database>, f: impl FnOnce(&PlanSite) -> T) -> T {
    let catalog = shared.catalog(db).ok();
    let name = db.name();
    let table = |at: &DbRef, def: &Arc<Table>| match (at, &catalog) {
        (DbRef::Current, Some(c)) => (Arc::from(name), c.same_table(def).cloned().unwrap_or_else(|| def.clone())),
        _ => (Arc::from(at.name(name)), def.clone()),
    };
    f(&PlanSite { database: name, table: &table })
}

fn flush(shared: &Shared, store: &Arc<QueryStore>) {
    // A database that was dropped is gone with what was pending for it.
    let Ok(db) = shared.database(&store.database) else { return };
    if let Err(e) = with_site(shared, &db, |site| store.flush(&db, site)) {
        shared.write_errorlog(0, &format!("Query Store flush of database '{}' failed: {}", store.database, e.message));
    }
}
