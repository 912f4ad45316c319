//! SET options: the session's switches (NOCOUNT, XACT_ABORT, ANSI_*, …), IDENTITY_INSERT,
//! and the numeric and word settings (ROWCOUNT, LOCK_TIMEOUT, DATEFIRST, DATEFORMAT, …).

use super::Runner;
use tessera_errors::msg;
use tessera_errors::SqlResult;
use tessera_semantics::bind::Binder;
use tessera_semantics::output::ResultSink;
use tessera_semantics::types::Value;
use tessera_syntax::ast::{self, Statement};

impl Runner<'_> {
    pub(super) fn set_option(&mut self, s: &Statement, names: &[String], value: &ast::SetValue) -> SqlResult<()> {
        let on = match value {
            ast::SetValue::On => Some(true),
            ast::SetValue::Off => Some(false),
            _ => None,
        };
        let number = |r: &mut Self| -> SqlResult<i64> {
            match value {
                ast::SetValue::Expr(e) => match r.eval_scalar(s, e)?.0 {
                    Value::Int(n) => Ok(n),
                    _ => Ok(0),
                },
                _ => Err(msg::SYNTAX_ERROR_NEAR.with(&[&"SET"])),
            }
        };
        let word = || match value {
            ast::SetValue::Word(w) => Some(w.clone()),
            ast::SetValue::Expr(ast::Expr::Literal(ast::Literal::String { value, .. })) => Some(value.clone()),
            ast::SetValue::Expr(ast::Expr::Column(n)) => Some(n.name().value.clone()),
            _ => None,
        };
        for name in names {
            let o = &mut self.state.options;
            match (name.as_str(), on) {
                ("NOCOUNT", Some(v)) => o.nocount = v,
                ("XACT_ABORT", Some(v)) => o.xact_abort = v,
                ("IMPLICIT_TRANSACTIONS", Some(v)) => o.implicit_transactions = v,
                ("ANSI_NULLS", Some(v)) => o.ansi_nulls = v,
                ("QUOTED_IDENTIFIER", Some(v)) => o.quoted_identifier = v,
                ("CONCAT_NULL_YIELDS_NULL", Some(v)) => o.concat_null_yields_null = v,
                ("ARITHABORT", Some(v)) => o.arithabort = v,
                ("ANSI_WARNINGS", Some(v)) => o.ansi_warnings = v,
                ("FMTONLY", Some(v)) => o.fmtonly = v,
                ("SHOWPLAN_TEXT", Some(v)) => o.showplan_text = v,
                ("STATISTICS IO", Some(v)) => o.statistics_io = v,
                ("STATISTICS TIME", Some(v)) => o.statistics_time = v,
                ("ANSI_PADDING", Some(v)) => o.ansi_padding = v,
                ("ANSI_NULL_DFLT_ON", Some(v)) => {
                    o.ansi_null_dflt_on = v;
                    o.ansi_null_dflt_off &= !v;
                }
                ("ANSI_NULL_DFLT_OFF", Some(v)) => {
                    o.ansi_null_dflt_off = v;
                    o.ansi_null_dflt_on &= !v;
                }
                ("CURSOR_CLOSE_ON_COMMIT", Some(v)) => o.cursor_close_on_commit = v,
                ("NUMERIC_ROUNDABORT", Some(v)) => o.numeric_roundabort = v,
                ("ARITHIGNORE", Some(v)) => o.arithignore = v,
                // SQL Server's ANSI_DEFAULTS: the ISO behaviour of seven options at once.
                ("ANSI_DEFAULTS", Some(v)) => {
                    o.ansi_nulls = v;
                    o.ansi_null_dflt_on = v;
                    o.ansi_padding = v;
                    o.ansi_warnings = v;
                    o.cursor_close_on_commit = v;
                    o.implicit_transactions = v;
                    o.quoted_identifier = v;
                }
                (
                    "NOEXEC"
                    | "PARSEONLY"
                    | "FORCEPLAN"
                    | "STATISTICS XML"
                    | "STATISTICS PROFILE"
                    | "SHOWPLAN_ALL"
                    | "SHOWPLAN_XML"
                    | "XACT_ABORT_OFF"
                    | "NO_BROWSETABLE"
                    | "REMOTE_PROC_TRANSACTIONS",
                    Some(_),
                ) => {}
                ("IDENTITY_INSERT", _) => {
                    let ast::SetValue::Table { table, on } = value else {
                        return Err(msg::SYNTAX_ERROR_NEAR.with(&[&"IDENTITY_INSERT"]));
                    };
                    let mut b = Binder::new(self.shared, self.state, &[]);
                    let rt = b.resolve_table(table)?;
                    if rt.table.identity_column().is_none() {
                        return Err(msg::NO_IDENTITY_PROPERTY.with(&[&rt.table.name]));
                    }
                    let o = &mut self.state.options;
                    if *on {
                        if let Some((db, id)) = &o.identity_insert {
                            if !(db.eq_ignore_ascii_case(&rt.db) && *id == rt.table.id) {
                                return Err(msg::IDENTITY_INSERT_ALREADY_ON.with(&[&db, &rt.table.name]));
                            }
                        }
                        o.identity_insert = Some((rt.db, rt.table.id));
                    } else if o
                        .identity_insert
                        .as_ref()
                        .is_some_and(|(db, id)| db.eq_ignore_ascii_case(&rt.db) && *id == rt.table.id)
                    {
                        o.identity_insert = None;
                    }
                }
                ("TEXTSIZE", None) => {
                    // 0 restores the default (4096); -1 (any negative) is the largest,
                    // 2147483647.
                    let n = number(self)?;
                    self.state.options.textsize = match n {
                        0 => 4096,
                        n if n < 0 => i64::from(i32::MAX),
                        n => n.min(i64::from(i32::MAX)),
                    };
                }
                ("LOCK_TIMEOUT", None) => {
                    let n = number(self)?;
                    self.state.options.lock_timeout = n;
                    self.state.txns.set_lock_timeout(n);
                }
                ("ROWCOUNT", None) => {
                    let n = number(self)?;
                    self.state.options.rowcount = n;
                }
                ("DATEFIRST", None) => {
                    let n = number(self)?;
                    if !(1..=7).contains(&n) {
                        return Err(msg::DATEFIRST_OUT_OF_RANGE.with(&[&n]));
                    }
                    self.state.options.datefirst = n;
                    self.state.functions.datefirst = n as u8;
                }
                ("DATEFORMAT", None) => {
                    let w = word().unwrap_or_default().to_lowercase();
                    if !["mdy", "dmy", "ymd", "ydm", "myd", "dym"].contains(&w.as_str()) {
                        return Err(msg::INVALID_DATEFORMAT.with(&[&w]));
                    }
                    self.state.options.dateformat = w;
                }
                ("LANGUAGE", None) => {
                    let w = word().unwrap_or_default();
                    if !w.eq_ignore_ascii_case("us_english") && !w.eq_ignore_ascii_case("english") {
                        return Err(msg::SET_LANGUAGE_FAILED.with(&[&w]));
                    }
                    self.state.options.language = "us_english".to_string();
                    self.sink.message(&msg::LANGUAGE_CHANGED.err());
                }
                ("TRANSACTION ISOLATION LEVEL", None) => {
                    self.state.options.isolation_level = word().unwrap_or_default();
                }
                ("DEADLOCK_PRIORITY", None) => {}
                (other, _) => {
                    return Err(msg::UNRECOGNIZED_NAME.with(&[&other, &"SET option"]).with_severity(15));
                }
            }
        }
        self.state.rowcount = 0;
        Ok(())
    }
}
