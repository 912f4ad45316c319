//! The T-SQL parser: a hand-written recursive-descent parser over [`crate::lexer`] tokens.
//!
//! [`parse_batch`] turns one batch (the text between two `GO` lines) into an
//! [`ast::Batch`]. Semicolons are optional, as in T-SQL: a statement ends where it is
//! complete, and the next token must start another statement.
//!
//! Conventions of the tree this parser builds (beyond the doc comments in [`crate::ast`]):
//! - A parenthesised expression is [`Expr::Nested`]; the binder unwraps it.
//! - Niladic functions written without parentheses (`CURRENT_TIMESTAMP`, `CURRENT_USER`,
//!   `SESSION_USER`, `SYSTEM_USER`, `USER`) are [`Expr::Function`] nodes with no arguments
//!   and the name upper-cased.
//! - Transaction and savepoint names written as identifiers are string literals.
//! - An unquoted identifier passed as an `EXEC` argument (`EXEC sp_help t`) is a string
//!   literal, as T-SQL treats it.
//! - `ALTER TABLE … CHECK CONSTRAINT ALL` has an empty name list.
//!
//! Errors are SQL Server's: 102/156 for syntax errors, 105/113 from the lexer, 111 when a
//! `CREATE PROCEDURE`/`VIEW`/`FUNCTION` is not alone in its batch, 191 when nesting is too
//! deep. Only the first error is reported.

mod backup;
mod cursor;
mod ddl;
mod dml;
mod expr;
pub use expr::XML_VALUE;
mod governor;
mod keywords;
mod merge;
mod principals;
mod program;
mod query;
mod security;
mod sequence;

#[cfg(test)]
mod tests;

use crate::ast::{Batch, Ident, ObjectName, Statement, StatementKind};
use crate::lexer::{tokenize, Punct, Token, TokenKind};
use tessera_errors::msg;
use tessera_errors::SqlError;

pub use keywords::is_reserved;

/// The deepest nesting of parenthesised expressions, subqueries, derived tables and
/// blocks the parser accepts (error 191 beyond).
pub const MAX_DEPTH: usize = 128;

/// The deepest expression tree the parser builds, counting operator chains such as
/// `a + b + c …` (left-deep trees): consumers may walk trees recursively.
pub const MAX_EXPR_DEPTH: usize = 1000;

/// The longest chain of joins or set operations in one query (also left-deep trees).
pub const MAX_CHAIN: usize = 256;

type Result<T> = std::result::Result<T, SqlError>;

/// Parses one batch.
pub fn parse_batch(text: &str) -> Result<Batch> {
    let tokens = tokenize(text)?;
    let mut parser = Parser { src: text, tokens, pos: 0, depth: 0 };
    parser.batch()
}

/// Parser state: the tokens of a batch and a cursor into them.
pub(crate) struct Parser<'a> {
    src: &'a str,
    /// Never empty: the last token is `Eof`.
    tokens: Vec<Token<'a>>,
    pos: usize,
    depth: usize,
}

impl<'a> Parser<'a> {
    // ---- the batch --------------------------------------------------------------------

    fn batch(&mut self) -> Result<Batch> {
        let mut statements = Vec::new();
        self.skip_semicolons();
        while !self.at_eof() {
            let first = statements.is_empty();
            let statement = if first && self.starts_bare_procedure_call() {
                self.bare_procedure_call()?
            } else {
                self.statement(first)?
            };
            statements.push(statement);
            self.skip_semicolons();
        }
        Ok(Batch { statements })
    }

    /// The first statement of a batch may be a procedure name without `EXEC`.
    fn starts_bare_procedure_call(&self) -> bool {
        let token = self.peek();
        let name_like = match token.kind {
            TokenKind::Word => !is_reserved(token.text) && !keywords::is_statement_word(token.text),
            TokenKind::QuotedIdent(_) => true,
            _ => false,
        };
        let trigger_switch = token.is_word("ENABLE") || token.is_word("DISABLE");
        name_like
            && !self.peek_nth(1).is_punct(Punct::Colon)
            && !(trigger_switch && self.peek_nth(1).is_word("TRIGGER"))
    }

    fn bare_procedure_call(&mut self) -> Result<Statement> {
        let (line, start) = (self.peek().line, self.peek().start);
        let execute = self.execute_call(None)?;
        let span = (start, self.statement_end());
        Ok(Statement { line, span, kind: StatementKind::Execute(Box::new(execute)) })
    }

    /// Where the statement just parsed ends in the text: its last token, or the semicolon
    /// right after it.
    fn statement_end(&self) -> usize {
        if self.peek().is_punct(Punct::Semicolon) {
            return self.peek().end;
        }
        self.tokens[self.pos.saturating_sub(1)].end
    }

    fn skip_semicolons(&mut self) {
        while self.eat_punct(Punct::Semicolon) {}
    }

    /// Statements up to (not including) the word `end`, e.g. the body of `BEGIN … END`.
    fn statements_until(&mut self, end: &str) -> Result<Vec<Statement>> {
        let mut statements = Vec::new();
        self.skip_semicolons();
        while !self.peek().is_word(end) {
            if self.at_eof() {
                return Err(self.error_here());
            }
            statements.push(self.statement(false)?);
            self.skip_semicolons();
        }
        Ok(statements)
    }

    /// Statements up to the end of the batch (the body of a procedure).
    fn statements_to_eof(&mut self) -> Result<Vec<Statement>> {
        let mut statements = Vec::new();
        self.skip_semicolons();
        while !self.at_eof() {
            statements.push(self.statement(false)?);
            self.skip_semicolons();
        }
        Ok(statements)
    }

    // ---- depth ------------------------------------------------------------------------

    /// Runs `f` one nesting level deeper, failing with 191 beyond [`MAX_DEPTH`].
    fn nested<T>(&mut self, f: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        if self.depth >= MAX_DEPTH {
            return Err(self.too_deep());
        }
        self.depth += 1;
        let result = f(self);
        self.depth -= 1;
        result
    }

    /// Error 191: nesting beyond the parser's limits.
    fn too_deep(&self) -> SqlError {
        msg::NESTED_TOO_DEEPLY.err().at_line(self.peek().line)
    }

    /// Fails with 191 once a left-deep chain (joins, set operations) is too long.
    fn check_chain(&self, length: usize) -> Result<()> {
        if length > MAX_CHAIN {
            Err(self.too_deep())
        } else {
            Ok(())
        }
    }

    // ---- token cursor -----------------------------------------------------------------

    fn peek(&self) -> &Token<'a> {
        self.peek_nth(0)
    }

    fn peek_nth(&self, n: usize) -> &Token<'a> {
        let last = self.tokens.len() - 1;
        &self.tokens[(self.pos + n).min(last)]
    }

    fn at_eof(&self) -> bool {
        self.peek().kind == TokenKind::Eof
    }

    fn advance(&mut self) -> Token<'a> {
        let token = self.peek().clone();
        if !self.at_eof() {
            self.pos += 1;
        }
        token
    }

    /// The end offset of the last consumed token.
    fn previous_end(&self) -> usize {
        if self.pos == 0 {
            0
        } else {
            self.tokens[self.pos - 1].end
        }
    }

    fn eat_word(&mut self, word: &str) -> bool {
        let found = self.peek().is_word(word);
        if found {
            self.pos += 1;
        }
        found
    }

    /// Consumes the words of `words` if all of them come next.
    fn eat_words(&mut self, words: &[&str]) -> bool {
        let all = words.iter().enumerate().all(|(i, w)| self.peek_nth(i).is_word(w));
        if all {
            self.pos += words.len();
        }
        all
    }

    fn expect_word(&mut self, word: &str) -> Result<()> {
        if self.eat_word(word) {
            Ok(())
        } else {
            Err(self.error_here())
        }
    }

    fn eat_punct(&mut self, p: Punct) -> bool {
        let found = self.peek().is_punct(p);
        if found {
            self.pos += 1;
        }
        found
    }

    fn expect_punct(&mut self, p: Punct) -> Result<()> {
        if self.eat_punct(p) {
            Ok(())
        } else {
            Err(self.error_here())
        }
    }

    /// Whether the next token is one of the unquoted words in `words`.
    fn peek_is_any_word(&self, words: &[&str]) -> bool {
        words.iter().any(|w| self.peek().is_word(w))
    }

    /// Parses `item (, item)*`.
    fn comma_list<T>(&mut self, mut item: impl FnMut(&mut Self) -> Result<T>) -> Result<Vec<T>> {
        let mut items = vec![item(self)?];
        while self.eat_punct(Punct::Comma) {
            items.push(item(self)?);
        }
        Ok(items)
    }

    /// Parses `( item, … )`.
    fn parenthesized_list<T>(&mut self, item: impl FnMut(&mut Self) -> Result<T>) -> Result<Vec<T>> {
        self.expect_punct(Punct::LParen)?;
        let items = self.comma_list(item)?;
        self.expect_punct(Punct::RParen)?;
        Ok(items)
    }

    // ---- errors -----------------------------------------------------------------------

    /// A syntax error at the next token: 156 near a reserved keyword, 102 otherwise; at
    /// the end of the batch, 102 near the last token.
    fn error_here(&self) -> SqlError {
        let token = if self.at_eof() && self.pos > 0 { &self.tokens[self.pos - 1] } else { self.peek() };
        syntax_error(token, !self.at_eof())
    }

    // ---- names ------------------------------------------------------------------------

    /// An identifier; a reserved keyword is an error (156).
    fn ident(&mut self) -> Result<Ident> {
        let token = self.peek();
        let ident = match &token.kind {
            TokenKind::Word if !is_reserved(token.text) => Ident::new(token.text),
            TokenKind::QuotedIdent(value) => Ident { value: value.clone(), quoted: true },
            _ => return Err(self.error_here()),
        };
        self.pos += 1;
        Ok(ident)
    }

    /// An identifier where a reserved word is allowed too (option names and the like).
    fn any_word(&mut self) -> Result<Ident> {
        if self.peek().kind == TokenKind::Word {
            return Ok(Ident::new(self.advance().text));
        }
        self.ident()
    }

    /// An upper-cased word (option names, hints).
    fn upper_word(&mut self) -> Result<String> {
        Ok(self.any_word()?.value.to_uppercase())
    }

    /// `a`, `a.b`, `a.b.c`, `a.b.c.d`, `db..t`, and empty leading parts (`..t`: the
    /// current database and the default schema).
    fn object_name(&mut self) -> Result<ObjectName> {
        let mut parts = Vec::new();
        while parts.len() < 3 && self.peek().is_punct(Punct::Dot) {
            self.pos += 1;
            parts.push(Ident::new(""));
        }
        parts.push(self.ident()?);
        while parts.len() < 4 && self.peek().is_punct(Punct::Dot) {
            self.pos += 1;
            if self.peek().is_punct(Punct::Dot) {
                parts.push(Ident::new(""));
                continue;
            }
            parts.push(self.ident()?);
        }
        Ok(ObjectName(parts))
    }

    /// A table name or a `@table_variable` (as a single-part name with its `@`).
    fn table_or_variable(&mut self) -> Result<ObjectName> {
        if self.peek().kind == TokenKind::Variable {
            return Ok(ObjectName(vec![Ident::new(self.advance().text)]));
        }
        self.object_name()
    }

    /// `(a, b, c)`
    fn ident_list(&mut self) -> Result<Vec<Ident>> {
        self.parenthesized_list(Parser::ident)
    }

    /// A variable name `@x` (returned with the `@`).
    fn variable_name(&mut self) -> Result<String> {
        if self.peek().kind == TokenKind::Variable {
            Ok(self.advance().text.to_string())
        } else {
            Err(self.error_here())
        }
    }

    /// Skips a balanced parenthesised group (options this parser accepts and ignores).
    fn skip_parenthesized(&mut self) -> Result<()> {
        self.expect_punct(Punct::LParen)?;
        let mut depth = 1usize;
        while depth > 0 {
            match self.advance().kind {
                TokenKind::Punct(Punct::LParen) => depth += 1,
                TokenKind::Punct(Punct::RParen) => depth -= 1,
                TokenKind::Eof => return Err(self.error_here()),
                _ => {}
            }
        }
        Ok(())
    }

    /// The source text between two byte offsets.
    fn source(&self, start: usize, end: usize) -> String {
        self.src.get(start..end).unwrap_or_default().to_string()
    }
}

/// Whether `token` can be an identifier.
fn is_ident_token(token: &Token) -> bool {
    match token.kind {
        TokenKind::Word => !is_reserved(token.text),
        TokenKind::QuotedIdent(_) => true,
        _ => false,
    }
}

/// SQL Server's syntax error near `token`: 156 for a reserved keyword (unless at the end
/// of the batch), 102 otherwise.
fn syntax_error(token: &Token, keyword_allowed: bool) -> SqlError {
    let error = if keyword_allowed && token.kind == TokenKind::Word && is_reserved(token.text) {
        let keyword = token.text.to_uppercase();
        msg::SYNTAX_ERROR_NEAR_KEYWORD.with(&[&keyword])
    } else {
        msg::SYNTAX_ERROR_NEAR.with(&[&token.display_text()])
    };
    error.with_severity(15).at_line(token.line)
}
