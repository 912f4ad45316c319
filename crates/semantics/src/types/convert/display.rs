//! How a client shows a value in a result grid.

use super::super::num::{self, format_decimal};
use super::super::typing::fraction_digits;
use super::super::{datetime, SqlType, Value};
use super::binary::hex;
use super::guid_text;
use super::string::format_g;

/// How sqlcmd/SSMS show a value in a result grid: `1.50`, `12.5000`, `0.33333333333333331`,
/// `2024-01-31 13:45:00.000`, `0x0AFF`, `NULL`.
pub fn display_text(v: &Value, t: &SqlType) -> String {
    match v {
        Value::Null => "NULL".to_string(),
        Value::Bit(b) => if *b { "1" } else { "0" }.to_string(),
        Value::Int(i) => i.to_string(),
        Value::Float(x) if matches!(t, SqlType::Real) => format_g(*x, 7),
        Value::Float(x) => format_g(*x, 17),
        Value::Decimal { value, scale } => match *t {
            SqlType::Decimal { scale: s, .. } if s != *scale => {
                format_decimal(num::rescale_round(*value, *scale, s).unwrap_or(*value), s)
            }
            _ => format_decimal(*value, *scale),
        },
        Value::Str(s) => s.to_string(),
        Value::Binary(b) => format!("0x{}", hex(b)),
        Value::Date(d) => datetime::format_date(*d),
        Value::Time(ticks) => datetime::format_time(*ticks, fraction_digits_or_7(t)),
        Value::DateTime { days, ticks } => {
            let digits = match t {
                SqlType::SmallDateTime => 0,
                _ => fraction_digits_or_7(t),
            };
            format!("{} {}", datetime::format_date(*days), datetime::format_time(*ticks, digits))
        }
        Value::DateTimeOffset { days, ticks, offset } => {
            let (d, tk) = datetime::shift_minutes(*days, *ticks, (*offset).into());
            format!(
                "{} {} {}",
                datetime::format_date(d),
                datetime::format_time(tk, fraction_digits_or_7(t)),
                datetime::format_offset(*offset)
            )
        }
        Value::Guid(g) => guid_text(g),
        // Read whole to be shown (a value that cannot be read shows why).
        Value::Large(l) => match l.value() {
            Ok(v) => display_text(&v, t),
            Err(e) => format!("<{}>", e.message),
        },
    }
}

fn fraction_digits_or_7(t: &SqlType) -> u8 {
    match t {
        SqlType::Time { .. } | SqlType::DateTime2 { .. } | SqlType::DateTimeOffset { .. } | SqlType::DateTime => {
            fraction_digits(t)
        }
        _ => 7,
    }
}
