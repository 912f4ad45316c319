//! `CREATE SEQUENCE`, `ALTER SEQUENCE` and `DROP SEQUENCE`'s options (`NEXT VALUE FOR` is
//! an expression: `expr.rs`).

use super::{Parser, Result};
use crate::ast::{SequenceCache, SequenceOptions, StatementKind};
use crate::lexer::TokenKind;

impl Parser<'_> {
    /// After `CREATE SEQUENCE`.
    pub(super) fn create_sequence(&mut self) -> Result<StatementKind> {
        let name = self.object_name()?;
        let options = self.sequence_options(false)?;
        Ok(StatementKind::CreateSequence { name, options })
    }

    /// After `ALTER SEQUENCE`.
    pub(super) fn alter_sequence(&mut self) -> Result<StatementKind> {
        let name = self.object_name()?;
        let options = self.sequence_options(true)?;
        if options == SequenceOptions::default() {
            return Err(self.error_here());
        }
        Ok(StatementKind::AlterSequence { name, options })
    }

    /// The options, in any order, each at most once: `AS type` and `START WITH n` for a new
    /// sequence, `RESTART [WITH n]` for an altered one.
    fn sequence_options(&mut self, alter: bool) -> Result<SequenceOptions> {
        let mut o = SequenceOptions::default();
        loop {
            let before = self.pos;
            let repeated = if !alter && self.eat_word("AS") {
                o.ty.replace(self.type_name()?).is_some()
            } else if !alter && self.eat_words(&["START", "WITH"]) {
                o.start.replace(self.signed_integer()?).is_some()
            } else if alter && self.eat_word("RESTART") {
                let at = if self.eat_word("WITH") { Some(self.signed_integer()?) } else { None };
                o.restart.replace(at).is_some()
            } else if self.eat_words(&["INCREMENT", "BY"]) {
                o.increment.replace(self.signed_integer()?).is_some()
            } else if self.eat_word("MINVALUE") {
                o.min.replace(Some(self.signed_integer()?)).is_some()
            } else if self.eat_word("MAXVALUE") {
                o.max.replace(Some(self.signed_integer()?)).is_some()
            } else if self.eat_word("CYCLE") {
                o.cycle.replace(true).is_some()
            } else if self.eat_word("CACHE") {
                let size = if matches!(self.peek().kind, TokenKind::Integer) {
                    SequenceCache::Size(self.signed_integer()?)
                } else {
                    SequenceCache::Default
                };
                o.cache.replace(size).is_some()
            } else if self.eat_word("NO") {
                if self.eat_word("MINVALUE") {
                    o.min.replace(None).is_some()
                } else if self.eat_word("MAXVALUE") {
                    o.max.replace(None).is_some()
                } else if self.eat_word("CYCLE") {
                    o.cycle.replace(false).is_some()
                } else if self.eat_word("CACHE") {
                    o.cache.replace(SequenceCache::None).is_some()
                } else {
                    return Err(self.error_here());
                }
            } else {
                break;
            };
            if repeated {
                self.pos = before;
                return Err(self.error_here());
            }
        }
        Ok(o)
    }
}
