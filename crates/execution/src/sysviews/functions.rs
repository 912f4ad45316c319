//! System table-valued functions: relations computed from their arguments when a query
//! reads them (`SELECT * FROM fn_my_permissions(NULL, 'DATABASE')`). Each is defined
//! once, as a [`FunctionDef`], like a view; a plan names one by [`View`] (its id indexes
//! [`FUNCTIONS`]). fn_listextendedproperty is in `properties`.

use tessera_errors::SqlResult;
use tessera_semantics::catalog::Object;
use tessera_semantics::plan::{Col, Row, View};
use tessera_semantics::types::{SqlType, Value};

use super::{col, s, FunctionDef, Rows, SYSNAME};
use crate::runtime::ExecCtx;
use tessera_security::principals::check::{allowed, column_allowed, On, PERMISSIONS};
use tessera_security::server_permissions::SERVER_PERMISSIONS;

/// A [`FunctionDef`] of any width.
trait SystemFunction: Sync {
    fn name(&self) -> &'static str;
    fn columns(&'static self) -> &'static [Col];
    fn rows(&self, ctx: &ExecCtx, db: &str, args: &[Value]) -> SqlResult<Vec<Row>>;
}

impl<const N: usize> SystemFunction for FunctionDef<N> {
    fn name(&self) -> &'static str {
        self.name
    }

    fn columns(&'static self) -> &'static [Col] {
        &self.columns
    }

    fn rows(&self, ctx: &ExecCtx, db: &str, args: &[Value]) -> SqlResult<Vec<Row>> {
        Ok((self.rows)(ctx, db, args)?.into_iter().map(Vec::from).collect())
    }
}

static FUNCTIONS: &[&dyn SystemFunction] = &[
    &MY_PERMISSIONS,
    &super::properties::LIST_EXTENDED_PROPERTY,
    &super::describe::DESCRIBE_FIRST_RESULT_SET,
    &STRING_SPLIT,
    &STRING_SPLIT_ORDINAL,
    &OPENJSON,
    &OPENJSON_ELEMENTS,
    &GENERATE_SERIES,
    &super::requests::SQL_TEXT,
    &super::requests::INPUT_BUFFER,
    &super::query_stats::TEXT_QUERY_PLAN,
    &super::index_usage::INDEX_OPERATIONAL_STATS,
    &super::io_stats::VIRTUAL_FILE_STATS,
];

/// The most rows GENERATE_SERIES makes (its rows are held in memory).
const MAX_SERIES_ROWS: i128 = 10_000_000;

/// `GENERATE_SERIES(start, stop [, step])`: start, start + step, … up to stop (the step is
/// 1, or -1 when stop is below start); integers or decimals, as the binder types `value`.
pub(super) static GENERATE_SERIES: FunctionDef<1> = FunctionDef {
    name: "generate_series",
    columns: [col("value", SqlType::BigInt, true)],
    rows: |_, _, args| {
        // Integers and decimals alike as scaled integers.
        let scale =
            args.iter().map(|v| if let Value::Decimal { scale, .. } = v { *scale } else { 0 }).max().unwrap_or(0);
        let scaled = |v: &Value| -> Option<i128> {
            match v {
                Value::Int(i) => Some(i128::from(*i) * 10i128.pow(u32::from(scale))),
                Value::Decimal { value, scale: s } => Some(value * 10i128.pow(u32::from(scale - s))),
                _ => None,
            }
        };
        let (Some(start), Some(stop)) = (args.first().and_then(scaled), args.get(1).and_then(scaled)) else {
            return Ok(Vec::new());
        };
        let one = 10i128.pow(u32::from(scale));
        let step = match args.get(2) {
            None => {
                if stop >= start {
                    one
                } else {
                    -one
                }
            }
            Some(v) => match scaled(v) {
                Some(0) => return Err(tessera_errors::msg::GENERATE_SERIES_STEP_ZERO.err()),
                Some(s) => s,
                None => return Ok(Vec::new()),
            },
        };
        if (stop - start).signum() * step.signum() < 0 {
            return Ok(Vec::new());
        }
        let count = (stop - start) / step + 1;
        if count > MAX_SERIES_ROWS {
            return Err(tessera_errors::msg::GENERATE_SERIES_TOO_LONG.with(&[&(MAX_SERIES_ROWS as i64)]));
        }
        let decimal = args.iter().any(|v| matches!(v, Value::Decimal { .. }));
        let value = |x: i128| if decimal { Value::Decimal { value: x, scale } } else { Value::Int(x as i64) };
        Ok((0..count).map(|k| [value(start + k * step)]).collect())
    },
};

/// `OPENJSON(json [, path]) WITH (…)`'s rows before their columns are read (the parser
/// reads the WITH clause as columns of this function's rows; its name is no name a query
/// can write unquoted): each element of the array the path finds as JSON text, or the
/// object it finds itself.
pub(super) static OPENJSON_ELEMENTS: FunctionDef<1> = FunctionDef {
    name: "openjson with",
    columns: [col("value", SqlType::NVarChar(tessera_types::MAX), true)],
    rows: |_, _, args| {
        use tessera_semantics::types::functions::json;
        let Some(Value::Str(text)) = args.first() else { return Ok(Vec::new()) };
        let path = match args.get(1) {
            Some(Value::Str(p)) => json::parse_path(p)?,
            Some(_) => return Ok(Vec::new()),
            None => json::parse_path("$")?,
        };
        let doc = json::parse_json(text)?;
        Ok(match json::find(&doc, &path) {
            Some(serde_json::Value::Array(a)) => a.iter().map(|v| [Value::str(&v.to_string())]).collect(),
            Some(v @ serde_json::Value::Object(_)) => vec![[Value::str(&v.to_string())]],
            None if path.strict => return Err(tessera_errors::msg::JSON_PROPERTY_NOT_FOUND.err()),
            Some(_) if path.strict => return Err(tessera_errors::msg::JSON_NOT_OBJECT_OR_ARRAY.err()),
            _ => Vec::new(),
        })
    },
};

/// `OPENJSON(json [, path])` with its default schema: a row per property of the object
/// (or element of the array) the path finds — its key (an element's index), its value
/// (a string's text, other values as JSON) and its JSON type (0 null … 5 object). A lax
/// path that finds nothing gives no rows; a strict one is 13608; a scalar is 13611.
pub(super) static OPENJSON: FunctionDef<3> = FunctionDef {
    name: "openjson",
    columns: [
        col("key", SqlType::NVarChar(4000), true),
        col("value", SqlType::NVarChar(tessera_types::MAX), true),
        col("type", SqlType::TinyInt, true),
    ],
    rows: |_, _, args| {
        use tessera_semantics::types::functions::json;
        let Some(Value::Str(text)) = args.first() else { return Ok(Vec::new()) };
        let path = match args.get(1) {
            Some(Value::Str(p)) => json::parse_path(p)?,
            Some(_) => return Ok(Vec::new()),
            None => json::parse_path("$")?,
        };
        let doc = json::parse_json(text)?;
        let found = match json::find(&doc, &path) {
            Some(v) => v,
            None if path.strict => return Err(tessera_errors::msg::JSON_PROPERTY_NOT_FOUND.err()),
            None => return Ok(Vec::new()),
        };
        let row = |key: String, v: &serde_json::Value| {
            [
                Value::str(&key),
                json::value_text(v).map_or(Value::Null, |t| Value::str(&t)),
                Value::Int(json::type_number(v)),
            ]
        };
        Ok(match found {
            serde_json::Value::Object(o) => o.iter().map(|(k, v)| row(k.clone(), v)).collect(),
            serde_json::Value::Array(a) => a.iter().enumerate().map(|(i, v)| row(i.to_string(), v)).collect(),
            _ if path.strict => return Err(tessera_errors::msg::JSON_NOT_OBJECT_OR_ARRAY.err()),
            _ => Vec::new(),
        })
    },
};

/// `STRING_SPLIT(string, separator)`: the parts of the string between separators (a NULL
/// string has none). The binder gives `value` the type of the string argument.
pub(super) static STRING_SPLIT: FunctionDef<1> = FunctionDef {
    name: "string_split",
    columns: [col("value", SqlType::NVarChar(tessera_types::MAX), true)],
    rows: |_, _, args| Ok(split(args)?.into_iter().map(|(part, _)| [part]).collect()),
};

/// `STRING_SPLIT(string, separator, 1)`: the parts with their 1-based position. (Not a
/// name a query can use: the binder picks it for a third argument of 1.)
pub(super) static STRING_SPLIT_ORDINAL: FunctionDef<2> = FunctionDef {
    name: "string_split ordinal",
    columns: [col("value", SqlType::NVarChar(tessera_types::MAX), true), col("ordinal", SqlType::BigInt, false)],
    rows: |_, _, args| Ok(split(args)?.into_iter().map(|(part, i)| [part, Value::Int(i)]).collect()),
};

/// STRING_SPLIT's parts of `args[0]` at `args[1]` (one character: 214 otherwise), with
/// their positions.
fn split(args: &[Value]) -> SqlResult<Vec<(Value, i64)>> {
    let separator = match args.get(1) {
        Some(Value::Str(s)) if s.chars().count() == 1 => s.chars().next().expect("one character"),
        _ => {
            return Err(tessera_errors::msg::PARAMETER_TYPE_EXPECTED
                .with(&[&"separator", &"nchar(1)/nvarchar(1)"])
                .with_state(11))
        }
    };
    let Some(Value::Str(text)) = args.first() else { return Ok(Vec::new()) };
    Ok(text.split(separator).zip(1..).map(|(part, i)| (Value::str(part), i)).collect())
}

/// The system function `name` (lower case), if there is one.
pub fn lookup(name: &str) -> Option<View> {
    let id = FUNCTIONS.iter().position(|f| f.name() == name)?;
    Some(View { id, schema: "sys", name: FUNCTIONS[id].name(), columns: FUNCTIONS[id].columns() })
}

/// The rows of `function` for `args`, read in database `db`.
pub fn rows(function: View, db: &str, args: &[Value], ctx: &ExecCtx) -> SqlResult<Vec<Row>> {
    FUNCTIONS[function.id].rows(ctx, db, args)
}

/// `fn_my_permissions(securable, 'class')`: the permissions the caller holds on a
/// securable, granted or through roles, ownership and the permissions that imply them:
/// SERVER (securable NULL), DATABASE (NULL: the current one), SCHEMA, and OBJECT (with a
/// row per column for SELECT, UPDATE and REFERENCES, as SQL Server lists them). A
/// securable that does not exist, or another class, has no rows.
pub(super) static MY_PERMISSIONS: FunctionDef<3> = FunctionDef {
    name: "fn_my_permissions",
    columns: [
        col("entity_name", SYSNAME, true),
        col("subentity_name", SYSNAME, true),
        col("permission_name", SqlType::NVarChar(60), true),
    ],
    rows: my_permissions,
};

fn my_permissions(ctx: &ExecCtx, db: &str, args: &[Value]) -> Rows<3> {
    let text = |v: Option<&Value>| match v {
        Some(Value::Str(s)) => Some(s.trim_end().to_string()),
        _ => None,
    };
    let securable = text(args.first());
    let class = text(args.get(1)).unwrap_or_default().to_uppercase();
    let row = |entity: &str, sub: &str, permission: &str| [s(entity), s(sub), s(permission)];
    if class == "SERVER" {
        let held = SERVER_PERMISSIONS.iter().filter(|(p, _)| ctx.shared.holds_server(ctx.session, p));
        return Ok(held.map(|(p, _)| row("server", "", p)).collect());
    }
    let (database, on_object) = match (class.as_str(), &securable) {
        ("DATABASE", None) => (db.to_string(), None),
        ("DATABASE", Some(name)) => (name.clone(), None),
        ("SCHEMA", Some(_)) => (db.to_string(), None),
        ("OBJECT", Some(name)) => match ctx.object(name) {
            Some((in_db, o)) => (in_db, Some(o)),
            None => return Ok(Vec::new()),
        },
        _ => return Ok(Vec::new()),
    };
    if !ctx.shared.engine.exists(&database) {
        return Ok(Vec::new());
    }
    let Ok((security, token)) = ctx.shared.access(ctx.session, &database) else { return Ok(Vec::new()) };
    let holds = |permission: &str, on: On| allowed(&security, &token, permission, on);
    let mut out = Vec::new();
    match (class.as_str(), on_object) {
        ("DATABASE", _) => {
            for (p, ..) in PERMISSIONS.iter().filter(|(_, _, database, _, _)| *database) {
                if holds(p, On::Database) {
                    out.push(row("database", "", p));
                }
            }
        }
        ("SCHEMA", _) => {
            let schema = securable.unwrap_or_default();
            if security.schema(&schema).is_none() {
                return Ok(Vec::new());
            }
            for (p, ..) in PERMISSIONS.iter().filter(|(_, _, _, on_schema, _)| *on_schema) {
                if holds(p, On::Schema(&schema)) {
                    out.push(row(&schema, "", p));
                }
            }
        }
        (_, Some(object)) => {
            let entity = securable.unwrap_or_default();
            let on = On::Object { schema: object.schema(), id: object.id() };
            for (p, ..) in PERMISSIONS.iter().filter(|(_, _, _, _, on_object)| *on_object) {
                if holds(p, on) {
                    out.push(row(&entity, "", p));
                }
            }
            if let Object::Table(table) = &object {
                for (i, c) in table.columns.iter().enumerate() {
                    for p in ["SELECT", "UPDATE", "REFERENCES"] {
                        if column_allowed(&security, &token, p, object.schema(), object.id(), i as i32 + 1) {
                            out.push(row(&entity, &c.name, p));
                        }
                    }
                }
            }
        }
        _ => {}
    }
    Ok(out)
}
