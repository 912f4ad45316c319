//! Starting an instance: tempdb made afresh (as SQL Server does at every start),
//! configuration, logins and server permissions loaded from master, msdb and its history tables made at the
//! first start, and the session layer's statement loop handed down for user-defined
//! scalar functions that expressions call.

use std::sync::Arc;

use tessera_database::Engine;

use super::calls::{call_scalar_function, call_table_function};
use super::Session;
use tessera_errors::SqlResult;
use tessera_execution::runtime::Shared;
use tessera_semantics::output::Collected;

/// Starts the instance over `engine`.
pub fn start_instance(engine: Arc<Engine>) -> SqlResult<Arc<Shared>> {
    if engine.exists("tempdb") {
        engine.drop_database("tempdb")?;
    }
    // SIMPLE recovery, and commits that never wait for a log flush: nothing in tempdb
    // outlives the instance.
    engine.create_database(
        "tempdb",
        tessera_database::DatabaseOptions {
            recovery_model: tessera_database::RecoveryModel::Simple,
            scratch: true,
            ..Default::default()
        },
    )?;
    let config = tessera_execution::config::Config::load(engine.database("master")?)?;
    let logins = tessera_security::logins::Logins::load(engine.database("master")?)?;
    let server_permissions = tessera_security::server_permissions::ServerPermissions::load(engine.database("master")?)?;
    let resource_governor = tessera_governance::resource_governor::ResourceGovernor::load(engine.database("master")?)?;
    config.apply_memory(&engine)?;
    config.apply_open_limits(&engine);
    // A saved mask naming CPUs this machine no longer gives the server leaves it on all
    // of them; sys.configurations still shows the mask, and RECONFIGURE says why.
    if config.apply_affinity().is_err() {
        tessera_io::affinity::pin_process(None)?;
    }
    // A configured extension that cannot start (its device is gone) stays off; the
    // extension configuration view shows it disabled.
    let _ = config.start_extension(&engine);
    if !engine.exists("msdb") {
        engine.create_database(
            "msdb",
            tessera_database::DatabaseOptions {
                recovery_model: tessera_database::RecoveryModel::Simple,
                ..Default::default()
            },
        )?;
    }
    let shared = Shared::assemble(
        engine,
        config,
        logins,
        server_permissions,
        resource_governor,
        tessera_execution::runtime::FunctionHooks { scalar: call_scalar_function, table: call_table_function },
    );
    shared.query_memory.set_max_bytes(shared.engine.memory_status().max_bytes);
    tessera_execution::query_store_flusher::start(Arc::downgrade(&shared));
    let mut out = Collected::default();
    Session::system(shared.clone(), "msdb")?.execute(tessera_execution::backup::MSDB_TABLES, &mut out);
    if let Some(e) = out.errors().first() {
        return Err((*e).clone());
    }
    Ok(shared)
}
