//! Server security: sys.server_principals (logins and fixed server roles), sys.sql_logins,
//! sys.server_role_members and sys.server_permissions.

use super::{bit, col, concat, datetime, int, s, Rows, ViewDef, SYSNAME};
use crate::runtime::ExecCtx;
use tessera_security::logins::{Login, SERVER_ROLES};
use tessera_security::server_permissions::LOGIN_PERMISSIONS;
use tessera_semantics::types::{SqlType::*, Value};

pub(super) static SERVER_PRINCIPALS: ViewDef<13> = ViewDef {
    schema: "sys",
    name: "server_principals",
    columns: [
        col("name", SYSNAME, false),
        col("principal_id", Int, false),
        col("sid", VarBinary(85), true),
        col("type", Char(1), false),
        col("type_desc", NVarChar(60), true),
        col("is_disabled", Bit, true),
        col("create_date", DateTime, false),
        col("modify_date", DateTime, false),
        col("default_database_name", SYSNAME, true),
        col("default_language_name", SYSNAME, true),
        col("credential_id", Int, true),
        col("owning_principal_id", Int, true),
        col("is_fixed_role", Bit, false),
    ],
    rows: server_principals,
};

/// The logins the session may see: all of them with ALTER ANY LOGIN or VIEW ANY
/// DEFINITION, else its own and those it holds a permission on (as SQL Server shows them).
fn visible_logins(ctx: &ExecCtx) -> Vec<Login> {
    let all = ["ALTER ANY LOGIN", "VIEW ANY DEFINITION"].iter().any(|p| ctx.shared.holds_server(ctx.session, p));
    let mut logins = ctx.shared.logins.all();
    if !all {
        let me = ctx.shared.session_login(ctx.session);
        let permissions = &ctx.shared.server_permissions;
        logins.retain(|l| {
            me.as_ref().is_some_and(|me| {
                me.name.eq_ignore_ascii_case(&l.name)
                    || LOGIN_PERMISSIONS.iter().any(|(p, ..)| permissions.holds_on_login(me, p, l.principal_id))
            })
        });
    }
    logins
}

/// Logins (those the session may see) and server roles, by principal id.
fn server_principals(ctx: &ExecCtx, _db: &str) -> Rows<13> {
    let mut out: Vec<[Value; 13]> =
        visible_logins(ctx).iter().map(|login| concat(login_principal(login), [Value::Null, bit(false)])).collect();
    for (id, name) in SERVER_ROLES {
        out.push([
            s(name),
            int(i64::from(*id)),
            Value::Binary(vec![*id as u8].into()),
            s("R"),
            s("SERVER_ROLE"),
            bit(false),
            datetime(0),
            datetime(0),
            Value::Null,
            Value::Null,
            Value::Null,
            int(1),
            bit(*name != "public"),
        ]);
    }
    out.sort_by_key(|r| match r[1] {
        Value::Int(i) => i,
        _ => 0,
    });
    Ok(out)
}

pub(super) static SQL_LOGINS: ViewDef<14> = ViewDef {
    schema: "sys",
    name: "sql_logins",
    columns: [
        col("name", SYSNAME, false),
        col("principal_id", Int, false),
        col("sid", VarBinary(85), true),
        col("type", Char(1), false),
        col("type_desc", NVarChar(60), true),
        col("is_disabled", Bit, true),
        col("create_date", DateTime, false),
        col("modify_date", DateTime, false),
        col("default_database_name", SYSNAME, true),
        col("default_language_name", SYSNAME, true),
        col("credential_id", Int, true),
        col("is_policy_checked", Bit, true),
        col("is_expiration_checked", Bit, true),
        col("password_hash", VarBinary(256), true),
    ],
    rows: sql_logins,
};

/// The logins the session may see; their password hashes only for CONTROL SERVER.
fn sql_logins(ctx: &ExecCtx, _db: &str) -> Rows<14> {
    let hashes = ctx.shared.holds_server(ctx.session, "CONTROL SERVER");
    Ok(visible_logins(ctx)
        .iter()
        .map(|login| {
            let hash = if hashes { Value::Binary(login.password_hash.as_bytes().into()) } else { Value::Null };
            concat(login_principal(login), [bit(login.check_policy), bit(login.check_expiration), hash])
        })
        .collect())
}

/// A login's values of the columns sys.server_principals and sys.sql_logins share (the
/// first eleven).
fn login_principal(login: &Login) -> [Value; 11] {
    [
        s(&login.name),
        int(i64::from(login.principal_id)),
        Value::Binary(login.sid.clone().into()),
        s("S"),
        s("SQL_LOGIN"),
        bit(login.disabled),
        datetime(login.create_date),
        datetime(login.modify_date),
        s(&login.default_database),
        s(&login.default_language),
        Value::Null,
    ]
}

pub(super) static SERVER_ROLE_MEMBERS: ViewDef<2> = ViewDef {
    schema: "sys",
    name: "server_role_members",
    columns: [col("role_principal_id", Int, false), col("member_principal_id", Int, false)],
    rows: server_role_members,
};

/// Each login's fixed server roles (public, which every login is in, is not listed).
fn server_role_members(ctx: &ExecCtx, _db: &str) -> Rows<2> {
    let mut out = Vec::new();
    for login in visible_logins(ctx) {
        for (id, name) in SERVER_ROLES {
            if *name != "public" && login.roles.iter().any(|r| r == name) {
                out.push([int(i64::from(*id)), int(i64::from(login.principal_id))]);
            }
        }
    }
    Ok(out)
}

pub(super) static SERVER_PERMISSIONS: ViewDef<10> = ViewDef {
    schema: "sys",
    name: "server_permissions",
    columns: super::PERMISSION_COLUMNS,
    rows: |ctx, _| {
        // Without ALTER ANY LOGIN or VIEW ANY DEFINITION: the rows of its own login, its
        // server roles and public.
        let mine: Vec<i32> = visible_logins(ctx)
            .iter()
            .flat_map(|l| {
                let roles = SERVER_ROLES.iter().filter(|(_, r)| l.is_member(r)).map(|(id, _)| *id);
                std::iter::once(l.principal_id).chain(roles).collect::<Vec<_>>()
            })
            .chain([tessera_security::server_permissions::PUBLIC_ROLE_ID])
            .collect();
        Ok(ctx
            .shared
            .server_permissions
            .all()
            .into_iter()
            .filter(|p| mine.contains(&p.grantee))
            .map(|p| {
                let (state, state_desc) = p.state.code_and_desc();
                let (class, class_desc) = if p.on_login == 0 { (100, "SERVER") } else { (101, "SERVER_PRINCIPAL") };
                [
                    int(class),
                    s(class_desc),
                    int(i64::from(p.on_login)),
                    int(0),
                    int(i64::from(p.grantee)),
                    int(i64::from(p.grantor)),
                    s(tessera_security::server_permissions::type_code(&p.permission, p.on_login != 0)),
                    s(&p.permission),
                    s(state),
                    s(state_desc),
                ]
            })
            .collect())
    },
};
