//! System stored procedures (`sp_…`), implemented in Rust. `sp_executesql`,
//! `sp_MSforeachdb`, `sp_attach_db`, `sp_detach_db`, `sp_describe_first_result_set` (the
//! session binds the batch; `describe` sends what it found) and the prepared-statement
//! procedures are run by the session itself (they execute or bind batches, or run DDL);
//! the others produce result sets from the engine, the catalogs and the configuration
//! (`errorlog`: `sp_cycle_errorlog`, `sp_readerrorlog` and `xp_readerrorlog` over the
//! server's ERRORLOG).

use crate::runtime::ExecCtx;
use crate::sysviews::{growth_in_force, FileKind};
use std::sync::Arc;
use tessera_errors::msg;
use tessera_errors::{SqlError, SqlResult};
use tessera_semantics::catalog::Catalog;
use tessera_semantics::output::{Command, OutputColumn, ResultSink};
use tessera_semantics::types::{self, SqlType, Value};

pub use properties::PropertyChange;

pub mod applock;
pub mod describe;
pub mod errorlog;
mod help;
mod odbc;
mod properties;
mod query_store;
mod roles;
mod server_info;

/// An argument of a system procedure: its `@name` if given by name, and its value
/// (None for DEFAULT).
pub type NamedArg = (Option<String>, Option<(Value, SqlType)>);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SystemProc {
    ExecuteSql,
    /// `sp_sequence_get_range`: OUTPUT parameters only, set in the session.
    SequenceGetRange,
    ForEachDb,
    AttachDb,
    DetachDb,
    Configure,
    Who,
    Who2,
    HelpDb,
    Help,
    HelpIndex,
    HelpConstraint,
    HelpText,
    Depends,
    Tables,
    /// `sp_columns`, or with `wide` `sp_columns_100` (ten more columns).
    Columns {
        wide: bool,
    },
    PrimaryKeys,
    ForeignKeys,
    Statistics,
    SpecialColumns,
    StoredProcedures,
    ProcedureColumns {
        wide: bool,
    },
    DataTypeInfo {
        wide: bool,
    },
    ServerInfo,
    DescribeFirstResultSet,
    DescribeUndeclaredParameters,
    Databases,
    GetAppLock,
    ReleaseAppLock,
    AddRoleMember,
    DropRoleMember,
    AddServerRoleMember,
    DropServerRoleMember,
    TableOption,
    Rename,
    ExtendedProperty(PropertyChange),
    CycleErrorLog,
    ReadErrorLog(errorlog::Reader),
    QueryStore(query_store::Procedure),
}

/// The system procedure a name refers to (`sp_who`, `sys.sp_who`, `master.dbo.sp_who`
/// all end in the same name).
pub fn lookup(name: &str) -> Option<SystemProc> {
    Some(match name.to_ascii_lowercase().as_str() {
        "sp_executesql" => SystemProc::ExecuteSql,
        "sp_sequence_get_range" => SystemProc::SequenceGetRange,
        "sp_msforeachdb" => SystemProc::ForEachDb,
        "sp_attach_db" => SystemProc::AttachDb,
        "sp_detach_db" => SystemProc::DetachDb,
        "sp_configure" => SystemProc::Configure,
        "sp_who" => SystemProc::Who,
        "sp_who2" => SystemProc::Who2,
        "sp_helpdb" => SystemProc::HelpDb,
        "sp_help" => SystemProc::Help,
        "sp_helpindex" => SystemProc::HelpIndex,
        "sp_helpconstraint" => SystemProc::HelpConstraint,
        "sp_helptext" => SystemProc::HelpText,
        "sp_depends" => SystemProc::Depends,
        "sp_tables" => SystemProc::Tables,
        "sp_columns" => SystemProc::Columns { wide: false },
        "sp_columns_100" => SystemProc::Columns { wide: true },
        "sp_pkeys" => SystemProc::PrimaryKeys,
        "sp_fkeys" => SystemProc::ForeignKeys,
        "sp_statistics" | "sp_statistics_100" => SystemProc::Statistics,
        "sp_special_columns" | "sp_special_columns_100" => SystemProc::SpecialColumns,
        "sp_stored_procedures" => SystemProc::StoredProcedures,
        "sp_sproc_columns" => SystemProc::ProcedureColumns { wide: false },
        "sp_sproc_columns_100" => SystemProc::ProcedureColumns { wide: true },
        "sp_datatype_info" => SystemProc::DataTypeInfo { wide: false },
        "sp_datatype_info_100" => SystemProc::DataTypeInfo { wide: true },
        "sp_server_info" => SystemProc::ServerInfo,
        "sp_describe_first_result_set" => SystemProc::DescribeFirstResultSet,
        "sp_describe_undeclared_parameters" => SystemProc::DescribeUndeclaredParameters,
        "sp_databases" => SystemProc::Databases,
        "sp_getapplock" => SystemProc::GetAppLock,
        "sp_releaseapplock" => SystemProc::ReleaseAppLock,
        "sp_addrolemember" => SystemProc::AddRoleMember,
        "sp_droprolemember" => SystemProc::DropRoleMember,
        "sp_addsrvrolemember" => SystemProc::AddServerRoleMember,
        "sp_dropsrvrolemember" => SystemProc::DropServerRoleMember,
        "sp_tableoption" => SystemProc::TableOption,
        "sp_rename" => SystemProc::Rename,
        "sp_addextendedproperty" => SystemProc::ExtendedProperty(properties::PropertyChange::Add),
        "sp_updateextendedproperty" => SystemProc::ExtendedProperty(properties::PropertyChange::Update),
        "sp_dropextendedproperty" => SystemProc::ExtendedProperty(properties::PropertyChange::Drop),
        "sp_cycle_errorlog" => SystemProc::CycleErrorLog,
        "sp_readerrorlog" => SystemProc::ReadErrorLog(errorlog::Reader::Procedure),
        "xp_readerrorlog" => SystemProc::ReadErrorLog(errorlog::Reader::Extended),
        "sp_query_store_flush_db" => SystemProc::QueryStore(query_store::Procedure::Flush),
        "sp_query_store_remove_query" => SystemProc::QueryStore(query_store::Procedure::RemoveQuery),
        "sp_query_store_remove_plan" => SystemProc::QueryStore(query_store::Procedure::RemovePlan),
        "sp_query_store_reset_exec_stats" => SystemProc::QueryStore(query_store::Procedure::ResetExecStats),
        _ => return None,
    })
}

fn col(name: &str, ty: SqlType, nullable: bool) -> OutputColumn {
    OutputColumn { name: name.to_string(), ty, nullable }
}

const SYSNAME: SqlType = SqlType::NVarChar(128);

fn s(v: &str) -> Value {
    Value::str(v)
}

fn int(v: i64) -> Value {
    Value::Int(v)
}

/// Sends one result set; `nocount` decides whether the count goes with it.
fn result(ctx: &ExecCtx, sink: &mut dyn ResultSink, columns: &[OutputColumn], rows: &[Vec<Value>]) {
    sink.columns(columns);
    for r in rows {
        sink.row(r);
    }
    let count = (!ctx.session.options.nocount).then_some(rows.len() as u64);
    sink.done(count, Command::Select);
}

/// The text value of the argument at `position` or named `name`.
pub fn text_arg(args: &[NamedArg], position: usize, name: &str) -> Option<String> {
    let by_name = args.iter().find(|(n, _)| n.as_deref().is_some_and(|n| n.eq_ignore_ascii_case(name)));
    let arg = by_name.or_else(|| args.get(position).filter(|(n, _)| n.is_none()))?;
    match &arg.1 {
        Some((Value::Null, _)) | None => None,
        Some((v, t)) => match types::cast(v, t, &SqlType::NVarChar(4000), None) {
            Ok(Value::Str(text)) => Some(text.to_string()),
            _ => None,
        },
    }
}

/// The argument at `position` or named `name` (None: NULL or not given).
fn arg<'a>(args: &'a [NamedArg], position: usize, name: &str) -> Option<&'a (Value, SqlType)> {
    let by_name = args.iter().find(|(n, _)| n.as_deref().is_some_and(|n| n.eq_ignore_ascii_case(name)));
    let arg = by_name.or_else(|| args.get(position).filter(|(n, _)| n.is_none()))?;
    arg.1.as_ref().filter(|(v, _)| !matches!(v, Value::Null))
}

/// The argument at `position` or named `name`, as a number (None: NULL or not given).
fn int_arg(args: &[NamedArg], position: usize, name: &str) -> SqlResult<Option<i64>> {
    let Some((v, t)) = arg(args, position, name) else { return Ok(None) };
    match types::cast(v, t, &SqlType::BigInt, None)? {
        Value::Int(n) => Ok(Some(n)),
        _ => Ok(None),
    }
}

pub fn too_many(proc_name: &str, args: &[NamedArg], max: usize) -> SqlResult<()> {
    if args.len() > max {
        return Err(msg::TOO_MANY_ARGUMENTS.with(&[&proc_name]));
    }
    Ok(())
}

/// Runs a system procedure other than `sp_executesql`; returns its return status.
pub fn run(which: SystemProc, args: &[NamedArg], ctx: &mut ExecCtx, sink: &mut dyn ResultSink) -> SqlResult<i32> {
    match which {
        SystemProc::ExecuteSql
        | SystemProc::SequenceGetRange
        | SystemProc::ForEachDb
        | SystemProc::AttachDb
        | SystemProc::DetachDb
        | SystemProc::DescribeFirstResultSet
        | SystemProc::DescribeUndeclaredParameters => {
            Err(SqlError::new(50000, "this system procedure runs in the session"))
        }
        SystemProc::Configure => configure(args, ctx, sink),
        SystemProc::Who => who(args, ctx, sink),
        SystemProc::Who2 => who2(args, ctx, sink),
        SystemProc::HelpDb => helpdb(args, ctx, sink),
        SystemProc::Help => help::help(args, ctx, sink),
        SystemProc::HelpIndex => help::helpindex(args, ctx, sink),
        SystemProc::HelpConstraint => help::helpconstraint(args, ctx, sink),
        SystemProc::HelpText => help::helptext(args, ctx, sink),
        SystemProc::Depends => help::depends(args, ctx, sink),
        SystemProc::Tables => odbc::sp_tables(args, ctx, sink),
        SystemProc::Columns { wide } => odbc::sp_columns(wide, args, ctx, sink),
        SystemProc::PrimaryKeys => odbc::sp_pkeys(args, ctx, sink),
        SystemProc::ForeignKeys => odbc::sp_fkeys(args, ctx, sink),
        SystemProc::Statistics => odbc::sp_statistics(args, ctx, sink),
        SystemProc::SpecialColumns => odbc::sp_special_columns(args, ctx, sink),
        SystemProc::StoredProcedures => odbc::sp_stored_procedures(args, ctx, sink),
        SystemProc::ProcedureColumns { wide } => odbc::sp_sproc_columns(wide, args, ctx, sink),
        SystemProc::DataTypeInfo { wide } => odbc::sp_datatype_info(wide, args, ctx, sink),
        SystemProc::ServerInfo => server_info::sp_server_info(args, ctx, sink),
        SystemProc::Databases => databases(args, ctx, sink),
        SystemProc::GetAppLock => applock::get(args, ctx),
        SystemProc::ReleaseAppLock => applock::release(args, ctx),
        SystemProc::AddRoleMember => roles::database_role_member(args, ctx, true),
        SystemProc::DropRoleMember => roles::database_role_member(args, ctx, false),
        SystemProc::AddServerRoleMember => roles::server_role_member(args, ctx, true),
        SystemProc::DropServerRoleMember => roles::server_role_member(args, ctx, false),
        SystemProc::TableOption => table_option(args, ctx),
        SystemProc::Rename => rename(args, ctx, sink),
        SystemProc::ExtendedProperty(change) => properties::run(change, args, ctx),
        SystemProc::CycleErrorLog => errorlog::cycle(args, ctx, sink),
        SystemProc::ReadErrorLog(reader) => errorlog::read(reader, args, ctx, sink),
        SystemProc::QueryStore(procedure) => query_store::run(procedure, args, ctx),
    }
}

/// sp_tableoption @TableNamePattern, @OptionName, @OptionValue. The option tessera's
/// storage has is 'large value types out of row' (ON/OFF, 1/0, TRUE/FALSE); it applies
/// to values stored from then on, as in SQL Server. Any other option is 15600 (SQL
/// Server's 'text in row' and 'vardecimal storage format' apply to types tessera does not
/// have; 'table lock on bulk load' is not kept).
fn table_option(args: &[NamedArg], ctx: &mut ExecCtx) -> SqlResult<i32> {
    const PROC: &str = "sp_tableoption";
    too_many(PROC, args, 3)?;
    let arg =
        |i: usize, name: &str| text_arg(args, i, name).ok_or_else(|| msg::MISSING_PARAMETER.with(&[&PROC, &name]));
    let (table, option, value) = (arg(0, "@TableNamePattern")?, arg(1, "@OptionName")?, arg(2, "@OptionValue")?);
    let invalid = || msg::INVALID_PROCEDURE_PARAMETER.with(&[&"sys.sp_tableoption"]);
    if !option.trim().eq_ignore_ascii_case("large value types out of row") {
        return Err(invalid());
    }
    let on = match value.trim().to_ascii_lowercase().as_str() {
        "on" | "true" | "1" => true,
        "off" | "false" | "0" => false,
        _ => return Err(invalid()),
    };
    let name = object_name(&table).ok_or_else(invalid)?;
    crate::ddl::set_large_values_out_of_row(ctx, &name, on)?;
    Ok(0)
}

/// sp_rename @objname, @newname [, @objtype]: a table, view, procedure, function or
/// constraint (@objtype NULL or OBJECT), a column (COLUMN, `table.column`) or an index
/// (INDEX, `table.index`) renamed, with SQL Server's caution (15477).
fn rename(args: &[NamedArg], ctx: &mut ExecCtx, sink: &mut dyn ResultSink) -> SqlResult<i32> {
    use crate::ddl::RenameKind;
    const PROC: &str = "sp_rename";
    too_many(PROC, args, 3)?;
    let arg =
        |i: usize, name: &str| text_arg(args, i, name).ok_or_else(|| msg::MISSING_PARAMETER.with(&[&PROC, &name]));
    let (objname, newname) = (arg(0, "@objname")?, arg(1, "@newname")?);
    let kind = match text_arg(args, 2, "@objtype") {
        None => RenameKind::Unspecified,
        Some(k) => match k.trim().to_ascii_uppercase().as_str() {
            "OBJECT" => RenameKind::Object,
            "COLUMN" => RenameKind::Column,
            "INDEX" => RenameKind::Index,
            _ => return Err(msg::RENAME_UNKNOWN_TYPE.with(&[&k])),
        },
    };
    let current_db = ctx.session.database.clone();
    let not_found = || {
        let word = if kind == RenameKind::Unspecified { "(null)" } else { "OBJECT" };
        msg::RENAME_ITEM_NOT_FOUND.with(&[&objname, &current_db, &word])
    };
    let mut name = object_name(&objname).ok_or_else(not_found)?;
    // A column or an index may be named with the current database in front.
    let parts = name.0.len();
    if parts == 4 {
        if !name.0[0].value.eq_ignore_ascii_case(&ctx.session.database) {
            return Err(msg::QUALIFIER_NOT_CURRENT_DATABASE.err());
        }
        name.0.remove(0);
    }
    let module = match kind {
        RenameKind::Unspecified | RenameKind::Object if name.0.len() < 4 => crate::modules::find(ctx, &name)?,
        _ => None,
    };
    let sequence = match kind {
        RenameKind::Unspecified | RenameKind::Object if module.is_none() && name.0.len() < 4 => {
            crate::sequences::find(ctx, &name)?
        }
        _ => None,
    };
    if let Some((database, s)) = sequence {
        if crate::ddl::name_in_use(&*ctx.catalog(&database)?, &s.schema, &newname) {
            return Err(msg::RENAME_NAME_IN_USE.with(&[&newname, &"object"]));
        }
        crate::sequences::rename(ctx, &database, s, &newname)?;
        sink.message(&msg::RENAME_CAUTION.err());
        return Ok(0);
    }
    match module {
        Some((db, m)) if db.eq_ignore_ascii_case(&ctx.session.database) => {
            let database = ctx.shared.database(&db)?;
            if crate::ddl::name_in_use(&*ctx.catalog(&database)?, &m.schema, &newname) {
                return Err(msg::RENAME_NAME_IN_USE.with(&[&newname, &"object"]));
            }
            crate::modules::rename(ctx, &database, &m.schema, &m.name, &newname)?;
        }
        // Without @objtype, a name that finds no object or constraint may be
        // `[schema.]table.column`, as SQL Server's sp_rename takes it.
        _ if kind == RenameKind::Unspecified && parts >= 2 => {
            let missing = not_found();
            let as_object =
                if parts < 4 { crate::ddl::rename(ctx, &name, &objname, &newname, kind) } else { Err(missing.clone()) };
            match as_object {
                Err(e) if e.number == missing.number => {
                    crate::ddl::rename(ctx, &name, &objname, &newname, RenameKind::Column).map_err(|_| e)?
                }
                other => other?,
            }
        }
        _ => crate::ddl::rename(ctx, &name, &objname, &newname, kind)?,
    }
    sink.message(&msg::RENAME_CAUTION.err());
    Ok(0)
}

/// A multi-part name as a procedure's text argument gives it (`dbo.t`, `[my table]`).
fn object_name(text: &str) -> Option<tessera_syntax::ast::ObjectName> {
    use tessera_syntax::ast::{Ident, ObjectName};
    let mut parts = Vec::new();
    let (mut part, mut quoted, mut chars) = (String::new(), false, text.trim().chars().peekable());
    while let Some(c) = chars.next() {
        match c {
            '[' if part.is_empty() && !quoted => {
                quoted = true;
                loop {
                    match chars.next()? {
                        ']' if chars.peek() == Some(&']') => {
                            chars.next();
                            part.push(']');
                        }
                        ']' => break,
                        c => part.push(c),
                    }
                }
            }
            '.' => parts.push(Ident { value: std::mem::take(&mut part), quoted: std::mem::take(&mut quoted) }),
            c if !quoted => part.push(c),
            _ => return None,
        }
    }
    parts.push(Ident { value: part, quoted });
    (parts.len() <= 4 && parts.last().is_some_and(|p| !p.value.is_empty())).then_some(ObjectName(parts))
}

fn configure(args: &[NamedArg], ctx: &mut ExecCtx, sink: &mut dyn ResultSink) -> SqlResult<i32> {
    too_many("sp_configure", args, 2)?;
    let name = text_arg(args, 0, "@configname");
    let value = args.get(1).and_then(|(_, v)| v.clone());
    let config = &ctx.shared.config;
    let columns = [
        col("name", SqlType::NVarChar(35), false),
        col("minimum", SqlType::Int, false),
        col("maximum", SqlType::Int, false),
        col("config_value", SqlType::Int, false),
        col("run_value", SqlType::Int, false),
    ];
    let row = |def: &crate::config::OptionDef, configured: i64, running: i64| {
        vec![s(def.name), int(def.minimum), int(def.maximum), int(configured), int(running)]
    };
    match (name, value) {
        (None, _) => {
            let rows: Vec<_> = config.listing(None).into_iter().map(|(d, c, r)| row(d, c, r)).collect();
            result(ctx, sink, &columns, &rows);
        }
        (Some(name), None) => {
            // Every option the name is a prefix of (or the one it names exactly).
            let rows: Vec<_> = match config.find(&name) {
                Ok(def) => {
                    vec![row(def, config.configured_value(def), config.run_value(def.name).unwrap_or(def.default))]
                }
                Err(e) if e.number == 15125 => {
                    config.listing(Some(&name)).into_iter().map(|(d, c, r)| row(d, c, r)).collect()
                }
                Err(e) => return Err(e),
            };
            result(ctx, sink, &columns, &rows);
        }
        (Some(name), Some((v, t))) => {
            if !ctx.shared.holds_server(ctx.session, "ALTER SETTINGS") {
                return Err(crate::ddl::logins::no_permission());
            }
            let value = match types::cast(&v, &t, &SqlType::BigInt, None) {
                Ok(Value::Int(n)) => n,
                _ => return Err(msg::INVALID_CONFIG_VALUE.with(&[&types::display_text(&v, &t), &name, &""])),
            };
            let change = config.set(&name, value)?;
            sink.message(&msg::CONFIG_OPTION_CHANGED.with(&[&change.name, &change.old, &change.new]));
        }
    }
    Ok(0)
}

/// The sessions sp_who and sp_who2 list: every one with VIEW SERVER STATE, else only
/// the caller's (as SQL Server), kept by `@loginame` (a login, a session id, or `active`).
fn who_sessions(
    procedure: &str,
    args: &[NamedArg],
    ctx: &ExecCtx,
) -> SqlResult<Vec<(crate::runtime::SessionInfo, crate::runtime::Activity)>> {
    too_many(procedure, args, 1)?;
    let filter = text_arg(args, 0, "@loginame");
    let everyone = ctx.shared.holds_server(ctx.session, "VIEW SERVER STATE");
    let me = ctx.session.spid;
    let mut sessions: Vec<_> =
        ctx.shared.sessions.lock().values().filter(|i| everyone || i.spid == me).cloned().collect();
    sessions.sort_by_key(|i| i.spid);
    Ok(sessions
        .into_iter()
        .map(|info| {
            let now = info.activity.lock().clone();
            (info, now)
        })
        .filter(|(info, now)| match &filter {
            None => true,
            Some(f) if f.eq_ignore_ascii_case("active") => now.running,
            Some(f) => match f.parse::<i32>() {
                Ok(spid) => spid == info.spid,
                Err(_) => f.eq_ignore_ascii_case(&info.login),
            },
        })
        .collect())
}

/// A session's status as sp_who shows it (`suspended` while its request waits) and the
/// session blocking it (0: none).
fn who_status(info: &crate::runtime::SessionInfo, now: &crate::runtime::Activity) -> (&'static str, i32) {
    match (now.running, info.waits.current()) {
        (true, Some(w)) => ("suspended", w.blocker),
        (true, None) => ("runnable", 0),
        (false, _) => ("sleeping", 0),
    }
}

/// The command sp_who shows: the running request's, as sys.dm_exec_requests names it,
/// else AWAITING COMMAND.
fn who_command(now: &crate::runtime::Activity) -> String {
    let cmd = now.running_text().map_or_else(|| "AWAITING COMMAND".to_string(), crate::sysviews::command);
    cmd.chars().take(16).collect()
}

fn who(args: &[NamedArg], ctx: &mut ExecCtx, sink: &mut dyn ResultSink) -> SqlResult<i32> {
    let sessions = who_sessions("sp_who", args, ctx)?;
    let columns = [
        col("spid", SqlType::SmallInt, false),
        col("ecid", SqlType::SmallInt, false),
        col("status", SqlType::NChar(30), false),
        col("loginame", SYSNAME, true),
        col("hostname", SqlType::NChar(128), false),
        col("blk", SqlType::Char(5), true),
        col("dbname", SYSNAME, true),
        col("cmd", SqlType::NChar(16), false),
        col("request_id", SqlType::Int, false),
    ];
    let mut rows = Vec::new();
    for (info, now) in sessions {
        let (status, blocker) = who_status(&info, &now);
        rows.push(vec![
            int(i64::from(info.spid)),
            int(0),
            s(&format!("{status:<30}")),
            s(&info.login),
            s(&format!("{:<128}", info.host_name)),
            s(&format!("{blocker:<5}")),
            s(&now.database),
            s(&format!("{:<16}", who_command(&now))),
            int(0),
        ]);
    }
    result(ctx, sink, &columns, &rows);
    Ok(0)
}

/// sp_who2: sp_who's sessions with their CPU time (ms), pages read from disk, the start
/// of their last batch (`MM/DD hh:mm:ss`, UTC) and program, and the blocking session
/// (`  .` when none), in SQL Server's columns.
fn who2(args: &[NamedArg], ctx: &mut ExecCtx, sink: &mut dyn ResultSink) -> SqlResult<i32> {
    let sessions = who_sessions("sp_who2", args, ctx)?;
    let columns = [
        col("SPID", SqlType::Char(5), false),
        col("Status", SqlType::VarChar(30), false),
        col("Login", SYSNAME, true),
        col("HostName", SYSNAME, true),
        col("BlkBy", SqlType::Char(5), false),
        col("DBName", SYSNAME, true),
        col("Command", SqlType::VarChar(16), false),
        col("CPUTime", SqlType::Int, false),
        col("DiskIO", SqlType::Int, false),
        col("LastBatch", SqlType::VarChar(14), false),
        col("ProgramName", SYSNAME, true),
        col("SPID", SqlType::Char(5), false),
        col("REQUESTID", SqlType::Int, false),
    ];
    let mut rows = Vec::new();
    for (info, now) in sessions {
        let (status, blocker) = who_status(&info, &now);
        let spid = format!("{:<5}", info.spid);
        let secs = now.start_ms.div_euclid(1000);
        let date = crate::sysviews::datetime(secs);
        let last_batch = match date {
            Value::DateTime { days, .. } => {
                let (_, month, day) = tessera_semantics::types::civil_from_days(days);
                let t = secs.rem_euclid(86_400);
                format!("{month:02}/{day:02} {:02}:{:02}:{:02}", t / 3600, t / 60 % 60, t % 60)
            }
            _ => String::new(),
        };
        let cpu_ms = i64::try_from(info.waits.cpu().as_millis()).unwrap_or(i64::MAX).min(i64::from(i32::MAX));
        rows.push(vec![
            s(&spid),
            s(status),
            s(&info.login),
            s(&info.host_name),
            s(&if blocker == 0 { "  .  ".to_string() } else { format!("{blocker:<5}") }),
            s(&now.database),
            s(&who_command(&now)),
            int(cpu_ms),
            int(i64::try_from(info.waits.disk_reads()).unwrap_or(i64::MAX).min(i64::from(i32::MAX))),
            s(&last_batch),
            s(&info.program_name),
            s(&spid),
            int(0),
        ]);
    }
    result(ctx, sink, &columns, &rows);
    Ok(0)
}

/// sp_helpdb's maxsize: `Unlimited` or kilobytes.
fn max_text(max: Option<u64>) -> String {
    max.map_or_else(|| "Unlimited".to_string(), |m| format!("{} KB", m / 1024))
}

/// sp_helpdb's growth: kilobytes or a percentage.
fn growth_text(growth: tessera_database::Growth) -> String {
    match growth {
        tessera_database::Growth::Percent(p) => format!("{p}%"),
        tessera_database::Growth::Bytes(b) => format!("{} KB", b / 1024),
    }
}

fn mb(bytes: u64) -> String {
    format!("{:>10.2} MB", bytes as f64 / (1024.0 * 1024.0))
}

fn helpdb(args: &[NamedArg], ctx: &mut ExecCtx, sink: &mut dyn ResultSink) -> SqlResult<i32> {
    too_many("sp_helpdb", args, 1)?;
    let only = text_arg(args, 0, "@dbname");
    let databases = match &only {
        Some(n) => match ctx.shared.engine.entry(n).filter(|_| ctx.shared.may_see_database(ctx.session, n)) {
            Some(d) => vec![d],
            None => {
                return Err(msg::NO_SUCH_DATABASE.with(&[&n]));
            }
        },
        None => ctx.shared.visible_databases(ctx.session),
    };
    let columns = [
        col("name", SYSNAME, true),
        col("db_size", SqlType::NVarChar(13), true),
        col("owner", SYSNAME, true),
        col("dbid", SqlType::SmallInt, false),
        col("created", SqlType::NVarChar(11), true),
        col("status", SqlType::NVarChar(600), true),
        col("compatibility_level", SqlType::TinyInt, false),
    ];
    let mut rows = Vec::new();
    let mut files = Vec::new();
    let engine_config = ctx.shared.engine.config().clone();
    for db in &databases {
        let o = &db.options;
        let (data, log) = db.file_bytes();
        let status = format!(
            "Status={}, Updateability=READ_WRITE, UserAccess=MULTI_USER, Recovery={}, Version=957, Collation={}, SQLSortOrder=52, IsAutoCreateStatistics, IsAutoUpdateStatistics",
            db.state.name(),
            o.recovery_model.name(),
            crate::runtime::DEFAULT_COLLATION
        );
        rows.push(vec![
            s(&db.name),
            s(&mb(data + log)),
            ctx.shared.owner_name(db).map_or(Value::Null, |n| s(&n)),
            int(i64::from(db.id)),
            s("Nov 22 2026"),
            s(&status),
            int(160),
        ]);
        if only.is_some() {
            let (data_path, log_path) = (&db.data_path, &db.log_path);
            let kb = |b: u64| format!("{} KB", b / 1024);
            files.push(vec![
                s(&db.name),
                int(1),
                s(&data_path.display().to_string()),
                s("PRIMARY"),
                s(&kb(data)),
                s(&max_text(o.max_data_size)),
                s(&growth_text(growth_in_force(db, FileKind::Data, &engine_config))),
                s("data only"),
            ]);
            files.push(vec![
                s(&format!("{}_log", db.name)),
                int(2),
                s(&log_path.display().to_string()),
                Value::Null,
                s(&kb(log)),
                s(&max_text(o.max_log_size)),
                s(&growth_text(growth_in_force(db, FileKind::Log, &engine_config))),
                s("log only"),
            ]);
        }
    }
    result(ctx, sink, &columns, &rows);
    if only.is_some() {
        let file_columns = [
            col("name", SqlType::NChar(128), false),
            col("fileid", SqlType::SmallInt, false),
            col("filename", SqlType::NChar(260), false),
            col("filegroup", SqlType::NVarChar(128), true),
            col("size", SqlType::NVarChar(18), true),
            col("maxsize", SqlType::NVarChar(18), true),
            col("growth", SqlType::NVarChar(18), true),
            col("usage", SqlType::VarChar(9), false),
        ];
        result(ctx, sink, &file_columns, &files);
    }
    Ok(0)
}

/// The current database's catalog as the session may see it (only the objects it holds
/// some permission on, as the catalog views show them).
fn current_catalog(ctx: &ExecCtx) -> SqlResult<(String, Arc<Catalog>)> {
    let (db, catalog) = crate::sysviews::catalog(ctx, &ctx.session.database)?;
    Ok((db.name().to_string(), catalog))
}

fn databases(args: &[NamedArg], ctx: &mut ExecCtx, sink: &mut dyn ResultSink) -> SqlResult<i32> {
    too_many("sp_databases", args, 0)?;
    let columns = [
        col("DATABASE_NAME", SYSNAME, true),
        col("DATABASE_SIZE", SqlType::Int, true),
        col("REMARKS", SqlType::VarChar(254), true),
    ];
    let mut rows = Vec::new();
    for db in ctx.shared.visible_databases(ctx.session) {
        let (data, log) = db.file_bytes();
        rows.push(vec![s(&db.name), int(((data + log) / 1024) as i64), Value::Null]);
    }
    result(ctx, sink, &columns, &rows);
    Ok(0)
}
