//! What a definition or administration statement is, for the DONE that ends it
//! ([`Command`]): drivers read it from TDS's CurCmd (the Microsoft JDBC driver reports an
//! update count of 0 for DDL, and -1 for a DONE it cannot place).

use tessera_semantics::output::Command;
use tessera_syntax::ast::{ModuleKind, PermissionAction, StatementKind};

/// The command a statement of this kind ends with, if it is a definition or
/// administration statement (queries and data changes report theirs as they run).
pub(super) fn definition_command(kind: &StatementKind) -> Option<Command> {
    Some(match kind {
        StatementKind::CreateDatabase(_) => Command::CreateDatabase,
        StatementKind::DropDatabase { .. } => Command::DropDatabase,
        StatementKind::AlterDatabase { .. } => Command::AlterDatabase,
        StatementKind::CreateTable(_) => Command::CreateTable,
        StatementKind::DropTable { .. } => Command::DropTable,
        StatementKind::AlterTable { .. } => Command::AlterTable,
        StatementKind::CreateIndex(_) => Command::CreateIndex,
        StatementKind::DropIndex { .. } => Command::DropIndex,
        StatementKind::CreateProcedure(_) => Command::CreateProcedure,
        StatementKind::CreateFunction(_) => Command::CreateFunction,
        StatementKind::CreateView(_) => Command::CreateView,
        StatementKind::DropModule { kind: ModuleKind::Procedure, .. } => Command::DropProcedure,
        StatementKind::DropModule { kind: ModuleKind::Function, .. } => Command::DropFunction,
        StatementKind::DropModule { kind: ModuleKind::View, .. } => Command::DropView,
        StatementKind::CreateSchema { .. } => Command::CreateSchema,
        StatementKind::DropSchema { .. } => Command::DropSchema,
        StatementKind::CreateUser { .. } => Command::CreateUser,
        StatementKind::AlterUser { .. } => Command::AlterUser,
        StatementKind::DropUser { .. } => Command::DropUser,
        StatementKind::CreateRole { .. } => Command::CreateRole,
        StatementKind::AlterRole { .. } => Command::AlterRole,
        StatementKind::DropRole { .. } => Command::DropRole,
        StatementKind::CreateLogin { .. } => Command::CreateLogin,
        StatementKind::AlterLogin { .. } => Command::AlterLogin,
        StatementKind::DropLogin(_) => Command::DropLogin,
        StatementKind::Permission(p) => match p.action {
            PermissionAction::Grant { .. } => Command::Grant,
            PermissionAction::Deny { .. } => Command::Deny,
            PermissionAction::Revoke { .. } => Command::Revoke,
        },
        StatementKind::TruncateTable(_)
        | StatementKind::CreateTrigger(_)
        | StatementKind::EnableTrigger { .. }
        | StatementKind::DropModule { kind: ModuleKind::Trigger | ModuleKind::Synonym, .. }
        | StatementKind::CreateSynonym { .. }
        | StatementKind::CreateTableType { .. }
        | StatementKind::DropModule { kind: ModuleKind::Type, .. }
        | StatementKind::AlterServerRole { .. }
        | StatementKind::CreateApplicationRole { .. }
        | StatementKind::AlterApplicationRole { .. }
        | StatementKind::DropApplicationRole { .. }
        | StatementKind::AlterAuthorization { .. } => Command::OtherDdl,
        _ => return None,
    })
}

/// The command a statement that failed ends with, if it is one that sends a DONE of its
/// own: a query, a data change or a definition. SQL Server ends such a statement with a
/// DONE carrying DONE_ERROR, so that drivers counting one DONE per statement (the
/// Microsoft JDBC driver's batch update counts) stay in step.
pub(super) fn failed_statement_command(kind: &StatementKind) -> Option<Command> {
    match kind {
        StatementKind::Query(_) => Some(Command::Select),
        StatementKind::Insert(_) => Some(Command::Insert),
        StatementKind::Update(_) => Some(Command::Update),
        StatementKind::Delete(_) => Some(Command::Delete),
        StatementKind::Merge(_) => Some(Command::Merge),
        other => definition_command(other),
    }
}
