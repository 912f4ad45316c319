//! File sizes as CREATE DATABASE and ALTER DATABASE … MODIFY FILE give them: `SIZE`,
//! `MAXSIZE` and `FILEGROWTH` read (`10MB`, `512KB`, `UNLIMITED`, `10%`; a number alone
//! is megabytes) and checked as SQL Server checks them, into a database's options.

use tessera_database::{DatabaseOptions, Growth};
use tessera_errors::msg;
use tessera_errors::{SqlError, SqlResult};
use tessera_syntax::ast::FileSpec;

/// The smallest file SQL Server creates (error 5174).
const MIN_FILE_BYTES: u64 = 512 << 10;

use crate::sysviews::FileKind;

/// The sizes a file specification sets (None: not given).
#[derive(Default)]
pub struct FileSizes {
    pub size: Option<u64>,
    /// Some(None): UNLIMITED.
    pub max_size: Option<Option<u64>>,
    pub growth: Option<Growth>,
}

/// A specification's option, if given.
pub fn option<'s>(spec: &'s FileSpec, name: &str) -> Option<&'s str> {
    spec.options.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
}

/// Error 102 for an option a statement does not take.
pub fn check_names(spec: &FileSpec, allowed: &[&str]) -> SqlResult<()> {
    match spec.options.iter().find(|(k, _)| !allowed.contains(&k.as_str())) {
        Some((k, _)) => Err(syntax_near(k)),
        None => Ok(()),
    }
}

fn syntax_near(value: &str) -> SqlError {
    msg::SYNTAX_ERROR_NEAR.with(&[&value])
}

/// `10MB`, `512KB`, `2GB`, `1TB`, `10` (megabytes) in bytes.
fn bytes(value: &str) -> SqlResult<u64> {
    let upper = value.to_ascii_uppercase();
    let (digits, unit) = match upper.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => upper.split_at(i),
        None => (upper.as_str(), "MB"),
    };
    let shift = match unit {
        "KB" => 10,
        "MB" => 20,
        "GB" => 30,
        "TB" => 40,
        _ => return Err(syntax_near(value)),
    };
    let n: u64 = digits.parse().map_err(|_| syntax_near(value))?;
    n.checked_mul(1 << shift).ok_or_else(|| syntax_near(value))
}

/// Reads SIZE, MAXSIZE and FILEGROWTH, checking them against each other (5174, 5103,
/// 5169). `name` is the file's logical name, for the messages.
pub fn sizes(spec: &FileSpec, name: &str) -> SqlResult<FileSizes> {
    let mut out = FileSizes::default();
    if let Some(v) = option(spec, "SIZE") {
        let size = bytes(v)?;
        if size < MIN_FILE_BYTES {
            return Err(msg::FILE_SIZE_TOO_SMALL.err());
        }
        out.size = Some(size);
    }
    if let Some(v) = option(spec, "MAXSIZE") {
        out.max_size = Some(if v.eq_ignore_ascii_case("UNLIMITED") { None } else { Some(bytes(v)?) });
    }
    if let Some(v) = option(spec, "FILEGROWTH") {
        out.growth = Some(match v.strip_suffix('%') {
            Some(p) => Growth::Percent(p.parse().map_err(|_| syntax_near(v))?),
            None => Growth::Bytes(bytes(v)?),
        });
    }
    if let (Some(size), Some(Some(max))) = (out.size, out.max_size) {
        if max < size {
            return Err(msg::MAXSIZE_LESS_THAN_SIZE.with(&[&name]));
        }
    }
    if let (Some(Growth::Bytes(growth)), Some(Some(max))) = (out.growth, out.max_size) {
        if growth > max {
            return Err(msg::FILEGROWTH_EXCEEDS_MAXSIZE.with(&[&name]));
        }
    }
    Ok(out)
}

impl FileSizes {
    /// Sets these sizes on the data or the log file of `options`.
    pub fn apply(&self, kind: FileKind, options: &mut DatabaseOptions) {
        let (size, max, growth) = match kind {
            FileKind::Data => (&mut options.initial_data_size, &mut options.max_data_size, &mut options.data_growth),
            FileKind::Log => (&mut options.initial_log_size, &mut options.max_log_size, &mut options.log_growth),
        };
        if self.size.is_some() {
            *size = self.size;
        }
        if let Some(m) = self.max_size {
            *max = m;
        }
        if self.growth.is_some() {
            *growth = self.growth;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(options: &[(&str, &str)]) -> FileSpec {
        FileSpec { options: options.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect() }
    }

    #[test]
    fn sizes_read_as_sql_server_writes_them() {
        let s = sizes(&spec(&[("SIZE", "10"), ("MAXSIZE", "1GB"), ("FILEGROWTH", "10%")]), "f").unwrap();
        assert_eq!((s.size, s.max_size, s.growth), (Some(10 << 20), Some(Some(1 << 30)), Some(Growth::Percent(10))));
        let s = sizes(&spec(&[("SIZE", "512KB"), ("MAXSIZE", "UNLIMITED"), ("FILEGROWTH", "0")]), "f").unwrap();
        assert_eq!((s.size, s.max_size, s.growth), (Some(512 << 10), Some(None), Some(Growth::Bytes(0))));
    }

    #[test]
    fn sizes_that_contradict_each_other_are_sql_server_errors() {
        let number = |o: &[(&str, &str)]| sizes(&spec(o), "f").err().map(|e| e.number);
        assert_eq!(number(&[("SIZE", "256KB")]), Some(5174));
        assert_eq!(number(&[("SIZE", "10MB"), ("MAXSIZE", "5MB")]), Some(5103));
        assert_eq!(number(&[("MAXSIZE", "5MB"), ("FILEGROWTH", "6MB")]), Some(5169));
        assert_eq!(number(&[("SIZE", "1.5MB")]), Some(102));
        assert_eq!(number(&[("SIZE", "10XB")]), Some(102));
    }
}
