//! Server security: sys.server_principals (logins and fixed server roles), sys.sql_logins,
//! sys.server_role_members and sys.server_permissions.

use super::{bit, col, concat, datetime, int, s, Rows, ViewDef, SYSNAME};
use crate::logins::{Login, SERVER_ROLES};
use crate::runtime::ExecCtx;
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

/// Logins and server roles, by principal id.
fn server_principals(ctx: &ExecCtx, _db: &str) -> Rows<13> {
    let mut out: Vec<[Value; 13]> =
        ctx.shared.logins.all().iter().map(|login| concat(login_principal(login), [Value::Null, bit(false)])).collect();
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

fn sql_logins(ctx: &ExecCtx, _db: &str) -> Rows<14> {
    Ok(ctx
        .shared
        .logins
        .all()
        .iter()
        .map(|login| {
            concat(
                login_principal(login),
                [
                    bit(login.check_policy),
                    bit(login.check_expiration),
                    Value::Binary(login.password_hash.as_bytes().into()),
                ],
            )
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
    for login in ctx.shared.logins.all() {
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
    columns: [
        col("class", TinyInt, false),
        col("class_desc", NVarChar(60), true),
        col("major_id", Int, false),
        col("minor_id", Int, false),
        col("grantee_principal_id", Int, false),
        col("grantor_principal_id", Int, false),
        col("type", Char(4), false),
        col("permission_name", NVarChar(128), true),
        col("state", Char(1), false),
        col("state_desc", NVarChar(60), true),
    ],
    rows: |ctx, _| {
        Ok(ctx
            .shared
            .server_permissions
            .all()
            .into_iter()
            .map(|p| {
                let (state, state_desc) = p.state.code_and_desc();
                [
                    int(100),
                    s("SERVER"),
                    int(0),
                    int(0),
                    int(i64::from(p.grantee)),
                    int(i64::from(p.grantor)),
                    s(crate::server_permissions::type_code(&p.permission)),
                    s(&p.permission),
                    s(state),
                    s(state_desc),
                ]
            })
            .collect())
    },
};
