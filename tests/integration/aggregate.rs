//! Aggregates inside splits at the C boundary (issue 47): the spec's arguments are checked
//! (NULLs, sizes, function values, counts), partial states of every split of a table with
//! deletions merge to the one-call answer, which equals the sums of the rows the test wrote
//! minus the ones it deleted, and merge refuses what is not a set of partial states. pyarrow
//! checks every type and rule in tests/python/test_aggregate.py.

use arrow::array::{Array, Int64Array, RecordBatch};
use arrow::ffi_stream::{ArrowArrayStreamReader, FFI_ArrowArrayStream};
use lance_host::ffi::aggregate::*;
use lance_host::ffi::changes_by_predicate::lance_dataset_delete;
use lance_host::ffi::split::*;
use lance_host::ffi::write::LanceWriteMode;
use lance_host::LanceErrorCode::*;

use crate::common::*;
use crate::write::{params, rows, stream_of, table_uri, write};

fn spec() -> LanceAggregateSpec {
    let mut s = std::mem::MaybeUninit::<LanceAggregateSpec>::uninit();
    assert_eq!(lance_aggregate_init_v2(s.as_mut_ptr(), std::mem::size_of::<LanceAggregateSpec>()), 0);
    unsafe { s.assume_init() }
}

fn read(stream: &mut FFI_ArrowArrayStream) -> Vec<RecordBatch> {
    let s = std::mem::replace(stream, FFI_ArrowArrayStream::empty());
    ArrowArrayStreamReader::try_new(s).unwrap().map(|b| b.unwrap()).collect()
}

fn int(batches: &[RecordBatch], name: &str) -> Vec<Option<i64>> {
    batches
        .iter()
        .flat_map(|b| {
            let c = b.column_by_name(name).unwrap_or_else(|| panic!("no column {name}"));
            let c = c.as_any().downcast_ref::<Int64Array>().unwrap().clone();
            (0..c.len()).map(move |i| c.is_valid(i).then(|| c.value(i))).collect::<Vec<_>>()
        })
        .collect()
}

/// `lance_dataset_aggregate` of `s` fails with `code` and a message containing `needle`, and
/// hands out no stream.
fn refused_with(ds: &Ds, s: &LanceAggregateSpec, code: lance_host::LanceErrorCode, needle: &str) {
    let mut out = FFI_ArrowArrayStream::empty();
    let rc = lance_dataset_aggregate(ds.ptr(), s, &mut out, std::ptr::null_mut());
    assert_eq!(rc, code as i32, "{needle}: {}", last_message());
    assert!(last_message().contains(needle), "{needle}: {}", last_message());
    assert!(out.release.is_none(), "no stream on failure");
}

/// The partial states of `s` over every row-slice split of `rows` rows (at least `min_splits`),
/// merged by `lance_aggregate_merge`, which must take every partial stream.
fn merged_partials(ds: &Ds, s: &LanceAggregateSpec, rows: u64, min_splits: usize) -> Vec<RecordBatch> {
    let mut plan: *mut LanceSplitPlan = std::ptr::null_mut();
    assert_eq!(lance_dataset_plan_scan_slices(ds.ptr(), rows, &mut plan), 0, "{}", last_message());
    let n = lance_split_plan_count(plan);
    assert!(n >= min_splits, "{n} splits");
    let mut partials = Vec::new();
    for i in 0..n {
        let split = lance_split_plan_get(plan, i);
        let mut part = FFI_ArrowArrayStream::empty();
        assert_eq!(lance_dataset_aggregate_split(ds.ptr(), split, s, &mut part, std::ptr::null_mut()), 0, "{}", last_message());
        partials.push(part);
        lance_split_free(split);
    }
    lance_split_plan_free(plan);
    let mut merged = FFI_ArrowArrayStream::empty();
    assert_eq!(lance_aggregate_merge(partials.as_mut_ptr(), partials.len(), &mut merged), 0, "{}", last_message());
    assert!(partials.iter().all(|p| p.release.is_none()), "the merge took every partial stream");
    read(&mut merged)
}

#[test]
fn split_partials_merge_to_the_one_call_answer_and_bad_specs_are_refused() {
    let uri = table_uri("aggregate");
    let p = params(LanceWriteMode::LANCE_WRITE_CREATE);
    write(&uri, std::ptr::null(), vec![rows(0..1000), rows(1000..2000), rows(2000..3000)], &p).unwrap();
    let ds = Ds::open(&uri, 0);
    let pred = cstr("id % 10 = 7");
    assert_eq!(lance_dataset_delete(ds.ptr(), pred.as_ptr(), std::ptr::null(), std::ptr::null_mut(), std::ptr::null_mut()), 0, "{}", last_message());
    let ds = Ds::open(&uri, 0);
    let kept: Vec<i64> = (0..3000).filter(|i| i % 10 != 7).collect();

    // COUNT(*), COUNT(name) (NULL for every fifth id), SUM(id), MAX(id) named "top"
    let names = cstrs(&["", "name", "id", "id"]);
    let mut columns = names.ptrs.clone();
    columns[0] = std::ptr::null();
    let top = cstr("top");
    let aliases = [std::ptr::null(), std::ptr::null(), std::ptr::null(), top.as_ptr()];
    let functions = [1, 2, 3, 5];
    let mut s = spec();
    s.functions = functions.as_ptr();
    s.columns = columns.as_ptr();
    s.aliases = aliases.as_ptr();
    s.num_aggregates = 4;
    let check = |b: &[RecordBatch]| {
        assert_eq!(b.iter().map(|b| b.num_rows()).sum::<usize>(), 1);
        assert_eq!(int(b, "count(*)"), vec![Some(kept.len() as i64)]);
        assert_eq!(int(b, "count(name)"), vec![Some(kept.iter().filter(|i| *i % 5 != 0).count() as i64)]);
        assert_eq!(int(b, "sum(id)"), vec![Some(kept.iter().sum::<i64>())]);
        assert_eq!(int(b, "top"), vec![Some(2999)]);
    };
    let mut out = FFI_ArrowArrayStream::empty();
    assert_eq!(lance_dataset_aggregate(ds.ptr(), &s, &mut out, std::ptr::null_mut()), 0, "{}", last_message());
    check(&read(&mut out));

    // partial states of every sliced split, shipped as bytes, merged
    check(&merged_partials(&ds, &s, 400, 6));

    // bad specs: each refused with INVALID_ARGUMENT naming what is wrong
    let refused = |s: &LanceAggregateSpec, needle: &str| refused_with(&ds, s, LANCE_ERR_INVALID_ARGUMENT, needle);
    refused(&spec(), "at least one aggregate");
    let mut bad = s;
    bad.functions = std::ptr::null();
    refused(&bad, "spec->functions");
    let wrong = [99, 2, 3, 5];
    let mut bad = s;
    bad.functions = wrong.as_ptr();
    refused(&bad, "spec->functions[0] is 99");
    let mut bad = s;
    bad.num_aggregates = 10_000;
    refused(&bad, "at most 1024");
    let mut bad = s;
    bad.struct_size = 8;
    refused(&bad, "struct_size");
    let empty = cstr("");
    let mut bad = s;
    bad.filter_sql = empty.as_ptr();
    refused(&bad, "filter is empty");
    let mut out = FFI_ArrowArrayStream::empty();
    assert_eq!(lance_dataset_aggregate(ds.ptr(), std::ptr::null(), &mut out, std::ptr::null_mut()), LANCE_ERR_INVALID_ARGUMENT as i32);
    assert_eq!(lance_dataset_aggregate(std::ptr::null(), &s, &mut out, std::ptr::null_mut()), LANCE_ERR_INVALID_ARGUMENT as i32);
    assert_eq!(lance_dataset_aggregate(ds.ptr(), &s, std::ptr::null_mut(), std::ptr::null_mut()), LANCE_ERR_INVALID_ARGUMENT as i32);
    assert_eq!(lance_aggregate_init_v2(std::ptr::null_mut(), 64), LANCE_ERR_INVALID_ARGUMENT as i32);
    // merges of nothing, of released streams, of batches that are not partial states
    assert_eq!(lance_aggregate_merge(std::ptr::null_mut(), 0, &mut out), LANCE_ERR_INVALID_ARGUMENT as i32);
    let mut released = [FFI_ArrowArrayStream::empty()];
    assert_eq!(lance_aggregate_merge(released.as_mut_ptr(), 1, &mut out), LANCE_ERR_INVALID_ARGUMENT as i32);
    let mut plain = [stream_of(vec![rows(0..3)])];
    assert_eq!(lance_aggregate_merge(plain.as_mut_ptr(), 1, &mut out), LANCE_ERR_INVALID_ARGUMENT as i32);
    assert!(last_message().contains("not a partial-state batch"), "{}", last_message());
    assert!(plain[0].release.is_none(), "released on failure too");
    assert!(out.release.is_none());
}

/// Issue 62: an aggregate's argument may be an expression over the row (`spec->expressions`,
/// appended to the struct in 0.15). A caller compiled against the 64-byte struct of 0.12 still
/// aggregates columns; expressions that are refused say why.
#[test]
fn expression_arguments_are_aggregated_and_unsafe_ones_refused() {
    let uri = table_uri("aggregate_expr");
    let p = params(LanceWriteMode::LANCE_WRITE_CREATE);
    write(&uri, std::ptr::null(), vec![rows(0..1000), rows(1000..2000)], &p).unwrap();
    let ds = Ds::open(&uri, 0);
    // SUM(CAST(id AS DOUBLE) * 0.5), MAX(id) by column
    let expr = cstr("CAST(id AS DOUBLE) * 0.5");
    let id = cstr("id");
    let expressions = [expr.as_ptr(), std::ptr::null()];
    let columns = [std::ptr::null(), id.as_ptr()];
    let functions = [3, 5];
    let mut s = spec();
    s.functions = functions.as_ptr();
    s.columns = columns.as_ptr();
    s.expressions = expressions.as_ptr();
    s.num_aggregates = 2;
    let mut out = FFI_ArrowArrayStream::empty();
    assert_eq!(lance_dataset_aggregate(ds.ptr(), &s, &mut out, std::ptr::null_mut()), 0, "{}", last_message());
    let b = read(&mut out);
    let sum = b[0].column_by_name("sum(CAST(id AS DOUBLE) * 0.5)").expect("default name from the expression");
    let sum = sum.as_any().downcast_ref::<arrow::array::Float64Array>().unwrap().value(0);
    assert_eq!(sum, (0..2000).map(|i| i as f64 * 0.5).sum::<f64>());
    assert_eq!(int(&b, "max(id)"), vec![Some(1999)]);

    // the 0.12 layout (no expressions field): columns only, as before
    let mut old = s;
    old.struct_size = 64;
    old.expressions = 1 as *const *const std::os::raw::c_char; // beyond the old struct: never read
    let cols = [id.as_ptr(), id.as_ptr()];
    old.columns = cols.as_ptr();
    let mut out = FFI_ArrowArrayStream::empty();
    assert_eq!(lance_dataset_aggregate(ds.ptr(), &old, &mut out, std::ptr::null_mut()), 0, "{}", last_message());
    assert_eq!(int(&read(&mut out), "sum(id)"), vec![Some((0..2000).sum::<i64>())]);

    let refused = |s: &LanceAggregateSpec, code: lance_host::LanceErrorCode, needle: &str| refused_with(&ds, s, code, needle);
    // integer arithmetic: the engine would wrap an overflow
    let wraps = cstr("id * id");
    let e = [wraps.as_ptr(), std::ptr::null()];
    let mut bad = s;
    bad.expressions = e.as_ptr();
    refused(&bad, LANCE_ERR_NOT_SUPPORTED, "DECIMAL(38, 0)");
    // exact once cast
    let exact = cstr("CAST(id AS DECIMAL(38, 0)) * id");
    let e = [exact.as_ptr(), std::ptr::null()];
    let mut ok = s;
    ok.expressions = e.as_ptr();
    let mut out = FFI_ArrowArrayStream::empty();
    assert_eq!(lance_dataset_aggregate(ds.ptr(), &ok, &mut out, std::ptr::null_mut()), 0, "{}", last_message());
    let b = read(&mut out);
    let d = b[0].column(0).as_any().downcast_ref::<arrow::array::Decimal128Array>().expect("a decimal sum");
    assert_eq!(d.value(0), (0..2000i128).map(|i| i * i).sum::<i128>());
    // a column and an expression for one aggregate; an unknown column; not SQL; COUNT(*) with one
    let both = [id.as_ptr(), id.as_ptr()];
    let mut bad = s;
    bad.columns = both.as_ptr();
    refused(&bad, LANCE_ERR_INVALID_ARGUMENT, "not both");
    let unknown = cstr("CAST(nope AS DOUBLE) + 1");
    let e = [unknown.as_ptr(), std::ptr::null()];
    let mut bad = s;
    bad.expressions = e.as_ptr();
    refused(&bad, LANCE_ERR_INVALID_ARGUMENT, "nope");
    let garbage = cstr("id +* )");
    let e = [garbage.as_ptr(), std::ptr::null()];
    let mut bad = s;
    bad.expressions = e.as_ptr();
    refused(&bad, LANCE_ERR_INVALID_ARGUMENT, "aggregate 0");
    let star = [1, 5];
    let mut bad = s;
    bad.functions = star.as_ptr();
    refused(&bad, LANCE_ERR_INVALID_ARGUMENT, "COUNT(*) takes no column or expression");
}

#[test]
fn group_keys_may_be_expressions() {
    use arrow::array::{BooleanArray, StringArray};
    let uri = table_uri("aggregate_key_expr");
    let p = params(LanceWriteMode::LANCE_WRITE_CREATE);
    write(&uri, std::ptr::null(), vec![rows(0..1000), rows(1000..2000)], &p).unwrap();
    let ds = Ds::open(&uri, 0);
    // GROUP BY band = CASE ..., <the boolean expression's text>; COUNT(*)
    let band = cstr("band");
    let case = cstr("CASE WHEN id < 500 THEN 'low' ELSE 'high' END");
    let below = cstr("CAST(id AS DOUBLE) < 1500.0");
    let names = [band.as_ptr(), std::ptr::null()];
    let exprs = [case.as_ptr(), below.as_ptr()];
    let functions = [1];
    let mut s = spec();
    s.group_by = names.as_ptr();
    s.group_by_expressions = exprs.as_ptr();
    s.num_group_by = 2;
    s.functions = functions.as_ptr();
    s.num_aggregates = 1;
    let mut out = FFI_ArrowArrayStream::empty();
    assert_eq!(lance_dataset_aggregate(ds.ptr(), &s, &mut out, std::ptr::null_mut()), 0, "{}", last_message());
    let batches = read(&mut out);
    let b = arrow::compute::concat_batches(&batches[0].schema(), &batches).unwrap();
    assert_eq!(b.schema().field(0).name(), "band");
    assert_eq!(b.schema().field(1).name(), "CAST(id AS DOUBLE) < 1500.0");
    let keys = b.column(0).as_any().downcast_ref::<StringArray>().expect("a string key");
    let flags = b.column(1).as_any().downcast_ref::<BooleanArray>().expect("a boolean key");
    let mut got: Vec<(String, bool, i64)> =
        (0..b.num_rows()).map(|i| (keys.value(i).to_string(), flags.value(i), int(&[b.clone()], "count(*)")[i].unwrap())).collect();
    got.sort();
    let want = |band: &str, below: bool| (0..2000).filter(|i| ((*i < 500) == (band == "low")) && ((*i < 1500) == below)).count() as i64;
    assert_eq!(
        got,
        vec![("high".into(), false, want("high", false)), ("high".into(), true, want("high", true)), ("low".into(), true, want("low", true))]
    );

    // a 72-byte caller (expression arguments, no key expressions): the field is never read
    let mut old = s;
    old.struct_size = 72;
    old.group_by_expressions = 1 as *const *const std::os::raw::c_char;
    let id = cstr("id");
    let col = [id.as_ptr()];
    old.group_by = col.as_ptr();
    old.num_group_by = 1;
    let mut out = FFI_ArrowArrayStream::empty();
    assert_eq!(lance_dataset_aggregate(ds.ptr(), &old, &mut out, std::ptr::null_mut()), 0, "{}", last_message());
    assert_eq!(read(&mut out).iter().map(|b| b.num_rows()).sum::<usize>(), 2000);

    let refused = |s: &LanceAggregateSpec, code: lance_host::LanceErrorCode, needle: &str| refused_with(&ds, s, code, needle);
    // neither a name nor an expression
    let none = [std::ptr::null(), std::ptr::null()];
    let mut bad = s;
    bad.group_by = none.as_ptr();
    bad.group_by_expressions = none.as_ptr();
    refused(&bad, LANCE_ERR_INVALID_ARGUMENT, "spec->group_by[0] is NULL");
    // integer arithmetic; a list; an unknown column
    for (text, code, needle) in [
        ("id % 7", LANCE_ERR_NOT_SUPPORTED, "DECIMAL(38, 0)"),
        ("make_array(id, id)", LANCE_ERR_NOT_SUPPORTED, "grouping on"),
        ("nope || 'x'", LANCE_ERR_INVALID_ARGUMENT, "nope"),
    ] {
        let t = cstr(text);
        let e = [t.as_ptr(), below.as_ptr()];
        let mut bad = s;
        bad.group_by_expressions = e.as_ptr();
        refused(&bad, code, needle);
    }
}

/// A serialized plan: COUNT(*), SUM(id) named `n` and `total` over the rows whose `id` is at
/// least `min_id` (`FilterRel` over a `ReadRel` of `id` int64 and `name` string).
fn count_and_sum_plan(min_id: i64) -> Vec<u8> {
    use prost::Message;
    use substrait::proto::expression::field_reference::{ReferenceType, RootType};
    use substrait::proto::expression::literal::LiteralType;
    use substrait::proto::expression::reference_segment::{self, StructField};
    use substrait::proto::expression::{FieldReference, Literal, ReferenceSegment, RexType, ScalarFunction};
    use substrait::proto::extensions::simple_extension_declaration::{ExtensionFunction, MappingType};
    use substrait::proto::extensions::SimpleExtensionDeclaration;
    use substrait::proto::function_argument::ArgType;
    use substrait::proto::r#type::{Kind, Nullability, String as SString, Struct, I64};
    use substrait::proto::read_rel::{NamedTable, ReadType};
    use substrait::proto::{aggregate_rel, plan_rel, rel, AggregateFunction, AggregateRel, Expression, FilterRel};
    use substrait::proto::{FunctionArgument, NamedStruct, Plan, PlanRel, ReadRel, Rel, RelRoot, Type};
    let field = |i: i32| Expression {
        rex_type: Some(RexType::Selection(Box::new(FieldReference {
            reference_type: Some(ReferenceType::DirectReference(ReferenceSegment {
                reference_type: Some(reference_segment::ReferenceType::StructField(Box::new(StructField { field: i, child: None }))),
            })),
            root_type: Some(RootType::RootReference(Default::default())),
        }))),
    };
    let arg = |e: Expression| FunctionArgument { arg_type: Some(ArgType::Value(e)) };
    let nullable = Nullability::Nullable as i32;
    let read = ReadRel {
        base_schema: Some(NamedStruct {
            names: vec!["id".into(), "name".into()],
            r#struct: Some(Struct {
                types: vec![
                    Type { kind: Some(Kind::I64(I64 { nullability: nullable, ..Default::default() })) },
                    Type { kind: Some(Kind::String(SString { nullability: nullable, ..Default::default() })) },
                ],
                nullability: nullable,
                ..Default::default()
            }),
        }),
        read_type: Some(ReadType::NamedTable(NamedTable { names: vec!["any_name".into()], ..Default::default() })),
        ..Default::default()
    };
    let min = Expression { rex_type: Some(RexType::Literal(Literal { literal_type: Some(LiteralType::I64(min_id)), ..Default::default() })) };
    let condition = Expression {
        rex_type: Some(RexType::ScalarFunction(ScalarFunction { function_reference: 1, arguments: vec![arg(field(0)), arg(min)], ..Default::default() })),
    };
    let filter = FilterRel {
        input: Some(Box::new(Rel { rel_type: Some(rel::RelType::Read(Box::new(read))) })),
        condition: Some(Box::new(condition)),
        ..Default::default()
    };
    let measure = |anchor: u32, args: Vec<FunctionArgument>| aggregate_rel::Measure {
        measure: Some(AggregateFunction { function_reference: anchor, arguments: args, ..Default::default() }),
        filter: None,
    };
    let agg = AggregateRel {
        input: Some(Box::new(Rel { rel_type: Some(rel::RelType::Filter(Box::new(filter))) })),
        measures: vec![measure(2, vec![]), measure(3, vec![arg(field(0))])],
        ..Default::default()
    };
    let declare = |anchor: u32, name: &str| SimpleExtensionDeclaration {
        mapping_type: Some(MappingType::ExtensionFunction(ExtensionFunction { function_anchor: anchor, name: name.into(), ..Default::default() })),
    };
    #[allow(deprecated)]
    let plan = Plan {
        relations: vec![PlanRel {
            rel_type: Some(plan_rel::RelType::Root(RelRoot {
                input: Some(Rel { rel_type: Some(rel::RelType::Aggregate(Box::new(agg))) }),
                names: vec!["n".into(), "total".into()],
            })),
        }],
        extensions: vec![declare(1, "gte"), declare(2, "count"), declare(3, "sum")],
        ..Default::default()
    };
    plan.encode_to_vec()
}

#[test]
fn a_spec_may_be_a_substrait_plan() {
    let uri = table_uri("aggregate_substrait");
    let p = params(LanceWriteMode::LANCE_WRITE_CREATE);
    write(&uri, std::ptr::null(), vec![rows(0..1000), rows(1000..2500)], &p).unwrap();
    let ds = Ds::open(&uri, 0);
    let bytes = count_and_sum_plan(600);
    let kept: Vec<i64> = (600..2500).collect();
    let mut s = spec();
    s.substrait_plan = bytes.as_ptr();
    s.substrait_plan_len = bytes.len();
    let check = |b: &[RecordBatch]| {
        assert_eq!(b[0].schema().field(0).name(), "n");
        assert_eq!(int(b, "n"), vec![Some(kept.len() as i64)]);
        let total = b[0].column_by_name("total").expect("total");
        let total = arrow::compute::cast(total, &arrow::datatypes::DataType::Int64).unwrap();
        assert_eq!(total.as_any().downcast_ref::<Int64Array>().unwrap().value(0), kept.iter().sum::<i64>());
    };
    let mut out = FFI_ArrowArrayStream::empty();
    assert_eq!(lance_dataset_aggregate(ds.ptr(), &s, &mut out, std::ptr::null_mut()), 0, "{}", last_message());
    check(&read(&mut out));

    // the same plan's partial states of every sliced split merge to the same answer
    check(&merged_partials(&ds, &s, 700, 3));

    // a plan says the whole spec: fields beside it are refused, not merged with it
    let functions = [1];
    let mut both = s;
    both.functions = functions.as_ptr();
    both.num_aggregates = 1;
    refused_with(&ds, &both, LANCE_ERR_INVALID_ARGUMENT, "a plan says the whole spec");
    let f = cstr("id > 5");
    let mut both = s;
    both.filter_sql = f.as_ptr();
    refused_with(&ds, &both, LANCE_ERR_INVALID_ARGUMENT, "with a filter");
    let id = cstr("id");
    let keys = [id.as_ptr()];
    let mut both = s;
    both.group_by = keys.as_ptr();
    both.num_group_by = 1;
    refused_with(&ds, &both, LANCE_ERR_INVALID_ARGUMENT, "with group-by keys");
    // a split's call refuses the same way and hands out no stream
    let mut plan: *mut LanceSplitPlan = std::ptr::null_mut();
    assert_eq!(lance_dataset_plan_scan(ds.ptr(), 0, &mut plan), 0, "{}", last_message());
    let split = lance_split_plan_get(plan, 0);
    let mut part = FFI_ArrowArrayStream::empty();
    let rc = lance_dataset_aggregate_split(ds.ptr(), split, &both, &mut part, std::ptr::null_mut());
    assert_eq!(rc, LANCE_ERR_INVALID_ARGUMENT as i32, "{}", last_message());
    assert!(part.release.is_none());
    lance_split_free(split);
    lance_split_plan_free(plan);
    let mut dangling = s;
    dangling.substrait_plan = std::ptr::null();
    refused_with(&ds, &dangling, LANCE_ERR_INVALID_ARGUMENT, "spec->substrait_plan is NULL");
    let garbage = [0xffu8, 0xff, 0xff];
    let mut bad = s;
    bad.substrait_plan = garbage.as_ptr();
    bad.substrait_plan_len = garbage.len();
    refused_with(&ds, &bad, LANCE_ERR_INVALID_ARGUMENT, "not a Substrait plan");

    // an 80-byte caller (before 0.15) never has its plan fields read
    let functions = [1];
    let mut old = s;
    old.struct_size = 80;
    old.substrait_plan = 1 as *const u8;
    old.substrait_plan_len = usize::MAX;
    old.functions = functions.as_ptr();
    old.num_aggregates = 1;
    let mut out = FFI_ArrowArrayStream::empty();
    assert_eq!(lance_dataset_aggregate(ds.ptr(), &old, &mut out, std::ptr::null_mut()), 0, "{}", last_message());
    assert_eq!(int(&read(&mut out), "count(*)"), vec![Some(2500)]);
}
