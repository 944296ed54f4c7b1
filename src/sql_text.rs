//! Lance SQL text a host hands over (filters, delete and update predicates, update expressions,
//! merge conditions): it must be one whole expression. Lance parses such text as part of a
//! statement it builds around it and keeps the first expression it finds, so text after the
//! expression's end (`1=1; DROP TABLE t`, `id = 1) OR (1=1`, `val + 1, id = 0`) would be
//! dropped without a word, and a bind placeholder (`$1`, `?`, `:name`, `@name`) makes its planner
//! panic. Both are
//! refused here with LANCE_ERR_INVALID_ARGUMENT naming the offset, before Lance sees the text.

use std::any::TypeId;
use std::ops::ControlFlow;

use lance::deps::datafusion::sql::sqlparser::ast::{visit_expressions, Expr, Value};
use lance::deps::datafusion::sql::sqlparser::dialect::{Dialect, GenericDialect};
use lance::deps::datafusion::sql::sqlparser::parser::Parser;
use lance::deps::datafusion::sql::sqlparser::tokenizer::{Location, Token, TokenWithSpan, Tokenizer};

use crate::error::{HostError, Result};

/// The SQL dialect Lance's filter parser uses: the generic one, with backticks quoting names.
#[derive(Debug, Default)]
struct LanceSql(GenericDialect);

impl Dialect for LanceSql {
    fn dialect(&self) -> TypeId {
        self.0.dialect()
    }

    fn is_identifier_start(&self, ch: char) -> bool {
        self.0.is_identifier_start(ch)
    }

    fn is_identifier_part(&self, ch: char) -> bool {
        self.0.is_identifier_part(ch)
    }

    fn is_delimited_identifier_start(&self, ch: char) -> bool {
        ch == '`'
    }

    fn supports_bitwise_shift_operators(&self) -> bool {
        self.0.supports_bitwise_shift_operators()
    }
}

/// The byte offset in `text` of a tokenizer location (1-based line and column in characters).
fn offset(text: &str, at: Location) -> usize {
    if at.line == 0 {
        return text.len();
    }
    let mut line_start = 0;
    for _ in 1..at.line {
        match text[line_start..].find('\n') {
            Some(i) => line_start += i + 1,
            None => return text.len(),
        }
    }
    text[line_start..]
        .char_indices()
        .nth(at.column.saturating_sub(1) as usize)
        .map(|(i, _)| line_start + i)
        .unwrap_or(text.len())
}

/// Check that `text` is exactly one SQL expression with no bind placeholder. `what` names the
/// text in the error ("the delete predicate", "the update expression for column 'x'").
pub fn check_expression(what: &str, text: &str) -> Result<()> {
    let dialect = LanceSql::default();
    let tokens = Tokenizer::new(&dialect, text)
        .tokenize_with_location()
        .map_err(|e| HostError::invalid(format!("{what} is not valid SQL ({e}): {text}")))?;
    if let Some(t) = tokens.iter().find(|t| matches!(t.token, Token::Placeholder(_))) {
        return Err(HostError::invalid(format!(
            "{what} uses the placeholder '{}' at offset {}: bind parameters are not supported, write the value as a literal: {text}",
            t.token,
            offset(text, t.span.start)
        )));
    }
    // Lance reads `==` as `=` (pyarrow's spelling): drop the second of two adjacent `=` as it does.
    let mut kept: Vec<TokenWithSpan> = Vec::with_capacity(tokens.len());
    for t in tokens {
        if t.token == Token::Eq && kept.last().is_some_and(|p| p.token == Token::Eq) {
            continue;
        }
        kept.push(t);
    }
    let mut parser = Parser::new(&dialect).with_tokens_with_locations(kept);
    let expr = parser
        .parse_expr()
        .map_err(|e| HostError::invalid(format!("{what} is not a valid SQL expression ({e}): {text}")))?;
    // `:name` and `@name` are placeholders too, though no token says so: the parser makes them
    // from a `:` or `@` that starts a value. Lance's planner panics on any placeholder.
    let placeholder = visit_expressions(&expr, |e| match e {
        Expr::Value(v) => match &v.value {
            Value::Placeholder(p) => ControlFlow::Break(p.clone()),
            _ => ControlFlow::Continue(()),
        },
        _ => ControlFlow::Continue(()),
    });
    if let ControlFlow::Break(p) = placeholder {
        return Err(HostError::invalid(format!(
            "{what} uses the placeholder '{p}': bind parameters are not supported, write the value as a literal: {text}"
        )));
    }
    let next = parser.peek_token();
    if next.token != Token::EOF {
        let at = offset(text, next.span.start);
        return Err(HostError::invalid(format!(
            "{what} has text after the end of its expression at offset {at} ('{}'): one expression only, no second statement: {text}",
            text[at..].trim_end()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_expressions_pass() {
        for ok in ["id = 1", "id == 1", "a > 1 AND b IN ('x', 'y')", "`weird col` IS NULL", "val + 1", "  id<3  ", "s = 'a;b'"] {
            check_expression("the filter", ok).unwrap_or_else(|e| panic!("{ok}: {e}"));
        }
    }

    #[test]
    fn trailing_text_is_refused_with_its_offset() {
        let e = check_expression("the delete predicate", "1=1; DROP TABLE t").unwrap_err();
        assert!(e.message.contains("offset 3"), "{}", e.message);
        let e = check_expression("the delete predicate", "id = 1) OR (1=1").unwrap_err();
        assert!(e.message.contains("offset 6"), "{}", e.message);
        let e = check_expression("the update expression", "val + 1, id = 0").unwrap_err();
        assert!(e.message.contains("offset 7"), "{}", e.message);
        let e = check_expression("x", "a = 1\nOR b = 2 c").unwrap_err();
        assert!(e.message.contains("offset 15"), "{}", e.message);
    }

    #[test]
    fn placeholders_are_refused() {
        for bad in ["id = $1", "$1", "a = ? ", "id = :x", ":x", "v + :1", "id IN (1, :y)", "abs(:a) > 1"] {
            let e = check_expression("the filter", bad).unwrap_err();
            assert!(e.message.contains("placeholder"), "{bad}: {}", e.message);
        }
    }
}
