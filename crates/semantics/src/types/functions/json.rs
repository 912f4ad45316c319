//! The JSON functions: ISJSON, JSON_VALUE, JSON_QUERY and JSON_MODIFY, over JSON text with
//! SQL Server's path language: `[lax | strict] $[.key | ."quoted key" | [index]]…`. In lax
//! mode (the default) a path that finds nothing, or the wrong kind of value, gives NULL;
//! in strict mode it is an error.

use super::super::{SqlType, Value};
use super::Call;
use serde_json::Value as Json;
use tessera_errors::{msg, SqlResult};

/// One step of a JSON path.
#[derive(Debug, PartialEq)]
pub enum Step {
    Key(String),
    Index(usize),
}

/// A parsed JSON path: its mode and steps.
#[derive(Debug)]
pub struct Path {
    pub strict: bool,
    /// `append` (JSON_MODIFY): the value goes at the end of the array the path finds.
    pub append: bool,
    pub steps: Vec<Step>,
}

/// Parses a JSON path (13607 when it is not one).
pub fn parse_path(text: &str) -> SqlResult<Path> {
    let bad = |at: usize| {
        let c: String = text.chars().skip(at).take(1).collect();
        msg::JSON_PATH_INVALID.with(&[&c, &(at as i64 + 1)])
    };
    let mut rest = text.trim_start();
    let mut strict = false;
    let mut append = false;
    loop {
        if let Some(r) = rest.strip_prefix("append ") {
            append = true;
            rest = r.trim_start();
        } else if let Some(r) = rest.strip_prefix("strict ") {
            strict = true;
            rest = r.trim_start();
        } else if let Some(r) = rest.strip_prefix("lax ") {
            rest = r.trim_start();
        } else {
            break;
        }
    }
    let offset = text.len() - rest.len();
    let chars: Vec<char> = rest.chars().collect();
    if chars.first() != Some(&'$') {
        return Err(bad(offset));
    }
    let mut steps = Vec::new();
    let mut i = 1;
    while i < chars.len() {
        match chars[i] {
            '.' => {
                i += 1;
                if chars.get(i) == Some(&'"') {
                    let start = i + 1;
                    let Some(end) = chars[start..].iter().position(|&c| c == '"') else { return Err(bad(offset + i)) };
                    steps.push(Step::Key(chars[start..start + end].iter().collect()));
                    i = start + end + 1;
                } else {
                    let start = i;
                    while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_' || chars[i] == '$') {
                        i += 1;
                    }
                    if i == start {
                        return Err(bad(offset + i));
                    }
                    steps.push(Step::Key(chars[start..i].iter().collect()));
                }
            }
            '[' => {
                let start = i + 1;
                let Some(end) = chars[start..].iter().position(|&c| c == ']') else { return Err(bad(offset + i)) };
                let digits: String = chars[start..start + end].iter().collect();
                let n = digits.trim().parse::<usize>().map_err(|_| bad(offset + start))?;
                steps.push(Step::Index(n));
                i = start + end + 1;
            }
            _ => return Err(bad(offset + i)),
        }
    }
    Ok(Path { strict, append, steps })
}

/// Parses JSON text (13609 when it is not JSON).
pub fn parse_json(text: &str) -> SqlResult<Json> {
    serde_json::from_str(text).map_err(|e| {
        let at = e.column();
        let c: String = text
            .lines()
            .nth(e.line().saturating_sub(1))
            .unwrap_or("")
            .chars()
            .skip(at.saturating_sub(1))
            .take(1)
            .collect();
        msg::JSON_TEXT_INVALID.with(&[&c, &(at as i64)])
    })
}

/// What the path finds in `doc`.
pub fn find<'j>(doc: &'j Json, path: &Path) -> Option<&'j Json> {
    let mut at = doc;
    for step in &path.steps {
        at = match (step, at) {
            (Step::Key(k), Json::Object(o)) => o.get(k)?,
            (Step::Index(i), Json::Array(a)) => a.get(*i)?,
            _ => return None,
        };
    }
    Some(at)
}

/// A scalar as JSON_VALUE returns it: strings unquoted, numbers and booleans as written,
/// null as NULL.
pub fn scalar_text(v: &Json) -> Option<String> {
    match v {
        Json::String(s) => Some(s.clone()),
        Json::Number(n) => Some(n.to_string()),
        Json::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// The JSON type number OPENJSON reports: 0 null, 1 string, 2 number, 3 true/false,
/// 4 array, 5 object.
pub fn type_number(v: &Json) -> i64 {
    match v {
        Json::Null => 0,
        Json::String(_) => 1,
        Json::Number(_) => 2,
        Json::Bool(_) => 3,
        Json::Array(_) => 4,
        Json::Object(_) => 5,
    }
}

/// A value as OPENJSON's `value` column shows it: a string's text, anything else as JSON.
pub fn value_text(v: &Json) -> Option<String> {
    match v {
        Json::Null => None,
        Json::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

impl Call<'_> {
    pub(super) fn json(&self) -> SqlResult<Value> {
        let text = or_null!(self.text(0)?);
        if self.name == "ISJSON" {
            let ok = matches!(serde_json::from_str::<Json>(&text), Ok(Json::Object(_) | Json::Array(_)));
            return Ok(Value::Int(i64::from(ok)));
        }
        let path = match self.args.len() {
            1 => Path { strict: false, append: false, steps: Vec::new() },
            _ => parse_path(&or_null!(self.text(1)?))?,
        };
        let mut doc = parse_json(&text)?;
        match self.name {
            "JSON_VALUE" => match find(&doc, &path) {
                Some(v) => match scalar_text(v) {
                    Some(s) if s.chars().count() > 4000 && path.strict => Err(msg::JSON_SCALAR_NOT_FOUND.err()),
                    Some(s) if s.chars().count() > 4000 => Ok(Value::Null),
                    Some(s) => Ok(Value::str(&s)),
                    None if matches!(v, Json::Null) => Ok(Value::Null),
                    None if path.strict => Err(msg::JSON_SCALAR_NOT_FOUND.err()),
                    None => Ok(Value::Null),
                },
                None if path.strict => Err(msg::JSON_PROPERTY_NOT_FOUND.err()),
                None => Ok(Value::Null),
            },
            "JSON_QUERY" => match find(&doc, &path) {
                Some(v @ (Json::Object(_) | Json::Array(_))) => Ok(Value::str(&v.to_string())),
                Some(_) if path.strict => Err(msg::JSON_OBJECT_NOT_FOUND.err()),
                None if path.strict => Err(msg::JSON_PROPERTY_NOT_FOUND.err()),
                _ => Ok(Value::Null),
            },
            _ => {
                let new = self.json_operand(2)?;
                modify(&mut doc, &path, new)?;
                Ok(Value::str(&doc.to_string()))
            }
        }
    }

    /// JSON_MODIFY's new value as JSON: NULL is null (which deletes in lax mode), numbers
    /// and bits are numbers and booleans, text is a string.
    fn json_operand(&self, i: usize) -> SqlResult<Option<Json>> {
        let v = &self.args[i];
        Ok(match (v, self.types[i]) {
            (Value::Null, _) => None,
            (Value::Bit(b), _) => Some(Json::Bool(*b)),
            (Value::Int(n), _) => Some(Json::from(*n)),
            (Value::Float(x), _) => serde_json::Number::from_f64(*x).map(Json::Number),
            (Value::Decimal { .. }, t) => {
                let text = super::super::display_text(v, &t);
                Some(serde_json::from_str(&text).unwrap_or(Json::String(text)))
            }
            _ => self.text(i)?.map(|s| Json::String(s.to_string())),
        })
    }
}

/// JSON_MODIFY: sets (or, with a NULL in lax mode, deletes) what `path` names, appends
/// with `append`; strict mode needs the property to exist (13608).
fn modify(doc: &mut Json, path: &Path, new: Option<Json>) -> SqlResult<()> {
    let Some((last, parents)) = path.steps.split_last() else {
        return Err(msg::JSON_PATH_INVALID.with(&[&"$", &1i64]));
    };
    let mut at = doc;
    for step in parents {
        at = match (step, at) {
            (Step::Key(k), Json::Object(o)) => match o.get_mut(k) {
                Some(v) => v,
                None if path.strict => return Err(msg::JSON_PROPERTY_NOT_FOUND.err()),
                None => return Ok(()),
            },
            (Step::Index(i), Json::Array(a)) => match a.get_mut(*i) {
                Some(v) => v,
                None if path.strict => return Err(msg::JSON_PROPERTY_NOT_FOUND.err()),
                None => return Ok(()),
            },
            _ if path.strict => return Err(msg::JSON_PROPERTY_NOT_FOUND.err()),
            _ => return Ok(()),
        };
    }
    match (last, at) {
        (Step::Key(k), Json::Object(o)) => {
            if path.append {
                match o.get_mut(k) {
                    Some(Json::Array(a)) => a.push(new.unwrap_or(Json::Null)),
                    _ if path.strict => return Err(msg::JSON_PROPERTY_NOT_FOUND.err()),
                    _ => {}
                }
                return Ok(());
            }
            if path.strict && !o.contains_key(k) {
                return Err(msg::JSON_PROPERTY_NOT_FOUND.err());
            }
            match new {
                None if !path.strict => {
                    o.shift_remove(k);
                }
                new => {
                    o.insert(k.clone(), new.unwrap_or(Json::Null));
                }
            }
        }
        (Step::Index(i), Json::Array(a)) => match a.get_mut(*i) {
            Some(slot) => *slot = new.unwrap_or(Json::Null),
            None if path.strict => return Err(msg::JSON_PROPERTY_NOT_FOUND.err()),
            None => {}
        },
        _ if path.strict => return Err(msg::JSON_PROPERTY_NOT_FOUND.err()),
        _ => {}
    }
    Ok(())
}

/// The JSON functions' result types.
pub(super) fn json_type(name: &str) -> SqlType {
    match name {
        "ISJSON" => SqlType::Int,
        "JSON_VALUE" => SqlType::NVarChar(4000),
        _ => SqlType::NVarChar(tessera_types::MAX),
    }
}
