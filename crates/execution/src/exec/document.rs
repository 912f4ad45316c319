//! FOR JSON and FOR XML: a query's rows written as one document.
//!
//! JSON: an array of one object per row (`ROOT('name')` wraps it in an object,
//! `WITHOUT_ARRAY_WRAPPER` leaves the brackets out); NULLs are left out unless
//! `INCLUDE_NULL_VALUES`; in PATH mode a dotted column name (`[address.city]`) nests
//! objects. Numbers and bits are JSON numbers and booleans, dates ISO 8601 strings
//! (CONVERT style 126), binaries base64. XML: PATH writes each column as an element (an
//! `@name` as an attribute, a column without a name as text), RAW as attributes (or
//! elements with ELEMENTS), AUTO as RAW named after the first table; `ROOT` wraps the
//! whole. A column that is a document already (a nested FOR JSON / FOR XML, JSON_QUERY) is
//! written as it is.

use base64::Engine;
use tessera_errors::SqlResult;
use tessera_semantics::plan::{DocumentFormat, Row};
use tessera_semantics::types::{self, SqlType, Value};
use tessera_syntax::ast::{ForClause, XmlMode};

/// The document for `rows` (None: no rows).
pub(super) fn document(format: &DocumentFormat, rows: &[Row]) -> SqlResult<Option<String>> {
    if rows.is_empty() {
        return Ok(None);
    }
    match &format.clause {
        ForClause::Json { auto, root, include_null_values, without_array_wrapper } => {
            let mut objects = Vec::with_capacity(rows.len());
            for r in rows {
                objects.push(json_object(format, r, !auto, *include_null_values)?);
            }
            let body = objects.join(",");
            let array = if *without_array_wrapper { body } else { format!("[{body}]") };
            Ok(Some(match root {
                Some(name) => format!("{{{}:{array}}}", json_string(name)),
                None => array,
            }))
        }
        ForClause::Xml { mode, root, elements, .. } => {
            let mut out = String::new();
            for r in rows {
                xml_row(format, mode, *elements, r, &mut out)?;
            }
            Ok(Some(match root {
                Some(name) => format!("<{name}>{out}</{name}>"),
                None => out,
            }))
        }
    }
}

/// A value as text: dates in ISO 8601 (style 126), bits as 1/0, binaries in base64.
fn text(v: &Value, ty: &SqlType) -> SqlResult<String> {
    Ok(match v {
        Value::Binary(b) => base64::engine::general_purpose::STANDARD.encode(b),
        Value::Date(_) | Value::Time(_) | Value::DateTime { .. } | Value::DateTimeOffset { .. } => {
            match types::cast(v, ty, &SqlType::NVarChar(4000), Some(126))? {
                Value::Str(s) => s.to_string(),
                other => types::display_text(&other, ty),
            }
        }
        Value::Str(s) => s.to_string(),
        other => types::display_text(&other.clone().materialized()?, ty),
    })
}

/// One JSON member's value: a number, boolean, string or nested document.
fn json_value(v: &Value, ty: &SqlType, document: bool) -> SqlResult<String> {
    Ok(match v {
        Value::Null => "null".into(),
        Value::Bit(b) => b.to_string(),
        Value::Int(_) | Value::Decimal { .. } | Value::Float(_) => text(v, ty)?,
        _ if document => text(v, ty)?,
        _ => json_string(&text(v, ty)?),
    })
}

fn json_string(s: &str) -> String {
    serde_json::to_string(s).expect("a string serialises")
}

/// A JSON object: the row's members in column order, nested at dots in PATH mode.
fn json_object(format: &DocumentFormat, r: &Row, path: bool, nulls: bool) -> SqlResult<String> {
    // (key path, value text) in column order; built into nested objects below.
    let mut members: Vec<(Vec<&str>, String)> = Vec::new();
    for (i, v) in r.iter().enumerate().take(format.names.len()) {
        if v.is_null() && !nulls {
            continue;
        }
        let name = format.names[i].as_str();
        let keys: Vec<&str> = if path { name.split('.').collect() } else { vec![name] };
        members.push((keys, json_value(v, &format.types[i], format.documents[i])?));
    }
    Ok(nest(&members))
}

/// Members with key paths as one object: members sharing a first key become that key's
/// object, where its first member was.
fn nest(members: &[(Vec<&str>, String)]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut done = vec![false; members.len()];
    for i in 0..members.len() {
        if done[i] {
            continue;
        }
        let (keys, value) = &members[i];
        if keys.len() == 1 {
            out.push(format!("{}:{value}", json_string(keys[0])));
            done[i] = true;
            continue;
        }
        let head = keys[0];
        let mut inner = Vec::new();
        for j in i..members.len() {
            if !done[j] && members[j].0.len() > 1 && members[j].0[0] == head {
                inner.push((members[j].0[1..].to_vec(), members[j].1.clone()));
                done[j] = true;
            }
        }
        out.push(format!("{}:{}", json_string(head), nest(&inner)));
    }
    format!("{{{}}}", out.join(","))
}

fn xml_escape(s: &str, attribute: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' if attribute => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
    out
}

/// One row as XML, appended to `out`.
fn xml_row(format: &DocumentFormat, mode: &XmlMode, elements: bool, r: &Row, out: &mut String) -> SqlResult<()> {
    let (element, as_elements) = match mode {
        XmlMode::Path(name) => (name.clone().unwrap_or_else(|| "row".into()), true),
        XmlMode::Raw(name) => (name.clone().unwrap_or_else(|| "row".into()), elements),
        XmlMode::Auto => (format.element.clone(), elements),
    };
    let mut attributes = String::new();
    let mut content = String::new();
    for (i, v) in r.iter().enumerate().take(format.names.len()) {
        if v.is_null() {
            continue;
        }
        let name = format.names[i].as_str();
        let value = match v {
            Value::Bit(b) => u8::from(*b).to_string(),
            _ => text(v, &format.types[i])?,
        };
        let document = format.documents[i];
        let body = if document { value.clone() } else { xml_escape(&value, false) };
        if let Some(attribute) = name.strip_prefix('@') {
            attributes.push_str(&format!(" {attribute}=\"{}\"", xml_escape(&value, true)));
        } else if name.is_empty() || name == "text()" || (document && as_elements && name.is_empty()) {
            content.push_str(&body);
        } else if as_elements {
            content.push_str(&format!("<{name}>{body}</{name}>"));
        } else {
            attributes.push_str(&format!(" {name}=\"{}\"", xml_escape(&value, true)));
        }
    }
    if element.is_empty() {
        out.push_str(&content);
    } else if content.is_empty() {
        out.push_str(&format!("<{element}{attributes}/>"));
    } else {
        out.push_str(&format!("<{element}{attributes}>{content}</{element}>"));
    }
    Ok(())
}
