//! `ALTER DATABASE … SET QUERY_STORE …`: turning a database's Query Store on or off,
//! clearing it, and its settings (see `crate::query_store`).

use std::sync::Arc;

use tessera_database::Database;
use tessera_errors::{msg, SqlResult};

use crate::query_store::{storage, Mode, Options};
use crate::query_store_flusher::with_site;
use crate::runtime::ExecCtx;

/// Applies the Query Store items of one ALTER DATABASE `SET` (as the parser gives them:
/// `QUERY_STORE` with ON, OFF, CLEAR or nothing, then `QUERY_STORE.NAME` settings) to
/// database `db`. Nothing changes when any setting is refused.
pub fn alter(ctx: &ExecCtx, db: &Arc<Database>, items: &[(String, String)]) -> SqlResult<()> {
    if ["master", "tempdb"].iter().any(|s| db.name().eq_ignore_ascii_case(s)) {
        return Err(msg::ALTER_DATABASE_FAILED.err().after(msg::QUERY_STORE_SYSTEM_DATABASE.with(&[&db.name()])));
    }
    let stored = storage::read_options(db)?;
    let was_on = stored.as_ref().is_some_and(|o| o.desired != Mode::Off);
    let mut options = stored.unwrap_or_else(|| Options { desired: Mode::Off, ..Options::default() });
    let mut clear = false;
    for (name, value) in items {
        match (name.as_str(), value.as_str()) {
            ("QUERY_STORE", "ON") if !was_on => options.desired = Mode::ReadWrite,
            ("QUERY_STORE", "ON" | "") => {}
            ("QUERY_STORE", "OFF" | "OFF FORCED") => options.desired = Mode::Off,
            ("QUERY_STORE", "CLEAR" | "CLEAR ALL") => clear = true,
            (setting, value) => {
                let setting = setting.strip_prefix("QUERY_STORE.").unwrap_or(setting);
                options.set(setting, value)?;
            }
        }
    }
    let store = ctx.shared.query_stores.get(db.name());
    if clear {
        let everything = storage::Removal { everything: true, ..storage::Removal::default() };
        match &store {
            Some(store) => with_site(ctx.shared, db, |site| store.remove(db, &everything, site))?,
            None => storage::remove_stored(db, &everything)?,
        }
    }
    // What was counted before OFF is kept, as SQL Server keeps it.
    if options.desired == Mode::Off {
        if let Some(store) = &store {
            with_site(ctx.shared, db, |site| store.flush(db, site))?;
        }
    }
    storage::write_options(db, &options)?;
    if options.desired != Mode::Off || store.is_some() {
        ctx.shared.configure_query_store(db, options)?;
    }
    Ok(())
}
