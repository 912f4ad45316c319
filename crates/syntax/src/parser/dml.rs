//! INSERT, UPDATE and DELETE.

use super::expr::compound_operator;
use super::{Parser, Result};
use crate::ast::{Assignment, BinaryOp, Delete, Insert, InsertBulk, InsertSource, Output, QueryHints, Update};
use crate::lexer::{Punct, TokenKind};

impl Parser<'_> {
    /// `INSERT [TOP (n)] [INTO] t [(cols)] [OUTPUT …] VALUES … | query | DEFAULT VALUES | EXEC …`
    pub(super) fn insert(&mut self) -> Result<Insert> {
        self.expect_word("INSERT")?;
        let top = self.top_clause()?;
        self.eat_word("INTO");
        let table = self.table_or_variable()?;
        self.table_hints()?;
        let columns =
            if self.peek().is_punct(Punct::LParen) && !self.peek_starts_query() { self.ident_list()? } else { vec![] };
        let output = self.output_clause()?;
        let source = self.insert_source()?;
        Ok(Insert { top, table, columns, output, source })
    }

    /// `INSERT BULK t (col type [COLLATE c], …) [WITH (option [= value | (…)], …)]`, the
    /// options being those bcp and the drivers send (CHECK_CONSTRAINTS, FIRE_TRIGGERS,
    /// KEEP_NULLS, KEEPIDENTITY, TABLOCK, ORDER (…), ROWS_PER_BATCH = n,
    /// KILOBYTES_PER_BATCH = n).
    pub(super) fn insert_bulk(&mut self) -> Result<InsertBulk> {
        self.expect_word("INSERT")?;
        self.expect_word("BULK")?;
        let table = self.object_name()?;
        let columns = self.parenthesized_list(|p| {
            let name = p.ident()?;
            p.type_name()?;
            if p.eat_word("COLLATE") {
                p.ident()?;
            }
            Ok(name)
        })?;
        let mut keep_identity = false;
        if self.eat_word("WITH") {
            self.parenthesized_list(|p| {
                let option = p.peek().text.to_uppercase();
                let known =
                    ["CHECK_CONSTRAINTS", "FIRE_TRIGGERS", "KEEP_NULLS", "TABLOCK", "KEEPIDENTITY", "KEEP_IDENTITY"];
                match option.as_str() {
                    _ if p.peek().kind != TokenKind::Word => return Err(p.error_here()),
                    "ORDER" => {
                        p.advance();
                        p.skip_parenthesized()?;
                    }
                    "ROWS_PER_BATCH" | "KILOBYTES_PER_BATCH" => {
                        p.advance();
                        p.expect_punct(Punct::Eq)?;
                        if p.peek().kind != TokenKind::Integer {
                            return Err(p.error_here());
                        }
                        p.advance();
                    }
                    name if known.contains(&name) => {
                        p.advance();
                        keep_identity |= name.starts_with("KEEP") && name.ends_with("IDENTITY");
                    }
                    _ => return Err(p.error_here()),
                }
                Ok(())
            })?;
        }
        Ok(InsertBulk { table, columns, keep_identity })
    }

    fn insert_source(&mut self) -> Result<InsertSource> {
        if self.eat_words(&["DEFAULT", "VALUES"]) {
            return Ok(InsertSource::DefaultValues);
        }
        if self.peek().is_word("VALUES") {
            return Ok(InsertSource::Values(self.values_rows()?));
        }
        if self.peek_is_any_word(&["EXEC", "EXECUTE"]) {
            return Ok(InsertSource::Execute(Box::new(self.execute()?)));
        }
        if self.peek_starts_query() {
            return Ok(InsertSource::Query(Box::new(self.query()?)));
        }
        Err(self.error_here())
    }

    /// `OUTPUT items [INTO target [(cols)]]`, if present.
    pub(super) fn output_clause(&mut self) -> Result<Option<Output>> {
        if !self.eat_word("OUTPUT") {
            return Ok(None);
        }
        let items = self.comma_list(Parser::select_item)?;
        let into = if self.eat_word("INTO") {
            let target = self.table_or_variable()?;
            let columns = if self.peek().is_punct(Punct::LParen) { self.ident_list()? } else { vec![] };
            Some((target, columns))
        } else {
            None
        };
        Ok(Some(Output { items, into }))
    }

    /// `UPDATE [TOP (n)] t [WITH (hints)] SET … [OUTPUT …] [FROM …] [WHERE …]`
    pub(super) fn update(&mut self) -> Result<Update> {
        self.expect_word("UPDATE")?;
        let top = self.top_clause()?;
        let table = self.table_or_variable()?;
        let table_hints = self.table_hints()?;
        self.expect_word("SET")?;
        let assignments = self.comma_list(Parser::assignment)?;
        let output = self.output_clause()?;
        let from = if self.eat_word("FROM") { self.table_sources()? } else { vec![] };
        let current_of = self.current_of()?;
        let selection = if current_of.is_some() { None } else { self.where_clause()? };
        let hints = self.option_clause()?;
        Ok(Update { with: vec![], hints, top, table, table_hints, assignments, output, from, selection, current_of })
    }

    /// `col [op]= expr`, `@v [op]= expr` or `@v = col = expr`.
    pub(super) fn assignment(&mut self) -> Result<Assignment> {
        if self.peek().kind == TokenKind::Variable {
            let name = self.advance().text.to_string();
            let op = self.assignment_operator()?;
            let is_both = op.is_none() && super::is_ident_token(self.peek()) && self.column_then_eq_follows();
            if is_both {
                let column = self.object_name()?;
                self.expect_punct(Punct::Eq)?;
                let value = self.expr_or_default()?;
                return Ok(Assignment::Both { variable: name, column, value });
            }
            let value = self.expr()?;
            return Ok(Assignment::Variable { name, op, value });
        }
        let column = self.object_name()?;
        // `col.WRITE(…)`: the column is never qualified (a qualified one is a syntax error,
        // at the parenthesis, as in SQL Server).
        if let [col, method] = &column.0[..] {
            if method.value.eq_ignore_ascii_case("WRITE") && self.peek().is_punct(Punct::LParen) {
                self.advance();
                let value = self.expr()?;
                self.expect_punct(Punct::Comma)?;
                let offset = self.expr()?;
                self.expect_punct(Punct::Comma)?;
                let length = self.expr()?;
                self.expect_punct(Punct::RParen)?;
                return Ok(Assignment::Write { column: col.clone(), value, offset, length });
            }
        }
        let op = self.assignment_operator()?;
        let value = self.expr_or_default()?;
        Ok(Assignment::Column { column, op, value })
    }

    /// Whether the next tokens are `name[.name…] =` (the column of `@v = col = expr`).
    fn column_then_eq_follows(&self) -> bool {
        let mut n = 1;
        while self.peek_nth(n).is_punct(Punct::Dot) && super::is_ident_token(self.peek_nth(n + 1)) {
            n += 2;
        }
        self.peek_nth(n).is_punct(Punct::Eq)
    }

    /// `=` (None) or a compound assignment operator such as `+=`.
    pub(super) fn assignment_operator(&mut self) -> Result<Option<BinaryOp>> {
        if self.eat_punct(Punct::Eq) {
            return Ok(None);
        }
        if let TokenKind::Punct(p) = self.peek().kind {
            if let Some(op) = compound_operator(p) {
                self.pos += 1;
                return Ok(Some(op));
            }
        }
        Err(self.error_here())
    }

    /// `DELETE [TOP (n)] [FROM] t [OUTPUT …] [FROM …] [WHERE …]`
    pub(super) fn delete(&mut self) -> Result<Delete> {
        self.expect_word("DELETE")?;
        let top = self.top_clause()?;
        self.eat_word("FROM");
        let table = self.table_or_variable()?;
        let table_hints = self.table_hints()?;
        let output = self.output_clause()?;
        let from = if self.eat_word("FROM") { self.table_sources()? } else { vec![] };
        let current_of = self.current_of()?;
        let selection = if current_of.is_some() { None } else { self.where_clause()? };
        let hints = self.option_clause()?;
        Ok(Delete { with: vec![], hints, top, table, table_hints, output, from, selection, current_of })
    }

    /// `OPTION (…)` query hints, if given.
    fn option_clause(&mut self) -> Result<QueryHints> {
        if self.eat_word("OPTION") {
            return self.query_hints();
        }
        Ok(QueryHints::default())
    }
}
