//! MERGE: a target, a USING source joined to it ON a condition, and WHEN clauses that
//! update, delete or insert.

use super::{is_ident_token, Parser, Result};
use crate::ast::{Merge, MergeAction, MergeClause, MergeWhen};
use crate::lexer::{Punct, TokenKind};
use tessera_errors::msg;

impl Parser<'_> {
    /// `MERGE [TOP (n) [PERCENT]] [INTO] target [WITH (hints)] [[AS] alias] USING source ON
    /// condition {WHEN …}… [OUTPUT …] [OPTION (…)];` — the semicolon is required (10713).
    /// SQL Server's rules on the clauses are checked here: INSERT only when NOT MATCHED
    /// BY TARGET (10711), UPDATE and DELETE never there (10710), and no action twice in
    /// the clauses of one kind (10714).
    pub(super) fn merge(&mut self) -> Result<Merge> {
        let line = self.peek().line;
        self.expect_word("MERGE")?;
        let top = self.top_clause()?;
        self.eat_word("INTO");
        let target = self.table_or_variable()?;
        let mut target_hints = self.table_hints()?;
        let aliased = self.eat_word("AS") || (is_ident_token(self.peek()) && !self.peek().is_word("USING"));
        let target_alias = if aliased { Some(self.ident()?) } else { None };
        target_hints.extend(self.table_hints()?);
        self.expect_word("USING")?;
        let source = self.table_ref()?;
        self.expect_word("ON")?;
        let on = self.expr()?;
        let mut clauses: Vec<MergeClause> = Vec::new();
        while self.peek().is_word("WHEN") {
            let clause = self.merge_clause()?;
            if let Some(earlier) =
                clauses.iter().find(|c| c.when == clause.when && c.action.name() == clause.action.name())
            {
                let when = earlier.when.clause_name();
                return Err(msg::MERGE_ACTION_REPEATED.with(&[&when, &clause.action.name()]).at_line(line));
            }
            clauses.push(clause);
        }
        if clauses.is_empty() {
            return Err(self.error_here());
        }
        let output = self.output_clause()?;
        let hints = if self.eat_word("OPTION") { self.query_hints()? } else { Default::default() };
        if !self.peek().is_punct(Punct::Semicolon) {
            // A MERGE that a statement or the batch's end follows is only unterminated.
            if !self.at_eof() && self.peek().kind != TokenKind::Word {
                return Err(self.error_here());
            }
            return Err(msg::MERGE_NEEDS_SEMICOLON.err().with_severity(15).at_line(line));
        }
        Ok(Merge { with: vec![], hints, top, target, target_alias, target_hints, source, on, clauses, output })
    }

    /// `WHEN [NOT] MATCHED [BY TARGET | BY SOURCE] [AND condition] THEN action`
    fn merge_clause(&mut self) -> Result<MergeClause> {
        let line = self.peek().line;
        self.expect_word("WHEN")?;
        let when = if self.eat_word("MATCHED") {
            MergeWhen::Matched
        } else {
            self.expect_word("NOT")?;
            self.expect_word("MATCHED")?;
            if self.eat_word("BY") {
                if self.eat_word("SOURCE") {
                    MergeWhen::NotMatchedBySource
                } else {
                    self.expect_word("TARGET")?;
                    MergeWhen::NotMatchedByTarget
                }
            } else {
                MergeWhen::NotMatchedByTarget
            }
        };
        let condition = if self.eat_word("AND") { Some(self.expr()?) } else { None };
        self.expect_word("THEN")?;
        let action = if self.eat_word("DELETE") {
            MergeAction::Delete
        } else if self.eat_word("UPDATE") {
            self.expect_word("SET")?;
            MergeAction::Update(self.comma_list(Parser::assignment)?)
        } else if self.eat_word("INSERT") {
            let columns = if self.peek().is_punct(Punct::LParen) { self.ident_list()? } else { vec![] };
            let values = if self.eat_words(&["DEFAULT", "VALUES"]) {
                None
            } else {
                self.expect_word("VALUES")?;
                Some(self.parenthesized_list(Parser::expr_or_default)?)
            };
            MergeAction::Insert { columns, values }
        } else {
            return Err(self.error_here());
        };
        match (when, &action) {
            (MergeWhen::NotMatchedByTarget, MergeAction::Insert { .. }) => {}
            (MergeWhen::NotMatchedByTarget, other) => {
                return Err(msg::MERGE_ACTION_NOT_IN_NOT_MATCHED.with(&[&other.name()]).at_line(line));
            }
            (_, MergeAction::Insert { .. }) => {
                return Err(msg::MERGE_INSERT_NOT_ALLOWED.with(&[&when.clause_name()]).at_line(line));
            }
            _ => {}
        }
        Ok(MergeClause { when, condition, action })
    }
}
