//! Databases: CREATE, DROP and ALTER DATABASE.

use tessera_database::{DatabaseOptions, DelayedDurability, Growth, RecoveryModel};
use tessera_errors::msg;

use super::files;
use crate::runtime::ExecCtx;
use crate::sysviews::FileKind;
use tessera_errors::{SqlError, SqlResult};
use tessera_syntax::ast::{self, Ident};

fn file_path(spec: &ast::FileSpec) -> Option<std::path::PathBuf> {
    files::option(spec, "FILENAME").map(std::path::PathBuf::from)
}

pub fn create_database(ctx: &mut ExecCtx, cd: &ast::CreateDatabase) -> SqlResult<()> {
    let name = &cd.name.value;
    if ctx.shared.engine.exists(name) {
        return Err(msg::DATABASE_ALREADY_EXISTS.with(&[&name]).with_state(3));
    }
    if let Some(mode) = cd.attach {
        return attach(ctx, cd, mode);
    }
    if let Some(source) = &cd.copy_of {
        return copy_of(ctx, name, source);
    }
    if cd.files.len() > 1 || cd.log_files.len() > 1 {
        return Err(msg::DATABASE_OPTION_NOT_SETTABLE
            .with(&[&"A database has one data file and one log file: more cannot be created for", &name]));
    }
    for spec in cd.files.iter().chain(&cd.log_files) {
        files::check_names(spec, &["NAME", "FILENAME", "SIZE", "MAXSIZE", "FILEGROWTH"])?;
    }
    let data_path = cd.files.first().and_then(file_path);
    let log_path = cd.log_files.first().and_then(file_path);
    for p in data_path.iter().chain(log_path.iter()) {
        if let Some(dir) = p.parent() {
            if !dir.as_os_str().is_empty() && !dir.is_dir() {
                return Err(msg::DIRECTORY_LOOKUP_FAILED.with(&[&p.display()]));
            }
        }
    }
    let mut options =
        DatabaseOptions { data_path, log_path, owner_sid: creator_sid(ctx), ..DatabaseOptions::default() };
    let failed = |e: SqlError| msg::CREATE_DATABASE_FAILED.err().after(e);
    if let Some(spec) = cd.files.first() {
        let logical = files::option(spec, "NAME").unwrap_or(name);
        files::sizes(spec, logical).map_err(failed)?.apply(FileKind::Data, &mut options);
    }
    if let Some(spec) = cd.log_files.first() {
        let logical = files::option(spec, "NAME").map_or_else(|| format!("{name}_log"), str::to_string);
        files::sizes(spec, &logical).map_err(failed)?.apply(FileKind::Log, &mut options);
    }
    ctx.shared.engine.create_database(name, options).map_err(|e| match e {
        tessera_database::Error::Invalid(_) => invalid_name(name),
        e if e.number() == 5170 => failed(e.into()),
        e => e.into(),
    })?;
    // The creating login owns the database (is its dbo); `sa` is the owner by default.
    if let Some(sid) = creator_sid(ctx) {
        let db = ctx.shared.database(name)?;
        crate::ddl::principals::set_owner(ctx.shared, &db, &sid)?;
    }
    Ok(())
}

/// `CREATE DATABASE name AS COPY OF [server.]source` (Azure SQL Database's): `source` as of
/// the end of the copy — its committed work, its schema, procedures, users and options —
/// in new files, owned by the login that made it. The server, if named, must be this one.
fn copy_of(ctx: &mut ExecCtx, name: &str, source: &ast::CopySource) -> SqlResult<()> {
    if let Some(server) = &source.server {
        let here = &ctx.shared.server_name;
        let instance = ctx.shared.instance_name.get().map(|i| format!("{here}\\{i}"));
        let named = |s: &str| s.eq_ignore_ascii_case(&server.value);
        if !named(here) && !instance.as_deref().is_some_and(named) {
            return Err(msg::SERVER_NOT_FOUND.with(&[&server.value]));
        }
    }
    let from = &source.database.value;
    if !ctx.shared.engine.exists(from) {
        return Err(msg::DATABASE_NOT_FOUND.with(&[&from]));
    }
    if tessera_database::Engine::check_new_name(name).is_err() {
        return Err(invalid_name(name));
    }
    tessera_backup::copy_database(&ctx.shared.engine, from, name, creator_sid(ctx)).map_err(|e| {
        let first = SqlError::new(e.number, e.message);
        msg::CREATE_DATABASE_FAILED.err().after(first)
    })?;
    let sid = creator_sid(ctx).unwrap_or_else(|| vec![1]);
    let db = ctx.shared.database(name)?;
    crate::ddl::principals::set_owner(ctx.shared, &db, &sid)?;
    Ok(())
}

/// The security id of the login creating or attaching a database, which owns it; `None`
/// for `sa` (every database's owner when none is recorded).
fn creator_sid(ctx: &ExecCtx) -> Option<Vec<u8>> {
    ctx.shared.session_login(ctx.session).map(|l| l.sid).filter(|sid| !sid.is_empty() && sid.as_slice() != [1])
}

/// `CREATE DATABASE name ON (FILENAME = data) [, (FILENAME = log)] [LOG ON (FILENAME = log)]
/// FOR ATTACH` (and `sp_attach_db`): the files become the database `name`. Without a log
/// file, the one beside the data file named as tessera names logs (`x.mdf` → `x_log.ldf`).
fn attach(ctx: &mut ExecCtx, cd: &ast::CreateDatabase, mode: ast::AttachMode) -> SqlResult<()> {
    let name = &cd.name.value;
    if mode == ast::AttachMode::RebuildLog {
        return Err(msg::DATABASE_OPTION_NOT_SETTABLE.with(&[&"FOR ATTACH_REBUILD_LOG (a data file's pages carry the LSNs of its own log, which a new log would not continue) cannot be used for", &name]));
    }
    let specs: Vec<&ast::FileSpec> = cd.files.iter().chain(&cd.log_files).collect();
    for spec in &specs {
        files::check_names(spec, &["NAME", "FILENAME"])?;
    }
    let paths: Vec<std::path::PathBuf> = specs.iter().filter_map(|s| file_path(s)).collect();
    let (data, log) = match paths.as_slice() {
        [data] => {
            let stem = data.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
            (data.clone(), data.with_file_name(format!("{stem}_log.ldf")))
        }
        [data, log] => (data.clone(), log.clone()),
        [] => {
            return Err(msg::DATABASE_OPTION_NOT_SETTABLE
                .with(&[&"FOR ATTACH needs the FILENAME of the data file: it cannot be used for", &name]))
        }
        _ => {
            return Err(msg::DATABASE_OPTION_NOT_SETTABLE
                .with(&[&"A database has one data file and one log file: more cannot be attached for", &name]))
        }
    };
    attach_files(ctx, name, &data, &log)
}

/// Attaches `data` and `log` as the database `name` (SQL Server's errors: 1801, 5120
/// then 1802, 5172, 1813 after a failed recovery).
pub fn attach_files(ctx: &mut ExecCtx, name: &str, data: &std::path::Path, log: &std::path::Path) -> SqlResult<()> {
    if ctx.shared.engine.exists(name) {
        return Err(msg::DATABASE_ALREADY_EXISTS.with(&[&name]).with_state(3));
    }
    let options = DatabaseOptions { owner_sid: creator_sid(ctx), ..DatabaseOptions::default() };
    ctx.shared.engine.attach_database(name, data, log, options).map_err(|e| match e.number() {
        5120 => msg::CREATE_DATABASE_FAILED.err().after(e.into()),
        1801 | 5172 => e.into(),
        _ => match e {
            tessera_database::Error::Invalid(_) => invalid_name(name),
            e => msg::NEW_DATABASE_OPEN_FAILED.with(&[&name]).after(e.into()),
        },
    })
}

/// The engine refused the name of a new database: SQL Server's 1038 when it is empty,
/// otherwise a name tessera cannot give a database's files.
fn invalid_name(name: &str) -> SqlError {
    if name.is_empty() {
        msg::EMPTY_OBJECT_OR_COLUMN_NAME.err()
    } else {
        msg::DATABASE_NAME_NOT_SUPPORTED.with(&[&name])
    }
}

/// `sp_detach_db`: the database leaves the instance; its files stay where they are.
/// 15010 if it does not exist, 7940 for a system database, 3703 while any session uses it.
pub fn detach_database(ctx: &mut ExecCtx, n: &str) -> SqlResult<()> {
    if !ctx.shared.engine.exists(n) {
        return Err(msg::NO_SUCH_DATABASE.with(&[&n]));
    }
    if ["master", "tempdb", "model", "msdb"].iter().any(|s| s.eq_ignore_ascii_case(n)) {
        return Err(msg::DETACH_SYSTEM_DATABASE.err());
    }
    let in_use = || msg::DETACH_DATABASE_IN_USE.with(&[&"database", &n]);
    let used_by_other = ctx
        .shared
        .sessions
        .lock()
        .values()
        .any(|info| info.spid != ctx.session.spid && info.activity.lock().database.eq_ignore_ascii_case(n));
    if used_by_other
        || ctx.session.database.eq_ignore_ascii_case(n)
        || ctx.session.txns.open.iter().any(|t| t.database().name().eq_ignore_ascii_case(n))
    {
        return Err(in_use());
    }
    let id = ctx.shared.engine.database_id(n);
    ctx.shared.forget(n);
    ctx.shared.engine.detach_database(n).map_err(|e| if e.number() == 3703 { in_use() } else { e.into() })?;
    if let Some(id) = id {
        ctx.shared.plans.forget_database(n, id);
        ctx.shared.governors.forget(id);
    }
    Ok(())
}

pub fn drop_database(ctx: &mut ExecCtx, name: &Ident, if_exists: bool) -> SqlResult<()> {
    let n = &name.value;
    if !ctx.shared.engine.exists(n) {
        if if_exists {
            return Ok(());
        }
        return Err(msg::DROP_OBJECT_NOT_FOUND.with(&[&"database", &n]));
    }
    if ["master", "tempdb", "model", "msdb"].iter().any(|s| s.eq_ignore_ascii_case(n)) {
        return Err(msg::DROP_SYSTEM_DATABASE.with(&[&n]));
    }
    if ctx.session.database.eq_ignore_ascii_case(n)
        || ctx.session.txns.open.iter().any(|t| t.database().name().eq_ignore_ascii_case(n))
    {
        return Err(msg::DROP_DATABASE_IN_USE.with(&[&n]).with_state(4));
    }
    let id = ctx.shared.engine.database_id(n);
    ctx.shared.forget(n);
    ctx.shared.engine.drop_database(n).map_err(|e| match e.number() {
        3702 => msg::DROP_DATABASE_IN_USE.with(&[&n]).with_state(4),
        _ => e.into(),
    })?;
    if let Some(id) = id {
        ctx.shared.plans.forget_database(n, id);
    }
    Ok(())
}

pub fn alter_database(ctx: &mut ExecCtx, name: &Ident, action: &ast::AlterDatabaseAction) -> SqlResult<()> {
    let n = if name.value.eq_ignore_ascii_case("current") { ctx.session.database.clone() } else { name.value.clone() };
    let database = ctx.shared.database(&n).map_err(|e| match e.number {
        911 => msg::ALTER_DATABASE_FAILED.err().after(msg::ALTER_DATABASE_DENIED.with(&[&n]).with_state(5)),
        _ => e,
    })?;
    let mut options = database.options();
    match action {
        ast::AlterDatabaseAction::Set(settings) => {
            let (query_store, settings): (Vec<_>, Vec<_>) =
                settings.iter().cloned().partition(|(opt, _)| opt.starts_with("QUERY_STORE"));
            if !query_store.is_empty() {
                super::query_store::alter(ctx, &database, &query_store)?;
            }
            for (opt, value) in &settings {
                if options.scratch {
                    // tempdb is SIMPLE and never waits for the log, as in SQL Server.
                    return Err(
                        msg::DATABASE_OPTION_NOT_SETTABLE.with(&[&format!("Option '{opt}' cannot be set in"), &n])
                    );
                }
                match opt.as_str() {
                    "RECOVERY" => {
                        options.recovery_model =
                            RecoveryModel::parse(value).ok_or_else(|| msg::SYNTAX_ERROR_NEAR.with(&[&value]))?;
                    }
                    "DELAYED_DURABILITY" => {
                        options.delayed_durability =
                            DelayedDurability::parse(value).ok_or_else(|| msg::SYNTAX_ERROR_NEAR.with(&[&value]))?;
                    }
                    "CONTAINMENT" => set_containment(ctx, &database, value)?,
                    "DB_CHAINING" => {
                        if ["master", "tempdb", "model"].iter().any(|s| n.eq_ignore_ascii_case(s)) {
                            return Err(msg::DATABASE_OPTION_NOT_SETTABLE
                                .with(&[&format!("Option '{opt}' cannot be set in"), &n]));
                        }
                        if !ctx.shared.session_in_role(ctx.session, "sysadmin") {
                            return Err(msg::ADMIN_ACTION_DENIED.err());
                        }
                        options.db_chaining = match value.as_str() {
                            "ON" => true,
                            "OFF" => false,
                            _ => return Err(msg::SYNTAX_ERROR_NEAR.with(&[&value])),
                        };
                    }
                    "ALLOW_SNAPSHOT_ISOLATION" => options.allow_snapshot_isolation = on_off(value)?,
                    "RECURSIVE_TRIGGERS" => options.recursive_triggers = on_off(value)?,
                    "READ_COMMITTED_SNAPSHOT" => {
                        // master's readers never read versions, as in SQL Server.
                        if n.eq_ignore_ascii_case("master") {
                            return Err(msg::DATABASE_OPTION_NOT_SETTABLE
                                .with(&[&format!("Option '{opt}' cannot be set in"), &n]));
                        }
                        options.read_committed_snapshot = on_off(value)?;
                    }
                    "MAX_CONCURRENT_REQUESTS"
                    | "MAX_CPU_PERCENT"
                    | "MAX_LOG_RATE_KB"
                    | "CPU_SHARE_PERCENT"
                    | "MAX_BUFFER_POOL_MB"
                    | "MAX_TEMPDB_MB" => {
                        set_limit(ctx, &mut options.limits, opt, value)?;
                    }
                    _ => {
                        return Err(
                            msg::DATABASE_OPTION_NOT_SETTABLE.with(&[&format!("Option '{opt}' cannot be set in"), &n])
                        );
                    }
                }
            }
            let limits = options.limits;
            // Versions are kept before an option that reads them is recorded, and stop
            // only after no option needs them (see `Database::set_versioning`).
            let versioned = options.keeps_versions();
            if versioned != database.options().keeps_versions() {
                database.set_versioning(versioned, Some(&ctx.session.cancel))?;
            }
            ctx.shared.engine.alter_database(&n, options)?;
            ctx.shared.governors.set_limits(database.id(), limits);
            Ok(())
        }
        ast::AlterDatabaseAction::ModifyFile(spec) => {
            modify_file(ctx, &n, spec, &mut options)?;
            ctx.shared.engine.alter_database(&n, options)?;
            Ok(())
        }
        ast::AlterDatabaseAction::Rename(_) | ast::AlterDatabaseAction::Collate(_) => {
            Err(msg::DATABASE_OPTION_NOT_SETTABLE.with(&[&"This ALTER DATABASE option is not supported for", &n]))
        }
    }
}

/// An option's ON or OFF.
fn on_off(value: &str) -> SqlResult<bool> {
    match value {
        "ON" => Ok(true),
        "OFF" => Ok(false),
        _ => Err(msg::SYNTAX_ERROR_NEAR.with(&[&value])),
    }
}

/// One of a database's resource limits (tessera extensions, see `tessera_governance::governor`): a
/// whole number, 0 for none (and 100 for no CPU cap). The hoster's to set, not the
/// tenant's: a server setting (ALTER SETTINGS, 15247).
fn set_limit(ctx: &ExecCtx, limits: &mut tessera_database::ResourceLimits, opt: &str, value: &str) -> SqlResult<()> {
    if !ctx.shared.holds_server(ctx.session, "ALTER SETTINGS") {
        return Err(msg::ADMIN_ACTION_DENIED.err());
    }
    let n: u32 = value.parse().map_err(|_| msg::SYNTAX_ERROR_NEAR.with(&[&value]))?;
    let out_of_range = |max: u32| msg::INVALID_CONFIG_VALUE.with(&[&n, &opt, &format!(": 0 to {max}")]);
    match opt {
        "MAX_CONCURRENT_REQUESTS" => limits.max_concurrent_requests = (n > 0).then_some(n),
        "MAX_CPU_PERCENT" | "CPU_SHARE_PERCENT" if n > 100 => return Err(out_of_range(100)),
        "MAX_CPU_PERCENT" => limits.max_cpu_percent = (n > 0 && n < 100).then_some(n),
        "CPU_SHARE_PERCENT" => limits.cpu_share_percent = (n > 0 && n < 100).then_some(n),
        "MAX_LOG_RATE_KB" if n > MAX_LOG_RATE_KB => return Err(out_of_range(MAX_LOG_RATE_KB)),
        "MAX_LOG_RATE_KB" => limits.max_log_rate_kb = (n > 0).then_some(n),
        _ if n > MAX_SPACE_MB => return Err(out_of_range(MAX_SPACE_MB)),
        "MAX_BUFFER_POOL_MB" => limits.max_buffer_pool_mb = (n > 0).then_some(n),
        "MAX_TEMPDB_MB" => limits.max_tempdb_mb = (n > 0).then_some(n),
        _ => unreachable!("alter_database passes only the limits here, not {opt}"),
    }
    Ok(())
}

/// The highest `MAX_LOG_RATE_KB` (16 GiB/s: beyond any log device).
const MAX_LOG_RATE_KB: u32 = 16 << 20;
/// The highest `MAX_BUFFER_POOL_MB` and `MAX_TEMPDB_MB` (16 TiB).
const MAX_SPACE_MB: u32 = 16 << 20;

/// `SET CONTAINMENT = PARTIAL | NONE`: whether the database's users may have passwords of
/// their own and log in straight into it (needs 'contained database authentication').
fn set_containment(ctx: &ExecCtx, database: &std::sync::Arc<tessera_database::Database>, value: &str) -> SqlResult<()> {
    let contained = match value {
        "PARTIAL" => true,
        "NONE" => false,
        _ => return Err(msg::SYNTAX_ERROR_NEAR.with(&[&value])),
    };
    if contained && ctx.shared.config.run_value(crate::config::CONTAINED_AUTHENTICATION) != Some(1) {
        return Err(msg::CONTAINED_AUTH_DISABLED.err());
    }
    ctx.shared.alter_security(database, |s| {
        if !contained && s.principals().any(|p| p.kind == tessera_security::principals::PrincipalKind::ContainedUser) {
            return Err(msg::CONTAINED_USERS_WITH_PASSWORD.err());
        }
        let mut next = s.clone();
        next.set_contained(contained);
        Ok((next, ()))
    })
}

/// `MODIFY FILE (NAME = …, MAXSIZE = …, FILEGROWTH = …)` on the data file (logical name
/// the database's) or the log file (the database's with `_log`), as sp_helpdb lists them.
fn modify_file(ctx: &ExecCtx, db: &str, spec: &ast::FileSpec, options: &mut DatabaseOptions) -> SqlResult<()> {
    let logical = files::option(spec, "NAME").unwrap_or_default();
    let kind = if logical.eq_ignore_ascii_case(db) {
        FileKind::Data
    } else if logical.eq_ignore_ascii_case(&format!("{db}_log")) {
        FileKind::Log
    } else {
        return Err(msg::MODIFY_FILE_NOT_FOUND.with(&[&logical]));
    };
    if !spec.options.iter().any(|(k, _)| k != "NAME") {
        return Err(msg::MODIFY_FILE_NO_PROPERTY.with(&[&logical]));
    }
    if let Some((k, _)) =
        spec.options.iter().find(|(k, _)| !["NAME", "SIZE", "MAXSIZE", "FILEGROWTH"].contains(&k.as_str()))
    {
        return Err(msg::DATABASE_OPTION_NOT_SETTABLE
            .with(&[&format!("Option '{k}' cannot be modified for file '{logical}' in"), &db]));
    }
    let sizes = files::sizes(spec, logical)?;
    let registered = ctx.shared.engine.entry(db).ok_or_else(|| tessera_semantics::catalog::database_not_found(db))?;
    let (data, log) = registered.file_bytes();
    let current = if kind == FileKind::Data { data } else { log };
    if let Some(size) = sizes.size {
        if size <= current {
            return Err(msg::MODIFY_FILE_SIZE_NOT_LARGER.err());
        }
        return Err(msg::DATABASE_OPTION_NOT_SETTABLE.with(&[
            &format!("Option 'SIZE' of MODIFY FILE (tessera grows a file as it fills: set FILEGROWTH and MAXSIZE) cannot be set for file '{logical}' in"),
            &db,
        ]));
    }
    if let Some(Some(max)) = sizes.max_size {
        if max < current {
            let file_id = if kind == FileKind::Data { 1 } else { 2 };
            return Err(msg::FILE_SIZE_EXCEEDS_MAXSIZE.with(&[&db, &file_id, &(current / 1024), &(max / 1024)]));
        }
    }
    let max_after = match (kind, sizes.max_size) {
        (_, Some(m)) => m,
        (FileKind::Data, None) => options.max_data_size,
        (FileKind::Log, None) => options.max_log_size,
    };
    if let (Some(Growth::Bytes(growth)), Some(max)) = (sizes.growth, max_after) {
        if growth > max {
            return Err(msg::FILEGROWTH_EXCEEDS_MAXSIZE.with(&[&logical]));
        }
    }
    sizes.apply(kind, options);
    Ok(())
}
