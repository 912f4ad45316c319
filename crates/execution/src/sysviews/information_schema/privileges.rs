//! TABLE_PRIVILEGES and COLUMN_PRIVILEGES: the GRANTs (with or without grant option) on
//! tables and views, and on their columns, that were made to `public` or to the current
//! user, or by the current user, as SQL Server's definitions of the views choose them. A
//! grant on an object counts for each of its columns.

use super::TABLE_NAME;
use crate::runtime::ExecCtx;
use crate::sysviews::{catalog, col, concat, concat_columns, s, ViewDef, SYSNAME};
use tessera_errors::SqlResult;
use tessera_security::principals::{Class, GrantState, PermissionRow, PUBLIC_ID};
use tessera_semantics::catalog::{ModuleKind, Object};
use tessera_semantics::plan::Col;
use tessera_semantics::types::{SqlType::*, Value};

const GRANT: [Col; 2] = [col("GRANTOR", SYSNAME, true), col("GRANTEE", SYSNAME, true)];
const PRIVILEGE: [Col; 2] = [col("PRIVILEGE_TYPE", VarChar(10), true), col("IS_GRANTABLE", VarChar(3), true)];
/// Who granted to whom on which table or view.
const GRANT_ON: [Col; 5] = concat_columns(GRANT, TABLE_NAME);
const GRANT_ON_COLUMN: [Col; 6] = concat_columns(GRANT_ON, [col("COLUMN_NAME", SYSNAME, true)]);

pub(in crate::sysviews) static TABLE_PRIVILEGES: ViewDef<7> = ViewDef {
    schema: "information_schema",
    name: "table_privileges",
    columns: concat_columns(GRANT_ON, PRIVILEGE),
    rows: |ctx, db| {
        let privileges = ["SELECT", "INSERT", "UPDATE", "DELETE", "REFERENCES"];
        Ok(grants(ctx, db, &privileges)?
            .into_iter()
            .filter(|g| g.row.minor_id == 0)
            .map(|g| concat(g.on, g.privilege))
            .collect())
    },
};

pub(in crate::sysviews) static COLUMN_PRIVILEGES: ViewDef<8> = ViewDef {
    schema: "information_schema",
    name: "column_privileges",
    columns: concat_columns(GRANT_ON_COLUMN, PRIVILEGE),
    rows: |ctx, db| {
        let mut out = Vec::new();
        for g in grants(ctx, db, &["SELECT", "UPDATE", "REFERENCES"])? {
            for (i, c) in g.columns.iter().enumerate() {
                if g.row.minor_id == 0 || g.row.minor_id == i as i32 + 1 {
                    let on: [Value; 6] = concat(g.on.clone(), [s(c)]);
                    out.push(concat(on, g.privilege.clone()));
                }
            }
        }
        Ok(out)
    },
};

/// A grant on a table or view, with the names it is listed under.
struct Grant {
    row: PermissionRow,
    /// As [`GRANT_ON`].
    on: [Value; 5],
    privilege: [Value; 2],
    /// The object's column names (a view's as its definition binds now).
    columns: Vec<String>,
}

/// The grants of `privileges` on the tables and views of `db` the session may see that
/// the views list.
fn grants(ctx: &ExecCtx, db: &str, privileges: &[&str]) -> SqlResult<Vec<Grant>> {
    let (database, catalog) = catalog(ctx, db)?;
    let (security, token) = ctx.shared.access(ctx.session, db)?;
    let name = |id: i32| security.principal_by_id(id).map_or(Value::Null, |p| s(&p.name));
    let mut out = Vec::new();
    for row in security.permissions() {
        let listed = row.class == Class::Object
            && privileges.contains(&row.permission.as_str())
            && matches!(row.state, GrantState::Grant | GrantState::GrantWithGrantOption)
            && (row.grantee == PUBLIC_ID || row.grantee == token.user || row.grantor == token.user);
        if !listed {
            continue;
        }
        let Some(object) = catalog.by_id(row.major_id) else { continue };
        let columns = match object {
            Object::Table(t) => t.columns.iter().map(|c| c.name.clone()).collect(),
            Object::Module(m) if m.kind == ModuleKind::View => {
                let mut binder = tessera_semantics::bind::Binder::new(ctx.shared, &*ctx.session, &[]);
                match binder.module_shape(db, m) {
                    Ok(shape) => shape.columns.into_iter().map(|c| c.name).collect(),
                    Err(_) => Vec::new(),
                }
            }
            _ => continue,
        };
        out.push(Grant {
            on: [name(row.grantor), name(row.grantee), s(database.name()), s(object.schema()), s(object.name())],
            privilege: [
                s(&row.permission),
                s(if row.state == GrantState::GrantWithGrantOption { "YES" } else { "NO" }),
            ],
            columns,
            row: row.clone(),
        });
    }
    Ok(out)
}
