//! Lance's own process settings: environment variables that Lance reads with a panic on a value
//! it cannot use. The library checks them when its session starts, so a bad value is an
//! `LANCE_ERR_INVALID_ARGUMENT` that names the variable, instead of a panic in the middle of a
//! read (reported as `LANCE_ERR_PANIC` or `LANCE_ERR_INTERNAL`, with a backtrace on stderr).
//!
//! Only variables on the paths the library drives (opens, scans, searches, writes, index builds)
//! are listed, each with the rule Lance 14.0.2 applies to it. Values Lance ignores or clamps are
//! left to Lance.

use crate::error::{HostError, Result};

/// What a variable must hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rule {
    /// A whole number, at least `min`; `trim`: Lance trims blanks around it first.
    Count { min: u64, trim: bool },
    /// A number in (0, 1] when it is a number at all (Lance ignores one that is not).
    RatioIfNumber,
}

impl Rule {
    /// `Err` says what the value must be.
    fn check(self, value: &str) -> std::result::Result<(), String> {
        match self {
            Rule::Count { min, trim } => {
                let text = if trim { value.trim() } else { value };
                match text.parse::<u64>() {
                    Ok(n) if n >= min => Ok(()),
                    _ if min == 0 => Err("a whole number".into()),
                    _ => Err(format!("a whole number of at least {min}")),
                }
            }
            Rule::RatioIfNumber => match value.parse::<f64>() {
                Ok(v) if v <= 0.0 || v > 1.0 => Err("a number above 0 and at most 1".into()),
                _ => Ok(()),
            },
        }
    }
}

const fn count(min: u64) -> Rule {
    Rule::Count { min, trim: false }
}

/// The checked variables: name, rule, what Lance uses it for.
const CHECKED: &[(&str, Rule, &str)] = &[
    // A request size of 0 divides by zero in Lance's I/O scheduler.
    ("LANCE_MAX_IOP_SIZE", count(1), "the largest single read request, in bytes"),
    ("LANCE_IO_THREADS", count(0), "concurrent read requests per object store"),
    ("LANCE_CPU_THREADS", Rule::Count { min: 1, trim: true }, "Lance's compute threads"),
    ("LANCE_IO_CORE_RESERVATION", Rule::Count { min: 0, trim: true }, "cores held back from Lance's compute threads"),
    ("LANCE_IVF_STREAMING_SEARCH_BATCH_SIZE", count(1), "IVF partitions searched per batch"),
    ("LANCE_IVF_GLOBAL_TOPK_CHUNK_BYTES", count(1), "bytes of IVF partitions scored per task"),
    ("LANCE_FTS_POSTING_GROUP_MAX_TOKENS", count(0), "tokens per posting-list group of a full-text index"),
    ("LANCE_FTS_NUM_SHARDS", count(0), "workers of a full-text index build"),
    ("LANCE_FTS_PARTITION_SIZE", count(0), "MiB per worker of a full-text index build"),
    ("LANCE_FTS_WRITE_QUEUE_SIZE", count(0), "queued partitions of a full-text index build"),
    ("LANCE_FTS_POSTING_BATCH_ROWS", count(0), "posting rows per batch of a full-text index build"),
    ("LANCE_ENCODING_DICT_SIZE_RATIO", Rule::RatioIfNumber, "the size ratio below which a write dictionary-encodes a column"),
];

/// Check the process environment (see the module's comment).
pub fn check() -> Result<()> {
    check_with(|name| std::env::var(name).ok())
}

fn check_with(get: impl Fn(&str) -> Option<String>) -> Result<()> {
    for (name, rule, what) in CHECKED {
        let Some(value) = get(name) else { continue };
        if let Err(need) = rule.check(&value) {
            return Err(HostError::invalid(format!(
                "the environment variable {name} is {value:?}, but Lance needs {need} there \
                 ({what}); correct or unset it before the library's first use (Lance reads it \
                 once per process)"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::LanceErrorCode;

    fn with(pairs: &[(&str, &str)]) -> Result<()> {
        check_with(|name| pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| v.to_string()))
    }

    #[test]
    fn unset_and_usable_values_pass() {
        assert_eq!(with(&[]), Ok(()));
        assert_eq!(
            with(&[
                ("LANCE_MAX_IOP_SIZE", "67108864"),
                ("LANCE_IO_THREADS", "0"),
                ("LANCE_CPU_THREADS", " 4 "),
                ("LANCE_IO_CORE_RESERVATION", "0"),
                ("LANCE_ENCODING_DICT_SIZE_RATIO", "1"),
                ("LANCE_ENCODING_DICT_SIZE_RATIO_UNRELATED", "x"),
            ]),
            Ok(())
        );
        // Lance ignores a ratio that is not a number (its default applies).
        assert_eq!(with(&[("LANCE_ENCODING_DICT_SIZE_RATIO", "most")]), Ok(()));
    }

    #[test]
    fn values_lance_would_panic_on_are_named_errors() {
        for (name, value, need) in [
            ("LANCE_MAX_IOP_SIZE", "abc", "a whole number of at least 1"),
            ("LANCE_MAX_IOP_SIZE", "0", "a whole number of at least 1"),
            ("LANCE_MAX_IOP_SIZE", "16MiB", "a whole number of at least 1"),
            ("LANCE_IO_THREADS", "-1", "a whole number"),
            ("LANCE_IO_THREADS", " 8", "a whole number"),
            ("LANCE_CPU_THREADS", "0", "a whole number of at least 1"),
            ("LANCE_IO_CORE_RESERVATION", "two", "a whole number"),
            ("LANCE_IVF_STREAMING_SEARCH_BATCH_SIZE", "0", "a whole number of at least 1"),
            ("LANCE_FTS_NUM_SHARDS", "2.5", "a whole number"),
            ("LANCE_ENCODING_DICT_SIZE_RATIO", "1.5", "a number above 0 and at most 1"),
            ("LANCE_ENCODING_DICT_SIZE_RATIO", "0", "a number above 0 and at most 1"),
        ] {
            let err = with(&[(name, value)]).unwrap_err();
            assert_eq!(err.code, LanceErrorCode::LANCE_ERR_INVALID_ARGUMENT, "{name}={value}");
            assert!(err.message.contains(name), "{}", err.message);
            assert!(err.message.contains(&format!("{value:?}")), "{}", err.message);
            assert!(err.message.contains(need), "{}", err.message);
        }
    }
}
