//! `sp_setapprole` and `sp_unsetapprole`. Activating an application role makes the session
//! that role in its current database: the user's own database permissions stop applying,
//! the role's (with `public`'s and those of the roles it is a member of) apply instead,
//! other databases are reached only as `guest`, and USE is refused (505). The login and its
//! server permissions stay. The role stays until `sp_unsetapprole` gives back the cookie
//! `sp_setapprole` handed out, or until the connection ends; a connection reset refuses it
//! (18059, see `Session::fresh`).

use rand::RngCore;
use tessera_errors::msg;
use tessera_errors::SqlResult;
use tessera_execution::ddl::application_roles;
use tessera_execution::runtime::{ContextOrigin, Impersonation};
use tessera_execution::sysprocs::{text_arg, too_many, NamedArg};
use tessera_semantics::types::{self, SqlType, Value};

use super::calls::{ApplicationRoleProc, Argument};
use super::{Runner, Stop};

/// The bytes of a cookie (SQL Server documents `varbinary(8000)` and returns 50 bytes).
const COOKIE_LEN: usize = 50;

/// The argument at `position`, or the one named `name`.
fn argument<'a>(args: &'a [Argument], position: usize, name: &str) -> Option<&'a Argument> {
    let by_name = args.iter().find(|a| a.name.as_deref().is_some_and(|n| n.eq_ignore_ascii_case(name)));
    by_name.or_else(|| args.get(position).filter(|a| a.name.is_none()))
}

impl Runner<'_> {
    pub(super) fn run_application_role_proc(
        &mut self,
        which: ApplicationRoleProc,
        args: Vec<Argument>,
    ) -> Result<i32, Stop> {
        let result = if self.state.nest_level > 0 {
            Err(msg::APP_ROLE_AD_HOC_ONLY.err())
        } else if self.state.txns.count > 0 {
            Err(msg::PROCEDURE_IN_TRANSACTION.with(&[&which.name()]))
        } else {
            match which {
                ApplicationRoleProc::Set => self.set_application_role(&args),
                ApplicationRoleProc::Unset => self.unset_application_role(&args),
            }
        };
        result.map_err(Stop::Error)
    }

    /// `sp_setapprole @rolename, @password [, @encrypt = 'none'] [, @fCreateCookie]
    /// [, @cookie OUTPUT]`.
    fn set_application_role(&mut self, args: &[Argument]) -> SqlResult<i32> {
        let named: Vec<NamedArg> = args.iter().map(|a| (a.name.clone(), a.value.clone())).collect();
        too_many("sp_setapprole", &named, 5)?;
        let Some(role) = text_arg(&named, 0, "@rolename") else {
            return Err(msg::ROLENAME_REQUIRED.err());
        };
        let Some(password) = text_arg(&named, 1, "@password") else {
            return Err(msg::MISSING_PARAMETER.with(&[&"sp_setapprole", &"@password"]));
        };
        // The ODBC "encrypt" is an obfuscation of the driver's own; passwords come as text.
        if text_arg(&named, 2, "@encrypt").is_some_and(|e| !e.eq_ignore_ascii_case("none")) {
            return Err(msg::INVALID_PROCEDURE_PARAMETER.with(&[&"sp_setapprole"]));
        }
        let create_cookie =
            text_arg(&named, 3, "@fCreateCookie").is_some_and(|v| v.eq_ignore_ascii_case("true") || v.trim() == "1");
        if self.state.impersonation.iter().any(|c| c.origin != ContextOrigin::ContainedLogin) {
            // Already an application role, or inside EXECUTE AS.
            return Err(msg::SETAPPROLE_INVALID_CALL.err());
        }
        let db = self.state.database.clone();
        let (security, _) = self.shared.access(self.state, &db)?;
        let id = application_roles::activate(&security, &role, &password)?;
        let cookie = create_cookie.then(|| {
            let mut bytes = vec![0u8; COOKIE_LEN];
            rand::rng().fill_bytes(&mut bytes);
            bytes
        });
        if let (Some(cookie), Some((slot, ty))) = (&cookie, argument(args, 4, "@cookie").and_then(|a| a.output)) {
            let value = Value::Binary(cookie.clone().into());
            self.state.vars[slot] = types::cast(&value, &SqlType::VarBinary(8000), &ty, None)?;
        }
        let database_only = self.state.impersonation.last().is_some_and(|c| c.database_only);
        self.state.impersonation.push(Impersonation {
            previous_login: self.state.login.clone(),
            user: Some((db, id)),
            no_revert: true,
            database_only,
            nest_level: 0,
            origin: ContextOrigin::ApplicationRole { cookie },
        });
        self.shared.refresh_default_schema(self.state);
        Ok(0)
    }

    /// `sp_unsetapprole @cookie`: back to the session's own user.
    fn unset_application_role(&mut self, args: &[Argument]) -> SqlResult<i32> {
        let named: Vec<NamedArg> = args.iter().map(|a| (a.name.clone(), a.value.clone())).collect();
        too_many("sp_unsetapprole", &named, 1)?;
        let given = match argument(args, 0, "@cookie").and_then(|a| a.value.as_ref()) {
            Some((Value::Binary(b), _)) => Some(b.to_vec()),
            _ => None,
        };
        let matches = match self.state.impersonation.last().map(|c| &c.origin) {
            Some(ContextOrigin::ApplicationRole { cookie: Some(cookie) }) => given.as_ref() == Some(cookie),
            _ => false,
        };
        if !matches {
            return Err(msg::APP_ROLE_UNSET_FAILED.err());
        }
        let context = self.state.impersonation.pop().expect("the application role's context");
        self.state.login = context.previous_login;
        self.shared.refresh_default_schema(self.state);
        Ok(0)
    }
}
