//! The older procedures for role membership that scripts and tools still call:
//! `sp_addrolemember` / `sp_droprolemember` (ALTER ROLE … ADD|DROP MEMBER) and
//! `sp_addsrvrolemember` / `sp_dropsrvrolemember` (ALTER SERVER ROLE … ADD|DROP MEMBER),
//! with the same permission checks and errors as the statements.

use tessera_errors::msg;
use tessera_errors::{SqlError, SqlResult};
use tessera_syntax::ast::{AlterRoleAction, Ident};

use super::{text_arg, too_many, NamedArg};
use crate::runtime::ExecCtx;

fn missing(proc_name: &str, param: &str) -> SqlError {
    msg::MISSING_PARAMETER.with(&[&proc_name, &param])
}

/// `sp_addrolemember @rolename, @membername` (`add`) or `sp_droprolemember`.
pub(super) fn database_role_member(args: &[NamedArg], ctx: &mut ExecCtx, add: bool) -> SqlResult<i32> {
    let proc_name = if add { "sp_addrolemember" } else { "sp_droprolemember" };
    too_many(proc_name, args, 2)?;
    let role = text_arg(args, 0, "@rolename").ok_or_else(|| missing(proc_name, "@rolename"))?;
    let member = Ident::new(text_arg(args, 1, "@membername").ok_or_else(|| missing(proc_name, "@membername"))?);
    let action = if add { AlterRoleAction::AddMember(member) } else { AlterRoleAction::DropMember(member) };
    crate::ddl::principals::alter_role(ctx, &Ident::new(role), &action)?;
    Ok(0)
}

/// `sp_addsrvrolemember @loginame, @rolename` (`add`) or `sp_dropsrvrolemember`.
pub(super) fn server_role_member(args: &[NamedArg], ctx: &mut ExecCtx, add: bool) -> SqlResult<i32> {
    let proc_name = if add { "sp_addsrvrolemember" } else { "sp_dropsrvrolemember" };
    too_many(proc_name, args, 2)?;
    let login = text_arg(args, 0, "@loginame").ok_or_else(|| missing(proc_name, "@loginame"))?;
    let role = text_arg(args, 1, "@rolename").ok_or_else(|| missing(proc_name, "@rolename"))?;
    let caller = ctx.session.server_login().map(str::to_string);
    crate::ddl::logins::alter_server_role(ctx.shared, caller.as_deref(), &Ident::new(role), &Ident::new(login), add)?;
    Ok(0)
}
