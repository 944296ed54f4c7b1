//! Substrait expressions as Lance SQL (see `plan.rs` for what is accepted): column
//! references, literals, the functions that keep their meaning, `IN` lists. The plan's
//! relations (`plan.rs`) build on it.

use substrait::proto::expression::field_reference::ReferenceType;
use substrait::proto::expression::literal::LiteralType;
use substrait::proto::expression::reference_segment;
use substrait::proto::expression::RexType;
use substrait::proto::function_argument::ArgType;
use substrait::proto::{Expression, FunctionArgument};

use std::collections::HashMap;

use crate::{invalid, unsupported, Result};

/// One output column of a relation: Lance SQL text, the plain column it is (if it is one), and
/// whether its type is floating point.
#[derive(Clone, Debug)]
pub(crate) struct Col {
    pub(crate) sql: String,
    pub(crate) column: Option<String>,
    pub(crate) float: bool,
    pub(crate) integer: bool,
}

pub(crate) struct Ctx<'a> {
    pub(crate) functions: HashMap<u32, String>,
    /// The table's columns, when the caller knows them (`plan::parse_with`).
    pub(crate) columns: Option<&'a HashMap<String, crate::ColumnKind>>,
}

pub fn quote(name: &str) -> String {
    format!("`{}`", name.replace('`', "``"))
}

impl Ctx<'_> {
    pub(crate) fn function_name(&self, anchor: u32) -> Result<String> {
        self.functions.get(&anchor).cloned().ok_or_else(|| {
            invalid(format!(
                "Substrait function reference {anchor} is not declared in the plan's extensions"
            ))
        })
    }

    pub(crate) fn arg(&self, a: &FunctionArgument, cols: &[Col]) -> Result<Col> {
        match &a.arg_type {
            Some(ArgType::Value(e)) => self.expr(e, cols),
            _ => Err(unsupported(
                "a function argument that is not a value (an enum or a type)",
            )),
        }
    }

    pub(crate) fn expr(&self, e: &Expression, cols: &[Col]) -> Result<Col> {
        let rex = e
            .rex_type
            .as_ref()
            .ok_or_else(|| invalid("Substrait expression without a kind"))?;
        match rex {
            RexType::Selection(field) => {
                let Some(ReferenceType::DirectReference(seg)) = &field.reference_type else {
                    return Err(unsupported("a masked field reference"));
                };
                let Some(reference_segment::ReferenceType::StructField(sf)) = &seg.reference_type
                else {
                    return Err(unsupported("a field reference into a list or map"));
                };
                if sf.child.is_some() {
                    return Err(unsupported("a reference to a nested field"));
                }
                cols.get(sf.field as usize)
                    .cloned()
                    .ok_or_else(|| invalid(format!("Substrait field {} out of range", sf.field)))
            }
            RexType::Literal(lit) => literal(lit),
            RexType::ScalarFunction(f) => {
                let name = self.function_name(f.function_reference)?;
                let args = f
                    .arguments
                    .iter()
                    .map(|a| self.arg(a, cols))
                    .collect::<Result<Vec<_>>>()?;
                self.call(&name, args)
            }
            RexType::SingularOrList(list) => {
                let value = self.expr(
                    list.value
                        .as_ref()
                        .ok_or_else(|| invalid("Substrait IN without a value"))?,
                    cols,
                )?;
                let options = list
                    .options
                    .iter()
                    .map(|o| self.expr(o, cols))
                    .collect::<Result<Vec<_>>>()?;
                if options.is_empty() {
                    return Err(invalid("Substrait IN with an empty list"));
                }
                if value.float {
                    return Err(unsupported("IN of a floating-point value"));
                }
                let items = options
                    .iter()
                    .map(|o| o.sql.as_str())
                    .collect::<Vec<_>>()
                    .join(", ");
                Ok(plain(format!("{} IN ({items})", value.sql)))
            }
            RexType::Cast(_) => Err(unsupported("a cast")),
            RexType::IfThen(_) | RexType::SwitchExpression(_) => {
                Err(unsupported("a CASE expression"))
            }
            RexType::Subquery(_) => Err(unsupported("a subquery")),
            RexType::WindowFunction(_) => Err(unsupported("a window function")),
            _ => Err(unsupported("this expression kind")),
        }
    }

    pub(crate) fn call(&self, name: &str, args: Vec<Col>) -> Result<Col> {
        let cmp = |op: &str| -> Result<Col> {
            let [a, b] = args.as_slice() else {
                return Err(invalid(format!("Substrait `{name}` takes 2 arguments")));
            };
            let mut text = format!("{} {op} {}", a.sql, b.sql);
            // IEEE: a NaN compares false; Lance orders NaN above (or, sign bit set, below)
            // every number, so ordering comparisons of floats leave NaN out explicitly
            if matches!(op, "<" | "<=" | ">" | ">=") {
                for side in [a, b] {
                    if side.float {
                        text = format!("{text} AND NOT isnan({})", side.sql);
                    }
                }
            }
            Ok(plain(format!("({text})")))
        };
        let arith = |op: &str| -> Result<Col> {
            let [a, b] = args.as_slice() else {
                return Err(invalid(format!("Substrait `{name}` takes 2 arguments")));
            };
            if a.integer || b.integer {
                return Err(unsupported(format!(
                    "integer arithmetic (`{name}` of an integer; Lance would wrap an overflow): cast to decimal or double"
                )));
            }
            Ok(Col {
                sql: format!("({} {op} {})", a.sql, b.sql),
                column: None,
                float: a.float || b.float,
                integer: false,
            })
        };
        match name {
            "equal" => cmp("="),
            "not_equal" => cmp("!="),
            "lt" => cmp("<"),
            "lte" => cmp("<="),
            "gt" => cmp(">"),
            "gte" => cmp(">="),
            "and" | "or" => {
                if args.is_empty() {
                    return Err(invalid(format!("Substrait `{name}` without arguments")));
                }
                let joined = args
                    .iter()
                    .map(|a| format!("({})", a.sql))
                    .collect::<Vec<_>>()
                    .join(if name == "and" { " AND " } else { " OR " });
                Ok(plain(format!("({joined})")))
            }
            "not" => match args.as_slice() {
                [a] => Ok(plain(format!("(NOT ({}))", a.sql))),
                _ => Err(invalid("Substrait `not` takes 1 argument")),
            },
            "is_null" | "is_not_null" => match args.as_slice() {
                [a] => Ok(plain(format!(
                    "({} IS {}NULL)",
                    a.sql,
                    if name == "is_null" { "" } else { "NOT " }
                ))),
                _ => Err(invalid(format!("Substrait `{name}` takes 1 argument"))),
            },
            "is_nan" => match args.as_slice() {
                [a] if a.float => Ok(plain(format!("isnan({})", a.sql))),
                _ => Err(unsupported(
                    "`is_nan` of anything but one floating-point value",
                )),
            },
            "between" => match args.as_slice() {
                [v, lo, hi] => {
                    let mut text = format!("{} >= {} AND {} <= {}", v.sql, lo.sql, v.sql, hi.sql);
                    for side in [v, lo, hi] {
                        if side.float {
                            text = format!("{text} AND NOT isnan({})", side.sql);
                        }
                    }
                    Ok(plain(format!("({text})")))
                }
                _ => Err(invalid("Substrait `between` takes 3 arguments")),
            },
            "add" => arith("+"),
            "subtract" => arith("-"),
            "multiply" => arith("*"),
            "divide" => arith("/"),
            other => Err(unsupported(format!("the function `{other}`"))),
        }
    }
}

/// A value that is neither a column nor a number (booleans, strings, dates).
pub(crate) fn plain(sql: String) -> Col {
    Col {
        sql,
        column: None,
        float: false,
        integer: false,
    }
}

pub(crate) fn literal_i64(e: &Expression) -> Option<i64> {
    match &e.rex_type {
        Some(RexType::Literal(l)) => match &l.literal_type {
            Some(LiteralType::I64(v)) => Some(*v),
            Some(LiteralType::I32(v)) | Some(LiteralType::I16(v)) | Some(LiteralType::I8(v)) => {
                Some(*v as i64)
            }
            _ => None,
        },
        _ => None,
    }
}

pub(crate) fn literal(lit: &substrait::proto::expression::Literal) -> Result<Col> {
    let kind = lit
        .literal_type
        .as_ref()
        .ok_or_else(|| invalid("Substrait literal without a value"))?;
    let int = |v: i64| Col {
        sql: v.to_string(),
        column: None,
        float: false,
        integer: true,
    };
    Ok(match kind {
        LiteralType::Boolean(b) => plain(if *b { "true" } else { "false" }.into()),
        LiteralType::I8(v) | LiteralType::I16(v) | LiteralType::I32(v) => int(*v as i64),
        LiteralType::I64(v) => int(*v),
        LiteralType::Fp32(v) => float_literal(*v as f64)?,
        LiteralType::Fp64(v) => float_literal(*v)?,
        LiteralType::String(s) => string_literal(s)?,
        LiteralType::VarChar(v) => string_literal(&v.value)?,
        LiteralType::FixedChar(s) => string_literal(s)?,
        LiteralType::Date(days) => {
            let date = days_to_date(*days as i64);
            plain(format!("DATE '{date}'"))
        }
        LiteralType::Decimal(d) => {
            let bytes: [u8; 16] = d
                .value
                .as_slice()
                .try_into()
                .map_err(|_| invalid("Substrait decimal literal is not 16 bytes"))?;
            let unscaled = i128::from_le_bytes(bytes);
            Col {
                sql: format!(
                    "CAST('{}' AS DECIMAL({}, {}))",
                    decimal_text(unscaled, d.scale),
                    d.precision,
                    d.scale
                ),
                column: None,
                float: false,
                integer: false,
            }
        }
        LiteralType::Null(_) => return Err(unsupported("a NULL literal (use is_null)")),
        _ => return Err(unsupported("this literal type")),
    })
}

pub(crate) fn float_literal(v: f64) -> Result<Col> {
    if !v.is_finite() {
        return Err(unsupported("a NaN or infinite literal"));
    }
    // the shortest text that reads back as the same double, with a decimal point
    let mut text = format!("{v:?}");
    if !text.contains('.') && !text.contains('e') && !text.contains("inf") {
        text.push_str(".0");
    }
    Ok(Col {
        sql: format!("CAST({text} AS DOUBLE)"),
        column: None,
        float: true,
        integer: false,
    })
}

pub(crate) fn string_literal(s: &str) -> Result<Col> {
    if s.contains('\0') {
        return Err(unsupported("a string literal holding a NUL character"));
    }
    Ok(plain(format!("'{}'", s.replace('\'', "''"))))
}

pub fn decimal_text(unscaled: i128, scale: i32) -> String {
    let negative = unscaled < 0;
    let digits = unscaled.unsigned_abs().to_string();
    let scale = scale.max(0) as usize;
    let text = if scale == 0 {
        digits
    } else if digits.len() > scale {
        format!(
            "{}.{}",
            &digits[..digits.len() - scale],
            &digits[digits.len() - scale..]
        )
    } else {
        format!("0.{}{}", "0".repeat(scale - digits.len()), digits)
    };
    if negative {
        format!("-{text}")
    } else {
        text
    }
}

/// Days since 1970-01-01 as YYYY-MM-DD (proleptic Gregorian).
pub fn days_to_date(days: i64) -> String {
    let z = days + 719468;
    let era = z.div_euclid(146097);
    let doe = z.rem_euclid(146097);
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    format!("{:04}-{:02}-{:02}", if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::parse;

    #[test]
    fn dates_and_decimals() {
        assert_eq!(days_to_date(0), "1970-01-01");
        assert_eq!(days_to_date(19_723), "2024-01-01");
        assert_eq!(days_to_date(-1), "1969-12-31");
        assert_eq!(days_to_date(11_016), "2000-02-29");
        assert_eq!(decimal_text(12345, 2), "123.45");
        assert_eq!(decimal_text(-5, 3), "-0.005");
        assert_eq!(decimal_text(i128::MAX, 0), i128::MAX.to_string());
    }

    #[test]
    fn not_a_plan_is_an_error() {
        assert!(parse(b"\xff\xff\xff").is_err());
        assert!(parse(b"").is_err()); // an empty plan has no relation
    }
}
