//! T-SQL cursors: DECLARE CURSOR (SQL Server's options and the ISO form), OPEN, FETCH,
//! CLOSE, DEALLOCATE, `SET @c = CURSOR …` and `WHERE CURRENT OF`.

use super::{is_ident_token, Parser, Result};
use crate::ast::cursor::{
    CurrentOf, CursorConcurrency, CursorDefinition, CursorKind, CursorOptions, CursorRef, CursorStatement,
    CursorUpdate, FetchDirection,
};
use crate::ast::StatementKind;
use crate::lexer::{Punct, TokenKind};

impl Parser<'_> {
    /// Whether the tokens after DECLARE start a cursor declaration: `name CURSOR`,
    /// `name INSENSITIVE …` or `name SCROLL …`.
    pub(super) fn declares_cursor(&self) -> bool {
        is_ident_token(self.peek_nth(1))
            && self.peek_nth(1).kind != TokenKind::Variable
            && ["CURSOR", "INSENSITIVE", "SCROLL"].iter().any(|w| self.peek_nth(2).is_word(w))
    }

    /// `DECLARE name [INSENSITIVE] [SCROLL] CURSOR [options] FOR select [FOR …]`
    pub(super) fn declare_cursor(&mut self) -> Result<StatementKind> {
        self.expect_word("DECLARE")?;
        let name = self.ident()?;
        let mut options = CursorOptions::default();
        loop {
            if self.eat_word("INSENSITIVE") {
                options.insensitive = true;
            } else if self.eat_word("SCROLL") {
                options.scroll = true;
            } else {
                break;
            }
        }
        self.expect_word("CURSOR")?;
        let definition = self.cursor_definition(options)?;
        Ok(StatementKind::Cursor(Box::new(CursorStatement::Declare { name, definition })))
    }

    /// After `CURSOR`: the options, `FOR select` and the FOR clause that may follow it.
    fn cursor_definition(&mut self, mut options: CursorOptions) -> Result<CursorDefinition> {
        while !self.peek().is_word("FOR") {
            let word = self.upper_word()?;
            match word.as_str() {
                "LOCAL" | "GLOBAL" if options.global.is_none() => options.global = Some(word == "GLOBAL"),
                "FORWARD_ONLY" if !options.forward_only => options.forward_only = true,
                "SCROLL" if !options.scroll => options.scroll = true,
                "STATIC" | "KEYSET" | "DYNAMIC" | "FAST_FORWARD" if options.kind.is_none() => {
                    options.kind = Some(match word.as_str() {
                        "STATIC" => CursorKind::Static,
                        "KEYSET" => CursorKind::Keyset,
                        "DYNAMIC" => CursorKind::Dynamic,
                        _ => CursorKind::FastForward,
                    })
                }
                "READ_ONLY" | "SCROLL_LOCKS" | "OPTIMISTIC" if options.concurrency.is_none() => {
                    options.concurrency = Some(match word.as_str() {
                        "READ_ONLY" => CursorConcurrency::ReadOnly,
                        "SCROLL_LOCKS" => CursorConcurrency::ScrollLocks,
                        _ => CursorConcurrency::Optimistic,
                    })
                }
                "TYPE_WARNING" if !options.type_warning => options.type_warning = true,
                _ => {
                    self.pos -= 1;
                    return Err(self.error_here());
                }
            }
        }
        self.expect_word("FOR")?;
        let start = self.peek().start;
        let query = Box::new(self.query()?);
        let query_span = (start, self.previous_end());
        let update = if self.eat_words(&["FOR", "READ", "ONLY"]) {
            CursorUpdate::ReadOnly
        } else if self.eat_words(&["FOR", "UPDATE"]) {
            let columns = if self.eat_word("OF") { self.comma_list(Parser::ident)? } else { Vec::new() };
            CursorUpdate::Update(columns)
        } else {
            CursorUpdate::Unspecified
        };
        Ok(CursorDefinition { options, query, query_span, update })
    }

    /// `SET @c = CURSOR …` (the SET and the variable already read); None when the value is
    /// not a cursor definition.
    pub(super) fn set_cursor(&mut self, variable: &str) -> Result<Option<StatementKind>> {
        if !(self.peek().is_punct(Punct::Eq) && self.peek_nth(1).is_word("CURSOR")) {
            return Ok(None);
        }
        self.pos += 2;
        let definition = self.cursor_definition(CursorOptions::default())?;
        let variable = variable.to_string();
        Ok(Some(StatementKind::Cursor(Box::new(CursorStatement::SetDefinition { variable, definition }))))
    }

    /// `OPEN`, `CLOSE` or `DEALLOCATE` and the cursor it names.
    pub(super) fn cursor_command(&mut self, word: &str) -> Result<StatementKind> {
        self.expect_word(word)?;
        let cursor = self.cursor_ref()?;
        let statement = match word {
            "OPEN" => CursorStatement::Open(cursor),
            "CLOSE" => CursorStatement::Close(cursor),
            _ => CursorStatement::Deallocate(cursor),
        };
        Ok(StatementKind::Cursor(Box::new(statement)))
    }

    /// `FETCH [[NEXT | PRIOR | FIRST | LAST | ABSOLUTE n | RELATIVE n] FROM] cursor
    /// [INTO @v, …]`
    pub(super) fn fetch(&mut self) -> Result<StatementKind> {
        self.expect_word("FETCH")?;
        let word = self.peek().text.to_uppercase();
        let direction = match word.as_str() {
            "NEXT" | "PRIOR" | "FIRST" | "LAST" if self.peek().kind == TokenKind::Word => {
                self.pos += 1;
                match word.as_str() {
                    "NEXT" => FetchDirection::Next,
                    "PRIOR" => FetchDirection::Prior,
                    "FIRST" => FetchDirection::First,
                    _ => FetchDirection::Last,
                }
            }
            "ABSOLUTE" | "RELATIVE" if self.peek().kind == TokenKind::Word => {
                self.pos += 1;
                let n = self.expr()?;
                if word == "ABSOLUTE" {
                    FetchDirection::Absolute(n)
                } else {
                    FetchDirection::Relative(n)
                }
            }
            _ => FetchDirection::Next,
        };
        if !matches!(direction, FetchDirection::Next) || word == "NEXT" {
            self.expect_word("FROM")?;
        } else {
            self.eat_word("FROM");
        }
        let cursor = self.cursor_ref()?;
        let into = if self.eat_word("INTO") { self.comma_list(Parser::variable_name)? } else { Vec::new() };
        Ok(StatementKind::Cursor(Box::new(CursorStatement::Fetch { direction, cursor, into })))
    }

    /// `[GLOBAL] name` or `@variable`.
    fn cursor_ref(&mut self) -> Result<CursorRef> {
        if self.peek().kind == TokenKind::Variable {
            return Ok(CursorRef::Variable(self.advance().text.to_string()));
        }
        let global = self.peek().is_word("GLOBAL") && is_ident_token(self.peek_nth(1));
        if global {
            self.pos += 1;
        }
        Ok(CursorRef::Name { name: self.ident()?, global })
    }

    /// `WHERE CURRENT OF cursor`, if it comes next.
    pub(super) fn current_of(&mut self) -> Result<Option<CurrentOf>> {
        if !(self.peek().is_word("WHERE") && self.peek_nth(1).is_word("CURRENT") && self.peek_nth(2).is_word("OF")) {
            return Ok(None);
        }
        let start = self.peek().start;
        self.pos += 3;
        let cursor = self.cursor_ref()?;
        Ok(Some(CurrentOf { cursor, span: (start, self.previous_end()) }))
    }
}
