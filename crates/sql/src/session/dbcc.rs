//! DBCC commands: FREEPROCCACHE, DROPCLEANBUFFERS, CHECKDB (structure, allocation and
//! every nonclustered index against its table, with REPAIR_REBUILD), TRACEON, TRACEOFF,
//! TRACESTATUS, USEROPTIONS, SQLPERF (LOGSPACE, and clearing the wait statistics),
//! INPUTBUFFER, OPENTRAN and ERRORLOG (cycling the server's log).

use super::Runner;
use tessera_errors::msg;
use tessera_errors::SqlResult;
use tessera_execution::ddl;
use tessera_semantics::output::Command;
use tessera_semantics::output::ResultSink;
use tessera_semantics::types::{SqlType, Value};
use tessera_syntax::ast::{self, Statement};

impl Runner<'_> {
    /// Sends one result set of `columns` (name, type; none NULL) and `rows`.
    fn result(&mut self, columns: &[(&str, SqlType)], rows: &[Vec<Value>]) {
        let columns: Vec<_> = columns
            .iter()
            .map(|&(name, ty)| tessera_semantics::output::OutputColumn { name: name.into(), ty, nullable: false })
            .collect();
        self.sink.columns(&columns);
        for r in rows {
            self.sink.row(r);
        }
        self.sink.done(None, Command::Select);
    }

    /// DBCC OPENTRAN: the oldest transaction in database `name`'s log (who, since when,
    /// its first LSN), as messages or, WITH TABLERESULTS, as (Property, Value) rows.
    fn opentran(&mut self, name: &str, table: bool, quiet: bool) -> SqlResult<()> {
        let oldest = self.with_ctx(|ctx| tessera_execution::sysviews::oldest_active(ctx, name))?;
        let database = self.shared.database(name)?.name().to_string();
        let Some(t) = oldest else {
            if !quiet {
                self.sink.message(&msg::OPENTRAN_NONE.err());
            }
            return Ok(());
        };
        let start = opentran_time(t.begin_ms);
        if table {
            let rows: Vec<Vec<Value>> = [
                ("OLDACT_SPID", t.spid.to_string()),
                ("OLDACT_UID", "-1".to_string()),
                ("OLDACT_NAME", t.name.clone()),
                ("OLDACT_LSN", t.lsn.clone()),
                ("OLDACT_STARTTIME", start),
                ("OLDACT_SID", t.sid.clone()),
            ]
            .into_iter()
            .map(|(p, v)| vec![Value::str(p), Value::str(&v)])
            .collect();
            self.result(&[("Property", SqlType::VarChar(128)), ("Value", SqlType::VarChar(128))], &rows);
        } else {
            self.sink.message(&msg::OPENTRAN_DATABASE.with(&[&database]));
            self.sink.message(&msg::OPENTRAN_OLDEST.with(&[&t.spid, &t.name, &t.lsn, &start, &t.sid]));
        }
        Ok(())
    }

    /// DBCC SQLPERF(LOGSPACE): each open database's log size and the part in use;
    /// DBCC SQLPERF('sys.dm_os_wait_stats', CLEAR): the wait statistics start again.
    fn sqlperf(&mut self, s: &Statement, args: &[ast::Expr]) -> SqlResult<()> {
        let word = |e: &ast::Expr, this: &mut Self| -> SqlResult<String> {
            Ok(match e {
                ast::Expr::Column(n) => n.name().value.clone(),
                e => match this.eval_scalar(s, e)?.0 {
                    Value::Str(v) => v.to_string(),
                    _ => String::new(),
                },
            })
        };
        let what = match args.first() {
            Some(e) => word(e, self)?,
            None => return Err(msg::INVALID_DBCC_PARAMETER.err()),
        };
        match args.get(1).map(|e| word(e, self)).transpose()? {
            None if what.eq_ignore_ascii_case("LOGSPACE") => {
                let rows: Vec<Vec<Value>> = self
                    .with_ctx(|ctx| Ok(tessera_execution::sysviews::log_space(ctx)))?
                    .into_iter()
                    .map(|l| {
                        vec![
                            Value::str(&l.database),
                            Value::Float(f64::from(l.size_mb)),
                            Value::Float(f64::from(l.used_percent)),
                            Value::Int(0),
                        ]
                    })
                    .collect();
                self.result(
                    &[
                        ("Database Name", SqlType::NVarChar(128)),
                        ("Log Size (MB)", SqlType::Real),
                        ("Log Space Used (%)", SqlType::Real),
                        ("Status", SqlType::Int),
                    ],
                    &rows,
                );
            }
            Some(clear) if clear.eq_ignore_ascii_case("CLEAR") && what.eq_ignore_ascii_case("sys.dm_os_wait_stats") => {
                tessera_waits::process().clear();
            }
            _ => return Err(msg::INVALID_DBCC_PARAMETER.err()),
        }
        Ok(())
    }

    /// DBCC CHECKDB: the engine's structural checks (trees, allocation), then every
    /// nonclustered index against its table (`checkdb`), each error as SQL Server reports
    /// it, a line per damaged table and the total; with REPAIR_REBUILD each damaged index
    /// is rebuilt from its table.
    fn checkdb(&mut self, s: &Statement, name: &str, repair: bool, quiet: bool) -> SqlResult<()> {
        let db = self.shared.database(name)?;
        let mut errors = 0;
        if let Err(e) = db.check() {
            self.sink.message(&msg::CHECKDB_TABLE_ERROR.with(&[&e]).at_line(s.line));
            errors += 1;
        }
        let findings = self.with_ctx(|ctx| tessera_execution::checkdb::check_indexes(ctx, db.name()))?;
        for f in &findings {
            if f.error_count == 0 {
                continue;
            }
            for e in &f.errors {
                self.sink.message(&e.clone().at_line(s.line));
            }
            errors += f.error_count;
            self.sink.message(&msg::CHECKDB_TABLE_SUMMARY.with(&[&f.error_count, &f.table.name, &f.table.id]));
        }
        if errors > 0 || !quiet {
            self.sink.message(&msg::CHECKDB_DATABASE_SUMMARY.with(&[&"found", &errors, &db.name()]));
        }
        if errors == 0 {
            return Ok(());
        }
        // Damaged large values can only be repaired by losing them.
        let data_loss = findings.iter().any(|f| f.large_value_errors > 0);
        if !repair || data_loss {
            let level = if data_loss { "repair_allow_data_loss" } else { "repair_rebuild" };
            self.sink.message(&msg::CHECKDB_MIN_REPAIR_LEVEL.with(&[&level, &db.name()]));
            return Ok(());
        }
        let mut fixed = 0;
        for f in &findings {
            for &ix in &f.damaged {
                self.with_ctx(|ctx| ddl::rebuild_index(ctx, db.name(), &f.table, ix))?;
            }
            if !f.damaged.is_empty() {
                fixed += f.error_count;
            }
        }
        self.sink.message(&msg::CHECKDB_DATABASE_SUMMARY.with(&[&"fixed", &fixed, &db.name()]));
        Ok(())
    }

    /// Who may run a DBCC command, as SQL Server documents it: FREEPROCCACHE and
    /// clearing statistics with SQLPERF need ALTER SERVER STATE, SQLPERF(LOGSPACE) VIEW
    /// SERVER STATE; DROPCLEANBUFFERS and TRACEON/TRACEOFF sysadmin; CHECKDB and OPENTRAN
    /// db_owner of their database (error 2571 otherwise); INPUTBUFFER of another session VIEW SERVER
    /// STATE; TRACESTATUS anyone.
    fn check_dbcc(&mut self, command: &str, args: &[ast::Expr], numbers: &[i64]) -> SqlResult<()> {
        let allowed = match command {
            "FREEPROCCACHE" => self.shared.holds_server(self.state, "ALTER SERVER STATE"),
            "SQLPERF" if args.len() > 1 => self.shared.holds_server(self.state, "ALTER SERVER STATE"),
            "SQLPERF" => self.shared.holds_server(self.state, "VIEW SERVER STATE"),
            "INPUTBUFFER" => {
                numbers.first() == Some(&i64::from(self.state.spid))
                    || self.shared.holds_server(self.state, "VIEW SERVER STATE")
            }
            "DROPCLEANBUFFERS" | "TRACEON" | "TRACEOFF" | "ERRORLOG" => {
                self.shared.session_in_role(self.state, "sysadmin")
            }
            "CHECKDB" | "OPENTRAN" => {
                let name = match args.first() {
                    Some(ast::Expr::Column(n)) => n.name().value.clone(),
                    Some(ast::Expr::Literal(ast::Literal::String { value, .. })) => value.clone(),
                    _ => self.state.database.clone(),
                };
                self.may_control_database(&name)?
            }
            _ => true,
        };
        if allowed {
            return Ok(());
        }
        Err(msg::DBCC_PERMISSION_DENIED.with(&[&self.state.login, &command]))
    }

    pub(super) fn dbcc(
        &mut self,
        s: &Statement,
        command: &str,
        args: &[ast::Expr],
        options: &[String],
    ) -> SqlResult<()> {
        let quiet = options.iter().any(|o| o.eq_ignore_ascii_case("NO_INFOMSGS"));
        let mut numbers = Vec::new();
        for a in args {
            match self.eval_scalar(s, a) {
                Ok((Value::Int(n), _)) => numbers.push(n),
                Ok(_) => {}
                Err(_) => {}
            }
        }
        self.check_dbcc(command, args, &numbers)?;
        match command {
            "FREEPROCCACHE" => self.shared.plans.clear(),
            "DROPCLEANBUFFERS" => {
                self.shared.engine.drop_clean_buffers();
            }
            "CHECKDB" => {
                let name = match args.first() {
                    Some(ast::Expr::Column(n)) => n.name().value.clone(),
                    Some(ast::Expr::Literal(ast::Literal::Integer(_))) | None => self.state.database.clone(),
                    Some(e) => match self.eval_scalar(s, e)?.0 {
                        Value::Str(v) => v.to_string(),
                        _ => self.state.database.clone(),
                    },
                };
                if !self.shared.engine.exists(&name) {
                    return Err(tessera_semantics::catalog::database_not_found(&name));
                }
                let repair = args.iter().skip(1).any(|a| {
                    matches!(a, ast::Expr::Column(n)
                        if matches!(n.name().value.to_uppercase().as_str(), "REPAIR_REBUILD" | "REPAIR_ALLOW_DATA_LOSS"))
                });
                self.checkdb(s, &name, repair, quiet)?;
            }
            "TRACEON" | "TRACEOFF" => {
                let global = numbers.contains(&-1);
                let flags: Vec<i32> = numbers.iter().filter(|&&n| n != -1).map(|&n| n as i32).collect();
                if flags.is_empty() {
                    return Err(msg::INVALID_DBCC_PARAMETER.err());
                }
                for f in flags {
                    if !(0..=32767).contains(&f) {
                        return Err(msg::TRACE_FLAG_NOT_FOUND.with(&[&f]));
                    }
                    let on = command == "TRACEON";
                    if global {
                        self.shared.global_trace_flags.set(f, on);
                    } else if on {
                        self.state.trace_flags.insert(f);
                    } else {
                        self.state.trace_flags.remove(&f);
                    }
                }
            }
            "TRACESTATUS" => {
                let global = self.shared.global_trace_flags.list();
                let mut flags: Vec<i32> =
                    self.state.trace_flags.iter().copied().chain(global.iter().copied()).collect();
                flags.sort_unstable();
                flags.dedup();
                let wanted: Vec<i32> = numbers.iter().filter(|&&n| n != -1).map(|&n| n as i32).collect();
                if !wanted.is_empty() {
                    flags = wanted;
                }
                let rows: Vec<Vec<Value>> = flags
                    .iter()
                    .map(|f| {
                        let g = global.contains(f);
                        let sess = self.state.trace_flags.contains(f);
                        vec![
                            Value::Int(i64::from(*f)),
                            Value::Int(i64::from(g || sess)),
                            Value::Int(i64::from(g)),
                            Value::Int(i64::from(sess)),
                        ]
                    })
                    .collect();
                self.result(
                    &[
                        ("TraceFlag", SqlType::SmallInt),
                        ("Status", SqlType::SmallInt),
                        ("Global", SqlType::SmallInt),
                        ("Session", SqlType::SmallInt),
                    ],
                    &rows,
                );
            }
            "USEROPTIONS" => {
                let o = &self.state.options;
                let mut rows: Vec<(String, String)> = vec![
                    ("textsize".into(), o.text_size().to_string()),
                    ("language".into(), o.language.clone()),
                    ("dateformat".into(), o.dateformat.clone()),
                    ("datefirst".into(), o.datefirst.to_string()),
                    ("lock_timeout".into(), o.lock_timeout.to_string()),
                ];
                rows.extend(
                    o.switches().iter().filter(|(_, on, _)| *on).map(|(name, _, _)| (name.to_string(), "SET".into())),
                );
                rows.push(("isolation level".into(), o.isolation_level.to_lowercase()));
                let rows: Vec<Vec<Value>> =
                    rows.iter().map(|(option, value)| vec![Value::str(option), Value::str(value)]).collect();
                self.result(&[("Set Option", SqlType::NVarChar(128)), ("Value", SqlType::NVarChar(128))], &rows);
            }
            "SQLPERF" => self.sqlperf(s, args)?,
            "ERRORLOG" => self.with_ctx(|ctx| tessera_execution::sysprocs::errorlog::cycle_log(ctx))?,
            "OPENTRAN" => {
                let name = match args.first() {
                    Some(ast::Expr::Column(n)) => n.name().value.clone(),
                    Some(e) => match self.eval_scalar(s, e)?.0 {
                        Value::Str(v) => v.to_string(),
                        Value::Int(0) => self.state.database.clone(),
                        Value::Int(id) => self
                            .shared
                            .engine
                            .entry_by_id(u32::try_from(id).unwrap_or(0))
                            .map(|e| e.name)
                            .ok_or_else(|| msg::INVALID_DBCC_PARAMETER.err())?,
                        _ => self.state.database.clone(),
                    },
                    None => self.state.database.clone(),
                };
                let table = options.iter().any(|o| o.eq_ignore_ascii_case("TABLERESULTS"));
                self.opentran(&name, table, quiet)?;
            }
            "INPUTBUFFER" => {
                let spid = *numbers.first().ok_or_else(|| msg::INVALID_DBCC_PARAMETER.err())?;
                let row = self.with_ctx(|ctx| Ok(tessera_execution::sysviews::input_buffer(ctx, spid)))?;
                let row = row.ok_or_else(|| msg::INVALID_DBCC_PARAMETER.err())?;
                self.result(
                    &[
                        ("EventType", SqlType::NVarChar(30)),
                        ("Parameters", SqlType::SmallInt),
                        ("EventInfo", SqlType::NVarChar(4000)),
                    ],
                    &[row.to_vec()],
                );
            }
            _ => return Err(msg::INVALID_DBCC_STATEMENT.err()),
        }
        if !quiet {
            self.sink.message(&msg::DBCC_COMPLETED.err());
        }
        Ok(())
    }
}

/// A time as DBCC OPENTRAN prints it (CONVERT style 109 with milliseconds after a colon):
/// `Nov 30 2026  9:43:11:117PM`, UTC.
fn opentran_time(epoch_ms: i64) -> String {
    const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    let secs = epoch_ms.div_euclid(1000);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Days since 0001-01-01, as the date types count them.
    let (year, month, day) = tessera_semantics::types::civil_from_days((days + 719_162) as i32);
    let hour = rem / 3600;
    let hour12 = if hour % 12 == 0 { 12 } else { hour % 12 };
    format!(
        "{} {day:>2} {year} {hour12:>2}:{:02}:{:02}:{:03}{}",
        MONTHS[month as usize - 1],
        rem / 60 % 60,
        rem % 60,
        epoch_ms.rem_euclid(1000),
        if hour < 12 { "AM" } else { "PM" }
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn opentran_prints_times_as_style_109() {
        assert_eq!(super::opentran_time(1_796_075_000_117), "Nov 30 2026  9:43:20:117PM");
        assert_eq!(super::opentran_time(0), "Jan  1 1970 12:00:00:000AM");
    }
}
