//! DDL: databases, tables, constraints, indexes and DROP statements.

use super::{Parser, Result};
use crate::ast::governor::GovernorStatement;
use crate::ast::{
    AlterDatabaseAction, AlterTableAction, AttachMode, ColumnDef, ConstraintKind, CopySource, CreateDatabase,
    CreateIndex, CreateTable, FileSpec, Ident, IndexColumn, ModuleKind, ObjectName, ReferentialAction, StatementKind,
    TableConstraint, TypeName,
};
use crate::lexer::{Punct, TokenKind};
use tessera_errors::msg;

/// The columns, constraints and indexes of a table definition.
#[derive(Default)]
pub(super) struct TableElements {
    pub columns: Vec<ColumnDef>,
    pub constraints: Vec<TableConstraint>,
    pub indexes: Vec<CreateIndex>,
}

/// Words that begin a table constraint.
const CONSTRAINT_STARTS: &[&str] = &["CONSTRAINT", "PRIMARY", "UNIQUE", "CHECK", "FOREIGN", "DEFAULT"];

impl Parser<'_> {
    /// After `CREATE`: DATABASE, TABLE, LOGIN, USER, ROLE, SCHEMA, RESOURCE POOL, WORKLOAD
    /// GROUP, SEQUENCE or INDEX.
    pub(super) fn create(&mut self) -> Result<StatementKind> {
        if self.eat_word("DATABASE") {
            return Ok(StatementKind::CreateDatabase(self.create_database()?));
        }
        if self.eat_word("TABLE") {
            return Ok(StatementKind::CreateTable(Box::new(self.create_table()?)));
        }
        if self.eat_word("LOGIN") {
            return self.create_login();
        }
        if self.eat_word("USER") {
            return self.create_user();
        }
        if self.eat_word("ROLE") {
            return self.create_role();
        }
        if self.eat_words(&["APPLICATION", "ROLE"]) {
            return self.application_role(true);
        }
        if self.eat_word("SCHEMA") {
            return self.create_schema();
        }
        if self.eat_words(&["RESOURCE", "POOL"]) {
            return self.resource_pool(true);
        }
        if self.eat_words(&["WORKLOAD", "GROUP"]) {
            return self.workload_group(true);
        }
        if self.eat_word("SEQUENCE") {
            return self.create_sequence();
        }
        if self.eat_word("TYPE") {
            let start = self.tokens[self.pos.saturating_sub(2)].start;
            let name = self.object_name()?;
            if self.peek().is_word("FROM") || self.peek().is_word("EXTERNAL") {
                return Err(msg::USER_TYPES_NOT_SUPPORTED.err().at_line(self.peek().line));
            }
            self.expect_word("AS")?;
            self.expect_word("TABLE")?;
            let elements = self.table_elements(&name)?;
            let text = self.src[start..self.previous_end()].to_string();
            let definition = CreateTable {
                name,
                columns: elements.columns,
                constraints: elements.constraints,
                indexes: elements.indexes,
            };
            return Ok(StatementKind::CreateTableType { definition: Box::new(definition), text });
        }
        if self.eat_word("SYNONYM") {
            let start = self.tokens[self.pos.saturating_sub(2)].start;
            let name = self.object_name()?;
            self.expect_word("FOR")?;
            let target = self.object_name()?;
            let text = self.src[start..self.previous_end()].to_string();
            return Ok(StatementKind::CreateSynonym { name, target, text });
        }
        let unique = self.eat_word("UNIQUE");
        let clustered = self.clustered();
        self.expect_word("INDEX")?;
        Ok(StatementKind::CreateIndex(self.create_index(unique, clustered)?))
    }

    /// After `ALTER` (modules are handled by the caller): DATABASE, LOGIN, USER, ROLE,
    /// AUTHORIZATION, SERVER ROLE, SERVER CONFIGURATION, RESOURCE POOL, RESOURCE GOVERNOR,
    /// WORKLOAD GROUP, SEQUENCE or TABLE.
    pub(super) fn alter(&mut self) -> Result<StatementKind> {
        if self.eat_word("DATABASE") {
            let name = if self.peek().is_word("CURRENT") { Ident::new(self.advance().text) } else { self.ident()? };
            let action = self.alter_database_action()?;
            return Ok(StatementKind::AlterDatabase { name, action });
        }
        if self.eat_word("LOGIN") {
            return self.alter_login();
        }
        if self.eat_word("USER") {
            return self.alter_user();
        }
        if self.eat_word("ROLE") {
            return self.alter_role();
        }
        if self.eat_words(&["APPLICATION", "ROLE"]) {
            return self.application_role(false);
        }
        if self.eat_word("AUTHORIZATION") {
            return self.alter_authorization();
        }
        if self.eat_words(&["SERVER", "ROLE"]) {
            return self.alter_server_role();
        }
        if self.eat_words(&["SERVER", "CONFIGURATION"]) {
            return self.alter_server_configuration();
        }
        if self.eat_words(&["RESOURCE", "POOL"]) {
            return self.resource_pool(false);
        }
        if self.eat_words(&["RESOURCE", "GOVERNOR"]) {
            return self.alter_resource_governor();
        }
        if self.eat_words(&["WORKLOAD", "GROUP"]) {
            return self.workload_group(false);
        }
        if self.eat_word("SEQUENCE") {
            return self.alter_sequence();
        }
        self.expect_word("TABLE")?;
        let table = self.object_name()?;
        if self.peek_is_any_word(&["ENABLE", "DISABLE"]) {
            let enable = self.advance().is_word("ENABLE");
            self.expect_word("TRIGGER")?;
            let names = if self.eat_word("ALL") { vec![] } else { self.comma_list(Parser::object_name)? };
            return Ok(StatementKind::EnableTrigger { enable, names, table: Some(table), all_server: false });
        }
        let action = self.alter_table_action(&table)?;
        Ok(StatementKind::AlterTable { table, action })
    }

    /// `DROP TABLE|DATABASE|LOGIN|USER|ROLE|SCHEMA|INDEX|PROC|FUNCTION|VIEW [IF EXISTS] …`,
    /// `DROP RESOURCE POOL p`, `DROP WORKLOAD GROUP g`
    pub(super) fn drop(&mut self) -> Result<StatementKind> {
        self.expect_word("DROP")?;
        let object = self.upper_word()?;
        let if_exists = self.eat_words(&["IF", "EXISTS"]);
        let kind = match object.as_str() {
            "TABLE" => StatementKind::DropTable { names: self.comma_list(Parser::object_name)?, if_exists },
            "DATABASE" => StatementKind::DropDatabase { names: self.comma_list(Parser::ident)?, if_exists },
            "LOGIN" => StatementKind::DropLogin(self.ident()?),
            "USER" => StatementKind::DropUser { name: self.principal()?, if_exists },
            "ROLE" => StatementKind::DropRole { name: self.principal()?, if_exists },
            "APPLICATION" if !if_exists && self.eat_word("ROLE") => {
                StatementKind::DropApplicationRole { name: self.principal()? }
            }
            "SCHEMA" => StatementKind::DropSchema { name: self.ident()?, if_exists },
            "RESOURCE" if !if_exists && self.eat_word("POOL") => {
                StatementKind::ResourceGovernor(GovernorStatement::DropPool(self.ident()?))
            }
            "WORKLOAD" if !if_exists && self.eat_word("GROUP") => {
                StatementKind::ResourceGovernor(GovernorStatement::DropGroup(self.ident()?))
            }
            "INDEX" => StatementKind::DropIndex { indexes: self.comma_list(Parser::drop_index_item)?, if_exists },
            "SEQUENCE" => StatementKind::DropSequence { names: self.comma_list(Parser::object_name)?, if_exists },
            "PROC" | "PROCEDURE" | "FUNCTION" | "VIEW" | "TRIGGER" | "SYNONYM" | "TYPE" => {
                let kind = match object.as_str() {
                    "FUNCTION" => ModuleKind::Function,
                    "TYPE" => ModuleKind::Type,
                    "VIEW" => ModuleKind::View,
                    "TRIGGER" => ModuleKind::Trigger,
                    "SYNONYM" => ModuleKind::Synonym,
                    _ => ModuleKind::Procedure,
                };
                let names = self.comma_list(Parser::object_name)?;
                // `DROP TRIGGER t ON DATABASE`: a DDL trigger (named as a DML one is); ON ALL
                // SERVER is a server's, which tessera does not have.
                if kind == ModuleKind::Trigger && self.eat_word("ON") {
                    if self.eat_words(&["ALL", "SERVER"]) {
                        return Err(msg::DDL_TRIGGERS_NOT_SUPPORTED.err());
                    }
                    self.expect_word("DATABASE")?;
                }
                StatementKind::DropModule { kind, names, if_exists }
            }
            _ => {
                self.pos -= 1;
                return Err(self.error_here());
            }
        };
        Ok(kind)
    }

    /// `ix ON t` or `t.ix`.
    fn drop_index_item(&mut self) -> Result<(Ident, ObjectName)> {
        let name = self.object_name()?;
        if self.eat_word("ON") {
            let table = self.object_name()?;
            if self.peek().is_word("WITH") && self.peek_nth(1).is_punct(Punct::LParen) {
                self.pos += 1;
                self.skip_parenthesized()?;
            }
            return Ok((name.name().clone(), table));
        }
        let mut parts = name.0;
        if parts.len() < 2 {
            return Err(self.error_here());
        }
        let index = parts.pop().unwrap_or_else(|| Ident::new(""));
        Ok((index, ObjectName(parts)))
    }

    /// `CLUSTERED` → Some(true), `NONCLUSTERED` → Some(false), neither → None.
    fn clustered(&mut self) -> Option<bool> {
        if self.eat_word("CLUSTERED") {
            Some(true)
        } else if self.eat_word("NONCLUSTERED") {
            Some(false)
        } else {
            None
        }
    }

    // ---- databases --------------------------------------------------------------------

    fn create_database(&mut self) -> Result<CreateDatabase> {
        let name = self.ident()?;
        let mut database =
            CreateDatabase { name, files: vec![], log_files: vec![], collation: None, attach: None, copy_of: None };
        if self.eat_words(&["AS", "COPY", "OF"]) {
            let first = self.ident()?;
            database.copy_of = Some(if self.eat_punct(Punct::Dot) {
                CopySource { server: Some(first), database: self.ident()? }
            } else {
                CopySource { server: None, database: first }
            });
            // Azure's service options (`( SERVICE_OBJECTIVE = 'S0', EDITION = … )`) name
            // tiers a server of its own does not have.
            if self.eat_punct(Punct::LParen) {
                self.comma_list(Parser::option_assignment)?;
                self.expect_punct(Punct::RParen)?;
            }
            return Ok(database);
        }
        if self.eat_word("CONTAINMENT") {
            self.expect_punct(Punct::Eq)?;
            self.upper_word()?;
        }
        if self.eat_word("ON") {
            self.eat_word("PRIMARY");
            database.files = self.comma_list(Parser::file_spec)?;
        }
        if self.eat_words(&["LOG", "ON"]) {
            database.log_files = self.comma_list(Parser::file_spec)?;
        }
        if self.eat_word("COLLATE") {
            database.collation = Some(self.any_word()?.value);
        }
        if self.eat_word("FOR") {
            database.attach = Some(if self.eat_word("ATTACH") {
                AttachMode::Attach
            } else if self.eat_word("ATTACH_REBUILD_LOG") {
                AttachMode::RebuildLog
            } else {
                return Err(self.error_here());
            });
        }
        if self.eat_word("WITH") {
            self.comma_list(Parser::option_assignment)?;
        }
        Ok(database)
    }

    /// `(NAME = x, FILENAME = 'path', SIZE = 10MB, …)`
    fn file_spec(&mut self) -> Result<FileSpec> {
        let options = self.parenthesized_list(Parser::option_assignment)?;
        Ok(FileSpec { options })
    }

    /// `NAME = value`, the value as written (`10MB`, `'path'` without quotes, `10%`).
    fn option_assignment(&mut self) -> Result<(String, String)> {
        let name = self.upper_word()?;
        self.expect_punct(Punct::Eq)?;
        Ok((name, self.option_value()?))
    }

    fn option_value(&mut self) -> Result<String> {
        let token = self.peek().clone();
        let value = match &token.kind {
            TokenKind::String { value, .. } | TokenKind::QuotedIdent(value) => value.clone(),
            TokenKind::Word => token.text.to_string(),
            TokenKind::Integer | TokenKind::Decimal => {
                self.pos += 1;
                let mut value = token.text.to_string();
                if self.eat_punct(Punct::Percent) {
                    value.push('%');
                } else if self.peek_is_any_word(&["KB", "MB", "GB", "TB"]) {
                    value.push_str(&self.advance().text.to_uppercase());
                }
                return Ok(value);
            }
            _ => return Err(self.error_here()),
        };
        self.pos += 1;
        Ok(value)
    }

    fn alter_database_action(&mut self) -> Result<AlterDatabaseAction> {
        if self.eat_words(&["MODIFY", "NAME"]) {
            self.expect_punct(Punct::Eq)?;
            return Ok(AlterDatabaseAction::Rename(self.ident()?));
        }
        if self.eat_words(&["MODIFY", "FILE"]) {
            return Ok(AlterDatabaseAction::ModifyFile(self.file_spec()?));
        }
        if self.eat_word("COLLATE") {
            return Ok(AlterDatabaseAction::Collate(self.any_word()?.value));
        }
        self.expect_word("SET")?;
        let options = self.comma_list(Parser::database_options)?.into_iter().flatten().collect();
        if self.eat_word("WITH") {
            if self.eat_words(&["ROLLBACK", "AFTER"]) {
                self.advance();
                self.eat_word("SECONDS");
            } else if !self.eat_words(&["ROLLBACK", "IMMEDIATE"]) {
                self.expect_word("NO_WAIT")?;
            }
        }
        Ok(AlterDatabaseAction::Set(options))
    }

    /// One `SET` item: a database option, or Query Store's settings.
    fn database_options(&mut self) -> Result<Vec<(String, String)>> {
        if self.peek().is_word("QUERY_STORE") {
            return self.query_store_options();
        }
        Ok(vec![self.database_option()?])
    }

    /// `QUERY_STORE = ON [(…)]`, `QUERY_STORE = OFF [(FORCED)]`, `QUERY_STORE (…)` and
    /// `QUERY_STORE CLEAR [ALL]`: (`QUERY_STORE`, `ON` | `OFF` | `OFF FORCED` | `CLEAR` |
    /// `CLEAR ALL` | empty), then each setting in the parentheses as (`QUERY_STORE.NAME`,
    /// value), those of `CLEANUP_POLICY (…)` and `QUERY_CAPTURE_POLICY (…)` included
    /// (`STALE_CAPTURE_POLICY_THRESHOLD`'s value with its unit: `24 HOURS`).
    fn query_store_options(&mut self) -> Result<Vec<(String, String)>> {
        self.pos += 1;
        let mut out = Vec::new();
        if self.eat_word("CLEAR") {
            let all = self.eat_word("ALL");
            out.push(("QUERY_STORE".to_string(), if all { "CLEAR ALL" } else { "CLEAR" }.to_string()));
            return Ok(out);
        }
        if self.eat_punct(Punct::Eq) {
            if !self.peek_is_any_word(&["ON", "OFF"]) {
                return Err(self.error_here());
            }
            let state = self.upper_word()?;
            match state.as_str() {
                "OFF" => {
                    let forced = self.eat_punct(Punct::LParen);
                    if forced {
                        self.expect_word("FORCED")?;
                        self.expect_punct(Punct::RParen)?;
                    }
                    out.push(("QUERY_STORE".to_string(), if forced { "OFF FORCED" } else { "OFF" }.to_string()));
                    return Ok(out);
                }
                _ => out.push(("QUERY_STORE".to_string(), state)),
            }
            if !self.peek().is_punct(Punct::LParen) {
                return Ok(out);
            }
        } else {
            out.push(("QUERY_STORE".to_string(), String::new()));
        }
        self.expect_punct(Punct::LParen)?;
        loop {
            let name = self.upper_word()?;
            self.expect_punct(Punct::Eq)?;
            if name == "CLEANUP_POLICY" || name == "QUERY_CAPTURE_POLICY" {
                self.expect_punct(Punct::LParen)?;
                loop {
                    let setting = self.upper_word()?;
                    self.expect_punct(Punct::Eq)?;
                    let mut value = self.option_value()?.to_uppercase();
                    if self.peek_is_any_word(&["DAYS", "HOURS"]) {
                        value = format!("{value} {}", self.upper_word()?);
                    }
                    out.push((format!("QUERY_STORE.{setting}"), value));
                    if !self.eat_punct(Punct::Comma) {
                        break;
                    }
                }
                self.expect_punct(Punct::RParen)?;
            } else {
                out.push((format!("QUERY_STORE.{name}"), self.option_value()?.to_uppercase()));
            }
            if !self.eat_punct(Punct::Comma) {
                break;
            }
        }
        self.expect_punct(Punct::RParen)?;
        Ok(out)
    }

    /// `RECOVERY FULL`, `DELAYED_DURABILITY = FORCED`, `SINGLE_USER`, `COMPATIBILITY_LEVEL = 160`.
    fn database_option(&mut self) -> Result<(String, String)> {
        let name = self.upper_word()?;
        let assigned = self.eat_punct(Punct::Eq);
        let token = self.peek();
        let has_value = match token.kind {
            TokenKind::Word => {
                ["ON", "OFF", "FULL"].iter().any(|w| token.is_word(w))
                    || (!super::is_reserved(token.text) && !super::keywords::is_statement_word(token.text))
            }
            TokenKind::Integer | TokenKind::String { .. } | TokenKind::QuotedIdent(_) => true,
            _ => false,
        };
        if !has_value {
            return if assigned { Err(self.error_here()) } else { Ok((name, String::new())) };
        }
        Ok((name, self.option_value()?.to_uppercase()))
    }

    // ---- tables -----------------------------------------------------------------------

    fn create_table(&mut self) -> Result<CreateTable> {
        let name = self.object_name()?;
        let elements = self.table_elements(&name)?;
        if self.eat_word("ON") {
            self.any_word()?;
        }
        if self.eat_word("TEXTIMAGE_ON") {
            self.any_word()?;
        }
        if self.peek().is_word("WITH") && self.peek_nth(1).is_punct(Punct::LParen) {
            self.pos += 1;
            self.skip_parenthesized()?;
        }
        Ok(CreateTable {
            name,
            columns: elements.columns,
            constraints: elements.constraints,
            indexes: elements.indexes,
        })
    }

    /// `( element, … )` of CREATE TABLE, DECLARE @t TABLE and RETURNS @t TABLE.
    pub(super) fn table_elements(&mut self, table: &ObjectName) -> Result<TableElements> {
        let mut elements = TableElements::default();
        self.expect_punct(Punct::LParen)?;
        loop {
            self.table_element(table, &mut elements)?;
            if !self.eat_punct(Punct::Comma) {
                break;
            }
            if self.peek().is_punct(Punct::RParen) {
                break; // SQL Server accepts a trailing comma
            }
        }
        self.expect_punct(Punct::RParen)?;
        Ok(elements)
    }

    fn table_element(&mut self, table: &ObjectName, elements: &mut TableElements) -> Result<()> {
        if self.peek_is_any_word(CONSTRAINT_STARTS) {
            elements.constraints.push(self.table_constraint()?);
        } else if self.eat_word("INDEX") {
            let index = self.inline_index(table, None)?;
            elements.indexes.push(index);
        } else {
            let column = self.column_def(table, &mut elements.indexes)?;
            elements.columns.push(column);
        }
        Ok(())
    }

    /// `INDEX name [UNIQUE] [CLUSTERED|NONCLUSTERED] (cols)` inside a table definition,
    /// or after a column (then `column` names it and the column list is optional).
    fn inline_index(&mut self, table: &ObjectName, column: Option<&Ident>) -> Result<CreateIndex> {
        let name = self.ident()?;
        let unique = self.eat_word("UNIQUE");
        let clustered = self.clustered();
        let columns = match column {
            Some(column) if !self.peek().is_punct(Punct::LParen) => {
                vec![IndexColumn { name: column.clone(), descending: false }]
            }
            _ => self.parenthesized_list(Parser::index_column)?,
        };
        let mut index =
            CreateIndex { name, table: table.clone(), unique, clustered, columns, include: vec![], filter: None };
        self.index_suffix(&mut index)?;
        Ok(index)
    }

    /// `[INCLUDE (…)] [WHERE …] [WITH (…)] [ON filegroup]`
    fn index_suffix(&mut self, index: &mut CreateIndex) -> Result<()> {
        if self.eat_word("INCLUDE") {
            index.include = self.ident_list()?;
        }
        index.filter = self.where_clause()?;
        self.storage_options()
    }

    /// `[WITH (…)] [ON filegroup]` after an index or key: accepted and ignored.
    fn storage_options(&mut self) -> Result<()> {
        if self.peek().is_word("WITH") && self.peek_nth(1).is_punct(Punct::LParen) {
            self.pos += 1;
            self.skip_parenthesized()?;
        }
        if self.peek().is_word("ON") && !self.peek_nth(1).is_word("DELETE") && !self.peek_nth(1).is_word("UPDATE") {
            self.pos += 1;
            self.any_word()?;
            if self.peek().is_punct(Punct::LParen) {
                self.skip_parenthesized()?;
            }
        }
        Ok(())
    }

    fn index_column(&mut self) -> Result<IndexColumn> {
        let name = self.ident()?;
        let descending = self.eat_word("DESC");
        if !descending {
            self.eat_word("ASC");
        }
        Ok(IndexColumn { name, descending })
    }

    fn column_def(&mut self, table: &ObjectName, indexes: &mut Vec<CreateIndex>) -> Result<ColumnDef> {
        let name = self.ident()?;
        let mut column = ColumnDef {
            name,
            ty: TypeName { name: String::new(), args: vec![] },
            nullable: None,
            identity: None,
            default: None,
            constraints: vec![],
            computed: None,
            persisted: false,
            collation: None,
        };
        if self.eat_word("AS") {
            column.computed = Some(self.expr()?);
            column.persisted = self.eat_word("PERSISTED");
        } else {
            column.ty = self.type_name()?;
        }
        while self.column_option(table, &mut column, indexes)? {}
        Ok(column)
    }

    /// One column option; false when none follows.
    fn column_option(
        &mut self,
        table: &ObjectName,
        column: &mut ColumnDef,
        indexes: &mut Vec<CreateIndex>,
    ) -> Result<bool> {
        if self.eat_word("NULL") {
            column.nullable = Some(true);
        } else if self.eat_words(&["NOT", "NULL"]) {
            column.nullable = Some(false);
        } else if self.eat_word("IDENTITY") {
            column.identity = Some(self.identity_arguments()?);
        } else if self.eat_word("COLLATE") {
            column.collation = Some(self.any_word()?.value);
        } else if self.eat_words(&["NOT", "FOR", "REPLICATION"])
            || ["ROWGUIDCOL", "SPARSE", "PERSISTED", "FILESTREAM"].iter().any(|w| self.eat_word(w))
        {
            // Accepted and ignored.
        } else if self.eat_word("INDEX") {
            indexes.push(self.inline_index(table, Some(&column.name))?);
        } else if self.peek_is_any_word(CONSTRAINT_STARTS) || self.peek().is_word("REFERENCES") {
            self.column_constraint(column)?;
        } else {
            return Ok(false);
        }
        Ok(true)
    }

    /// `[CONSTRAINT name] DEFAULT expr | PRIMARY KEY … | UNIQUE … | CHECK (…) | REFERENCES …`
    fn column_constraint(&mut self, column: &mut ColumnDef) -> Result<()> {
        let name = if self.eat_word("CONSTRAINT") { Some(self.ident()?) } else { None };
        if self.eat_word("DEFAULT") {
            let expr = self.expr()?;
            self.eat_words(&["WITH", "VALUES"]);
            column.default = Some((name, expr));
            return Ok(());
        }
        let this = vec![IndexColumn { name: column.name.clone(), descending: false }];
        let kind = if self.eat_words(&["PRIMARY", "KEY"]) {
            let clustered = self.clustered();
            self.storage_options()?;
            ConstraintKind::PrimaryKey { clustered, columns: this }
        } else if self.eat_word("UNIQUE") {
            let clustered = self.clustered();
            self.storage_options()?;
            ConstraintKind::Unique { clustered, columns: this }
        } else if self.eat_word("CHECK") {
            self.check_body()?
        } else {
            // `FOREIGN KEY` is optional before a column's REFERENCES.
            self.eat_words(&["FOREIGN", "KEY"]);
            self.references(vec![column.name.clone()])?
        };
        column.constraints.push(TableConstraint { name, kind });
        Ok(())
    }

    /// `(seed, increment)` after IDENTITY, (1, 1) when omitted.
    fn identity_arguments(&mut self) -> Result<(i64, i64)> {
        if !self.eat_punct(Punct::LParen) {
            return Ok((1, 1));
        }
        let seed = self.signed_integer()?;
        self.expect_punct(Punct::Comma)?;
        let increment = self.signed_integer()?;
        self.expect_punct(Punct::RParen)?;
        let fits = |n: i128| i64::try_from(n).map_err(|_| self.error_here());
        Ok((fits(seed)?, fits(increment)?))
    }

    /// An integer constant with an optional sign (identity seeds, sequence options).
    pub(super) fn signed_integer(&mut self) -> Result<i128> {
        let negative = self.eat_punct(Punct::Minus);
        if !negative {
            self.eat_punct(Punct::Plus);
        }
        let token = self.peek();
        let value = match token.kind {
            TokenKind::Integer => token.text.parse::<i128>().ok(),
            _ => None,
        };
        let Some(value) = value else { return Err(self.error_here()) };
        self.pos += 1;
        Ok(if negative { -value } else { value })
    }

    /// A table-level constraint.
    fn table_constraint(&mut self) -> Result<TableConstraint> {
        let name = if self.eat_word("CONSTRAINT") { Some(self.ident()?) } else { None };
        let kind = if self.eat_words(&["PRIMARY", "KEY"]) {
            let clustered = self.clustered();
            let columns = self.parenthesized_list(Parser::index_column)?;
            self.storage_options()?;
            ConstraintKind::PrimaryKey { clustered, columns }
        } else if self.eat_word("UNIQUE") {
            let clustered = self.clustered();
            let columns = self.parenthesized_list(Parser::index_column)?;
            self.storage_options()?;
            ConstraintKind::Unique { clustered, columns }
        } else if self.eat_word("CHECK") {
            self.check_body()?
        } else if self.eat_word("DEFAULT") {
            let expr = self.expr()?;
            self.expect_word("FOR")?;
            let column = self.ident()?;
            self.eat_words(&["WITH", "VALUES"]);
            ConstraintKind::Default { expr, column }
        } else {
            self.expect_words(&["FOREIGN", "KEY"])?;
            let columns = self.ident_list()?;
            self.references(columns)?
        };
        Ok(TableConstraint { name, kind })
    }

    /// `[NOT FOR REPLICATION] (expr)` after CHECK.
    fn check_body(&mut self) -> Result<ConstraintKind> {
        self.eat_words(&["NOT", "FOR", "REPLICATION"]);
        self.expect_punct(Punct::LParen)?;
        let expr = self.expr()?;
        self.expect_punct(Punct::RParen)?;
        Ok(ConstraintKind::Check(expr))
    }

    /// `REFERENCES t [(cols)] [ON DELETE action] [ON UPDATE action] [NOT FOR REPLICATION]`
    fn references(&mut self, columns: Vec<Ident>) -> Result<ConstraintKind> {
        self.expect_word("REFERENCES")?;
        let ref_table = self.object_name()?;
        let ref_columns = if self.peek().is_punct(Punct::LParen) { self.ident_list()? } else { vec![] };
        let mut on_delete = ReferentialAction::NoAction;
        let mut on_update = ReferentialAction::NoAction;
        loop {
            if self.eat_words(&["ON", "DELETE"]) {
                on_delete = self.referential_action()?;
            } else if self.eat_words(&["ON", "UPDATE"]) {
                on_update = self.referential_action()?;
            } else if !self.eat_words(&["NOT", "FOR", "REPLICATION"]) {
                break;
            }
        }
        Ok(ConstraintKind::ForeignKey { columns, ref_table, ref_columns, on_delete, on_update })
    }

    fn referential_action(&mut self) -> Result<ReferentialAction> {
        if self.eat_words(&["NO", "ACTION"]) {
            Ok(ReferentialAction::NoAction)
        } else if self.eat_word("CASCADE") {
            Ok(ReferentialAction::Cascade)
        } else if self.eat_words(&["SET", "NULL"]) {
            Ok(ReferentialAction::SetNull)
        } else if self.eat_words(&["SET", "DEFAULT"]) {
            Ok(ReferentialAction::SetDefault)
        } else {
            Err(self.error_here())
        }
    }

    fn alter_table_action(&mut self, table: &ObjectName) -> Result<AlterTableAction> {
        if self.eat_word("WITH") && !self.eat_word("CHECK") {
            self.expect_word("NOCHECK")?;
        }
        if self.eat_word("ADD") {
            let mut elements = TableElements::default();
            loop {
                self.table_element(table, &mut elements)?;
                if !self.eat_punct(Punct::Comma) {
                    break;
                }
            }
            return Ok(AlterTableAction::Add { columns: elements.columns, constraints: elements.constraints });
        }
        if self.eat_word("DROP") {
            if self.eat_word("COLUMN") {
                let if_exists = self.eat_words(&["IF", "EXISTS"]);
                return Ok(AlterTableAction::DropColumns { names: self.comma_list(Parser::ident)?, if_exists });
            }
            self.eat_word("CONSTRAINT");
            let if_exists = self.eat_words(&["IF", "EXISTS"]);
            return Ok(AlterTableAction::DropConstraints { names: self.comma_list(Parser::ident)?, if_exists });
        }
        if self.eat_words(&["ALTER", "COLUMN"]) {
            let name = self.ident()?;
            let ty = self.type_name()?;
            if self.eat_word("COLLATE") {
                self.any_word()?;
            }
            let nullable = if self.eat_word("NULL") {
                Some(true)
            } else if self.eat_words(&["NOT", "NULL"]) {
                Some(false)
            } else {
                None
            };
            return Ok(AlterTableAction::AlterColumn { name, ty, nullable });
        }
        let enable = if self.eat_word("CHECK") {
            true
        } else {
            self.expect_word("NOCHECK")?;
            false
        };
        self.expect_word("CONSTRAINT")?;
        let names = if self.eat_word("ALL") { vec![] } else { self.comma_list(Parser::ident)? };
        Ok(AlterTableAction::CheckConstraints { enable, names })
    }

    // ---- indexes ----------------------------------------------------------------------

    /// After `CREATE [UNIQUE] [CLUSTERED|NONCLUSTERED] INDEX`.
    fn create_index(&mut self, unique: bool, clustered: Option<bool>) -> Result<CreateIndex> {
        let name = self.ident()?;
        self.expect_word("ON")?;
        let table = self.object_name()?;
        let columns = self.parenthesized_list(Parser::index_column)?;
        let mut index = CreateIndex { name, table, unique, clustered, columns, include: vec![], filter: None };
        self.index_suffix(&mut index)?;
        Ok(index)
    }
}
