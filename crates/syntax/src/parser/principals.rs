//! Database security: `CREATE/ALTER/DROP USER`, `CREATE/ALTER/DROP ROLE`, `CREATE/DROP
//! SCHEMA`, `ALTER AUTHORIZATION`, `GRANT`/`DENY`/`REVOKE`, `EXECUTE AS` and `REVERT`.

use super::{Parser, Result};
use crate::ast::{
    AlterRoleAction, ExecuteAsTarget, Ident, ObjectName, Permission, PermissionAction, PermissionStatement, Securable,
    SecurableClass, StatementKind, UserLogin, UserOption,
};
use crate::lexer::{Punct, TokenKind};

/// Words that end a permission's name: what follows the permission list.
const PERMISSION_LIST_ENDS: &[&str] = &["ON", "TO", "FROM"];

impl Parser<'_> {
    /// A principal's name: an identifier, or `public` (a reserved word).
    pub(super) fn principal(&mut self) -> Result<Ident> {
        if self.peek().is_word("PUBLIC") {
            return Ok(Ident::new(self.advance().text));
        }
        self.ident()
    }

    /// After `CREATE USER`.
    pub(super) fn create_user(&mut self) -> Result<StatementKind> {
        let name = self.principal()?;
        let login = if self.eat_word("FOR") || self.eat_word("FROM") {
            self.expect_word("LOGIN")?;
            UserLogin::Login(self.principal()?)
        } else if self.eat_words(&["WITHOUT", "LOGIN"]) {
            UserLogin::Without
        } else {
            UserLogin::SameName
        };
        let options = if self.eat_word("WITH") { self.comma_list(Parser::user_option)? } else { Vec::new() };
        Ok(StatementKind::CreateUser { name, login, options })
    }

    /// After `ALTER USER`.
    pub(super) fn alter_user(&mut self) -> Result<StatementKind> {
        let name = self.principal()?;
        self.expect_word("WITH")?;
        let options = self.comma_list(Parser::user_option)?;
        Ok(StatementKind::AlterUser { name, options })
    }

    fn user_option(&mut self) -> Result<UserOption> {
        let name = self.upper_word()?;
        self.expect_punct(Punct::Eq)?;
        Ok(match name.as_str() {
            "DEFAULT_SCHEMA" => UserOption::DefaultSchema(self.principal()?),
            "NAME" => UserOption::Name(self.principal()?),
            "LOGIN" => UserOption::Login(self.principal()?),
            "DEFAULT_LANGUAGE" => UserOption::DefaultLanguage(self.any_word()?),
            "PASSWORD" => {
                let value = self.string_literal()?;
                let old = if self.peek().is_word("OLD_PASSWORD") && self.peek_nth(1).is_punct(Punct::Eq) {
                    self.pos += 2;
                    Some(self.string_literal()?)
                } else {
                    None
                };
                UserOption::Password { value, old }
            }
            _ => {
                self.pos -= 2;
                return Err(self.error_here());
            }
        })
    }

    fn string_literal(&mut self) -> Result<String> {
        match &self.peek().kind {
            TokenKind::String { value, .. } => {
                let value = value.clone();
                self.pos += 1;
                Ok(value)
            }
            _ => Err(self.error_here()),
        }
    }

    /// After `CREATE ROLE`.
    pub(super) fn create_role(&mut self) -> Result<StatementKind> {
        let name = self.principal()?;
        let owner = if self.eat_word("AUTHORIZATION") { Some(self.principal()?) } else { None };
        Ok(StatementKind::CreateRole { name, owner })
    }

    /// After `ALTER ROLE`: `role ADD MEMBER p | DROP MEMBER p | WITH NAME = new`.
    pub(super) fn alter_role(&mut self) -> Result<StatementKind> {
        let role = self.principal()?;
        let action = if self.eat_words(&["ADD", "MEMBER"]) {
            AlterRoleAction::AddMember(self.principal()?)
        } else if self.eat_words(&["DROP", "MEMBER"]) {
            AlterRoleAction::DropMember(self.principal()?)
        } else {
            self.expect_word("WITH")?;
            self.expect_word("NAME")?;
            self.expect_punct(Punct::Eq)?;
            AlterRoleAction::Rename(self.principal()?)
        };
        Ok(StatementKind::AlterRole { role, action })
    }

    /// After `CREATE APPLICATION ROLE` or `ALTER APPLICATION ROLE`: `name WITH option, …`.
    pub(super) fn application_role(&mut self, create: bool) -> Result<StatementKind> {
        let name = self.principal()?;
        self.expect_word("WITH")?;
        let options = self.comma_list(Parser::user_option)?;
        Ok(if create {
            StatementKind::CreateApplicationRole { name, options }
        } else {
            StatementKind::AlterApplicationRole { name, options }
        })
    }

    /// After `CREATE SCHEMA`: `name [AUTHORIZATION owner] [CREATE TABLE … | CREATE VIEW …
    /// | GRANT … | DENY … | REVOKE …]…`.
    pub(super) fn create_schema(&mut self) -> Result<StatementKind> {
        let name = self.ident()?;
        let owner = if self.eat_word("AUTHORIZATION") { Some(self.principal()?) } else { None };
        let mut elements = Vec::new();
        loop {
            let starts_element = (self.peek().is_word("CREATE")
                && (self.peek_nth(1).is_word("TABLE") || self.peek_nth(1).is_word("VIEW")))
                || self.peek_is_any_word(&["GRANT", "DENY", "REVOKE"]);
            if !starts_element {
                break;
            }
            elements.push(self.statement(false)?);
        }
        Ok(StatementKind::CreateSchema { name, owner, elements })
    }

    /// After `ALTER AUTHORIZATION`: `ON [class::]name TO principal | SCHEMA OWNER`.
    pub(super) fn alter_authorization(&mut self) -> Result<StatementKind> {
        self.expect_word("ON")?;
        let on = self.securable()?;
        self.expect_word("TO")?;
        let owner = if self.eat_words(&["SCHEMA", "OWNER"]) { None } else { Some(self.principal()?) };
        Ok(StatementKind::AlterAuthorization { on, owner })
    }

    /// `[class::]name`: OBJECT, SCHEMA, DATABASE, LOGIN, USER, ROLE or APPLICATION ROLE; no
    /// class is an object.
    fn securable(&mut self) -> Result<Securable> {
        let class = if self.peek().is_word("APPLICATION")
            && self.peek_nth(1).is_word("ROLE")
            && self.peek_nth(2).is_punct(Punct::Colon)
            && self.peek_nth(3).is_punct(Punct::Colon)
        {
            self.pos += 4;
            SecurableClass::ApplicationRole
        } else if self.peek().kind == TokenKind::Word
            && self.peek_nth(1).is_punct(Punct::Colon)
            && self.peek_nth(2).is_punct(Punct::Colon)
        {
            let class = match self.peek().text.to_uppercase().as_str() {
                "OBJECT" => SecurableClass::Object,
                "SCHEMA" => SecurableClass::Schema,
                "DATABASE" => SecurableClass::Database,
                "LOGIN" => SecurableClass::Login,
                "USER" => SecurableClass::User,
                "ROLE" => SecurableClass::Role,
                _ => return Err(self.error_here()),
            };
            self.pos += 3;
            class
        } else {
            SecurableClass::Object
        };
        let name = match class {
            SecurableClass::Object => self.object_name()?,
            _ => ObjectName(vec![self.principal()?]),
        };
        Ok(Securable { class, name })
    }

    /// `GRANT|DENY|REVOKE …` (the first word not yet taken).
    pub(super) fn permission_statement(&mut self) -> Result<StatementKind> {
        let verb = self.upper_word()?;
        let grant_option_for = verb == "REVOKE" && self.eat_words(&["GRANT", "OPTION", "FOR"]);
        let permissions = self.comma_list(Parser::permission)?;
        let on = if self.eat_word("ON") { Some(self.securable()?) } else { None };
        if !self.eat_word("TO") {
            if verb != "REVOKE" {
                return Err(self.error_here());
            }
            self.expect_word("FROM")?;
        }
        let principals = self.comma_list(Parser::principal)?;
        let with_grant_option = verb == "GRANT" && self.eat_words(&["WITH", "GRANT", "OPTION"]);
        let cascade = verb != "GRANT" && self.eat_word("CASCADE");
        let as_principal = if self.eat_word("AS") { Some(self.principal()?) } else { None };
        let action = match verb.as_str() {
            "GRANT" => PermissionAction::Grant { with_grant_option },
            "DENY" => PermissionAction::Deny { cascade },
            _ => PermissionAction::Revoke { grant_option_for, cascade },
        };
        Ok(StatementKind::Permission(Box::new(PermissionStatement {
            action,
            permissions,
            on,
            principals,
            as_principal,
        })))
    }

    /// One permission: words up to a comma, a column list, ON, TO or FROM (`ALL
    /// [PRIVILEGES]` is `ALL`).
    fn permission(&mut self) -> Result<Permission> {
        let mut words = Vec::new();
        while self.peek().kind == TokenKind::Word && !self.peek_is_any_word(PERMISSION_LIST_ENDS) {
            words.push(self.advance().text.to_uppercase());
        }
        if words.is_empty() {
            return Err(self.error_here());
        }
        if words.len() == 2 && words[0] == "ALL" && words[1] == "PRIVILEGES" {
            words.pop();
        }
        let columns = if self.peek().is_punct(Punct::LParen) { self.ident_list()? } else { Vec::new() };
        Ok(Permission { name: words.join(" "), columns })
    }

    /// After `EXECUTE AS` / `EXEC AS`: `LOGIN = 'name' | USER = 'name' | CALLER [WITH NO
    /// REVERT]`.
    pub(super) fn execute_as(&mut self) -> Result<StatementKind> {
        let target = if self.eat_word("CALLER") {
            ExecuteAsTarget::Caller
        } else {
            let kind = self.upper_word()?;
            self.expect_punct(Punct::Eq)?;
            let name = self.string_literal()?;
            match kind.as_str() {
                "LOGIN" => ExecuteAsTarget::Login(name),
                "USER" => ExecuteAsTarget::User(name),
                _ => return Err(self.error_here()),
            }
        };
        let no_revert = self.eat_words(&["WITH", "NO", "REVERT"]);
        Ok(StatementKind::ExecuteAs { target, no_revert })
    }
}

#[cfg(test)]
mod tests {
    use crate::ast::*;
    use crate::parser::parse_batch;

    fn one(sql: &str) -> StatementKind {
        let mut batch = parse_batch(sql).unwrap_or_else(|e| panic!("{sql}: {e:?}"));
        assert_eq!(batch.statements.len(), 1, "{sql}");
        batch.statements.remove(0).kind
    }

    fn object(parts: &[&str]) -> ObjectName {
        ObjectName(parts.iter().map(|p| Ident::new(*p)).collect())
    }

    #[test]
    fn users_with_and_without_logins() {
        assert_eq!(
            one("CREATE USER app FOR LOGIN app_login WITH DEFAULT_SCHEMA = sales"),
            StatementKind::CreateUser {
                name: Ident::new("app"),
                login: UserLogin::Login(Ident::new("app_login")),
                options: vec![UserOption::DefaultSchema(Ident::new("sales"))],
            }
        );
        assert!(matches!(one("create user u"), StatementKind::CreateUser { login: UserLogin::SameName, .. }));
        assert!(matches!(
            one("create user u without login"),
            StatementKind::CreateUser { login: UserLogin::Without, .. }
        ));
        assert_eq!(
            one("CREATE USER c WITH PASSWORD = 'Str0ng!pw'"),
            StatementKind::CreateUser {
                name: Ident::new("c"),
                login: UserLogin::SameName,
                options: vec![UserOption::Password { value: "Str0ng!pw".into(), old: None }],
            }
        );
        assert_eq!(
            one("alter user u with name = v, login = l"),
            StatementKind::AlterUser {
                name: Ident::new("u"),
                options: vec![UserOption::Name(Ident::new("v")), UserOption::Login(Ident::new("l"))],
            }
        );
        assert_eq!(one("drop user if exists u"), StatementKind::DropUser { name: Ident::new("u"), if_exists: true });
    }

    #[test]
    fn application_roles() {
        assert_eq!(
            one("CREATE APPLICATION ROLE billing WITH PASSWORD = 'Str0ng!pw', DEFAULT_SCHEMA = sales"),
            StatementKind::CreateApplicationRole {
                name: Ident::new("billing"),
                options: vec![
                    UserOption::Password { value: "Str0ng!pw".into(), old: None },
                    UserOption::DefaultSchema(Ident::new("sales")),
                ],
            }
        );
        assert_eq!(
            one("alter application role billing with name = invoicing"),
            StatementKind::AlterApplicationRole {
                name: Ident::new("billing"),
                options: vec![UserOption::Name(Ident::new("invoicing"))],
            }
        );
        assert_eq!(
            one("drop application role billing"),
            StatementKind::DropApplicationRole { name: Ident::new("billing") }
        );
        let StatementKind::Permission(p) = one("GRANT ALTER ON APPLICATION ROLE::billing TO auditor") else {
            panic!("not a permission statement");
        };
        assert_eq!(p.on.map(|on| on.class), Some(SecurableClass::ApplicationRole));
        assert!(parse_batch("create application role billing").is_err(), "a password is required");
    }

    #[test]
    fn roles_and_schemas() {
        assert_eq!(
            one("create role readers authorization dbo"),
            StatementKind::CreateRole { name: Ident::new("readers"), owner: Some(Ident::new("dbo")) }
        );
        assert_eq!(
            one("ALTER ROLE db_datareader ADD MEMBER app"),
            StatementKind::AlterRole {
                role: Ident::new("db_datareader"),
                action: AlterRoleAction::AddMember(Ident::new("app"))
            }
        );
        assert!(matches!(
            one("alter role r drop member u"),
            StatementKind::AlterRole { action: AlterRoleAction::DropMember(_), .. }
        ));
        assert!(matches!(
            one("alter role r with name = s"),
            StatementKind::AlterRole { action: AlterRoleAction::Rename(_), .. }
        ));
        assert_eq!(one("drop role r"), StatementKind::DropRole { name: Ident::new("r"), if_exists: false });
        let StatementKind::CreateSchema { name, owner, elements } =
            one("create schema sales authorization app create table t (a int) grant select on t to public")
        else {
            panic!("not a schema");
        };
        assert_eq!((name, owner), (Ident::new("sales"), Some(Ident::new("app"))));
        assert!(matches!(elements[0].kind, StatementKind::CreateTable(_)));
        assert!(matches!(elements[1].kind, StatementKind::Permission(_)));
        assert_eq!(
            one("drop schema if exists s"),
            StatementKind::DropSchema { name: Ident::new("s"), if_exists: true }
        );
        assert_eq!(
            one("ALTER AUTHORIZATION ON SCHEMA::sales TO SCHEMA OWNER"),
            StatementKind::AlterAuthorization {
                on: Securable { class: SecurableClass::Schema, name: object(&["sales"]) },
                owner: None
            }
        );
        assert_eq!(
            one("alter authorization on database::shop to app_login"),
            StatementKind::AlterAuthorization {
                on: Securable { class: SecurableClass::Database, name: object(&["shop"]) },
                owner: Some(Ident::new("app_login"))
            }
        );
    }

    #[test]
    fn grant_deny_and_revoke() {
        assert_eq!(
            one("GRANT SELECT, UPDATE (a, b) ON OBJECT::dbo.t TO app, public WITH GRANT OPTION"),
            StatementKind::Permission(Box::new(PermissionStatement {
                action: PermissionAction::Grant { with_grant_option: true },
                permissions: vec![
                    Permission { name: "SELECT".into(), columns: vec![] },
                    Permission { name: "UPDATE".into(), columns: vec![Ident::new("a"), Ident::new("b")] },
                ],
                on: Some(Securable { class: SecurableClass::Object, name: object(&["dbo", "t"]) }),
                principals: vec![Ident::new("app"), Ident::new("public")],
                as_principal: None,
            }))
        );
        let StatementKind::Permission(p) = one("grant create table, view server state to u") else { panic!() };
        assert_eq!(
            p.permissions.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(),
            ["CREATE TABLE", "VIEW SERVER STATE"]
        );
        assert_eq!(p.on, None);
        let StatementKind::Permission(p) = one("deny view any database to public cascade") else { panic!() };
        assert_eq!(p.action, PermissionAction::Deny { cascade: true });
        let StatementKind::Permission(p) = one("revoke grant option for execute on schema::s from r cascade as dbo")
        else {
            panic!()
        };
        assert_eq!(p.action, PermissionAction::Revoke { grant_option_for: true, cascade: true });
        assert_eq!(p.on, Some(Securable { class: SecurableClass::Schema, name: object(&["s"]) }));
        assert_eq!(p.as_principal, Some(Ident::new("dbo")));
        let StatementKind::Permission(p) = one("grant all privileges on t to u") else { panic!() };
        assert_eq!(p.permissions[0].name, "ALL");
        assert!(parse_batch("grant select on t").is_err());
        assert!(parse_batch("deny select on t from u").is_err());
    }

    #[test]
    fn execute_as_and_revert() {
        assert_eq!(
            one("EXECUTE AS USER = 'app' WITH NO REVERT"),
            StatementKind::ExecuteAs { target: ExecuteAsTarget::User("app".into()), no_revert: true }
        );
        assert_eq!(
            one("exec as login = 'l'"),
            StatementKind::ExecuteAs { target: ExecuteAsTarget::Login("l".into()), no_revert: false }
        );
        assert_eq!(
            one("execute as caller"),
            StatementKind::ExecuteAs { target: ExecuteAsTarget::Caller, no_revert: false }
        );
        assert_eq!(one("revert"), StatementKind::Revert);
        assert!(matches!(one("exec sp_who"), StatementKind::Execute(_)));
        assert_eq!(one("KILL 57"), StatementKind::Kill(57));
        assert_eq!(one("kill 57 with statusonly"), StatementKind::Kill(57));
    }
}
