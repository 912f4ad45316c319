//! DDL triggers (`CREATE TRIGGER … ON DATABASE FOR event_type_or_group, …`): after a
//! definition statement of the database's objects, the enabled DDL triggers whose events
//! cover it run, oldest first, in the statement's transaction (a ROLLBACK in one undoes
//! the definition and ends the batch, 3609), with EVENTDATA() the event as SQL Server's
//! EVENT_INSTANCE document.
//!
//! The events are those of tables, views, indexes, procedures, functions, triggers,
//! sequences, synonyms, types and schemas (CREATE, ALTER and DROP of each), and the groups
//! of them; `CREATE OR ALTER` is a CREATE event. Other events (users, roles, permissions,
//! statistics…) are accepted in a definition and never fire. Triggers ON ALL SERVER are
//! refused (40532).

use super::Runner;
use tessera_errors::msg;
use tessera_errors::SqlResult;
use tessera_syntax::ast::{ModuleKind, ObjectName, Statement, StatementKind};

/// The events tessera raises, each with the kind of object it is about (EVENTDATA's
/// ObjectType) and the group of its kind.
const EVENTS: &[(&str, &str, &str)] = &[
    ("CREATE_TABLE", "TABLE", "DDL_TABLE_EVENTS"),
    ("ALTER_TABLE", "TABLE", "DDL_TABLE_EVENTS"),
    ("DROP_TABLE", "TABLE", "DDL_TABLE_EVENTS"),
    ("CREATE_VIEW", "VIEW", "DDL_VIEW_EVENTS"),
    ("ALTER_VIEW", "VIEW", "DDL_VIEW_EVENTS"),
    ("DROP_VIEW", "VIEW", "DDL_VIEW_EVENTS"),
    ("CREATE_INDEX", "INDEX", "DDL_INDEX_EVENTS"),
    ("DROP_INDEX", "INDEX", "DDL_INDEX_EVENTS"),
    ("CREATE_PROCEDURE", "PROCEDURE", "DDL_PROCEDURE_EVENTS"),
    ("ALTER_PROCEDURE", "PROCEDURE", "DDL_PROCEDURE_EVENTS"),
    ("DROP_PROCEDURE", "PROCEDURE", "DDL_PROCEDURE_EVENTS"),
    ("CREATE_FUNCTION", "FUNCTION", "DDL_FUNCTION_EVENTS"),
    ("ALTER_FUNCTION", "FUNCTION", "DDL_FUNCTION_EVENTS"),
    ("DROP_FUNCTION", "FUNCTION", "DDL_FUNCTION_EVENTS"),
    ("CREATE_TRIGGER", "TRIGGER", "DDL_TRIGGER_EVENTS"),
    ("ALTER_TRIGGER", "TRIGGER", "DDL_TRIGGER_EVENTS"),
    ("DROP_TRIGGER", "TRIGGER", "DDL_TRIGGER_EVENTS"),
    ("CREATE_SEQUENCE", "SEQUENCE", "DDL_SEQUENCE_EVENTS"),
    ("ALTER_SEQUENCE", "SEQUENCE", "DDL_SEQUENCE_EVENTS"),
    ("DROP_SEQUENCE", "SEQUENCE", "DDL_SEQUENCE_EVENTS"),
    ("CREATE_SYNONYM", "SYNONYM", "DDL_SYNONYM_EVENTS"),
    ("DROP_SYNONYM", "SYNONYM", "DDL_SYNONYM_EVENTS"),
    ("CREATE_TYPE", "TYPE", "DDL_TYPE_EVENTS"),
    ("DROP_TYPE", "TYPE", "DDL_TYPE_EVENTS"),
    ("CREATE_SCHEMA", "SCHEMA", "DDL_SCHEMA_EVENTS"),
    ("DROP_SCHEMA", "SCHEMA", "DDL_SCHEMA_EVENTS"),
];

/// Event types and groups a DDL trigger may name that tessera never raises.
const OTHER_EVENTS: &[&str] = &[
    "ALTER_INDEX",
    "CREATE_STATISTICS",
    "UPDATE_STATISTICS",
    "DROP_STATISTICS",
    "DDL_STATISTICS_EVENTS",
    "ALTER_SCHEMA",
    "CREATE_USER",
    "ALTER_USER",
    "DROP_USER",
    "CREATE_ROLE",
    "ALTER_ROLE",
    "DROP_ROLE",
    "GRANT_DATABASE",
    "DENY_DATABASE",
    "REVOKE_DATABASE",
    "RENAME",
    "DDL_USER_EVENTS",
    "DDL_ROLE_EVENTS",
    "DDL_DATABASE_SECURITY_EVENTS",
    "DDL_GDR_DATABASE_EVENTS",
    "DDL_AUTHORIZATION_DATABASE_EVENTS",
    "ALTER_AUTHORIZATION_DATABASE",
];

/// Groups of groups (DDL_DATABASE_LEVEL_EVENTS holds every event).
const TABLE_VIEW_GROUPS: &[&str] = &["DDL_TABLE_EVENTS", "DDL_VIEW_EVENTS", "DDL_INDEX_EVENTS"];

/// Whether a trigger on `named` (an event type or group) fires for `event`.
fn covers(named: &str, event: &str) -> bool {
    let Some((_, _, group)) = EVENTS.iter().find(|(e, _, _)| *e == event) else { return false };
    named == event
        || named == *group
        || named == "DDL_DATABASE_LEVEL_EVENTS"
        || (named == "DDL_TABLE_VIEW_EVENTS" && TABLE_VIEW_GROUPS.contains(group))
}

/// A DDL trigger's events must be known ones (1084).
pub(super) fn check_events(events: &[String]) -> SqlResult<()> {
    for e in events {
        let known = EVENTS.iter().any(|(name, _, group)| name == e || group == e)
            || OTHER_EVENTS.contains(&e.as_str())
            || e == "DDL_DATABASE_LEVEL_EVENTS"
            || e == "DDL_TABLE_VIEW_EVENTS";
        if !known {
            return Err(msg::INVALID_EVENT_TYPE.with(&[e]));
        }
    }
    Ok(())
}

/// One event a statement raised: its type, and the object's schema and name.
struct Event {
    kind: &'static str,
    schema: Option<String>,
    object: String,
}

/// The events a definition statement raises.
fn events_of(kind: &StatementKind) -> Vec<Event> {
    let one = |verb: &str, noun: &str, name: &ObjectName| -> Option<Event> {
        let wanted = format!("{verb}_{noun}");
        let (kind, _, _) = EVENTS.iter().find(|(e, _, _)| *e == wanted)?;
        let schema = (name.0.len() >= 2).then(|| name.0[name.0.len() - 2].value.clone());
        Some(Event { kind, schema, object: name.name().value.clone() })
    };
    let verb = |alter: bool| if alter { "ALTER" } else { "CREATE" };
    let found: Vec<Option<Event>> = match kind {
        StatementKind::CreateTable(ct) => vec![one("CREATE", "TABLE", &ct.name)],
        StatementKind::AlterTable { table, .. } => vec![one("ALTER", "TABLE", table)],
        StatementKind::DropTable { names, .. } => names.iter().map(|n| one("DROP", "TABLE", n)).collect(),
        StatementKind::CreateIndex(ci) => vec![one("CREATE", "INDEX", &ObjectName(vec![ci.name.clone()]))],
        StatementKind::DropIndex { indexes, .. } => {
            indexes.iter().map(|(ix, _)| one("DROP", "INDEX", &ObjectName(vec![ix.clone()]))).collect()
        }
        StatementKind::CreateProcedure(p) => vec![one(verb(p.alter), "PROCEDURE", &p.name)],
        StatementKind::CreateFunction(f) => vec![one(verb(f.alter), "FUNCTION", &f.name)],
        StatementKind::CreateView(v) => vec![one(verb(v.alter), "VIEW", &v.name)],
        StatementKind::CreateTrigger(t) => vec![one(verb(t.alter), "TRIGGER", &t.name)],
        StatementKind::DropModule { kind, names, .. } => {
            let noun = match kind {
                ModuleKind::Procedure => "PROCEDURE",
                ModuleKind::Function => "FUNCTION",
                ModuleKind::View => "VIEW",
                ModuleKind::Trigger => "TRIGGER",
                ModuleKind::Synonym => "SYNONYM",
                ModuleKind::Type => "TYPE",
            };
            names.iter().map(|n| one("DROP", noun, n)).collect()
        }
        StatementKind::CreateSequence { name, .. } => vec![one("CREATE", "SEQUENCE", name)],
        StatementKind::AlterSequence { name, .. } => vec![one("ALTER", "SEQUENCE", name)],
        StatementKind::DropSequence { names, .. } => names.iter().map(|n| one("DROP", "SEQUENCE", n)).collect(),
        StatementKind::CreateSynonym { name, .. } => vec![one("CREATE", "SYNONYM", name)],
        StatementKind::CreateTableType { definition, .. } => vec![one("CREATE", "TYPE", &definition.name)],
        StatementKind::CreateSchema { name, .. } => vec![one("CREATE", "SCHEMA", &ObjectName(vec![name.clone()]))],
        StatementKind::DropSchema { name, .. } => vec![one("DROP", "SCHEMA", &ObjectName(vec![name.clone()]))],
        _ => Vec::new(),
    };
    found.into_iter().flatten().collect()
}

/// Text as XML element content.
fn escaped(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

impl Runner<'_> {
    /// Creating, altering or enabling a DDL trigger needs CONTROL of the database (SQL
    /// Server's ALTER ANY DATABASE DDL TRIGGER, which CONTROL implies).
    pub(super) fn check_ddl_trigger_permission(&mut self) -> SqlResult<()> {
        let db = self.state.database.clone();
        if !self.may_control_database(&db)? {
            let denied = tessera_security::principals::check::database_denied("ALTER ANY DATABASE DDL TRIGGER", &db);
            return Err(denied);
        }
        Ok(())
    }

    /// Runs the current database's DDL triggers that `s`, a definition statement that has
    /// just run, fires.
    pub(super) fn fire_ddl_triggers(&mut self, s: &Statement) -> SqlResult<()> {
        let events = events_of(&s.kind);
        if events.is_empty() {
            return Ok(());
        }
        let db = self.state.database.clone();
        let triggers = self.with_ctx(|ctx| {
            let database = ctx.shared.database(&db)?;
            let catalog = ctx.catalog(&database)?;
            Ok(tessera_execution::modules::ddl_triggers(&catalog))
        })?;
        if triggers.is_empty() {
            return Ok(());
        }
        for event in events {
            for trigger in triggers.iter().filter(|t| !t.disabled) {
                let cached = self.shared.plans.get_or_parse(&trigger.text, tessera_syntax::parser::parse_batch)?;
                let Some(StatementKind::CreateTrigger(ct)) = cached.batch.statements.first().map(|st| &st.kind) else {
                    continue;
                };
                if !ct.ddl_events.iter().any(|named| covers(named, event.kind)) {
                    continue;
                }
                let data = self.event_data(s, &event)?;
                self.state.events.push(data);
                let result = self.run_trigger(s, trigger, &db, None, 0);
                self.state.events.pop();
                result?;
            }
        }
        Ok(())
    }

    /// The EVENT_INSTANCE document of `event`, raised by `s`.
    fn event_data(&mut self, s: &Statement, event: &Event) -> SqlResult<String> {
        let object_type = EVENTS.iter().find(|(e, _, _)| *e == event.kind).map_or("", |(_, t, _)| *t);
        let command = self.batch.text.get(s.span.0..s.span.1).unwrap_or_default().trim_end_matches(';').to_string();
        let (login, user, now) = self.with_ctx(|ctx| {
            use tessera_semantics::plan::SessionFn;
            let call = |ctx: &mut tessera_execution::runtime::ExecCtx, f: SessionFn| {
                tessera_execution::functions::session_function(ctx, &f, &[]).map(|v| match v {
                    tessera_semantics::types::Value::Str(s) => s.to_string(),
                    _ => String::new(),
                })
            };
            Ok((call(ctx, SessionFn::OriginalLogin)?, call(ctx, SessionFn::UserName)?, now_text()?))
        })?;
        let schema = match (&event.schema, object_type) {
            (_, "SCHEMA") => String::new(),
            (Some(s), _) => s.clone(),
            (None, _) => self.state.default_schema.clone(),
        };
        Ok(format!(
            "<EVENT_INSTANCE><EventType>{}</EventType><PostTime>{}</PostTime><SPID>{}</SPID>\
             <ServerName>{}</ServerName><LoginName>{}</LoginName><UserName>{}</UserName>\
             <DatabaseName>{}</DatabaseName><SchemaName>{}</SchemaName><ObjectName>{}</ObjectName>\
             <ObjectType>{}</ObjectType><TSQLCommand><SetOptions ANSI_NULLS=\"ON\" ANSI_NULL_DEFAULT=\"ON\" \
             ANSI_PADDING=\"ON\" QUOTED_IDENTIFIER=\"ON\" ENCRYPTED=\"FALSE\"/><CommandText>{}</CommandText>\
             </TSQLCommand></EVENT_INSTANCE>",
            event.kind,
            now,
            self.state.spid,
            escaped(&self.shared.server_name),
            escaped(&login),
            escaped(&user),
            escaped(&self.state.database),
            escaped(&schema),
            escaped(&event.object),
            object_type,
            escaped(&command),
        ))
    }
}

/// The time now as EVENTDATA's PostTime shows it (`2026-11-30T12:46:29.123`).
fn now_text() -> SqlResult<String> {
    use tessera_semantics::types::{self, SqlType, Value};
    let mut fctx = types::FunctionContext::new();
    let now = types::call_function("GETDATE", &[], &[], &SqlType::DateTime, &mut fctx)?;
    match types::cast(&now, &SqlType::DateTime, &SqlType::NVarChar(30), Some(126))? {
        Value::Str(s) => Ok(s.to_string()),
        _ => Ok(String::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_cover_their_events() {
        assert!(covers("CREATE_TABLE", "CREATE_TABLE"));
        assert!(covers("DDL_TABLE_EVENTS", "DROP_TABLE"));
        assert!(covers("DDL_TABLE_VIEW_EVENTS", "CREATE_INDEX"));
        assert!(covers("DDL_DATABASE_LEVEL_EVENTS", "CREATE_TYPE"));
        assert!(!covers("DDL_VIEW_EVENTS", "CREATE_TABLE"));
        assert!(!covers("DDL_TABLE_VIEW_EVENTS", "CREATE_PROCEDURE"));
        assert!(check_events(&["NO_SUCH_EVENT".into()]).is_err());
        assert!(check_events(&["CREATE_USER".into(), "DDL_TABLE_EVENTS".into()]).is_ok());
    }
}
