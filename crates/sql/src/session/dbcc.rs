//! DBCC commands: FREEPROCCACHE, DROPCLEANBUFFERS, CHECKDB (structure, allocation and
//! every nonclustered index against its table, with REPAIR_REBUILD), TRACEON, TRACEOFF
//! and TRACESTATUS.

use super::Runner;
use tessera_errors::msg;
use tessera_errors::SqlResult;
use tessera_execution::ddl;
use tessera_semantics::output::Command;
use tessera_semantics::output::ResultSink;
use tessera_semantics::types::{SqlType, Value};
use tessera_syntax::ast::{self, Statement};

impl Runner<'_> {
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

    /// Who may run a DBCC command, as SQL Server documents it: FREEPROCCACHE needs ALTER
    /// SERVER STATE; DROPCLEANBUFFERS and TRACEON/TRACEOFF sysadmin; CHECKDB db_owner of
    /// its database (error 2571 otherwise); TRACESTATUS anyone.
    fn check_dbcc(&mut self, command: &str, args: &[ast::Expr]) -> SqlResult<()> {
        let allowed = match command {
            "FREEPROCCACHE" => self.shared.holds_server(self.state, "ALTER SERVER STATE"),
            "DROPCLEANBUFFERS" | "TRACEON" | "TRACEOFF" => self.shared.session_in_role(self.state, "sysadmin"),
            "CHECKDB" => {
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
        self.check_dbcc(command, args)?;
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
                let columns = [
                    tessera_semantics::output::OutputColumn {
                        name: "TraceFlag".into(),
                        ty: SqlType::SmallInt,
                        nullable: false,
                    },
                    tessera_semantics::output::OutputColumn {
                        name: "Status".into(),
                        ty: SqlType::SmallInt,
                        nullable: false,
                    },
                    tessera_semantics::output::OutputColumn {
                        name: "Global".into(),
                        ty: SqlType::SmallInt,
                        nullable: false,
                    },
                    tessera_semantics::output::OutputColumn {
                        name: "Session".into(),
                        ty: SqlType::SmallInt,
                        nullable: false,
                    },
                ];
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
                self.sink.columns(&columns);
                for r in &rows {
                    self.sink.row(r);
                }
                self.sink.done(None, Command::Select);
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
                let column = |name: &str| tessera_semantics::output::OutputColumn {
                    name: name.into(),
                    ty: SqlType::NVarChar(128),
                    nullable: false,
                };
                self.sink.columns(&[column("Set Option"), column("Value")]);
                for (option, value) in &rows {
                    self.sink.row(&[Value::str(option), Value::str(value)]);
                }
                self.sink.done(None, Command::Select);
            }
            _ => return Err(msg::INVALID_DBCC_STATEMENT.err()),
        }
        if !quiet {
            self.sink.message(&msg::DBCC_COMPLETED.err());
        }
        Ok(())
    }
}
