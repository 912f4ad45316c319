//! Database security: sys.database_principals, sys.database_role_members,
//! sys.database_permissions and sys.schemas, from the database's principals.

use super::{bit, col, datetime, int, s, Rows, ViewDef, SYSNAME};
use crate::runtime::ExecCtx;
use tessera_security::principals::{Principal, PrincipalKind};
use tessera_semantics::types::{SqlType::*, Value};

fn security(
    ctx: &ExecCtx,
    db: &str,
) -> tessera_errors::SqlResult<std::sync::Arc<tessera_security::principals::Security>> {
    ctx.shared.security(&ctx.session.catalog_memo, db)
}

/// Which principals' rows the session may see in database `db`: every one with ALTER ANY
/// USER or VIEW DEFINITION on the database, else its own user, the roles it is in, and
/// the principals every database has (`None` stands for all).
fn visible_principals(ctx: &ExecCtx, db: &str) -> tessera_errors::SqlResult<Option<Vec<i32>>> {
    use tessera_security::principals::check::{allowed, On};
    let (security, token) = ctx.shared.access(ctx.session, db)?;
    if ["ALTER ANY USER", "VIEW DEFINITION"].iter().any(|p| allowed(&security, &token, p, On::Database)) {
        return Ok(None);
    }
    let fixed = security
        .principals()
        .filter(|p| {
            p.id < tessera_security::principals::FIRST_PRINCIPAL_ID || tessera_security::principals::is_fixed_role(p.id)
        })
        .map(|p| p.id);
    Ok(Some(token.principals.iter().copied().chain(fixed).collect()))
}

fn sees(visible: &Option<Vec<i32>>, id: i32) -> bool {
    visible.as_ref().is_none_or(|ids| ids.contains(&id))
}

fn or_null(v: Option<i32>) -> Value {
    v.map_or(Value::Null, |v| int(i64::from(v)))
}

pub(super) static DATABASE_PRINCIPALS: ViewDef<12> = ViewDef {
    schema: "sys",
    name: "database_principals",
    columns: [
        col("name", SYSNAME, false),
        col("principal_id", Int, false),
        col("type", Char(1), false),
        col("type_desc", NVarChar(60), true),
        col("default_schema_name", SYSNAME, true),
        col("create_date", DateTime, false),
        col("modify_date", DateTime, false),
        col("owning_principal_id", Int, true),
        col("sid", VarBinary(85), true),
        col("is_fixed_role", Bit, false),
        col("authentication_type", Int, false),
        col("authentication_type_desc", NVarChar(60), true),
    ],
    rows: database_principals,
};

fn principal_row(p: &Principal) -> [Value; 12] {
    // (type, type_desc, authentication_type, authentication_type_desc)
    let (ty, desc, auth, auth_desc) = match p.kind {
        PrincipalKind::Role => ("R", "DATABASE_ROLE", 0, "NONE"),
        PrincipalKind::ApplicationRole => ("A", "APPLICATION_ROLE", 0, "NONE"),
        PrincipalKind::SqlUser => ("S", "SQL_USER", 1, "INSTANCE"),
        PrincipalKind::ContainedUser => ("S", "SQL_USER", 2, "DATABASE"),
        PrincipalKind::UserWithoutLogin => ("S", "SQL_USER", 0, "NONE"),
    };
    [
        s(&p.name),
        int(i64::from(p.id)),
        s(ty),
        s(desc),
        p.default_schema.as_deref().map_or(Value::Null, s),
        datetime(p.create_date),
        datetime(p.modify_date),
        or_null(p.owner),
        p.sid.clone().map_or(Value::Null, |sid| Value::Binary(sid.into())),
        bit(tessera_security::principals::is_fixed_role(p.id)),
        int(auth),
        s(auth_desc),
    ]
}

fn database_principals(ctx: &ExecCtx, db: &str) -> Rows<12> {
    let security = security(ctx, db)?;
    let visible = visible_principals(ctx, db)?;
    let mut out: Vec<(i32, [Value; 12])> =
        security.principals().filter(|p| sees(&visible, p.id)).map(|p| (p.id, principal_row(p))).collect();
    out.sort_by_key(|(id, _)| *id);
    Ok(out.into_iter().map(|(_, r)| r).collect())
}

pub(super) static DATABASE_ROLE_MEMBERS: ViewDef<2> = ViewDef {
    schema: "sys",
    name: "database_role_members",
    columns: [col("role_principal_id", Int, false), col("member_principal_id", Int, false)],
    rows: |ctx, db| {
        let security = security(ctx, db)?;
        let visible = visible_principals(ctx, db)?;
        let mut members: Vec<(i32, i32)> =
            security.members().iter().copied().filter(|&(_, member)| sees(&visible, member)).collect();
        members.sort_unstable();
        Ok(members.into_iter().map(|(r, m)| [int(i64::from(r)), int(i64::from(m))]).collect())
    },
};

pub(super) static DATABASE_PERMISSIONS: ViewDef<10> = ViewDef {
    schema: "sys",
    name: "database_permissions",
    columns: super::PERMISSION_COLUMNS,
    rows: |ctx, db| {
        let security = security(ctx, db)?;
        let visible = visible_principals(ctx, db)?;
        Ok(security
            .permissions()
            .iter()
            .filter(|g| sees(&visible, g.grantee))
            .map(|g| {
                let (class, class_desc) = g.class.number_and_desc();
                let (state, state_desc) = g.state.code_and_desc();
                [
                    int(class),
                    s(class_desc),
                    int(i64::from(g.major_id)),
                    int(i64::from(g.minor_id)),
                    int(i64::from(g.grantee)),
                    int(i64::from(g.grantor)),
                    s(tessera_security::principals::check::type_code(&g.permission)),
                    s(&g.permission),
                    s(state),
                    s(state_desc),
                ]
            })
            .collect())
    },
};

pub(super) static SCHEMAS: ViewDef<3> = ViewDef {
    schema: "sys",
    name: "schemas",
    columns: [col("name", SYSNAME, false), col("schema_id", Int, false), col("principal_id", Int, true)],
    rows: |ctx, db| {
        let security = security(ctx, db)?;
        let mut out: Vec<(i32, [Value; 3])> = security
            .schemas()
            .map(|sc| (sc.id, [s(&sc.name), int(i64::from(sc.id)), int(i64::from(sc.owner))]))
            .collect();
        out.sort_by_key(|(id, _)| *id);
        Ok(out.into_iter().map(|(_, r)| r).collect())
    },
};

pub(super) static SYSUSERS: ViewDef<20> = ViewDef {
    schema: "sys",
    name: "sysusers",
    columns: [
        col("uid", SmallInt, true),
        col("status", SmallInt, true),
        col("name", SYSNAME, false),
        col("sid", VarBinary(85), true),
        col("roles", VarBinary(2048), true),
        col("createdate", DateTime, false),
        col("updatedate", DateTime, false),
        col("altuid", SmallInt, true),
        col("password", VarBinary(256), true),
        col("gid", SmallInt, true),
        col("environ", VarChar(255), true),
        col("hasdbaccess", Int, true),
        col("islogin", Int, true),
        col("isntname", Int, true),
        col("isntgroup", Int, true),
        col("isntuser", Int, true),
        col("issqluser", Int, true),
        col("isaliased", Int, true),
        col("issqlrole", Int, true),
        col("isapprole", Int, true),
    ],
    rows: sysusers,
};

/// SQL Server 2000's view of a database's users and roles, which old tools (and Flyway's
/// schema listing) still read: a role's group id is its own, a user's is public's; a user
/// has database access unless it is one of the users every database has that cannot
/// connect (guest without CONNECT, INFORMATION_SCHEMA, sys).
fn sysusers(ctx: &ExecCtx, db: &str) -> Rows<20> {
    use tessera_security::principals::{Class, GUEST_ID, INFORMATION_SCHEMA_ID, SYS_ID};
    let security = security(ctx, db)?;
    let visible = visible_principals(ctx, db)?;
    let guest_connects = security
        .permissions()
        .iter()
        .any(|g| g.class == Class::Database && g.grantee == GUEST_ID && g.permission == "CONNECT");
    let small = |id: i32| i16::try_from(id).map_or(Value::Null, |id| int(i64::from(id)));
    let flag = |b: bool| int(i64::from(b));
    let mut out: Vec<(i32, [Value; 20])> = Vec::new();
    for p in security.principals().filter(|p| sees(&visible, p.id)) {
        let role = matches!(p.kind, PrincipalKind::Role | PrincipalKind::ApplicationRole);
        let access = match p.id {
            _ if role => false,
            GUEST_ID => guest_connects,
            INFORMATION_SCHEMA_ID | SYS_ID => false,
            _ => true,
        };
        let login = matches!(p.kind, PrincipalKind::SqlUser | PrincipalKind::ContainedUser);
        let row = [
            small(p.id),
            int(0),
            s(&p.name),
            p.sid.clone().map_or(Value::Null, |sid| Value::Binary(sid.into())),
            Value::Null,
            datetime(p.create_date),
            datetime(p.modify_date),
            if role { p.owner.map_or(Value::Null, small) } else { Value::Null },
            Value::Null,
            if role { small(p.id) } else { int(0) },
            Value::Null,
            flag(access),
            flag(login),
            flag(false),
            flag(false),
            flag(false),
            flag(!role && p.id != INFORMATION_SCHEMA_ID && p.id != SYS_ID),
            flag(false),
            flag(p.kind == PrincipalKind::Role),
            flag(p.kind == PrincipalKind::ApplicationRole),
        ];
        out.push((p.id, row));
    }
    out.sort_by_key(|(id, _)| *id);
    Ok(out.into_iter().map(|(_, r)| r).collect())
}
