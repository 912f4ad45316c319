//! Databases: CREATE, DROP and ALTER DATABASE.

use tessera_database::{DatabaseOptions, DelayedDurability, RecoveryModel};

use crate::runtime::ExecCtx;
use tessera_errors::{SqlError, SqlResult};
use tessera_syntax::ast::{self, Ident};

fn file_path(spec: &ast::FileSpec) -> Option<std::path::PathBuf> {
    spec.options.iter().find(|(k, _)| k == "FILENAME").map(|(_, v)| std::path::PathBuf::from(v))
}

pub fn create_database(ctx: &mut ExecCtx, cd: &ast::CreateDatabase) -> SqlResult<()> {
    let name = &cd.name.value;
    if ctx.shared.engine.exists(name) {
        return Err(SqlError::new(
            1801,
            format!("Database '{name}' already exists. Choose a different database name."),
        )
        .with_state(3));
    }
    let data_path = cd.files.first().and_then(file_path);
    let log_path = cd.log_files.first().and_then(file_path);
    for p in data_path.iter().chain(log_path.iter()) {
        if let Some(dir) = p.parent() {
            if !dir.as_os_str().is_empty() && !dir.is_dir() {
                return Err(SqlError::new(
                    5133,
                    format!("Directory lookup for the file \"{}\" failed with the operating system error 2(The system cannot find the file specified.).", p.display()),
                ));
            }
        }
    }
    let options = DatabaseOptions { data_path, log_path, ..DatabaseOptions::default() };
    ctx.shared.engine.create_database(name, options).map_err(|e| match e {
        tessera_database::Error::Invalid(m) => SqlError::new(1038, m),
        e => e.into(),
    })
}

pub fn drop_database(ctx: &mut ExecCtx, name: &Ident, if_exists: bool) -> SqlResult<()> {
    let n = &name.value;
    if !ctx.shared.engine.exists(n) {
        if if_exists {
            return Ok(());
        }
        return Err(SqlError::new(
            3701,
            format!("Cannot drop the database '{n}', because it does not exist or you do not have permission."),
        )
        .with_severity(11));
    }
    if ["master", "tempdb", "model", "msdb"].iter().any(|s| s.eq_ignore_ascii_case(n)) {
        return Err(SqlError::new(3708, format!("Cannot drop the database '{n}' because it is a system database.")));
    }
    if ctx.session.database.eq_ignore_ascii_case(n)
        || ctx.session.txns.open.iter().any(|t| t.database().name().eq_ignore_ascii_case(n))
    {
        return Err(
            SqlError::new(3702, format!("Cannot drop database \"{n}\" because it is currently in use.")).with_state(4)
        );
    }
    let id = ctx.shared.engine.database_id(n);
    ctx.shared.forget(n);
    ctx.shared.engine.drop_database(n).map_err(|e| match e.number() {
        3702 => {
            SqlError::new(3702, format!("Cannot drop database \"{n}\" because it is currently in use.")).with_state(4)
        }
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
        911 => SqlError::new(5069, "ALTER DATABASE statement failed.").after(
            SqlError::new(
                5011,
                format!("User does not have permission to alter database '{n}', the database does not exist, or the database is not in a state that allows access checks."),
            )
            .with_severity(14)
            .with_state(5),
        ),
        _ => e,
    })?;
    let mut options = database.options();
    match action {
        ast::AlterDatabaseAction::Set(settings) => {
            for (opt, value) in settings {
                match opt.as_str() {
                    "RECOVERY" => {
                        options.recovery_model = RecoveryModel::parse(value).ok_or_else(|| {
                            SqlError::new(102, format!("Incorrect syntax near '{value}'.")).with_severity(15)
                        })?;
                    }
                    "DELAYED_DURABILITY" => {
                        options.delayed_durability = DelayedDurability::parse(value).ok_or_else(|| {
                            SqlError::new(102, format!("Incorrect syntax near '{value}'.")).with_severity(15)
                        })?;
                    }
                    _ => {
                        return Err(SqlError::new(5058, format!("Option '{opt}' cannot be set in database '{n}'.")));
                    }
                }
            }
            ctx.shared.engine.alter_database(&n, options)?;
            Ok(())
        }
        ast::AlterDatabaseAction::Rename(_) | ast::AlterDatabaseAction::Collate(_) => {
            Err(SqlError::new(5058, format!("This ALTER DATABASE option is not supported for database '{n}'.")))
        }
    }
}
