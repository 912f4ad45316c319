//! Server administration helpers: CREATE/ALTER/DROP LOGIN and ALTER SERVER ROLE, and the
//! evaluated arguments of BACKUP and RESTORE.

use super::{Runner, Session};
use tessera_errors::msg;
use tessera_errors::SqlResult;
use tessera_semantics::types::{self, Value};
use tessera_syntax::ast::{self, AlterLoginAction, Statement, StatementKind};

impl Runner<'_> {
    /// Statements on the server and its files rather than a database's objects:
    /// Resource Governor, the buffer pool extension, process affinity, RECONFIGURE,
    /// CHECKPOINT, BACKUP and RESTORE.
    pub(super) fn server_statement(&mut self, s: &Statement) -> SqlResult<()> {
        match &s.kind {
            StatementKind::ResourceGovernor(statement) => {
                let in_transaction = self.state.txns.count > 0;
                self.with_ctx(|ctx| {
                    tessera_execution::ddl::resource_governor::execute(ctx, statement, in_transaction)
                })?;
            }
            StatementKind::BufferPoolExtension(setting) => {
                if !self.shared.holds_server(self.state, "ALTER SETTINGS") {
                    return Err(tessera_execution::ddl::logins::no_permission());
                }
                let setting =
                    setting.clone().map(|(file, bytes)| tessera_execution::config::ExtensionSetting { file, bytes });
                self.shared.config.set_extension(&self.shared.engine, setting)?;
            }
            StatementKind::ProcessAffinity(ranges) => {
                if !self.shared.holds_server(self.state, "ALTER SETTINGS") {
                    return Err(tessera_execution::ddl::logins::no_permission());
                }
                let cpus = ranges.as_ref().map(|r| r.iter().flat_map(|&(a, b)| a as usize..=b as usize).collect());
                self.shared.config.set_process_affinity(cpus.as_ref())?;
            }
            StatementKind::Checkpoint => {
                let db = self.shared.database(&self.state.database)?;
                db.checkpoint()?;
            }
            StatementKind::Backup(b) => {
                let database = self.database_ref(s, &b.database)?;
                let (devices, options) = self.backup_arguments(s, &b.devices, &b.options)?;
                let shared = self.shared.arc();
                let history = tessera_execution::backup::backup(
                    &shared,
                    self.state,
                    b.log,
                    &database,
                    devices,
                    &options,
                    &mut self.sink,
                )?;
                self.record_history(history);
            }
            StatementKind::Restore(r) => {
                let database = match &r.database {
                    Some(d) => Some(self.database_ref(s, d)?),
                    None => None,
                };
                let (devices, options) = self.backup_arguments(s, &r.devices, &r.options)?;
                let shared = self.shared.arc();
                let history = tessera_execution::backup::restore(
                    &shared,
                    self.state,
                    r.kind,
                    database.as_deref(),
                    devices,
                    &options,
                    &mut self.sink,
                )?;
                self.record_history(history);
            }
            StatementKind::Reconfigure { .. } => {
                if !self.shared.holds_server(self.state, "ALTER SETTINGS") {
                    return Err(msg::RECONFIGURE_PERMISSION_DENIED.err());
                }
                self.shared.config.reconfigure();
                self.shared.config.apply_memory(&self.shared.engine)?;
                self.shared.config.apply_open_limits(&self.shared.engine);
                self.shared.config.apply_affinity()?;
                self.shared.query_memory.set_max_bytes(self.shared.engine.memory_status().max_bytes);
                self.shared.plans.set_budget_bytes(self.shared.config.plan_cache_bytes());
            }
            _ => unreachable!("server_statement runs only the statements `exec` sends it"),
        }
        Ok(())
    }

    /// The database a BACKUP or RESTORE names, directly or in a variable.
    pub(super) fn database_ref(&mut self, s: &Statement, d: &ast::DatabaseRef) -> SqlResult<String> {
        match d {
            ast::DatabaseRef::Name(i) => Ok(i.value.clone()),
            ast::DatabaseRef::Variable(v) => match self.eval_scalar(s, &ast::Expr::Variable(v.clone()))? {
                (Value::Str(name), _) => Ok(name.trim_end().to_string()),
                (Value::Null, _) => Err(msg::DATABASE_NOT_FOUND.with(&[&""])),
                (_, t) => Err(msg::OPERAND_TYPE_CLASH.with(&[&types::base_type_name(&t), &"sysname"])),
            },
        }
    }

    /// Evaluates BACKUP/RESTORE device paths and WITH option values.
    pub(super) fn backup_arguments(
        &mut self,
        s: &Statement,
        devices: &[ast::Expr],
        options: &[ast::BackupOption],
    ) -> SqlResult<(Vec<std::path::PathBuf>, Vec<tessera_execution::backup::EvaluatedOption>)> {
        let mut paths = Vec::new();
        for d in devices {
            match self.eval_scalar(s, d)?.0 {
                Value::Str(p) if !p.trim().is_empty() => paths.push(std::path::PathBuf::from(p.trim_end())),
                _ => return Err(msg::ZERO_LENGTH_DEVICE_NAME.err()),
            }
        }
        let mut out = Vec::new();
        for o in options {
            let value = match &o.value {
                Some(e) => Some(self.eval_scalar(s, e)?),
                None => None,
            };
            let to = match &o.to {
                Some(e) => Some(self.eval_scalar(s, e)?),
                None => None,
            };
            out.push(tessera_execution::backup::EvaluatedOption { name: o.name.clone(), value, to });
        }
        Ok((paths, out))
    }

    /// CREATE/ALTER/DROP LOGIN and ALTER SERVER ROLE. They change master in a transaction
    /// of their own, so they are refused inside a user transaction (which could not undo them).
    pub(super) fn security_statement(&mut self, kind: &StatementKind) -> SqlResult<()> {
        let verb = match kind {
            StatementKind::CreateLogin { .. } => "CREATE LOGIN",
            StatementKind::AlterLogin { .. } => "ALTER LOGIN",
            StatementKind::DropLogin(_) => "DROP LOGIN",
            _ => "ALTER SERVER ROLE",
        };
        if self.state.txns.count > 0 {
            return Err(msg::NOT_IN_USER_TRANSACTION.with(&[&verb]));
        }
        let shared = self.shared;
        let caller = self.state.server_login().map(str::to_string);
        let caller = caller.as_deref();
        match kind {
            StatementKind::CreateLogin { name, options, external_source } => {
                tessera_execution::ddl::logins::create_login(shared, caller, name, options, external_source.as_deref())
            }
            StatementKind::AlterLogin { name, action } => {
                tessera_execution::ddl::logins::alter_login(shared, caller, name, action)?;
                // A renamed current login keeps its session under the new name.
                if let AlterLoginAction::Set(options) = action {
                    for o in options {
                        if let ast::LoginOption::Name(n) = o {
                            if caller.is_some_and(|own| name.value.eq_ignore_ascii_case(own)) {
                                self.state.login = n.value.clone();
                            }
                        }
                    }
                }
                Ok(())
            }
            StatementKind::DropLogin(name) => tessera_execution::ddl::logins::drop_login(shared, caller, name),
            StatementKind::AlterServerRole { role, member, add } => {
                tessera_execution::ddl::logins::alter_server_role(shared, caller, role, member, *add)
            }
            _ => unreachable!("security_statement is called for security statements only"),
        }
    }

    /// Records a backup's or restore's history in msdb, as the server itself; history is
    /// best effort, so a failure is written to ERRORLOG instead of failing the backup or
    /// restore that already succeeded.
    pub(super) fn record_history(&self, sql: Option<String>) {
        let Some(sql) = sql else { return };
        let shared = self.shared.arc();
        let mut out = tessera_semantics::output::Collected::default();
        let failed = match Session::system(shared, "msdb") {
            Ok(mut s) => {
                s.execute(&sql, &mut out);
                out.errors().first().map(|e| e.message.clone())
            }
            Err(e) => Some(e.into_detail().message),
        };
        if let Some(message) = failed {
            self.shared.write_errorlog(0, &format!("Could not record backup history in msdb: {message}"));
        }
    }
}
