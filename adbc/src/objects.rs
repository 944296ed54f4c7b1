//! Metadata results: `GetObjects`, `GetTableTypes` and `GetInfo` as the Arrow data ADBC defines.
//!
//! ADBC's hierarchy is catalog → db_schema → table. The driver shows one catalog (named by the
//! database option `lance_host.catalog_name`, default `lance`); its db_schemas are the lance-host
//! namespaces, a nested namespace written `a.b` (a part holding a dot or a quote is quoted),
//! and the root namespace as the db_schema `""` when it holds tables.

use std::collections::HashSet;
use std::sync::Arc;

use adbc_core::error::Result;
use adbc_core::options::{InfoCode, ObjectDepth};
use adbc_core::schemas;
use arrow_array::{
    new_empty_array, new_null_array, ArrayRef, BooleanArray, Int16Array, Int32Array, Int64Array,
    ListArray, RecordBatch, RecordBatchIterator, StringArray, StructArray, UInt32Array, UnionArray,
};
use arrow_buffer::{NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field, Fields, Schema};

use crate::handles::{Catalog, Reader, TableRef};

pub struct ColumnEntry {
    pub name: String,
    /// 1-based position in the table (kept when a column filter drops others).
    pub ordinal: i32,
    pub nullable: bool,
}

pub struct TableEntry {
    pub name: String,
    pub columns: Option<Vec<ColumnEntry>>,
}

pub struct SchemaEntry {
    pub name: String,
    pub tables: Option<Vec<TableEntry>>,
}

/// SQL `LIKE` of ADBC's filters: `%` any run, `_` one character; no escape.
pub fn like(pattern: Option<&str>, value: &str) -> bool {
    fn go(p: &[char], v: &[char]) -> bool {
        match p.split_first() {
            None => v.is_empty(),
            Some(('%', rest)) => (0..=v.len()).any(|i| go(rest, &v[i..])),
            Some(('_', rest)) => !v.is_empty() && go(rest, &v[1..]),
            Some((c, rest)) => v.first() == Some(c) && go(rest, &v[1..]),
        }
    }
    match pattern {
        None => true,
        Some(p) => go(
            &p.chars().collect::<Vec<_>>(),
            &value.chars().collect::<Vec<_>>(),
        ),
    }
}

/// A namespace path as a db_schema name.
pub fn schema_name(parts: &[String]) -> String {
    parts
        .iter()
        .map(|p| {
            if p.contains('.') || p.contains('"') {
                format!("\"{}\"", p.replace('"', "\"\""))
            } else {
                p.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(".")
}

#[allow(clippy::too_many_arguments)]
pub fn collect(
    catalog: &Catalog,
    catalog_name: &str,
    depth: ObjectDepth,
    catalog_filter: Option<&str>,
    schema_filter: Option<&str>,
    table_filter: Option<&str>,
    table_types: Option<Vec<&str>>,
    column_filter: Option<&str>,
) -> Result<Option<Vec<SchemaEntry>>> {
    if !like(catalog_filter, catalog_name) {
        return Ok(None);
    }
    if matches!(depth, ObjectDepth::Catalogs) {
        return Ok(Some(Vec::new()));
    }
    let want_tables = !matches!(depth, ObjectDepth::Schemas);
    let want_columns = matches!(depth, ObjectDepth::All | ObjectDepth::Columns);
    let type_ok = table_types
        .map(|types| types.iter().any(|t| t.eq_ignore_ascii_case("table")))
        .unwrap_or(true);
    let mut paths = vec![Vec::new()];
    paths.extend(catalog.list_namespaces()?);
    let mut out = Vec::new();
    for path in paths {
        let name = schema_name(&path);
        if !like(schema_filter, &name) {
            continue;
        }
        let names = catalog.list_tables(&path)?;
        if path.is_empty() && names.is_empty() {
            continue; // the root shows only when it holds tables
        }
        let tables = if want_tables {
            let mut tables = Vec::new();
            for table in names
                .into_iter()
                .filter(|t| type_ok && like(table_filter, t))
            {
                let columns = if want_columns {
                    let dataset = catalog.open_table(
                        &TableRef {
                            namespace: path.clone(),
                            name: table.clone(),
                        },
                        0,
                        None,
                    )?;
                    let schema = dataset.schema()?;
                    Some(
                        schema
                            .fields()
                            .iter()
                            .enumerate()
                            .map(|(i, f)| ColumnEntry {
                                name: f.name().clone(),
                                ordinal: i as i32 + 1,
                                nullable: f.is_nullable(),
                            })
                            .collect(),
                    )
                } else {
                    None
                };
                tables.push(TableEntry {
                    name: table,
                    columns,
                });
            }
            Some(tables)
        } else {
            None
        };
        out.push(SchemaEntry { name, tables });
    }
    // Column filter applies to the columns, keeping their ordinal positions.
    if let Some(pattern) = column_filter {
        for s in out.iter_mut() {
            for t in s.tables.iter_mut().flatten() {
                if let Some(cols) = t.columns.as_mut() {
                    let kept: Vec<ColumnEntry> = std::mem::take(cols);
                    *cols = kept
                        .into_iter()
                        .filter(|c| like(Some(pattern), &c.name))
                        .collect();
                }
            }
        }
    }
    Ok(Some(out))
}

fn struct_fields(dt: &DataType) -> Fields {
    match dt {
        DataType::Struct(f) => f.clone(),
        _ => unreachable!("ADBC schema types are structs"),
    }
}

fn list_of(item: &DataType, lengths: &[Option<usize>], values: ArrayRef) -> Result<ListArray> {
    let offsets = OffsetBuffer::from_lengths(lengths.iter().map(|l| l.unwrap_or(0)));
    let nulls = if lengths.iter().any(|l| l.is_none()) {
        Some(NullBuffer::from(
            lengths.iter().map(|l| l.is_some()).collect::<Vec<_>>(),
        ))
    } else {
        None
    };
    Ok(ListArray::try_new(
        Arc::new(Field::new_list_field(item.clone(), true)),
        offsets,
        values,
        nulls,
    )?)
}

fn columns_array(cols: &[&ColumnEntry]) -> Result<ArrayRef> {
    let fields = struct_fields(&schemas::COLUMN_SCHEMA);
    let n = cols.len();
    let mut arrays: Vec<ArrayRef> = Vec::new();
    for f in fields.iter() {
        let a: ArrayRef = match f.name().as_str() {
            "column_name" => Arc::new(StringArray::from_iter_values(
                cols.iter().map(|c| c.name.as_str()),
            )),
            "ordinal_position" => {
                Arc::new(Int32Array::from_iter_values(cols.iter().map(|c| c.ordinal)))
            }
            "xdbc_nullable" => Arc::new(Int16Array::from_iter_values(
                cols.iter().map(|c| c.nullable as i16),
            )),
            "xdbc_is_nullable" => Arc::new(StringArray::from_iter_values(cols.iter().map(|c| {
                if c.nullable {
                    "YES"
                } else {
                    "NO"
                }
            }))),
            _ => new_null_array(f.data_type(), n),
        };
        arrays.push(a);
    }
    Ok(Arc::new(StructArray::try_new(fields, arrays, None)?))
}

/// The `GetObjects` result for one catalog (or none when the filter excludes it).
pub fn objects_reader(
    catalog_name: &str,
    schemas_list: Option<Vec<SchemaEntry>>,
    depth: ObjectDepth,
) -> Result<Reader> {
    let schema = schemas::GET_OBJECTS_SCHEMA.clone();
    let Some(schema_entries) = schemas_list else {
        let empty = RecordBatch::new_empty(schema.clone());
        return Ok(Box::new(RecordBatchIterator::new(vec![Ok(empty)], schema)));
    };
    let with_constraints = matches!(depth, ObjectDepth::All | ObjectDepth::Columns);
    // Flatten, level by level.
    let mut all_cols: Vec<&ColumnEntry> = Vec::new();
    let mut table_col_lens = Vec::new();
    let mut table_names = Vec::new();
    let mut schema_table_lens = Vec::new();
    for s in &schema_entries {
        match &s.tables {
            Some(tables) => {
                schema_table_lens.push(Some(tables.len()));
                for t in tables {
                    table_names.push(t.name.as_str());
                    match &t.columns {
                        Some(cols) => {
                            table_col_lens.push(Some(cols.len()));
                            all_cols.extend(cols.iter());
                        }
                        None => table_col_lens.push(None),
                    }
                }
            }
            None => schema_table_lens.push(None),
        }
    }
    let col_values = columns_array(&all_cols)?;
    let table_fields = struct_fields(&schemas::TABLE_SCHEMA);
    let n_tables = table_names.len();
    let constraints_item = match table_fields[3].data_type() {
        DataType::List(f) => f.data_type().clone(),
        _ => unreachable!(),
    };
    let constraint_lens: Vec<Option<usize>> = (0..n_tables)
        .map(|_| if with_constraints { Some(0) } else { None })
        .collect();
    let tables = StructArray::try_new(
        table_fields,
        vec![
            Arc::new(StringArray::from_iter_values(table_names.iter())),
            Arc::new(StringArray::from_iter_values(std::iter::repeat_n(
                "TABLE", n_tables,
            ))),
            Arc::new(list_of(
                &schemas::COLUMN_SCHEMA,
                &table_col_lens,
                col_values,
            )?),
            Arc::new(list_of(
                &constraints_item,
                &constraint_lens,
                new_empty_array(&constraints_item),
            )?),
        ],
        None,
    )?;
    let schema_fields = struct_fields(&schemas::OBJECTS_DB_SCHEMA_SCHEMA);
    let db_schemas = StructArray::try_new(
        schema_fields,
        vec![
            Arc::new(StringArray::from_iter_values(
                schema_entries.iter().map(|s| s.name.as_str()),
            )),
            Arc::new(list_of(
                &schemas::TABLE_SCHEMA,
                &schema_table_lens,
                Arc::new(tables),
            )?),
        ],
        None,
    )?;
    let catalog_lens = [if matches!(depth, ObjectDepth::Catalogs) {
        None
    } else {
        Some(schema_entries.len())
    }];
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(StringArray::from(vec![catalog_name])),
            Arc::new(list_of(
                &schemas::OBJECTS_DB_SCHEMA_SCHEMA,
                &catalog_lens,
                Arc::new(db_schemas),
            )?),
        ],
    )?;
    Ok(Box::new(RecordBatchIterator::new(vec![Ok(batch)], schema)))
}

pub fn table_types_reader() -> Result<Reader> {
    let schema = schemas::GET_TABLE_TYPES_SCHEMA.clone();
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![Arc::new(StringArray::from(vec!["TABLE"]))],
    )?;
    Ok(Box::new(RecordBatchIterator::new(vec![Ok(batch)], schema)))
}

/// A dense union of `fields`: row `i` is entry `offsets[i]` of the child of type `type_ids[i]`;
/// `filled` holds the children that have values (by type id), the others are empty.
fn dense_union(
    fields: arrow_schema::UnionFields,
    type_ids: Vec<i8>,
    offsets: Vec<i32>,
    filled: Vec<(i8, ArrayRef)>,
) -> Result<UnionArray> {
    let children: Vec<ArrayRef> = fields
        .iter()
        .map(|(id, f)| {
            filled
                .iter()
                .find(|(t, _)| *t == id)
                .map(|(_, a)| a.clone())
                .unwrap_or_else(|| new_empty_array(f.data_type()))
        })
        .collect();
    Ok(UnionArray::try_new(
        fields,
        ScalarBuffer::from(type_ids),
        Some(ScalarBuffer::from(offsets)),
        children,
    )?)
}

enum InfoValue {
    Text(String),
    Int(i64),
}

/// `GetInfo`: vendor and driver names and versions, the ADBC version.
pub fn info_reader(codes: Option<HashSet<InfoCode>>, library_version: &str) -> Result<Reader> {
    let all: Vec<(InfoCode, InfoValue)> = vec![
        (InfoCode::VendorName, InfoValue::Text("lance-host".into())),
        (
            InfoCode::VendorVersion,
            InfoValue::Text(library_version.into()),
        ),
        (InfoCode::VendorArrowVersion, InfoValue::Text("58".into())),
        (
            InfoCode::DriverName,
            InfoValue::Text("lance-host ADBC driver".into()),
        ),
        (
            InfoCode::DriverVersion,
            InfoValue::Text(env!("CARGO_PKG_VERSION").into()),
        ),
        (InfoCode::DriverArrowVersion, InfoValue::Text("58".into())),
        (InfoCode::DriverAdbcVersion, InfoValue::Int(1_001_000)),
    ];
    let chosen: Vec<&(InfoCode, InfoValue)> = all
        .iter()
        .filter(|(code, _)| codes.as_ref().map(|c| c.contains(code)).unwrap_or(true))
        .collect();
    let schema = schemas::GET_INFO_SCHEMA.clone();
    let DataType::Union(union_fields, _) = schema.field(1).data_type().clone() else {
        unreachable!()
    };
    let mut type_ids = Vec::new();
    let mut offsets = Vec::new();
    let mut texts = Vec::new();
    let mut ints = Vec::new();
    for (_, v) in &chosen {
        match v {
            InfoValue::Text(s) => {
                type_ids.push(0i8);
                offsets.push(texts.len() as i32);
                texts.push(s.clone());
            }
            InfoValue::Int(i) => {
                type_ids.push(2i8);
                offsets.push(ints.len() as i32);
                ints.push(*i);
            }
        }
    }
    let values = dense_union(
        union_fields,
        type_ids,
        offsets,
        vec![
            (0, Arc::new(StringArray::from(texts)) as ArrayRef),
            (2, Arc::new(Int64Array::from(ints)) as ArrayRef),
        ],
    )?;
    let names = UInt32Array::from_iter_values(chosen.iter().map(|(code, _)| u32::from(code)));
    let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(names), Arc::new(values)])?;
    Ok(Box::new(RecordBatchIterator::new(vec![Ok(batch)], schema)))
}

/// One statistic of `GetStatistics`.
pub struct Statistic {
    pub table: String,
    pub column: Option<String>,
    pub key: i16,
    pub value: StatValue,
    pub approximate: bool,
}

pub enum StatValue {
    Int(i64),
    Float(f64),
}

/// ADBC's standard statistic keys the driver reports.
pub const STAT_AVERAGE_BYTE_WIDTH: i16 = 0;
pub const STAT_ROW_COUNT: i16 = 6;

/// The `GetStatistics` result: one catalog, its db_schemas with their statistics.
pub fn statistics_reader(
    catalog_name: &str,
    per_schema: Vec<(String, Vec<Statistic>)>,
) -> Result<Reader> {
    let schema = schemas::GET_STATISTICS_SCHEMA.clone();
    let db_fields = struct_fields(&schemas::STATISTICS_DB_SCHEMA_SCHEMA);
    let stat_fields = struct_fields(&schemas::STATISTICS_SCHEMA);
    let all: Vec<&Statistic> = per_schema.iter().flat_map(|(_, v)| v.iter()).collect();
    let DataType::Union(union_fields, _) = schemas::STATISTIC_VALUE_SCHEMA.clone() else {
        unreachable!()
    };
    let mut type_ids = Vec::new();
    let mut offsets = Vec::new();
    let (mut ints, mut floats) = (Vec::new(), Vec::new());
    for st in &all {
        match st.value {
            StatValue::Int(v) => {
                type_ids.push(0i8);
                offsets.push(ints.len() as i32);
                ints.push(v);
            }
            StatValue::Float(v) => {
                type_ids.push(2i8);
                offsets.push(floats.len() as i32);
                floats.push(v);
            }
        }
    }
    let values = dense_union(
        union_fields,
        type_ids,
        offsets,
        vec![
            (0, Arc::new(Int64Array::from(ints)) as ArrayRef),
            (
                2,
                Arc::new(arrow_array::Float64Array::from(floats)) as ArrayRef,
            ),
        ],
    )?;
    let stats = StructArray::try_new(
        stat_fields,
        vec![
            Arc::new(StringArray::from_iter_values(
                all.iter().map(|s| s.table.as_str()),
            )),
            Arc::new(StringArray::from(
                all.iter().map(|s| s.column.clone()).collect::<Vec<_>>(),
            )),
            Arc::new(Int16Array::from_iter_values(all.iter().map(|s| s.key))),
            Arc::new(values),
            Arc::new(BooleanArray::from(
                all.iter().map(|s| s.approximate).collect::<Vec<_>>(),
            )),
        ],
        None,
    )?;
    let lengths: Vec<Option<usize>> = per_schema.iter().map(|(_, v)| Some(v.len())).collect();
    let db_schemas = StructArray::try_new(
        db_fields,
        vec![
            Arc::new(StringArray::from_iter_values(
                per_schema.iter().map(|(n, _)| n.as_str()),
            )),
            Arc::new(list_of(
                &schemas::STATISTICS_SCHEMA,
                &lengths,
                Arc::new(stats),
            )?),
        ],
        None,
    )?;
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(StringArray::from(vec![catalog_name])),
            Arc::new(list_of(
                &schemas::STATISTICS_DB_SCHEMA_SCHEMA,
                &[Some(per_schema.len())],
                Arc::new(db_schemas),
            )?),
        ],
    )?;
    Ok(Box::new(RecordBatchIterator::new(vec![Ok(batch)], schema)))
}

/// Project `schema` onto `columns` (top-level names), as a scan of those columns returns it.
pub fn project(schema: &Schema, columns: Option<&Vec<String>>) -> Result<Schema> {
    match columns {
        None => Ok(schema.clone()),
        Some(cols) => {
            let mut fields = Vec::new();
            for c in cols {
                let f = schema.field_with_name(c).map_err(|_| {
                    crate::api::invalid(format!(
                        "unknown column `{c}`; the table has: {}",
                        schema
                            .fields()
                            .iter()
                            .map(|f| f.name().as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))
                })?;
                fields.push(f.clone());
            }
            Ok(Schema::new(fields))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::Array;

    #[test]
    fn like_patterns() {
        assert!(like(Some("%"), ""));
        assert!(like(Some("t_b%"), "tab_1"));
        assert!(!like(Some("t_b"), "tabs"));
        assert!(like(None, "x"));
        assert!(like(Some("é%"), "été"));
    }

    #[test]
    fn get_objects_shape() {
        let cols = vec![
            ColumnEntry {
                name: "a".into(),
                ordinal: 1,
                nullable: true,
            },
            ColumnEntry {
                name: "b".into(),
                ordinal: 2,
                nullable: false,
            },
        ];
        let entries = vec![
            SchemaEntry {
                name: "".into(),
                tables: Some(vec![TableEntry {
                    name: "t".into(),
                    columns: Some(cols),
                }]),
            },
            SchemaEntry {
                name: "ns".into(),
                tables: Some(vec![]),
            },
        ];
        let mut reader = objects_reader("lance", Some(entries), ObjectDepth::All).unwrap();
        let batch = reader.next().unwrap().unwrap();
        assert_eq!(batch.schema(), schemas::GET_OBJECTS_SCHEMA.clone());
        let lists = batch
            .column(1)
            .as_any()
            .downcast_ref::<ListArray>()
            .unwrap();
        assert_eq!(lists.value(0).len(), 2);
    }
}
