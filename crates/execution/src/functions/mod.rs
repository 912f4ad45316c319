//! Functions that read the session, the catalog or the server: @@ROWCOUNT, DB_NAME,
//! OBJECT_ID, IDENT_CURRENT, SERVERPROPERTY, SUSER_NAME, LOGINPROPERTY and the rest of
//! `SessionFn` (those about database principals are in `principals`, the properties of
//! objects by id in `objects`).

mod objects;
mod principals;

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::runtime::{ExecCtx, Shared, DEFAULT_COLLATION, PRODUCT_VERSION, VERSION};
use tessera_errors::SqlResult;
use tessera_semantics::catalog::{Catalog, Object};
use tessera_semantics::plan::SessionFn;
use tessera_semantics::types::{convert, SqlType, Value};

/// TYPE_NAME of a table type of the current database, by its id.
fn table_type_name(ctx: &ExecCtx, id: i64) -> SqlResult<Option<String>> {
    let database = ctx.shared.database(&ctx.session.database)?;
    let catalog = ctx.catalog(&database)?;
    Ok(i32::try_from(id).ok().and_then(|id| match catalog.by_id(id) {
        Some(Object::Module(m)) if m.kind == tessera_semantics::catalog::ModuleKind::TableType => Some(m.name.clone()),
        _ => None,
    }))
}

/// The value of a session function for `args`.
pub fn session_function(ctx: &mut ExecCtx, func: &SessionFn, args: &[Value]) -> SqlResult<Value> {
    let s = &*ctx.session;
    let text = |v: &Value| match v {
        Value::Str(s) => Some(s.to_string()),
        _ => None,
    };
    Ok(match func {
        SessionFn::ColumnUpdated => match (s.triggers.last(), args.first()) {
            (Some(frame), Some(Value::Int(i))) => Value::Bit(frame.updated.get(*i as usize).copied().unwrap_or(false)),
            _ => Value::Bit(false),
        },
        SessionFn::ColumnsUpdated => s.triggers.last().map_or(Value::Null, |f| f.columns_updated()),
        SessionFn::EventData => s.events.last().map_or(Value::Null, |e| Value::str(e)),
        SessionFn::TriggerNestLevel => match args.first() {
            Some(Value::Int(id)) => {
                Value::Int(s.triggers.iter().filter(|f| i64::from(f.trigger) == *id).count() as i64)
            }
            _ => Value::Int(s.triggers.len() as i64),
        },
        SessionFn::UserName
        | SessionFn::UserId
        | SessionFn::SchemaName
        | SessionFn::SchemaId
        | SessionFn::IsMember
        | SessionFn::IsRoleMember
        | SessionFn::HasDbAccess
        | SessionFn::HasPermsByName
        | SessionFn::OriginalLogin => return principals::principal_function(ctx, func, args),
        SessionFn::ObjectName
        | SessionFn::ObjectSchemaName
        | SessionFn::ColName
        | SessionFn::ObjectDefinition
        | SessionFn::ObjectProperty
        | SessionFn::ObjectPropertyEx
        | SessionFn::ColumnProperty
        | SessionFn::IndexProperty
        | SessionFn::IndexKeyProperty
        | SessionFn::TypeProperty => objects::object_function(ctx, func, args),
        SessionFn::RowCount => Value::Int(s.rowcount),
        SessionFn::Identity => s.identity.clone().unwrap_or(Value::Null),
        SessionFn::ScopeIdentity => s.scope_identity.clone().unwrap_or(Value::Null),
        SessionFn::Error => Value::Int(i64::from(s.error)),
        SessionFn::TranCount => Value::Int(i64::from(s.txns.count)),
        SessionFn::Spid => Value::Int(i64::from(s.spid)),
        SessionFn::NestLevel => Value::Int(i64::from(s.nest_level)),
        SessionFn::Version => Value::str(VERSION),
        SessionFn::MicrosoftVersion => Value::Int(microsoft_version(PRODUCT_VERSION)),
        SessionFn::ServerName => Value::str(&server_name(ctx.shared)),
        SessionFn::ServiceName => Value::str(ctx.shared.instance_name.get().unwrap_or(&ctx.shared.server_name)),
        SessionFn::DbName => match args.first() {
            None => Value::str(&s.database),
            Some(Value::Int(id)) => ctx.database_name(*id).map_or(Value::Null, |n| Value::str(&n)),
            Some(_) => Value::Null,
        },
        SessionFn::DbId => match args.first() {
            None => ctx.database_id(&s.database.clone()),
            Some(v) => text(v).map_or(Value::Null, |n| ctx.database_id(&n)),
        },
        SessionFn::DbNameOf | SessionFn::DbIdOf => Value::Null,
        SessionFn::ObjectId => match args.first().and_then(text) {
            Some(n) => match ctx.object(&n) {
                Some((db, o)) if ctx.may_see(&db, &o) => Value::Int(i64::from(o.id())),
                Some(_) => Value::Null,
                // A constraint is an object of its own too (sys.objects lists it), and
                // so is a system view (`sys.objects`, `INFORMATION_SCHEMA.TABLES`).
                None => match objects::constraint_id(ctx, &n) {
                    Some(id) => Value::Int(i64::from(id)),
                    None => system_view_id(&n).map_or(Value::Null, Value::Int),
                },
            },
            None => Value::Null,
        },
        SessionFn::TypeName => match args.first() {
            Some(Value::Int(id)) => match crate::sysviews::type_name(*id) {
                Some(name) => Value::str(name),
                None => table_type_name(ctx, *id)?.map_or(Value::Null, |n| Value::str(&n)),
            },
            _ => Value::Null,
        },
        SessionFn::TypeId => match args.first().and_then(text) {
            Some(n) => match crate::sysviews::type_id(&n) {
                Some(id) => Value::Int(id),
                None => {
                    let ty = tessera_syntax::ast::TypeName { name: n, args: Vec::new() };
                    crate::runtime::table_type(ctx, &ty).map_or(Value::Null, |t| Value::Int(i64::from(t.id)))
                }
            },
            None => Value::Null,
        },
        SessionFn::ColLength => match (args.first().and_then(text), args.get(1).and_then(text)) {
            (Some(t), Some(c)) => match ctx.object(&t) {
                Some((_, Object::Table(table))) => match table.column(&c) {
                    Some(i) => Value::Int(column_length(&table.columns[i].ty)),
                    None => Value::Null,
                },
                _ => Value::Null,
            },
            _ => Value::Null,
        },
        SessionFn::IdentCurrent => return ctx.ident_current(args.first().and_then(text)),
        SessionFn::ServerProperty => match args.first().and_then(text) {
            Some(p) => server_property(&p, ctx.shared),
            None => Value::Null,
        },
        SessionFn::DatabasePropertyEx => match (args.first().and_then(text), args.get(1).and_then(text)) {
            (Some(db), Some(p)) => ctx.database_property(&db, &p),
            _ => Value::Null,
        },
        SessionFn::Language => Value::str(&s.options.language),
        SessionFn::MaxPrecision => Value::Int(38),
        SessionFn::TextSize => Value::Int(s.options.text_size()),
        SessionFn::LockTimeout => Value::Int(s.options.lock_timeout),
        SessionFn::Options => Value::Int(s.options.bits()),
        SessionFn::FetchStatus => Value::Int(i64::from(s.cursors.fetch_status)),
        SessionFn::CursorRows => Value::Int(s.cursors.cursor_rows),
        SessionFn::CursorStatus => match (args.first().and_then(text), args.get(1).and_then(text)) {
            (Some(kind), Some(name)) => s.cursors.status(&kind, &name).map_or(Value::Null, |n| Value::Int(n.into())),
            _ => Value::Null,
        },
        SessionFn::DateFirst => Value::Int(s.options.datefirst),
        SessionFn::ProcId => Value::Int(0),
        // About user transactions only: an autocommit statement's own is none.
        SessionFn::XactState => Value::Int(if s.txns.count == 0 {
            0
        } else if s.txns.doomed {
            -1
        } else {
            1
        }),
        SessionFn::ErrorNumber => s.caught.as_ref().map_or(Value::Null, |e| Value::Int(i64::from(e.number))),
        SessionFn::ErrorMessage => s.caught.as_ref().map_or(Value::Null, |e| Value::str(&e.message)),
        SessionFn::ErrorSeverity => s.caught.as_ref().map_or(Value::Null, |e| Value::Int(i64::from(e.severity))),
        SessionFn::ErrorState => s.caught.as_ref().map_or(Value::Null, |e| Value::Int(i64::from(e.state))),
        SessionFn::ErrorLine => s.caught.as_ref().map_or(Value::Null, |e| Value::Int(i64::from(e.line))),
        SessionFn::ErrorProcedure => {
            s.caught.as_ref().and_then(|e| e.procedure.as_deref()).map_or(Value::Null, Value::str)
        }
        SessionFn::SuserName => match args.first() {
            None => Value::str(&s.login),
            Some(Value::Int(id)) => ctx
                .shared
                .logins
                .all()
                .into_iter()
                .find(|l| i64::from(l.principal_id) == *id)
                .map_or(Value::Null, |l| Value::str(&l.name)),
            Some(Value::Binary(sid)) => ctx
                .shared
                .logins
                .all()
                .into_iter()
                .find(|l| l.sid[..] == sid[..])
                .map_or(Value::Null, |l| Value::str(&l.name)),
            Some(_) => Value::Null,
        },
        SessionFn::SuserId => {
            let name = args.first().and_then(text).unwrap_or_else(|| s.login.clone());
            ctx.shared.logins.get(&name).map_or(Value::Null, |l| Value::Int(i64::from(l.principal_id)))
        }
        SessionFn::SuserSid => {
            let name = args.first().and_then(text).unwrap_or_else(|| s.login.clone());
            ctx.shared.logins.get(&name).map_or(Value::Null, |l| Value::Binary(l.sid.into()))
        }
        SessionFn::HostName => Value::str(&s.host_name),
        SessionFn::AppName | SessionFn::ProgramName => Value::str(&s.program_name),
        SessionFn::IsSrvRoleMember => match args.first().and_then(text) {
            Some(role) if tessera_security::logins::SERVER_ROLES.iter().any(|(_, r)| r.eq_ignore_ascii_case(&role)) => {
                // Without a login named: the session's server login; a database principal
                // without a login is in no server role.
                let login = match args.get(1).and_then(text) {
                    Some(named) => named,
                    None => match s.server_login() {
                        Some(own) => own.to_string(),
                        None => return Ok(Value::Int(0)),
                    },
                };
                match ctx.shared.logins.get(&login) {
                    Some(_) => Value::Int(i64::from(ctx.shared.logins.is_member(&login, &role))),
                    None => Value::Null,
                }
            }
            _ => Value::Null,
        },
        SessionFn::LoginProperty => match (args.first().and_then(text), args.get(1).and_then(text)) {
            (Some(name), Some(property)) => login_property(ctx.shared, s.server_login(), &name, &property),
            _ => Value::Null,
        },
    })
}

/// LOGINPROPERTY(name, property): NULL for an unknown login or property, and for a login
/// the caller may not manage unless it is its own (SQL Server's VIEW permission on it).
/// The password hash and expiration properties are NULL (tessera keeps neither).
fn login_property(shared: &Shared, caller: Option<&str>, name: &str, property: &str) -> Value {
    let visible = caller.is_some_and(|caller| {
        caller.eq_ignore_ascii_case(name)
            || shared.logins.is_sysadmin(caller)
            || shared.logins.is_member(caller, "securityadmin")
    });
    let Some(login) = shared.logins.get(name).filter(|_| visible) else { return Value::Null };
    let Some(lockout) = shared.logins.lockout(name, &shared.lockout_policy()) else { return Value::Null };
    // A time never recorded is 1900-01-01, as in SQL Server.
    let time = |t: Option<std::time::SystemTime>| {
        let secs = t
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(-2_208_988_800, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
        convert::cast(&crate::sysviews::datetime(secs), &SqlType::DateTime, &variant_type(), Some(121))
            .unwrap_or(Value::Null)
    };
    match property.to_ascii_lowercase().as_str() {
        "islocked" => Value::str(if lockout.locked { "1" } else { "0" }),
        "badpasswordcount" => Value::str(&lockout.bad_password_count.to_string()),
        "badpasswordtime" => time(lockout.bad_password_time),
        "lockouttime" => time(lockout.lockout_time),
        "defaultdatabase" => Value::str(&login.default_database),
        "defaultlanguage" => Value::str(&login.default_language),
        "isexpired" | "ismustchange" | "historylength" => Value::str("0"),
        _ => Value::Null,
    }
}

impl ExecCtx<'_> {
    /// Database `db`'s catalog as the session sees it.
    pub(crate) fn catalog_of(&self, db: &str) -> SqlResult<Arc<Catalog>> {
        let database = self.shared.database(db)?;
        self.catalog(&database)
    }

    /// Whether the session may see the object `o` of database `db` (metadata visibility);
    /// temp tables are always their session's.
    fn may_see(&self, db: &str, o: &Object) -> bool {
        db.eq_ignore_ascii_case("tempdb")
            || self
                .shared
                .access(self.session, db)
                .is_ok_and(|(s, t)| tessera_security::principals::check::may_see(&s, &t, o.schema(), o.id()))
    }

    /// Resolves `name`, `schema.name` or `db.schema.name` to (database, object).
    pub(crate) fn object(&self, name: &str) -> Option<(String, Object)> {
        let parts = name_parts(name)?;
        let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
        let (db, schema, obj) = match parts.as_slice() {
            [o] => (self.session.database.clone(), "dbo", *o),
            [s, o] => (self.session.database.clone(), if s.is_empty() { "dbo" } else { s }, *o),
            [d, s, o] => (
                if d.is_empty() { self.session.database.clone() } else { d.to_string() },
                if s.is_empty() { "dbo" } else { s },
                *o,
            ),
            _ => return None,
        };
        if let Some(real) = obj.starts_with('#').then(|| self.session.temp_tables.get(&obj.to_lowercase())).flatten() {
            let cat = self.catalog_of("tempdb").ok()?;
            return cat.lookup("dbo", real).cloned().map(|o| ("tempdb".to_string(), o));
        }
        let cat = self.catalog_of(&db).ok()?;
        cat.lookup(schema, obj).cloned().map(|o| (db, o))
    }

    /// IDENT_CURRENT: the last identity value of a table, or its seed while none was made.
    fn ident_current(&mut self, name: Option<String>) -> SqlResult<Value> {
        let Some((db, Object::Table(table))) = name.and_then(|n| self.object(&n)) else { return Ok(Value::Null) };
        let Some(col) = table.identity_column() else { return Ok(Value::Null) };
        crate::identity::load_counters(self, &db, &table)?;
        let (seed, inc) = table.columns[col].identity.expect("identity column");
        let v = table.counters.identity.load(Ordering::Relaxed);
        let v = if v == seed - inc { seed } else { v };
        Ok(Value::Decimal { value: i128::from(v), scale: 0 })
    }

    /// DB_NAME(id), from the registry (no database is opened).
    fn database_name(&self, id: i64) -> Option<String> {
        u32::try_from(id)
            .ok()
            .and_then(|id| self.shared.engine.entry_by_id(id))
            .map(|d| d.name)
            .filter(|name| self.shared.may_see_database(self.session, name))
    }

    /// DB_ID(name), from the registry: NULL for a database the session may not see.
    fn database_id(&self, name: &str) -> Value {
        if !self.shared.may_see_database(self.session, name) {
            return Value::Null;
        }
        self.shared.engine.database_id(name).map_or(Value::Null, |id| Value::Int(i64::from(id)))
    }

    /// DATABASEPROPERTYEX, from the registry.
    fn database_property(&self, db: &str, prop: &str) -> Value {
        let Some(d) = self.shared.engine.entry(db) else { return Value::Null };
        match prop.to_ascii_lowercase().as_str() {
            "recovery" => Value::str(d.options.recovery_model.name()),
            "status" => Value::str(self.shared.database_state(&d).1),
            "updateability" => Value::str("READ_WRITE"),
            "useraccess" => Value::str("MULTI_USER"),
            "collation" => Value::str(DEFAULT_COLLATION),
            "version" => Value::str("957"),
            "isrecursivetriggersenabled" => Value::Int(i64::from(d.options.recursive_triggers)),
            _ => Value::Null,
        }
    }
}

/// COL_LENGTH: bytes a column takes (-1 for max types).
fn column_length(t: &SqlType) -> i64 {
    use SqlType::*;
    match *t {
        Char(n) | VarChar(n) | Binary(n) | VarBinary(n) if n == tessera_access::row::MAX => -1,
        NChar(n) | NVarChar(n) if n == tessera_access::row::MAX => -1,
        Char(n) | VarChar(n) | Binary(n) | VarBinary(n) => i64::from(n),
        NChar(n) | NVarChar(n) => 2 * i64::from(n),
        _ => t.fixed_size().map_or(-1, |s| s as i64),
    }
}

/// `@@SERVERNAME`: the machine, then `\INSTANCE` for a named instance.
fn server_name(shared: &Shared) -> String {
    match shared.instance_name.get() {
        Some(instance) => format!("{}\\{instance}", shared.server_name),
        None => shared.server_name.clone(),
    }
}

fn server_property(name: &str, shared: &Shared) -> Value {
    match name.to_ascii_lowercase().as_str() {
        "productversion" => Value::str(PRODUCT_VERSION),
        "productlevel" => Value::str("RTM"),
        "edition" => Value::str("Developer Edition (64-bit)"),
        "engineedition" => Value::str("3"),
        "servername" => Value::str(&server_name(shared)),
        "machinename" => Value::str(&shared.server_name),
        "instancename" => shared.instance_name.get().map(String::as_str).map_or(Value::Null, Value::str),
        "collation" => Value::str(DEFAULT_COLLATION),
        "isclustered" | "isfulltextinstalled" | "isintegratedsecurityonly" | "ishadrenabled" => Value::str("0"),
        "processid" => Value::str(&std::process::id().to_string()),
        "productmajorversion" => Value::str("16"),
        "instancedefaultdatapath" => Value::str(&default_path(&shared.engine.config().data_dir)),
        "instancedefaultlogpath" => {
            let config = shared.engine.config();
            Value::str(&default_path(config.log_dir.as_ref().unwrap_or(&config.data_dir)))
        }
        "productminorversion" => Value::str("0"),
        _ => Value::Null,
    }
}

/// InstanceDefaultDataPath / LogPath: the directory absolute, with a trailing separator
/// (as SQL Server gives `C:\...\DATA\`), so a file name can be appended.
fn default_path(dir: &std::path::Path) -> String {
    let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    let mut s = dir.display().to_string();
    if !s.ends_with(std::path::MAIN_SEPARATOR) {
        s.push(std::path::MAIN_SEPARATOR);
    }
    s
}

/// The result column type of SERVERPROPERTY and friends (sql_variant in SQL Server).
pub fn variant_type() -> SqlType {
    SqlType::NVarChar(128)
}

/// The object id of the system view a name (`sys.objects`, `master.sys.objects`,
/// `INFORMATION_SCHEMA.TABLES`) names; the schema is needed, as in SQL Server.
fn system_view_id(name: &str) -> Option<i64> {
    let parts = name_parts(name)?;
    match parts.as_slice() {
        [.., schema, view] if parts.len() <= 3 => crate::sysviews::view_id(schema, view),
        _ => None,
    }
}

/// The parts of a multi-part name as written in a string (`OBJECT_ID('db.[a.b].[c]]d]')`):
/// split at the dots outside brackets and quotes, `[…]` with `]]` and `"…"` with `""`
/// unescaped. None for an unclosed bracket or quote.
pub fn name_parts(name: &str) -> Option<Vec<String>> {
    let mut parts = vec![String::new()];
    let mut chars = name.trim().chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '.' => parts.push(String::new()),
            '[' | '"' => {
                let close = if c == '[' { ']' } else { '"' };
                loop {
                    match chars.next()? {
                        x if x == close && chars.peek() == Some(&close) => {
                            chars.next();
                            parts.last_mut()?.push(close);
                        }
                        x if x == close => break,
                        x => parts.last_mut()?.push(x),
                    }
                }
            }
            c => parts.last_mut()?.push(c),
        }
    }
    Some(parts)
}

/// `major.minor.build.revision` as @@MICROSOFTVERSION packs it: the major version in the
/// top byte, the minor in the next, the build in the low 16 bits.
fn microsoft_version(product: &str) -> i64 {
    let mut parts = product.split('.').map(|p| p.parse::<i64>().unwrap_or(0));
    let (major, minor, build) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (major << 24) | ((minor & 0xFF) << 16) | (build & 0xFFFF)
}
