//! System procedures over whole databases that run in the session: `sp_detach_db`,
//! `sp_attach_db` (CREATE DATABASE … FOR ATTACH by another name) and `sp_MSforeachdb`
//! (T-SQL run once per database, as dynamic SQL).

use super::{Runner, Stop};
use tessera_errors::msg;
use tessera_execution::ddl;
use tessera_execution::sysprocs::{text_arg, too_many, NamedArg};
use tessera_syntax::ast::Statement;

fn missing(proc_name: &str, param: &str) -> Stop {
    Stop::Error(msg::MISSING_PARAMETER.with(&[&proc_name, &param]))
}

impl Runner<'_> {
    /// `sp_detach_db [@dbname =] 'name' [, [@skipchecks =] 'true'|'false'] [,
    /// @keepfulltextindexfile]`. tessera keeps no statistics, so there is nothing for
    /// @skipchecks to skip.
    pub(super) fn run_detach_db(&mut self, args: &[NamedArg]) -> Result<i32, Stop> {
        too_many("sp_detach_db", args, 3).map_err(Stop::Error)?;
        let name = text_arg(args, 0, "@dbname").ok_or_else(|| missing("sp_detach_db", "@dbname"))?;
        // Membership of db_owner (CONTROL on the database), as SQL Server requires.
        if !self.may_control_database(&name).map_err(Stop::Error)? {
            return Err(Stop::Error(msg::ADMIN_ACTION_DENIED.err()));
        }
        self.with_ctx(|ctx| ddl::detach_database(ctx, &name)).map_err(Stop::Error)?;
        Ok(0)
    }

    /// `sp_attach_db @dbname, @filename1 [, @filename2]`: the data file, then the log file
    /// (a third file or more is refused, as CREATE DATABASE … FOR ATTACH refuses it).
    pub(super) fn run_attach_db(&mut self, args: &[NamedArg]) -> Result<i32, Stop> {
        too_many("sp_attach_db", args, 17).map_err(Stop::Error)?;
        if !self.shared.session_in_role(self.state, "sysadmin") && !self.shared.session_in_role(self.state, "dbcreator")
        {
            return Err(Stop::Error(msg::DATABASE_PERMISSION_DENIED.with(&[&"CREATE DATABASE", &"master"])));
        }
        let name = text_arg(args, 0, "@dbname").ok_or_else(|| missing("sp_attach_db", "@dbname"))?;
        let files: Vec<String> = (1..=16).map_while(|i| text_arg(args, i, &format!("@filename{i}"))).collect();
        let (data, log) = match files.as_slice() {
            [] => return Err(missing("sp_attach_db", "@filename1")),
            [data] => {
                let data = std::path::PathBuf::from(data);
                let stem = data.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
                let log = data.with_file_name(format!("{stem}_log.ldf"));
                (data, log)
            }
            [data, log] => (data.into(), log.into()),
            _ => {
                return Err(Stop::Error(
                    msg::DATABASE_OPTION_NOT_SETTABLE
                        .with(&[&"A database has one data file and one log file: more cannot be attached for", &name]),
                ))
            }
        };
        self.with_ctx(|ctx| ddl::attach_files(ctx, &name, &data, &log)).map_err(Stop::Error)?;
        Ok(0)
    }

    /// `sp_MSforeachdb @command1 [, @replacechar] [, @command2] [, @command3] [,
    /// @precommand] [, @postcommand]`: the precommand once, then for each ONLINE database
    /// (by database id) each command with the replace character (`?`) replaced by the
    /// database's name, then the postcommand; each runs as `EXEC (…)` would, in the
    /// caller's database, its results streamed as they come. An error in one command is
    /// reported and the others go on, as in SQL Server (where an error ends the dynamic
    /// batch it is in); under XACT_ABORT or with the transaction doomed it ends the call.
    pub(super) fn run_foreachdb(&mut self, s: &Statement, args: &[NamedArg]) -> Result<i32, Stop> {
        too_many("sp_MSforeachdb", args, 6).map_err(Stop::Error)?;
        let command1 = text_arg(args, 0, "@command1").ok_or_else(|| missing("sp_MSforeachdb", "@command1"))?;
        let replace = text_arg(args, 1, "@replacechar").unwrap_or_else(|| "?".into());
        let commands: Vec<String> = [Some(command1), text_arg(args, 2, "@command2"), text_arg(args, 3, "@command3")]
            .into_iter()
            .flatten()
            .collect();
        if let Some(pre) = text_arg(args, 4, "@precommand") {
            self.run_dynamic_text(s, &pre)?;
        }
        let databases = self.shared.engine.entries();
        for db in databases.iter().filter(|e| e.state == tessera_database::DbState::Online) {
            for command in &commands {
                match self.run_dynamic_text(s, &command.replace(replace.as_str(), &db.name)) {
                    // An error that ended the command's own batch (reported already) ends
                    // that command only, unless it doomed the transaction.
                    Err(Stop::Abort) if !self.state.options.xact_abort && !self.state.txns.doomed => {}
                    Err(stop) => return Err(stop),
                    Ok(_) => {}
                }
            }
        }
        if let Some(post) = text_arg(args, 5, "@postcommand") {
            self.run_dynamic_text(s, &post)?;
        }
        Ok(0)
    }
}
