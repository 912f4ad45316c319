//! The functions that answer who the session is in a database and what it may do there:
//! USER_NAME, USER_ID, SCHEMA_NAME, SCHEMA_ID, IS_MEMBER, IS_ROLEMEMBER, HAS_DBACCESS,
//! HAS_PERMS_BY_NAME and ORIGINAL_LOGIN. Each answers NULL where SQL Server does: for a
//! name that finds nothing.

use crate::runtime::ExecCtx;
use tessera_errors::SqlResult;
use tessera_security::principals::check::{allowed, token_of_user, On};
use tessera_semantics::plan::SessionFn;
use tessera_semantics::types::Value;

fn text(v: Option<&Value>) -> Option<String> {
    match v {
        Some(Value::Str(s)) => Some(s.to_string()),
        _ => None,
    }
}

fn int(v: Option<i32>) -> Value {
    v.map_or(Value::Null, |v| Value::Int(i64::from(v)))
}

/// The value of one of this module's functions (`func` is one of them).
pub fn principal_function(ctx: &mut ExecCtx, func: &SessionFn, args: &[Value]) -> SqlResult<Value> {
    let database = ctx.session.database.clone();
    if matches!(func, SessionFn::OriginalLogin) {
        let first = ctx.session.impersonation.first().map(|c| c.previous_login.clone());
        return Ok(Value::str(&first.unwrap_or_else(|| ctx.session.login.clone())));
    }
    if matches!(func, SessionFn::HasDbAccess) {
        let Some(name) = text(args.first()) else { return Ok(Value::Null) };
        if !ctx.shared.engine.exists(&name) {
            return Ok(Value::Null);
        }
        return Ok(Value::Int(i64::from(ctx.shared.access(ctx.session, &name).is_ok())));
    }
    let (security, token) = ctx.shared.access(ctx.session, &database)?;
    Ok(match func {
        SessionFn::UserName => match args.first() {
            None => security.principal_by_id(token.user).map_or(Value::Null, |p| Value::str(&p.name)),
            Some(Value::Int(id)) => i32::try_from(*id)
                .ok()
                .and_then(|id| security.principal_by_id(id))
                .map_or(Value::Null, |p| Value::str(&p.name)),
            Some(_) => Value::Null,
        },
        SessionFn::UserId => match text(args.first()) {
            None if args.is_empty() => int(Some(token.user)),
            Some(name) => int(security.principal(&name).map(|p| p.id)),
            None => Value::Null,
        },
        SessionFn::SchemaName => match args.first() {
            None => {
                let user = security.principal_by_id(token.user);
                Value::str(user.and_then(|u| u.default_schema.as_deref()).unwrap_or("dbo"))
            }
            Some(Value::Int(id)) => i32::try_from(*id)
                .ok()
                .and_then(|id| security.schema_by_id(id))
                .map_or(Value::Null, |s| Value::str(&s.name)),
            Some(_) => Value::Null,
        },
        SessionFn::SchemaId => match text(args.first()) {
            None if args.is_empty() => {
                let user = security.principal_by_id(token.user);
                let name = user.and_then(|u| u.default_schema.clone()).unwrap_or_else(|| "dbo".into());
                int(security.schema(&name).map(|s| s.id))
            }
            Some(name) => int(security.schema(&name).map(|s| s.id)),
            None => Value::Null,
        },
        SessionFn::IsMember => match text(args.first()).and_then(|r| security.principal(&r).cloned()) {
            Some(role) if role.kind.is_role() => Value::Int(i64::from(token.holds(role.id))),
            _ => Value::Null,
        },
        SessionFn::IsRoleMember => {
            let role = text(args.first()).and_then(|r| security.principal(&r).cloned()).filter(|r| r.kind.is_role());
            let member = match text(args.get(1)) {
                Some(name) => security.principal(&name).map(|p| token_of_user(&security, p.id)),
                None if args.len() < 2 => Some((*token).clone()),
                None => None,
            };
            match (role, member) {
                (Some(role), Some(member)) => Value::Int(i64::from(member.holds(role.id))),
                _ => Value::Null,
            }
        }
        SessionFn::HasPermsByName => {
            // The securable is NULL for the server.
            let (securable, Some(class), Some(permission)) =
                (text(args.first()).unwrap_or_default(), text(args.get(1)), text(args.get(2)))
            else {
                return Ok(Value::Null);
            };
            let permission = permission.to_uppercase();
            match class.to_uppercase().as_str() {
                "DATABASE" => {
                    if !ctx.shared.engine.exists(&securable) {
                        return Ok(Value::Null);
                    }
                    match ctx.shared.access(ctx.session, &securable) {
                        Ok((s, t)) => Value::Int(i64::from(allowed(&s, &t, &permission, On::Database))),
                        Err(_) => Value::Int(0),
                    }
                }
                "SCHEMA" => match security.schema(&securable) {
                    Some(s) => Value::Int(i64::from(allowed(&security, &token, &permission, On::Schema(&s.name)))),
                    None => Value::Null,
                },
                "OBJECT" => {
                    let (schema, name) = match securable.split_once('.') {
                        Some((s, n)) => {
                            (s.trim_matches(['[', ']']).to_string(), n.trim_matches(['[', ']']).to_string())
                        }
                        None => ("dbo".to_string(), securable.trim_matches(['[', ']']).to_string()),
                    };
                    let catalog = ctx.shared.catalog_named(&database)?.catalog;
                    match catalog.lookup(&schema, &name) {
                        Some(o) => Value::Int(i64::from(allowed(
                            &security,
                            &token,
                            &permission,
                            On::Object { schema: o.schema(), id: o.id() },
                        ))),
                        None => Value::Null,
                    }
                }
                "SERVER" => Value::Int(i64::from(ctx.shared.holds_server(ctx.session, &permission))),
                _ => Value::Null,
            }
        }
        _ => unreachable!("not a principal function"),
    })
}
