//! Statements: dispatch, control flow, variables, transactions, SET options, EXEC,
//! procedures, functions, views and administration commands.

use super::expr::starts_expression;
use super::keywords::is_statement_word;
use super::{is_ident_token, is_reserved, Parser, Result};
use crate::ast::{
    BinaryOp, CreateFunction, CreateProcedure, CreateTrigger, CreateView, Declaration, DeclarationKind, ExecArg,
    Execute, Expr, FunctionReturns, Ident, Literal, ModuleExecuteAs, ModuleKind, ObjectName, Parameter, SetValue,
    Statement, StatementKind, TriggerEvents, TypeName,
};
use crate::lexer::{Punct, TokenKind};
use tessera_errors::msg;

/// How a module statement began: `CREATE`, `ALTER` or `CREATE OR ALTER`.
#[derive(Clone, Copy)]
struct ModuleHeader {
    or_alter: bool,
    alter: bool,
    /// Byte offset of the `CREATE`/`ALTER` keyword.
    start: usize,
}

impl ModuleHeader {
    fn verb(self) -> &'static str {
        match (self.or_alter, self.alter) {
            (true, _) => "CREATE/ALTER",
            (false, true) => "ALTER",
            (false, false) => "CREATE",
        }
    }
}

/// A string literal made of an identifier's name.
fn name_literal(name: String) -> Expr {
    Expr::Literal(Literal::String { value: name, unicode: false })
}

impl Parser<'_> {
    /// One statement; `first` is set for the first statement of the batch (where
    /// `CREATE PROCEDURE` and friends are allowed).
    pub(super) fn statement(&mut self, first: bool) -> Result<Statement> {
        self.nested(|p| {
            let (line, start) = (p.peek().line, p.peek().start);
            let kind = p.statement_kind(first)?;
            let span = (start, p.statement_end());
            Ok(Statement { line, span, kind })
        })
    }

    fn statement_kind(&mut self, first: bool) -> Result<StatementKind> {
        let token = self.peek().clone();
        if token.is_punct(Punct::LParen) {
            return Ok(StatementKind::Query(Box::new(self.query()?)));
        }
        if token.kind != TokenKind::Word {
            return Err(self.error_here());
        }
        if !is_reserved(token.text) && self.peek_nth(1).is_punct(Punct::Colon) {
            self.pos += 2;
            return Ok(StatementKind::Label(Ident::new(token.text)));
        }
        let keyword = token.text.to_uppercase();
        let kind = match keyword.as_str() {
            "SELECT" => StatementKind::Query(Box::new(self.query()?)),
            "WITH" => self.with_statement()?,
            "INSERT" if self.peek_nth(1).is_word("BULK") => StatementKind::InsertBulk(self.insert_bulk()?),
            "INSERT" => StatementKind::Insert(Box::new(self.insert()?)),
            "UPDATE" => StatementKind::Update(Box::new(self.update()?)),
            "DELETE" => StatementKind::Delete(Box::new(self.delete()?)),
            "MERGE" => StatementKind::Merge(Box::new(self.merge()?)),
            "ENABLE" | "DISABLE" if self.peek_nth(1).is_word("TRIGGER") => self.enable_trigger()?,
            "CREATE" | "ALTER" => self.create_or_alter(first)?,
            "DROP" => self.drop()?,
            "USE" => {
                self.pos += 1;
                StatementKind::Use(self.ident()?)
            }
            "TRUNCATE" => {
                self.pos += 1;
                self.expect_word("TABLE")?;
                StatementKind::TruncateTable(self.object_name()?)
            }
            "BEGIN" => self.begin()?,
            "COMMIT" => self.commit()?,
            "ROLLBACK" => self.rollback()?,
            "SAVE" => {
                self.pos += 1;
                self.transaction_keyword()?;
                let name = self.transaction_name()?.ok_or_else(|| self.error_here())?;
                StatementKind::SaveTransaction { name }
            }
            "SET" => self.set_statement()?,
            "DECLARE" if self.declares_cursor() => self.declare_cursor()?,
            "OPEN" | "CLOSE" | "DEALLOCATE" => self.cursor_command(&keyword)?,
            "FETCH" => self.fetch()?,
            "DECLARE" => {
                self.pos += 1;
                StatementKind::Declare(self.comma_list(Parser::declaration)?)
            }
            "IF" => self.if_statement()?,
            "WHILE" => {
                self.pos += 1;
                let condition = self.expr()?;
                let body = Box::new(self.statement(false)?);
                StatementKind::While { condition, body }
            }
            "BREAK" | "CONTINUE" | "CHECKPOINT" => self.keyword_statement(&keyword),
            "RETURN" => {
                self.pos += 1;
                let value = if starts_expression(self.peek()) { Some(self.expr()?) } else { None };
                StatementKind::Return(value)
            }
            "GOTO" => {
                self.pos += 1;
                StatementKind::Goto(self.ident()?)
            }
            "WAITFOR" => self.waitfor()?,
            "PRINT" => {
                self.pos += 1;
                StatementKind::Print(self.expr()?)
            }
            "THROW" => self.throw()?,
            "RAISERROR" => self.raiserror()?,
            "EXEC" | "EXECUTE" if self.peek_nth(1).is_word("AS") => {
                self.pos += 2;
                self.execute_as()?
            }
            "EXEC" | "EXECUTE" => self.execute()?,
            "GRANT" | "DENY" | "REVOKE" => self.permission_statement()?,
            "REVERT" => {
                self.pos += 1;
                StatementKind::Revert
            }
            "KILL" => {
                self.pos += 1;
                let token = self.peek().clone();
                if token.kind != TokenKind::Integer {
                    return Err(self.error_here());
                }
                self.pos += 1;
                self.eat_words(&["WITH", "STATUSONLY"]);
                StatementKind::Kill(token.text.parse().map_err(|_| self.error_here())?)
            }
            "DBCC" => self.dbcc()?,
            "BACKUP" => self.backup()?,
            "RESTORE" => self.restore()?,
            "RECONFIGURE" => {
                self.pos += 1;
                StatementKind::Reconfigure { with_override: self.eat_words(&["WITH", "OVERRIDE"]) }
            }
            _ => return Err(self.error_here()),
        };
        Ok(kind)
    }

    /// Statements made of a single keyword.
    fn keyword_statement(&mut self, keyword: &str) -> StatementKind {
        self.pos += 1;
        match keyword {
            "BREAK" => StatementKind::Break,
            "CONTINUE" => StatementKind::Continue,
            _ => {
                // `CHECKPOINT [duration]`
                if self.peek().kind == TokenKind::Integer {
                    self.pos += 1;
                }
                StatementKind::Checkpoint
            }
        }
    }

    // ---- control flow -----------------------------------------------------------------

    fn if_statement(&mut self) -> Result<StatementKind> {
        self.expect_word("IF")?;
        let condition = self.expr()?;
        let then = Box::new(self.statement(false)?);
        let mut n = 0;
        while self.peek_nth(n).is_punct(Punct::Semicolon) {
            n += 1;
        }
        let otherwise = if self.peek_nth(n).is_word("ELSE") {
            self.pos += n + 1;
            Some(Box::new(self.statement(false)?))
        } else {
            None
        };
        Ok(StatementKind::If { condition, then, otherwise })
    }

    /// `BEGIN … END`, `BEGIN TRY … END TRY BEGIN CATCH … END CATCH`, `BEGIN TRAN`.
    fn begin(&mut self) -> Result<StatementKind> {
        self.expect_word("BEGIN")?;
        if self.eat_word("DISTRIBUTED") || self.peek_is_any_word(&["TRAN", "TRANSACTION"]) {
            self.transaction_keyword()?;
            let name = self.transaction_name()?;
            if self.eat_words(&["WITH", "MARK"]) && matches!(self.peek().kind, TokenKind::String { .. }) {
                self.pos += 1;
            }
            return Ok(StatementKind::BeginTransaction { name });
        }
        if self.eat_word("TRY") {
            let try_block = self.statements_until("END")?;
            self.expect_words(&["END", "TRY", "BEGIN", "CATCH"])?;
            let catch_block = self.statements_until("END")?;
            self.expect_words(&["END", "CATCH"])?;
            return Ok(StatementKind::TryCatch { try_block, catch_block });
        }
        let statements = self.statements_until("END")?;
        self.expect_word("END")?;
        Ok(StatementKind::Block(statements))
    }

    pub(super) fn expect_words(&mut self, words: &[&str]) -> Result<()> {
        words.iter().try_for_each(|w| self.expect_word(w))
    }

    fn waitfor(&mut self) -> Result<StatementKind> {
        self.expect_word("WAITFOR")?;
        let delay = if self.eat_word("DELAY") {
            true
        } else {
            self.expect_word("TIME")?;
            false
        };
        Ok(StatementKind::WaitFor { delay, value: self.expr()? })
    }

    /// `THROW` or `THROW number, message, state`.
    fn throw(&mut self) -> Result<StatementKind> {
        self.expect_word("THROW")?;
        if !starts_expression(self.peek()) {
            return Ok(StatementKind::Throw(None));
        }
        let number = self.expr()?;
        self.expect_punct(Punct::Comma)?;
        let message = self.expr()?;
        self.expect_punct(Punct::Comma)?;
        let state = self.expr()?;
        Ok(StatementKind::Throw(Some((number, message, state))))
    }

    /// `RAISERROR (msg, severity, state [, args…]) [WITH LOG, NOWAIT, SETERROR]`
    fn raiserror(&mut self) -> Result<StatementKind> {
        self.expect_word("RAISERROR")?;
        let mut args = self.parenthesized_list(Parser::expr)?;
        if args.len() < 3 {
            return Err(self.error_here());
        }
        let rest = args.split_off(3);
        let mut fixed = args.into_iter();
        let (Some(message), Some(severity), Some(state)) = (fixed.next(), fixed.next(), fixed.next()) else {
            return Err(self.error_here());
        };
        let options = if self.eat_word("WITH") { self.comma_list(Parser::upper_word)? } else { vec![] };
        Ok(StatementKind::RaisError { message, severity, state, args: rest, options })
    }

    // ---- transactions -----------------------------------------------------------------

    fn transaction_keyword(&mut self) -> Result<()> {
        if self.eat_word("TRAN") || self.eat_word("TRANSACTION") {
            Ok(())
        } else {
            Err(self.error_here())
        }
    }

    /// An optional transaction or savepoint name: a variable or an identifier (as a string).
    fn transaction_name(&mut self) -> Result<Option<Expr>> {
        let token = self.peek();
        if token.kind == TokenKind::Variable {
            return Ok(Some(Expr::Variable(self.advance().text.to_string())));
        }
        if is_ident_token(token) && !is_statement_word(token.text) {
            return Ok(Some(name_literal(self.ident()?.value)));
        }
        Ok(None)
    }

    fn commit(&mut self) -> Result<StatementKind> {
        self.expect_word("COMMIT")?;
        let name = self.transaction_suffix()?;
        let delayed_durability = if self.peek().is_word("WITH") && self.peek_nth(1).is_punct(Punct::LParen) {
            self.pos += 2;
            self.expect_word("DELAYED_DURABILITY")?;
            self.expect_punct(Punct::Eq)?;
            let on = self.on_off()?;
            self.expect_punct(Punct::RParen)?;
            Some(on)
        } else {
            None
        };
        Ok(StatementKind::Commit { name, delayed_durability })
    }

    fn rollback(&mut self) -> Result<StatementKind> {
        self.expect_word("ROLLBACK")?;
        Ok(StatementKind::Rollback { name: self.transaction_suffix()? })
    }

    /// `[TRAN|TRANSACTION [name]] | [WORK]` after COMMIT or ROLLBACK.
    fn transaction_suffix(&mut self) -> Result<Option<Expr>> {
        if self.eat_word("WORK") {
            return Ok(None);
        }
        if self.eat_word("TRAN") || self.eat_word("TRANSACTION") {
            return self.transaction_name();
        }
        Ok(None)
    }

    pub(super) fn on_off(&mut self) -> Result<bool> {
        if self.eat_word("ON") {
            Ok(true)
        } else if self.eat_word("OFF") {
            Ok(false)
        } else {
            Err(self.error_here())
        }
    }

    // ---- SET --------------------------------------------------------------------------

    fn set_statement(&mut self) -> Result<StatementKind> {
        self.expect_word("SET")?;
        if self.peek().kind == TokenKind::Variable {
            let name = self.advance().text.to_string();
            if let Some(cursor) = self.set_cursor(&name)? {
                return Ok(cursor);
            }
            let op = self.assignment_operator()?;
            let value = self.expr()?;
            return Ok(StatementKind::SetVariable { name, op, value });
        }
        if self.eat_words(&["TRANSACTION", "ISOLATION", "LEVEL"]) {
            let level = self.isolation_level()?;
            return Ok(StatementKind::SetOption {
                options: vec!["TRANSACTION ISOLATION LEVEL".into()],
                value: SetValue::Word(level.into()),
            });
        }
        if self.eat_word("IDENTITY_INSERT") {
            let table = self.object_name()?;
            let on = self.on_off()?;
            return Ok(StatementKind::SetOption {
                options: vec!["IDENTITY_INSERT".into()],
                value: SetValue::Table { table, on },
            });
        }
        let options = self.comma_list(Parser::set_option_name)?;
        let value = self.set_value()?;
        Ok(StatementKind::SetOption { options, value })
    }

    fn isolation_level(&mut self) -> Result<&'static str> {
        let levels: [(&[&str], &str); 5] = [
            (&["READ", "UNCOMMITTED"], "READ UNCOMMITTED"),
            (&["READ", "COMMITTED"], "READ COMMITTED"),
            (&["REPEATABLE", "READ"], "REPEATABLE READ"),
            (&["SNAPSHOT"], "SNAPSHOT"),
            (&["SERIALIZABLE"], "SERIALIZABLE"),
        ];
        levels.iter().find(|(words, _)| self.eat_words(words)).map(|(_, level)| *level).ok_or_else(|| self.error_here())
    }

    /// An option name, upper-cased; `STATISTICS IO` and the like are two words.
    fn set_option_name(&mut self) -> Result<String> {
        if self.peek().kind != TokenKind::Word {
            return Err(self.error_here());
        }
        let name = self.upper_word()?;
        if name == "STATISTICS" {
            return Ok(format!("STATISTICS {}", self.upper_word()?));
        }
        Ok(name)
    }

    fn set_value(&mut self) -> Result<SetValue> {
        if self.eat_word("ON") {
            return Ok(SetValue::On);
        }
        if self.eat_word("OFF") {
            return Ok(SetValue::Off);
        }
        let token = self.peek();
        let follows_name = self.peek_nth(1).is_punct(Punct::LParen) || self.peek_nth(1).is_punct(Punct::Dot);
        if is_ident_token(token) && !follows_name {
            return Ok(SetValue::Word(self.ident()?.value.to_uppercase()));
        }
        Ok(SetValue::Expr(self.expr()?))
    }

    // ---- DECLARE ----------------------------------------------------------------------

    /// `@name [AS] type [= init]` or `@name [AS] TABLE (…)`.
    fn declaration(&mut self) -> Result<Declaration> {
        let name = self.variable_name()?;
        self.eat_word("AS");
        if self.eat_word("CURSOR") {
            return Ok(Declaration { name, kind: DeclarationKind::Cursor });
        }
        if self.eat_word("TABLE") {
            let elements = self.table_elements(&ObjectName(vec![Ident::new(name.clone())]))?;
            let kind = DeclarationKind::Table { columns: elements.columns, constraints: elements.constraints };
            return Ok(Declaration { name, kind });
        }
        let ty = self.type_name()?;
        let init = if self.eat_punct(Punct::Eq) { Some(self.expr()?) } else { None };
        Ok(Declaration { name, kind: DeclarationKind::Scalar { ty, init } })
    }

    // ---- EXEC -------------------------------------------------------------------------

    /// `EXEC[UTE] [@rc =] proc args…` or `EXEC[UTE] (string expression)`.
    pub(super) fn execute(&mut self) -> Result<StatementKind> {
        if !self.eat_word("EXEC") {
            self.expect_word("EXECUTE")?;
        }
        if self.eat_punct(Punct::LParen) {
            let text = self.expr()?;
            self.expect_punct(Punct::RParen)?;
            let mut parts = Vec::new();
            flatten_concatenation(text, &mut parts);
            return Ok(StatementKind::ExecuteString(parts));
        }
        let return_status = if self.peek().kind == TokenKind::Variable && self.peek_nth(1).is_punct(Punct::Eq) {
            let name = self.advance().text.to_string();
            self.pos += 1;
            Some(name)
        } else {
            None
        };
        Ok(StatementKind::Execute(Box::new(self.execute_call(return_status)?)))
    }

    /// The procedure name, arguments and options of an EXEC (or of a bare procedure call).
    pub(super) fn execute_call(&mut self, return_status: Option<String>) -> Result<Execute> {
        let procedure = self.table_or_variable()?;
        if self.peek().is_punct(Punct::Semicolon) && self.peek_nth(1).kind == TokenKind::Integer {
            self.pos += 2; // `proc;1`: a numbered procedure group
        }
        let args = if self.starts_exec_arg() { self.comma_list(Parser::exec_arg)? } else { vec![] };
        let options = if self.eat_word("WITH") { self.comma_list(Parser::upper_word)? } else { vec![] };
        Ok(Execute { return_status, procedure, args, options })
    }

    fn starts_exec_arg(&self) -> bool {
        let token = self.peek();
        match token.kind {
            TokenKind::Word => {
                (!is_reserved(token.text) && !is_statement_word(token.text))
                    || token.is_word("DEFAULT")
                    || token.is_word("NULL")
            }
            TokenKind::Punct(p) => matches!(p, Punct::Minus | Punct::Plus),
            TokenKind::Eof | TokenKind::Unknown => false,
            _ => true,
        }
    }

    /// `[@name =] value [OUTPUT|OUT]`
    fn exec_arg(&mut self) -> Result<ExecArg> {
        let name = if self.peek().kind == TokenKind::Variable && self.peek_nth(1).is_punct(Punct::Eq) {
            let name = self.advance().text.to_string();
            self.pos += 1;
            Some(name)
        } else {
            None
        };
        let value = self.exec_arg_value()?;
        let output = self.eat_word("OUTPUT") || self.eat_word("OUT");
        Ok(ExecArg { name, value, output })
    }

    /// A constant, a variable, `DEFAULT`, or an unquoted identifier (a string).
    fn exec_arg_value(&mut self) -> Result<Expr> {
        if self.eat_word("DEFAULT") {
            return Ok(Expr::Default);
        }
        let token = self.peek();
        let bare_word = is_ident_token(token) && !self.peek_nth(1).is_punct(Punct::LParen);
        if bare_word && !token.is_word("OUTPUT") && !token.is_word("OUT") {
            return Ok(name_literal(self.ident()?.value));
        }
        self.expr()
    }

    // ---- DBCC -------------------------------------------------------------------------

    fn dbcc(&mut self) -> Result<StatementKind> {
        self.expect_word("DBCC")?;
        let command = self.upper_word()?;
        let args = if self.eat_punct(Punct::LParen) {
            let args = if self.peek().is_punct(Punct::RParen) { vec![] } else { self.comma_list(Parser::expr)? };
            self.expect_punct(Punct::RParen)?;
            args
        } else {
            vec![]
        };
        let options = if self.eat_word("WITH") { self.comma_list(Parser::upper_word)? } else { vec![] };
        Ok(StatementKind::Dbcc { command, args, options })
    }

    // ---- CREATE / ALTER dispatch ------------------------------------------------------

    fn create_or_alter(&mut self, first: bool) -> Result<StatementKind> {
        let start_token = self.advance();
        let alter = start_token.is_word("ALTER");
        let or_alter = !alter && self.eat_words(&["OR", "ALTER"]);
        let header = ModuleHeader { or_alter, alter, start: start_token.start };
        let module = if self.peek_is_any_word(&["PROC", "PROCEDURE"]) {
            Some(("PROCEDURE", ModuleKind::Procedure))
        } else if self.peek().is_word("FUNCTION") {
            Some(("FUNCTION", ModuleKind::Function))
        } else if self.peek().is_word("VIEW") {
            Some(("VIEW", ModuleKind::View))
        } else if self.peek().is_word("TRIGGER") {
            Some(("TRIGGER", ModuleKind::Trigger))
        } else {
            None
        };
        if let Some((noun, kind)) = module {
            if !first {
                return Err(msg::MUST_BE_FIRST_IN_BATCH.with(&[&header.verb(), &noun]).at_line(start_token.line));
            }
            self.pos += 1;
            return match kind {
                ModuleKind::Procedure => Ok(StatementKind::CreateProcedure(Box::new(self.procedure(header)?))),
                ModuleKind::Function => Ok(StatementKind::CreateFunction(Box::new(self.function(header)?))),
                ModuleKind::View => Ok(StatementKind::CreateView(Box::new(self.view(header)?))),
                ModuleKind::Trigger => Ok(StatementKind::CreateTrigger(Box::new(self.trigger(header)?))),
                // Not among the kinds above: CREATE SYNONYM is `create`'s.
                ModuleKind::Synonym | ModuleKind::Type => Err(self.error_here()),
            };
        }
        if or_alter {
            return Err(self.error_here());
        }
        if alter {
            self.alter()
        } else {
            self.create()
        }
    }

    // ---- modules ----------------------------------------------------------------------

    /// After `CREATE PROC[EDURE]`: name, parameters, options, `AS`, and the rest of the
    /// batch as the body.
    fn procedure(&mut self, header: ModuleHeader) -> Result<CreateProcedure> {
        let name = self.object_name()?;
        if self.peek().is_punct(Punct::Semicolon) && self.peek_nth(1).kind == TokenKind::Integer {
            self.pos += 2;
        }
        let params = if self.eat_punct(Punct::LParen) {
            let params = if self.peek().is_punct(Punct::RParen) { vec![] } else { self.comma_list(Parser::parameter)? };
            self.expect_punct(Punct::RParen)?;
            params
        } else if self.peek().kind == TokenKind::Variable {
            self.comma_list(Parser::parameter)?
        } else {
            vec![]
        };
        let execute_as = self.module_options()?.0;
        self.eat_words(&["FOR", "REPLICATION"]);
        self.expect_word("AS")?;
        let body = self.statements_to_eof()?;
        let text = self.source(header.start, self.previous_end());
        Ok(CreateProcedure { or_alter: header.or_alter, alter: header.alter, name, params, body, execute_as, text })
    }

    /// After `CREATE TRIGGER`: name, `ON` table (or DATABASE / ALL SERVER), options, when it
    /// fires and on what, `AS`, and the rest of the batch as the body.
    fn trigger(&mut self, header: ModuleHeader) -> Result<CreateTrigger> {
        let name = self.object_name()?;
        self.expect_word("ON")?;
        let all_server = self.eat_words(&["ALL", "SERVER"]);
        let table = if all_server || self.eat_word("DATABASE") { None } else { Some(self.object_name()?) };
        let execute_as = self.module_options()?.0;
        let instead_of = if self.eat_words(&["INSTEAD", "OF"]) {
            true
        } else {
            if !self.eat_word("FOR") {
                self.expect_word("AFTER")?;
            }
            false
        };
        let mut events = TriggerEvents::default();
        let mut ddl_events = Vec::new();
        if table.is_none() {
            // A DDL trigger's event types and groups (CREATE_TABLE, DDL_DATABASE_LEVEL_EVENTS…).
            ddl_events = self.comma_list(Parser::any_word)?.into_iter().map(|w| w.value.to_uppercase()).collect();
        } else {
            loop {
                let event = if self.eat_word("INSERT") {
                    &mut events.insert
                } else if self.eat_word("UPDATE") {
                    &mut events.update
                } else {
                    self.expect_word("DELETE")?;
                    &mut events.delete
                };
                *event = true;
                if !self.eat_punct(Punct::Comma) {
                    break;
                }
            }
        }
        self.eat_words(&["WITH", "APPEND"]);
        self.eat_words(&["NOT", "FOR", "REPLICATION"]);
        self.expect_word("AS")?;
        let body = self.statements_to_eof()?;
        let text = self.source(header.start, self.previous_end());
        Ok(CreateTrigger {
            or_alter: header.or_alter,
            alter: header.alter,
            name,
            table,
            all_server,
            instead_of,
            events,
            ddl_events,
            execute_as,
            body,
            text,
        })
    }

    /// `ENABLE | DISABLE TRIGGER {name, … | ALL} ON {table | DATABASE | ALL SERVER}`
    fn enable_trigger(&mut self) -> Result<StatementKind> {
        let enable = self.advance().is_word("ENABLE");
        self.expect_word("TRIGGER")?;
        let names = if self.eat_word("ALL") { vec![] } else { self.comma_list(Parser::object_name)? };
        self.expect_word("ON")?;
        let all_server = self.eat_words(&["ALL", "SERVER"]);
        let table = if all_server || self.eat_word("DATABASE") { None } else { Some(self.object_name()?) };
        Ok(StatementKind::EnableTrigger { enable, names, table, all_server })
    }

    /// `@name [AS] type [VARYING] [= default] [OUT|OUTPUT] [READONLY]`
    fn parameter(&mut self) -> Result<Parameter> {
        let name = self.variable_name()?;
        self.eat_word("AS");
        // `@c CURSOR VARYING OUTPUT`: a cursor parameter.
        let ty = if self.eat_word("CURSOR") {
            TypeName { name: "CURSOR".to_string(), args: vec![] }
        } else {
            self.type_name()?
        };
        self.eat_word("VARYING");
        let default = if self.eat_punct(Punct::Eq) { Some(self.expr()?) } else { None };
        let output = self.eat_word("OUTPUT") || self.eat_word("OUT");
        let readonly = self.eat_word("READONLY");
        Ok(Parameter { name, ty, default, output, readonly })
    }

    /// `WITH RECOMPILE, ENCRYPTION, SCHEMABINDING, EXECUTE AS …`: the EXECUTE AS clause
    /// and whether SCHEMABINDING was given; the other options are accepted and ignored.
    fn module_options(&mut self) -> Result<(ModuleExecuteAs, bool)> {
        let mut execute_as = ModuleExecuteAs::Caller;
        let mut schema_bound = false;
        if !self.eat_word("WITH") {
            return Ok((execute_as, schema_bound));
        }
        self.comma_list(|p| {
            if p.eat_word("EXECUTE") || p.eat_word("EXEC") {
                p.expect_word("AS")?;
                execute_as = match &p.peek().kind {
                    TokenKind::String { value, .. } => ModuleExecuteAs::User(value.clone()),
                    _ if p.peek().is_word("CALLER") => ModuleExecuteAs::Caller,
                    _ if p.peek().is_word("SELF") => ModuleExecuteAs::SelfUser,
                    _ if p.peek().is_word("OWNER") => ModuleExecuteAs::Owner,
                    _ => return Err(p.error_here()),
                };
                p.advance();
                return Ok(());
            }
            if p.eat_words(&["RETURNS", "NULL", "ON", "NULL", "INPUT"])
                || p.eat_words(&["CALLED", "ON", "NULL", "INPUT"])
            {
                return Ok(());
            }
            schema_bound |= p.upper_word()? == "SCHEMABINDING";
            Ok(())
        })?;
        Ok((execute_as, schema_bound))
    }

    /// Module options where EXECUTE AS is not supported (views, inline and multi-statement
    /// table-valued functions): only CALLER, which is what they run as.
    fn caller_module_options(&mut self) -> Result<()> {
        match self.module_options()?.0 {
            ModuleExecuteAs::Caller => Ok(()),
            _ => Err(msg::EXECUTE_AS_TVF_NOT_SUPPORTED.err()),
        }
    }

    /// After `CREATE FUNCTION`.
    fn function(&mut self, header: ModuleHeader) -> Result<CreateFunction> {
        let name = self.object_name()?;
        self.expect_punct(Punct::LParen)?;
        let params = if self.peek().is_punct(Punct::RParen) { vec![] } else { self.comma_list(Parser::parameter)? };
        self.expect_punct(Punct::RParen)?;
        self.expect_word("RETURNS")?;
        let returns = self.function_returns()?;
        self.end_of_module()?;
        let text = self.source(header.start, self.previous_end());
        Ok(CreateFunction { or_alter: header.or_alter, alter: header.alter, name, params, returns, text })
    }

    fn function_returns(&mut self) -> Result<FunctionReturns> {
        if self.eat_word("TABLE") {
            self.caller_module_options()?;
            self.eat_word("AS");
            self.expect_word("RETURN")?;
            let query = if self.eat_punct(Punct::LParen) {
                let query = self.query()?;
                self.expect_punct(Punct::RParen)?;
                query
            } else {
                self.query()?
            };
            return Ok(FunctionReturns::InlineTable(Box::new(query)));
        }
        if self.peek().kind == TokenKind::Variable {
            let variable = self.advance().text.to_string();
            self.expect_word("TABLE")?;
            let elements = self.table_elements(&ObjectName(vec![Ident::new(variable.clone())]))?;
            self.caller_module_options()?;
            let body = self.function_body()?;
            return Ok(FunctionReturns::MultiStatement { variable, columns: elements.columns, body });
        }
        let ty = self.type_name()?;
        let (execute_as, schema_bound) = self.module_options()?;
        let body = self.function_body()?;
        Ok(FunctionReturns::Scalar { ty, body, execute_as, schema_bound })
    }

    /// `[AS] BEGIN … END` (after the options)
    fn function_body(&mut self) -> Result<Vec<crate::ast::Statement>> {
        self.eat_word("AS");
        self.expect_word("BEGIN")?;
        let body = self.statements_until("END")?;
        self.expect_word("END")?;
        Ok(body)
    }

    /// A function or view must be the only statement of its batch.
    fn end_of_module(&mut self) -> Result<()> {
        self.skip_semicolons();
        if self.at_eof() {
            Ok(())
        } else {
            Err(self.error_here())
        }
    }

    /// After `CREATE VIEW`.
    fn view(&mut self, header: ModuleHeader) -> Result<CreateView> {
        let name = self.object_name()?;
        let columns = if self.peek().is_punct(Punct::LParen) { self.ident_list()? } else { vec![] };
        self.caller_module_options()?;
        self.expect_word("AS")?;
        let query = Box::new(self.query()?);
        self.eat_words(&["WITH", "CHECK", "OPTION"]);
        self.end_of_module()?;
        let text = self.source(header.start, self.previous_end());
        Ok(CreateView { or_alter: header.or_alter, alter: header.alter, name, columns, query, text })
    }
}

/// Splits `a + b + c` into `[a, b, c]` (the parts of a dynamic SQL string).
fn flatten_concatenation(expr: Expr, parts: &mut Vec<Expr>) {
    match expr {
        Expr::Binary { op: BinaryOp::Add, left, right } => {
            flatten_concatenation(*left, parts);
            flatten_concatenation(*right, parts);
        }
        other => parts.push(other),
    }
}
