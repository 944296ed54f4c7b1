//! Substrait as Lance SQL: the one translation of Substrait plans (`plan`) and expressions
//! (`expr`) that the library (a `LanceAggregateSpec`'s Substrait plan) and the ADBC driver
//! (`SetSubstraitPlan`) share, so both accept the same plans and give them the same meaning.
//!
//! Nothing here reads a table: a plan becomes column names, Lance SQL text and aggregate
//! functions, which the caller checks against the table as it checks what a host writes itself.

mod expr;
mod plan;

pub use expr::{days_to_date, decimal_text, quote};
pub use plan::{
    parse, parse_with, ColumnKind, GroupKey, Measure, PlanQuery, Shape, TableRef, AGG_AVG,
    AGG_COUNT, AGG_COUNT_DISTINCT, AGG_COUNT_STAR, AGG_MAX, AGG_MIN, AGG_SUM,
};

/// What is wrong with a plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// Not a well-formed plan (bytes that do not decode, a reference out of range, a relation
    /// without its input).
    Invalid,
    /// A well-formed plan that asks for something the translation does not take (a join, a
    /// function without a Lance SQL equivalent of the same meaning).
    Unsupported,
}

/// A refused plan: its kind and a message naming what was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub kind: ErrorKind,
    pub message: String,
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

pub(crate) fn invalid(message: impl Into<String>) -> Error {
    Error {
        kind: ErrorKind::Invalid,
        message: message.into(),
    }
}

/// `what` is not supported.
pub(crate) fn unsupported(what: impl std::fmt::Display) -> Error {
    Error {
        kind: ErrorKind::Unsupported,
        message: format!("Substrait: {what} is not supported"),
    }
}
