//! `BACKUP DATABASE | LOG` and the `RESTORE` family.

use super::{Parser, Result};
use crate::ast::{BackupOption, BackupStatement, DatabaseRef, RestoreKind, RestoreStatement, StatementKind};
use crate::lexer::{Punct, TokenKind};
use tessera_errors::msg;

impl Parser<'_> {
    /// `BACKUP DATABASE | LOG db TO DISK = 'path' [, DISK = 'path' …] [WITH option, …]`
    pub(super) fn backup(&mut self) -> Result<StatementKind> {
        self.expect_word("BACKUP")?;
        let log = if self.eat_word("LOG") {
            true
        } else {
            self.expect_word("DATABASE")?;
            false
        };
        let database = self.database_ref()?;
        self.expect_word("TO")?;
        let devices = self.devices()?;
        let options = self.backup_options()?;
        Ok(StatementKind::Backup(Box::new(BackupStatement { log, database, devices, options })))
    }

    /// `RESTORE DATABASE | LOG db [FROM devices] [WITH …]` or `RESTORE HEADERONLY |
    /// FILELISTONLY | VERIFYONLY | LABELONLY FROM devices [WITH …]`.
    pub(super) fn restore(&mut self) -> Result<StatementKind> {
        self.expect_word("RESTORE")?;
        let word = self.upper_word()?;
        let kind = match word.as_str() {
            "DATABASE" => RestoreKind::Database,
            "LOG" => RestoreKind::Log,
            "HEADERONLY" => RestoreKind::HeaderOnly,
            "FILELISTONLY" => RestoreKind::FileListOnly,
            "VERIFYONLY" => RestoreKind::VerifyOnly,
            "LABELONLY" => RestoreKind::LabelOnly,
            _ => {
                self.pos -= 1;
                return Err(self.error_here());
            }
        };
        let database = match kind {
            RestoreKind::Database | RestoreKind::Log => Some(self.database_ref()?),
            _ => None,
        };
        let devices = if self.eat_word("FROM") {
            self.devices()?
        } else if database.is_some() {
            Vec::new()
        } else {
            return Err(self.error_here());
        };
        let options = self.backup_options()?;
        Ok(StatementKind::Restore(Box::new(RestoreStatement { kind, database, devices, options })))
    }

    fn database_ref(&mut self) -> Result<DatabaseRef> {
        if self.peek().kind == TokenKind::Variable {
            return Ok(DatabaseRef::Variable(self.advance().text.to_string()));
        }
        Ok(DatabaseRef::Name(self.ident()?))
    }

    /// `DISK = expr [, DISK = expr …]`. Tape, URL and logical backup devices are refused
    /// with a clear error: only disk files exist here.
    fn devices(&mut self) -> Result<Vec<crate::ast::Expr>> {
        self.comma_list(|p| {
            let token = p.peek().clone();
            if token.is_word("DISK") {
                p.pos += 1;
                p.expect_punct(Punct::Eq)?;
                return p.expr();
            }
            if token.is_word("TAPE") || token.is_word("URL") {
                return Err(msg::BACKUP_DEVICE_TYPE_NOT_SUPPORTED.with(&[&token.text.to_uppercase()]));
            }
            Err(msg::BACKUP_DEVICE_NOT_FOUND.with(&[&token.text]))
        })
    }

    fn backup_options(&mut self) -> Result<Vec<BackupOption>> {
        if !self.eat_word("WITH") {
            return Ok(Vec::new());
        }
        self.comma_list(|p| {
            let name = p.upper_word()?;
            if name == "MOVE" {
                let value = Some(p.expr()?);
                p.expect_word("TO")?;
                let to = Some(p.expr()?);
                return Ok(BackupOption { name, value, to });
            }
            if name == "COMPRESSION" && p.peek().is_punct(Punct::LParen) {
                // `COMPRESSION (ALGORITHM = name)`: one algorithm here (zstd).
                p.pos += 1;
                p.expect_word("ALGORITHM")?;
                p.expect_punct(Punct::Eq)?;
                p.upper_word()?;
                p.expect_punct(Punct::RParen)?;
                return Ok(BackupOption { name, value: None, to: None });
            }
            let value = if p.eat_punct(Punct::Eq) { Some(p.expr()?) } else { None };
            Ok(BackupOption { name, value, to: None })
        })
    }
}
