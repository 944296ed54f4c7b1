//! The SQL the driver accepts, exactly:
//!
//! ```text
//! SELECT * | column [, column ...] FROM table [WHERE condition] [LIMIT n]
//! ```
//!
//! - keywords in any case; `column` and `table` are identifiers, `"quoted"` where they hold
//!   other characters (a doubled `""` is a quote); `table` is `name` or `namespace.name`
//!   (nested namespaces: `a.b.name`);
//! - `condition` is passed to Lance as its filter (Lance's SQL: comparisons, `AND`/`OR`/`NOT`,
//!   `IN`, `IS [NOT] NULL`, `LIKE`, ...), so it is exactly what `filter` accepts elsewhere in
//!   lance-host;
//! - `n` a non-negative integer.
//!
//! Anything else (expressions or aggregates in the select list, `GROUP BY`, `ORDER BY`, joins,
//! several statements) is `ADBC_STATUS_NOT_IMPLEMENTED` naming what was found: use a Substrait
//! plan or the statement options for aggregates.

use adbc_core::error::Result;

use crate::api::{invalid, not_implemented};
use crate::handles::{split_identifier, TableRef};

#[derive(Debug, PartialEq)]
pub struct Query {
    pub table: TableRef,
    pub columns: Option<Vec<String>>,
    pub filter: Option<String>,
    pub limit: Option<i64>,
}

/// Positions of a keyword at the top level (outside quotes), as whole words.
fn find_keyword(text: &str, keyword: &str) -> Vec<usize> {
    let bytes = text.as_bytes();
    let kw = keyword.as_bytes();
    let mut out = Vec::new();
    let mut quote: Option<u8> = None;
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        match quote {
            Some(q) => {
                if c == q {
                    quote = None;
                }
            }
            None => {
                if c == b'\'' || c == b'"' || c == b'`' {
                    quote = Some(c);
                } else if i + kw.len() <= bytes.len()
                    && bytes[i..i + kw.len()].eq_ignore_ascii_case(kw)
                    && (i == 0 || !is_word(bytes[i - 1]))
                    && (i + kw.len() == bytes.len() || !is_word(bytes[i + kw.len()]))
                {
                    out.push(i);
                }
            }
        }
        i += 1;
    }
    out
}

fn is_word(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

pub fn parse(sql: &str) -> Result<Query> {
    let text = sql.trim().trim_end_matches(';').trim();
    for unsupported in [
        "GROUP", "ORDER", "JOIN", "UNION", "HAVING", "OFFSET", "WITH", "DISTINCT", "INSERT",
        "UPDATE", "DELETE", "CREATE", "DROP",
    ] {
        if !find_keyword(text, unsupported).is_empty() {
            return Err(not_implemented(format!(
                "lance-host ADBC SQL: `{unsupported}` is not supported; accepted: SELECT * | columns FROM table [WHERE condition] [LIMIT n]"
            )));
        }
    }
    let select = find_keyword(text, "SELECT");
    if select.first() != Some(&0) || select.len() > 1 {
        return Err(not_implemented(
            "lance-host ADBC SQL: only one SELECT statement is accepted: SELECT * | columns FROM table [WHERE condition] [LIMIT n]",
        ));
    }
    let from = find_keyword(text, "FROM");
    let from = match from.as_slice() {
        [one] => *one,
        [] => return Err(invalid("lance-host ADBC SQL: SELECT without FROM")),
        _ => {
            return Err(not_implemented(
                "lance-host ADBC SQL: subqueries are not supported",
            ))
        }
    };
    let wheres = find_keyword(text, "WHERE");
    let limits = find_keyword(text, "LIMIT");
    if wheres.len() > 1 || limits.len() > 1 {
        return Err(not_implemented(
            "lance-host ADBC SQL: subqueries are not supported",
        ));
    }
    let where_at = wheres.first().copied();
    let limit_at = limits.first().copied();
    if let (Some(w), Some(l)) = (where_at, limit_at) {
        if l < w {
            return Err(invalid("lance-host ADBC SQL: LIMIT must come after WHERE"));
        }
    }
    if where_at.is_some_and(|w| w < from) || limit_at.is_some_and(|l| l < from) {
        return Err(invalid(
            "lance-host ADBC SQL: WHERE and LIMIT come after FROM",
        ));
    }
    let select_list = text["SELECT".len()..from].trim();
    let table_end = where_at.or(limit_at).unwrap_or(text.len());
    let table_text = text[from + "FROM".len()..table_end].trim();
    let filter = where_at.map(|w| {
        text[w + "WHERE".len()..limit_at.unwrap_or(text.len())]
            .trim()
            .to_string()
    });
    let limit = match limit_at {
        Some(l) => {
            let n = text[l + "LIMIT".len()..].trim();
            Some(n.parse::<i64>().ok().filter(|v| *v >= 0).ok_or_else(|| {
                invalid(format!(
                    "lance-host ADBC SQL: LIMIT takes a non-negative integer, not `{n}`"
                ))
            })?)
        }
        None => None,
    };
    if filter.as_deref() == Some("") {
        return Err(invalid("lance-host ADBC SQL: WHERE without a condition"));
    }
    if select_list.is_empty() {
        return Err(invalid("lance-host ADBC SQL: empty select list"));
    }
    let columns = if select_list == "*" {
        None
    } else {
        let mut cols = Vec::new();
        for item in split_top_level_commas(select_list) {
            let item = item.trim();
            let parts = split_identifier(item)
                .ok()
                .filter(|p| p.len() == 1 && is_identifier(item));
            match parts {
                Some(mut p) => cols.push(p.remove(0)),
                None => {
                    return Err(not_implemented(format!(
                        "lance-host ADBC SQL: only column names are accepted in the select list, not `{item}` (aggregates: use a Substrait plan)"
                    )))
                }
            }
        }
        Some(cols)
    };
    if table_text.is_empty()
        || table_text.contains(',')
        || (table_text.contains(char::is_whitespace) && !table_text.contains('"'))
    {
        return Err(not_implemented(format!(
            "lance-host ADBC SQL: FROM takes one table name, not `{table_text}`"
        )));
    }
    let table = TableRef::parse(table_text)?;
    Ok(Query {
        table,
        columns,
        filter,
        limit,
    })
}

fn is_identifier(item: &str) -> bool {
    if item.starts_with('"') {
        return item.ends_with('"') && item.len() >= 2;
    }
    !item.is_empty() && item.chars().all(|c| c.is_alphanumeric() || c == '_')
}

fn split_top_level_commas(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut quote = None;
    let mut start = 0;
    for (i, c) in text.char_indices() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None => match c {
                '"' | '\'' => quote = Some(c),
                '(' => depth += 1,
                ')' => depth -= 1,
                ',' if depth == 0 => {
                    out.push(&text[start..i]);
                    start = i + 1;
                }
                _ => {}
            },
        }
    }
    out.push(&text[start..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use adbc_core::error::Status;

    #[test]
    fn accepts_the_subset() {
        let q = parse("select id, \"Name\" FROM ns.t WHERE id > 3 AND s = 'a where b' limit 10;")
            .unwrap();
        assert_eq!(
            q.table,
            TableRef {
                namespace: vec!["ns".into()],
                name: "t".into()
            }
        );
        assert_eq!(q.columns, Some(vec!["id".to_string(), "Name".to_string()]));
        assert_eq!(q.filter.as_deref(), Some("id > 3 AND s = 'a where b'"));
        assert_eq!(q.limit, Some(10));
        let q = parse("SELECT * FROM \"my.table\"").unwrap();
        assert_eq!(q.table.name, "my.table");
        assert!(q.table.namespace.is_empty());
        assert_eq!(q.columns, None);
    }

    #[test]
    fn refuses_the_rest_with_status() {
        for (sql, status) in [
            ("SELECT sum(x) FROM t", Status::NotImplemented),
            ("SELECT a FROM t GROUP BY a", Status::NotImplemented),
            ("SELECT a FROM t ORDER BY a", Status::NotImplemented),
            ("SELECT a FROM t, u", Status::NotImplemented),
            ("SELECT a FROM t LIMIT -1", Status::InvalidArguments),
            ("SELECT a FROM t LIMIT x", Status::InvalidArguments),
            ("SELECT a", Status::InvalidArguments),
            ("SELECT a FROM t WHERE", Status::InvalidArguments),
            ("FROM t", Status::NotImplemented),
        ] {
            let err = parse(sql).expect_err(sql);
            assert_eq!(err.status, status, "{sql}: {}", err.message);
        }
    }
}
