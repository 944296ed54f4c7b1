//! Per-column encoding settings a host may put in its Arrow field metadata (Lance reads
//! `lance-encoding:*` keys when it writes a column). Lance 14.0.2 panics in the middle of a
//! write on two of them when their value is unusable, and on a list column it takes a packed
//! flag meant for structs and writes values that read back as nulls (pylance's writes too). The
//! library checks these before anything is written, so such a setting is
//! `LANCE_ERR_INVALID_ARGUMENT` naming the column and the key. Keys Lance refuses with an error
//! of its own (an unknown compression scheme) or ignores are left to Lance; a test writes every
//! key with usable and unusable values on seven column types (`tests/python/test_errors.py`).

use arrow_schema::{DataType, Field, Schema};
use lance_core::utils::parse::str_is_truthy;

use crate::error::{HostError, Result};

/// The ratio of a dictionary's encoded size to the column's below which Lance dictionary-encodes
/// it: when it is a number (Lance ignores one that is not), it must be in (0, 1].
const DICT_SIZE_RATIO: &str = "lance-encoding:dict-size-ratio";
/// The largest dictionary in bytes: a whole number.
const DICT_MAX_SIZE: &str = "lance-encoding:dict-max-size";
/// Pack a struct's children into one column: Lance's key and its older spelling. Lance reads
/// either as on when its value is one of Lance's "true" spellings.
const PACKED: [&str; 2] = ["lance-encoding:packed", "packed"];

/// Check every field of `schema`, nested ones included.
pub(crate) fn check(schema: &Schema) -> Result<()> {
    schema.fields().iter().try_for_each(|f| check_field(f, f.name()))
}

fn check_field(field: &Field, path: &str) -> Result<()> {
    let meta = field.metadata();
    if let Some(v) = meta.get(DICT_SIZE_RATIO) {
        if v.parse::<f64>().is_ok_and(|r| r <= 0.0 || r > 1.0) {
            return Err(bad(path, DICT_SIZE_RATIO, v, "but Lance needs a number above 0 and at most 1 there"));
        }
    }
    if let Some(v) = meta.get(DICT_MAX_SIZE) {
        if v.parse::<usize>().is_err() {
            return Err(bad(path, DICT_MAX_SIZE, v, "but Lance needs a whole number of bytes there"));
        }
    }
    let list = matches!(
        field.data_type(),
        DataType::List(_) | DataType::LargeList(_) | DataType::ListView(_) | DataType::LargeListView(_) | DataType::Map(..)
    );
    if list {
        for key in PACKED {
            if let Some(v) = meta.get(key).filter(|v| str_is_truthy(v)) {
                let why = format!(
                    "which asks Lance to pack a struct's children, but the column is a {}: Lance \
                     14.0.2 packs struct columns only and writes a list column so flagged as \
                     nulls; remove the key or set it to false",
                    field.data_type()
                );
                return Err(bad(path, key, v, &why));
            }
        }
    }
    match field.data_type() {
        DataType::Struct(children) => children.iter().try_for_each(|c| check_field(c, &format!("{path}.{}", c.name()))),
        DataType::List(child)
        | DataType::LargeList(child)
        | DataType::ListView(child)
        | DataType::LargeListView(child)
        | DataType::FixedSizeList(child, _)
        | DataType::Map(child, _) => check_field(child, &format!("{path}.{}", child.name())),
        _ => Ok(()),
    }
}

/// The error for `key`'s `value` on the column at `path`; `why` completes the sentence.
fn bad(path: &str, key: &str, value: &str, why: &str) -> HostError {
    HostError::invalid(format!("column '{path}': its field metadata {key} is {value:?}, {why}; nothing was written"))
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Arc;

    use super::*;
    use crate::error::LanceErrorCode;

    fn with_meta(key: &str, value: &str) -> Field {
        Field::new("s", DataType::Utf8, true).with_metadata(HashMap::from([(key.to_string(), value.to_string())]))
    }

    #[test]
    fn usable_and_ignored_values_pass() {
        for (k, v) in [(DICT_SIZE_RATIO, "0.5"), (DICT_SIZE_RATIO, "1"), (DICT_SIZE_RATIO, "not a number"),
                       (DICT_MAX_SIZE, "65536"), ("lance-encoding:compression", "zstd")] {
            assert_eq!(check(&Schema::new(vec![with_meta(k, v)])), Ok(()), "{k}={v}");
        }
        // A packed flag is for structs (where it packs) and harmless when off.
        let packed = |dt: DataType, v: &str| {
            Field::new("c", dt, true).with_metadata(HashMap::from([("lance-encoding:packed".to_string(), v.to_string())]))
        };
        let item = Field::new("item", DataType::Int64, true);
        assert_eq!(check(&Schema::new(vec![packed(DataType::Struct(vec![item.clone()].into()), "true")])), Ok(()));
        assert_eq!(check(&Schema::new(vec![packed(DataType::List(Arc::new(item)), "false")])), Ok(()));
    }

    #[test]
    fn values_lance_would_panic_on_name_the_column_and_key() {
        let nested = Field::new(
            "outer",
            DataType::Struct(vec![Field::new_list("tags", with_meta(DICT_MAX_SIZE, "lots"), true)].into()),
            true,
        );
        for (schema, path, key, value) in [
            (Schema::new(vec![with_meta(DICT_SIZE_RATIO, "2")]), "s", DICT_SIZE_RATIO, "2"),
            (Schema::new(vec![with_meta(DICT_SIZE_RATIO, "0")]), "s", DICT_SIZE_RATIO, "0"),
            (Schema::new(vec![with_meta(DICT_MAX_SIZE, "-1")]), "s", DICT_MAX_SIZE, "-1"),
            (Schema::new(vec![Field::new("id", DataType::Int64, false), nested]), "outer.tags.s", DICT_MAX_SIZE, "lots"),
            (Schema::new(vec![Field::new_list("l", Field::new("item", DataType::Int64, true), true)
                .with_metadata(HashMap::from([("packed".to_string(), "yes".to_string())]))]), "l", "packed", "yes"),
        ] {
            let err = check(&Arc::new(schema)).unwrap_err();
            assert_eq!(err.code, LanceErrorCode::LANCE_ERR_INVALID_ARGUMENT);
            assert!(err.message.contains(&format!("column '{path}'")), "{}", err.message);
            assert!(err.message.contains(key) && err.message.contains(&format!("{value:?}")), "{}", err.message);
        }
    }
}
