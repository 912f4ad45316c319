//! The mathematical functions: ABS, SIGN, FLOOR, CEILING, ROUND and POWER (exact types
//! stay exact), SQRT, SQUARE, EXP, LOG, LOG10, PI, SIN, COS, TAN, ASIN, ACOS, ATAN, ATN2,
//! COT, DEGREES, RADIANS (float), and RAND.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use tessera_errors::msg;

use super::super::convert::{cast, check_int};
use super::super::num::{self, f64_to_decimal, fits_precision};
use super::super::typing::{base_type_name, family, Family};
use super::super::{SqlType, Value};
use super::{bad_arg, int, Call, FunctionContext};
use tessera_errors::{SqlError, SqlResult};

fn invalid_float() -> SqlError {
    msg::INVALID_FLOAT_OPERATION.err()
}

fn float_value(x: f64) -> SqlResult<Value> {
    if x.is_finite() {
        Ok(Value::Float(x))
    } else {
        Err(invalid_float())
    }
}

impl Call<'_> {
    /// LEFT_SHIFT and RIGHT_SHIFT (`<<`, `>>`): a logical shift of the value's bits in its
    /// type's width; a negative amount shifts the other way, one past the width gives 0.
    fn shift(&self) -> SqlResult<Value> {
        let (v, n) = (or_null!(self.int(0)?), or_null!(self.int(1)?));
        let bits: u32 = match self.types[0] {
            SqlType::TinyInt => 8,
            SqlType::SmallInt => 16,
            SqlType::Int => 32,
            _ => 64,
        };
        let n = if self.name == "RIGHT_SHIFT" { n.saturating_neg() } else { n };
        let mask = if bits == 64 { u64::MAX } else { (1u64 << bits) - 1 };
        let pattern = (v as u64) & mask;
        let shifted = match n {
            n if n.unsigned_abs() >= u64::from(bits) => 0,
            n if n >= 0 => (pattern << n) & mask,
            n => pattern >> n.unsigned_abs(),
        };
        // Back to the type's signed value (tinyint is unsigned).
        let value = match bits {
            8 => shifted as i64,
            16 => i64::from(shifted as u16 as i16),
            32 => i64::from(shifted as u32 as i32),
            _ => shifted as i64,
        };
        Ok(Value::Int(value))
    }

    pub(super) fn math(&self) -> SqlResult<Value> {
        if self.name == "PI" {
            return Ok(Value::Float(std::f64::consts::PI));
        }
        if self.args.iter().any(Value::is_null) {
            return Ok(Value::Null);
        }
        match self.name {
            "ABS" | "SIGN" | "FLOOR" | "CEILING" | "ROUND" | "POWER" => self.exact_math(),
            "LEFT_SHIFT" | "RIGHT_SHIFT" => self.shift(),
            _ => {
                let x = or_null!(self.float(0)?);
                let y = if self.args.len() > 1 { self.float(1)? } else { None };
                let r = match (self.name, y) {
                    ("SQRT", _) if x < 0.0 => return Err(invalid_float()),
                    ("SQRT", _) => x.sqrt(),
                    ("SQUARE", _) => x * x,
                    ("EXP", _) => x.exp(),
                    ("LOG" | "LOG10", _) if x <= 0.0 => return Err(invalid_float()),
                    ("LOG", Some(b)) if b <= 0.0 || b == 1.0 => return Err(invalid_float()),
                    ("LOG", Some(b)) => x.ln() / b.ln(),
                    ("LOG", None) => x.ln(),
                    ("LOG10", _) => x.log10(),
                    ("SIN", _) => x.sin(),
                    ("COS", _) => x.cos(),
                    ("TAN", _) => x.tan(),
                    ("ASIN", _) if x.abs() > 1.0 => return Err(invalid_float()),
                    ("ASIN", _) => x.asin(),
                    ("ACOS", _) if x.abs() > 1.0 => return Err(invalid_float()),
                    ("ACOS", _) => x.acos(),
                    ("ATAN", _) => x.atan(),
                    ("ATN2", Some(y)) => x.atan2(y),
                    ("COT", _) => 1.0 / x.tan(),
                    ("DEGREES", _) => x.to_degrees(),
                    ("RADIANS", _) => x.to_radians(),
                    _ => return Err(invalid_float()),
                };
                float_value(r)
            }
        }
    }

    /// ABS, SIGN, FLOOR, CEILING, ROUND and POWER, which keep exact types exact.
    fn exact_math(&self) -> SqlResult<Value> {
        let result = self.result;
        match family(result) {
            Family::Float => {
                let x = or_null!(self.float(0)?);
                let r = match self.name {
                    "ABS" => x.abs(),
                    "SIGN" => {
                        if x > 0.0 {
                            1.0
                        } else if x < 0.0 {
                            -1.0
                        } else {
                            0.0
                        }
                    }
                    "FLOOR" => x.floor(),
                    "CEILING" => x.ceil(),
                    "ROUND" => {
                        let n = or_null!(self.int(1)?);
                        let truncate = self.args.get(2).is_some_and(|v| !matches!(v, Value::Int(0) | Value::Null));
                        round_float(x, n, truncate)
                    }
                    _ => x.powf(or_null!(self.float(1)?)),
                };
                let r = if matches!(result, SqlType::Real) { f64::from(r as f32) } else { r };
                float_value(r)
            }
            Family::Int => {
                let x = i128::from(or_null!(self.int(0)?));
                let r = match self.name {
                    "ABS" => x.abs(),
                    "SIGN" => x.signum(),
                    "FLOOR" | "CEILING" => x,
                    "ROUND" => {
                        let n = or_null!(self.int(1)?);
                        let truncate = self.args.get(2).is_some_and(|v| !matches!(v, Value::Int(0) | Value::Null));
                        if n >= 0 {
                            x
                        } else {
                            let r = num::rescale_trunc(x, 0, 0).unwrap_or(x);
                            let digits = n.unsigned_abs().min(38) as u8;
                            let rounded = if truncate {
                                num::rescale_trunc(r, digits, 0)
                            } else {
                                num::rescale_round(r, digits, 0)
                            };
                            rounded.and_then(|q| q.checked_mul(num::pow10(digits)?)).unwrap_or(0)
                        }
                    }
                    _ => {
                        let y = or_null!(self.float(1)?);
                        let p = (x as f64).powf(y);
                        if !p.is_finite() {
                            return Err(invalid_float());
                        }
                        if p.abs() > 1e19 {
                            return check_int(i128::MAX, result);
                        }
                        p.trunc() as i128
                    }
                };
                check_int(r, result)
            }
            Family::Decimal | Family::Money => self.decimal_math(),
            _ => Err(bad_arg(self.name, &self.types[0], 0)),
        }
    }

    fn decimal_math(&self) -> SqlResult<Value> {
        let arg = match &self.args[0] {
            Value::Decimal { .. } => self.args[0].clone(),
            other => cast(other, &self.types[0], self.result, None)?,
        };
        let Value::Decimal { value: x, scale: sx } = arg else { return Ok(Value::Null) };
        let (precision, scale) = match *self.result {
            SqlType::Decimal { precision, scale } => (precision, scale),
            SqlType::SmallMoney => (10, 4),
            _ => (19, 4),
        };
        let unit = num::pow10(sx).unwrap_or(1);
        let r = match self.name {
            "ABS" => x.abs(),
            "SIGN" => x.signum() * unit,
            "FLOOR" => x.div_euclid(unit) * unit,
            "CEILING" => -((-x).div_euclid(unit)) * unit,
            "ROUND" => {
                let n = or_null!(self.int(1)?);
                let truncate = self.args.get(2).is_some_and(|v| !matches!(v, Value::Int(0) | Value::Null));
                round_decimal(x, sx, n, truncate).ok_or_else(|| overflow(self.result))?
            }
            _ => {
                let base = num::decimal_to_f64(x, sx);
                let p = base.powf(or_null!(self.float(1)?));
                if !p.is_finite() {
                    return Err(invalid_float());
                }
                f64_to_decimal(p, sx).ok_or_else(|| overflow(self.result))?
            }
        };
        let value = num::rescale_round(r, sx, scale).ok_or_else(|| overflow(self.result))?;
        let fits = match self.result {
            SqlType::Money => i64::try_from(value).is_ok(),
            SqlType::SmallMoney => i32::try_from(value).is_ok(),
            _ => fits_precision(value, precision),
        };
        if !fits {
            return Err(overflow(self.result));
        }
        Ok(Value::Decimal { value, scale })
    }
}

fn overflow(t: &SqlType) -> SqlError {
    let name = if matches!(t, SqlType::Decimal { .. }) { "numeric" } else { base_type_name(t) };
    msg::ARITHMETIC_OVERFLOW.with(&[&"expression", &name])
}

pub(super) fn rand(call: &Call<'_>, ctx: &mut FunctionContext) -> SqlResult<Value> {
    if let Some(v) = call.args.first() {
        if let Some(seed) = int(v, &call.types[0])? {
            ctx.rng = SmallRng::seed_from_u64(seed as u64);
        }
    }
    Ok(Value::Float(ctx.rng.random::<f64>()))
}

fn round_float(x: f64, n: i64, truncate: bool) -> f64 {
    let n = n.clamp(-308, 308) as i32;
    let p = 10f64.powi(n);
    let y = x * p;
    let r = if truncate { y.trunc() } else { y.round() };
    if !r.is_finite() || !p.is_finite() || p == 0.0 {
        return x;
    }
    r / p
}

/// ROUND of a scaled decimal to `n` digits (negative: left of the point), keeping its
/// scale.
fn round_decimal(x: i128, scale: u8, n: i64, truncate: bool) -> Option<i128> {
    if n >= i64::from(scale) {
        return Some(x);
    }
    let drop = i64::from(scale).saturating_sub(n).min(76) as u8;
    if drop > 38 {
        return Some(0);
    }
    let q = if truncate { num::rescale_trunc(x, drop, 0)? } else { num::rescale_round(x, drop, 0)? };
    q.checked_mul(num::pow10(drop)?)
}
