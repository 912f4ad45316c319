//! Server-level statements: `CREATE/ALTER/DROP LOGIN`, `ALTER SERVER ROLE … ADD|DROP
//! MEMBER` and `ALTER SERVER CONFIGURATION SET BUFFER POOL EXTENSION`.

use super::{Parser, Result};
use crate::ast::{AlterLoginAction, LoginOption, StatementKind};
use crate::lexer::{Punct, TokenKind};

impl Parser<'_> {
    /// After `CREATE LOGIN`: `name WITH PASSWORD = '…' [HASHED] [MUST_CHANGE] [, option …]`
    /// or `name FROM WINDOWS …` (parsed so that it can be refused with a clear error).
    pub(super) fn create_login(&mut self) -> Result<StatementKind> {
        let name = self.ident()?;
        if self.eat_word("FROM") {
            let source = self.upper_word()?;
            if self.eat_word("WITH") {
                self.comma_list(Parser::login_option)?;
            }
            return Ok(StatementKind::CreateLogin { name, options: Vec::new(), external_source: Some(source) });
        }
        self.expect_word("WITH")?;
        let options = self.comma_list(Parser::login_option)?;
        Ok(StatementKind::CreateLogin { name, options, external_source: None })
    }

    /// After `ALTER LOGIN`: `name ENABLE | DISABLE | WITH option [, …]`.
    pub(super) fn alter_login(&mut self) -> Result<StatementKind> {
        let name = self.ident()?;
        let action = if self.eat_word("ENABLE") {
            AlterLoginAction::Enable
        } else if self.eat_word("DISABLE") {
            AlterLoginAction::Disable
        } else {
            self.expect_word("WITH")?;
            AlterLoginAction::Set(self.comma_list(Parser::login_option)?)
        };
        Ok(StatementKind::AlterLogin { name, action })
    }

    /// After `ALTER SERVER ROLE`: `role ADD|DROP MEMBER login`.
    pub(super) fn alter_server_role(&mut self) -> Result<StatementKind> {
        let role = self.ident()?;
        let add = if self.eat_word("ADD") {
            true
        } else {
            self.expect_word("DROP")?;
            false
        };
        self.expect_word("MEMBER")?;
        let member = self.ident()?;
        Ok(StatementKind::AlterServerRole { role, member, add })
    }

    /// After `ALTER SERVER CONFIGURATION`: `SET BUFFER POOL EXTENSION ON (FILENAME = 'f',
    /// SIZE = n [KB|MB|GB]) | OFF` (the size in MB when no unit is given), or `SET PROCESS
    /// AFFINITY CPU = AUTO | n [TO m] [, …]`.
    pub(super) fn alter_server_configuration(&mut self) -> Result<StatementKind> {
        self.expect_word("SET")?;
        if self.eat_word("PROCESS") {
            return self.process_affinity();
        }
        for w in ["BUFFER", "POOL", "EXTENSION"] {
            self.expect_word(w)?;
        }
        if self.eat_word("OFF") {
            return Ok(StatementKind::BufferPoolExtension(None));
        }
        self.expect_word("ON")?;
        self.expect_punct(Punct::LParen)?;
        let (mut file, mut size) = (None, None);
        loop {
            let name = self.upper_word()?;
            self.expect_punct(Punct::Eq)?;
            match name.as_str() {
                "FILENAME" => match &self.peek().kind {
                    TokenKind::String { value, .. } => {
                        file = Some(value.clone());
                        self.pos += 1;
                    }
                    _ => return Err(self.error_here()),
                },
                "SIZE" => {
                    let token = self.peek().clone();
                    if token.kind != TokenKind::Integer {
                        return Err(self.error_here());
                    }
                    self.pos += 1;
                    let n: u64 = token.text.parse().map_err(|_| self.error_here())?;
                    let shift = if self.eat_word("KB") {
                        10
                    } else if self.eat_word("GB") {
                        30
                    } else {
                        self.eat_word("MB");
                        20
                    };
                    size = Some(n.checked_shl(shift).filter(|b| b >> shift == n).ok_or_else(|| self.error_here())?);
                }
                _ => {
                    self.pos -= 2;
                    return Err(self.error_here());
                }
            }
            if !self.eat_punct(Punct::Comma) {
                break;
            }
        }
        self.expect_punct(Punct::RParen)?;
        match (file, size) {
            (Some(f), Some(s)) => Ok(StatementKind::BufferPoolExtension(Some((f, s)))),
            _ => Err(self.error_here()),
        }
    }

    /// After `SET PROCESS`: `AFFINITY CPU = AUTO | n [TO m] [, …]`.
    fn process_affinity(&mut self) -> Result<StatementKind> {
        self.expect_word("AFFINITY")?;
        self.expect_word("CPU")?;
        self.expect_punct(Punct::Eq)?;
        if self.eat_word("AUTO") {
            return Ok(StatementKind::ProcessAffinity(None));
        }
        let mut ranges = Vec::new();
        loop {
            let first = self.cpu_number()?;
            let last = if self.eat_word("TO") { self.cpu_number()? } else { first };
            if last < first {
                return Err(self.error_here());
            }
            ranges.push((first, last));
            if !self.eat_punct(Punct::Comma) {
                return Ok(StatementKind::ProcessAffinity(Some(ranges)));
            }
        }
    }

    fn cpu_number(&mut self) -> Result<u32> {
        let token = self.peek().clone();
        if token.kind != TokenKind::Integer {
            return Err(self.error_here());
        }
        self.pos += 1;
        token.text.parse().map_err(|_| self.error_here())
    }

    fn login_option(&mut self) -> Result<LoginOption> {
        let name = self.upper_word()?;
        if name == "NO" {
            self.expect_word("CREDENTIAL")?;
            return Ok(LoginOption::NoCredential);
        }
        self.expect_punct(Punct::Eq)?;
        Ok(match name.as_str() {
            "PASSWORD" => {
                let value = self.password_value()?;
                let mut hashed = false;
                let mut must_change = false;
                let mut unlock = false;
                let mut old = None;
                loop {
                    if self.eat_word("HASHED") {
                        hashed = true;
                    } else if self.eat_word("MUST_CHANGE") {
                        must_change = true;
                    } else if self.eat_word("UNLOCK") {
                        unlock = true;
                    } else if self.peek().is_word("OLD_PASSWORD") && self.peek_nth(1).is_punct(Punct::Eq) {
                        self.pos += 2;
                        old = Some(self.password_value()?);
                    } else {
                        break;
                    }
                }
                LoginOption::Password { value, hashed, must_change, unlock, old }
            }
            "DEFAULT_DATABASE" => LoginOption::DefaultDatabase(self.ident()?),
            "DEFAULT_LANGUAGE" => LoginOption::DefaultLanguage(self.any_word()?),
            "NAME" => LoginOption::Name(self.ident()?),
            "CHECK_POLICY" => LoginOption::CheckPolicy(self.on_off()?),
            "CHECK_EXPIRATION" => LoginOption::CheckExpiration(self.on_off()?),
            "CREDENTIAL" => LoginOption::Credential(self.ident()?),
            "SID" => match &self.peek().kind {
                TokenKind::Binary(bytes) => {
                    let bytes = bytes.clone();
                    self.pos += 1;
                    LoginOption::Sid(bytes)
                }
                _ => return Err(self.error_here()),
            },
            _ => {
                self.pos -= 2;
                return Err(self.error_here());
            }
        })
    }

    /// A password: a string literal, or a binary literal after which `HASHED` follows.
    fn password_value(&mut self) -> Result<String> {
        match &self.peek().kind {
            TokenKind::String { value, .. } => {
                let value = value.clone();
                self.pos += 1;
                Ok(value)
            }
            TokenKind::Binary(bytes) => {
                let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
                self.pos += 1;
                Ok(hex)
            }
            _ => Err(self.error_here()),
        }
    }
}
