//! Substrait plans (`SetSubstraitPlan`): the relations that map onto lance-host calls, turned
//! into one scan or one aggregate of a table.
//!
//! Accepted, from the root down: `FetchRel` (offset 0) over `AggregateRel` (one grouping set of
//! column references; measures `count` (no argument = COUNT(*); `DISTINCT` on one argument),
//! `sum`, `min`, `max`, `avg`, of a column or of an expression) or over `ProjectRel`s (column
//! references, and expressions an aggregate above takes) and `FilterRel`s over one `ReadRel`
//! of a named table (its projection mask and filter included). `RelRoot.names` rename the
//! output. Expressions become Lance SQL: column references, literals (booleans, integers,
//! finite floats, strings, dates, decimals), the comparison, boolean, null-test and
//! arithmetic functions (`equal`, `not_equal`, `lt`, `lte`, `gt`, `gte`, `and`, `or`, `not`,
//! `is_null`, `is_not_null`, `is_nan`, `between`, `add`, `subtract`, `multiply`, `divide`) and
//! `IN` lists. Comparisons keep Substrait's (IEEE) meaning on floats: a NaN compares false
//! (Lance orders NaN above or below every number), so `<`, `<=`, `>`, `>=` of a float are
//! written with `NOT isnan(...)`. Anything else is `NOT_IMPLEMENTED` naming it; integer
//! arithmetic too (Lance would wrap an overflow).

use std::collections::HashMap;

use prost::Message;
use substrait::proto::aggregate_function::AggregationInvocation;
use substrait::proto::extensions::simple_extension_declaration::MappingType;
use substrait::proto::fetch_rel::{CountMode, OffsetMode};
use substrait::proto::plan_rel::RelType as PlanRelType;
use substrait::proto::r#type::Kind;
use substrait::proto::read_rel::ReadType;
use substrait::proto::rel::RelType;
use substrait::proto::rel_common::EmitKind;
use substrait::proto::{Expression, Plan, Rel, RelCommon};

use crate::expr::{literal_i64, quote, Col, Ctx};
use crate::{invalid, unsupported, Result};

/// The table a plan's `ReadRel` names: its namespace path and its name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableRef {
    pub namespace: Vec<String>,
    pub name: String,
}

/// What a column of the table is, for the translation: a floating-point column's ordering
/// comparisons leave NaN out (IEEE), an integer column's arithmetic is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ColumnKind {
    pub float: bool,
    pub integer: bool,
}

impl ColumnKind {
    /// The kind of each top-level column of a table's Arrow schema, for `parse_with`.
    pub fn of_schema(schema: &arrow_schema::Schema) -> HashMap<String, ColumnKind> {
        use arrow_schema::DataType;
        schema
            .fields()
            .iter()
            .map(|f| {
                let t = f.data_type();
                let kind = ColumnKind {
                    float: matches!(t, DataType::Float16 | DataType::Float32 | DataType::Float64),
                    integer: t.is_integer(),
                };
                (f.name().clone(), kind)
            })
            .collect()
    }
}

/// lance-host aggregate functions (`LanceAggregateFunction`).
pub const AGG_COUNT_STAR: i32 = 1;
pub const AGG_COUNT: i32 = 2;
pub const AGG_SUM: i32 = 3;
pub const AGG_MIN: i32 = 4;
pub const AGG_MAX: i32 = 5;
pub const AGG_AVG: i32 = 6;
pub const AGG_COUNT_DISTINCT: i32 = 7;

#[derive(Clone, Debug, PartialEq)]
pub struct Measure {
    pub function: i32,
    pub column: Option<String>,
    pub expression: Option<String>,
}

#[derive(Debug, PartialEq)]
pub enum Shape {
    Scan {
        columns: Vec<String>,
    },
    Aggregate {
        group_by: Vec<GroupKey>,
        measures: Vec<Measure>,
    },
}

/// A group key of an aggregate plan: a column, or a Lance SQL expression named by its text
/// (the plan's output names rename it).
#[derive(Debug, PartialEq)]
pub struct GroupKey {
    pub name: String,
    pub expression: Option<String>,
}

#[derive(Debug, PartialEq)]
pub struct PlanQuery {
    pub table: TableRef,
    pub shape: Shape,
    pub filter: Option<String>,
    pub limit: Option<i64>,
    /// Output names from `RelRoot.names` (None: the columns' own names).
    pub names: Option<Vec<String>>,
}

struct Stage {
    table: TableRef,
    cols: Vec<Col>,
    filters: Vec<String>,
    aggregate: Option<(Vec<GroupKey>, Vec<Measure>)>,
    limit: Option<i64>,
}

/// A plan's query, with the kind of each column taken from the plan's `ReadRel.base_schema`
/// (a host that declares a column's type wrongly gets the meaning of the declared type; see
/// `parse_with`).
pub fn parse(bytes: &[u8]) -> Result<PlanQuery> {
    parse_with(bytes, None)
}

/// A plan's query; `columns` (when given) are the table's own columns: a `base_schema` name
/// that is not among them is refused, and each column's kind is the table's, whatever type the
/// plan declares for it.
pub fn parse_with(bytes: &[u8], columns: Option<&HashMap<String, ColumnKind>>) -> Result<PlanQuery> {
    let plan = Plan::decode(bytes)
        .map_err(|e| invalid(format!("Substrait: not a Substrait plan: {e}")))?;
    let functions: HashMap<u32, String> = plan
        .extensions
        .iter()
        .filter_map(|d| match &d.mapping_type {
            Some(MappingType::ExtensionFunction(f)) => Some((
                f.function_anchor,
                f.name.split(':').next().unwrap_or("").to_ascii_lowercase(),
            )),
            _ => None,
        })
        .collect();
    let [relation] = plan.relations.as_slice() else {
        return Err(unsupported(format!(
            "a plan of {} relations (one is taken)",
            plan.relations.len()
        )));
    };
    let (rel, names) = match &relation.rel_type {
        Some(PlanRelType::Root(root)) => (
            root.input
                .as_ref()
                .ok_or_else(|| invalid("Substrait RelRoot without input"))?,
            Some(root.names.clone()),
        ),
        Some(PlanRelType::Rel(rel)) => (rel, None),
        None => return Err(invalid("Substrait plan relation without a relation")),
    };
    let ctx = Ctx { functions, columns };
    let stage = ctx.rel(rel)?;
    let filter = match stage.filters.len() {
        0 => None,
        1 => Some(stage.filters[0].clone()),
        _ => Some(
            stage
                .filters
                .iter()
                .map(|f| format!("({f})"))
                .collect::<Vec<_>>()
                .join(" AND "),
        ),
    };
    let shape = match stage.aggregate {
        Some((group_by, measures)) => {
            // the output must be the aggregate's own (group keys, then measures) as it is
            Shape::Aggregate { group_by, measures }
        }
        None => {
            let mut columns = Vec::new();
            for c in &stage.cols {
                match &c.column {
                    Some(name) if !columns.contains(name) => columns.push(name.clone()),
                    Some(name) => {
                        return Err(unsupported(format!("reading column `{name}` twice")))
                    }
                    None => {
                        return Err(unsupported(format!(
                            "an expression in the output (`{}`)",
                            c.sql
                        )))
                    }
                }
            }
            Shape::Scan { columns }
        }
    };
    let names = names.filter(|n| !n.is_empty());
    if let Some(n) = &names {
        let width = match &shape {
            Shape::Scan { columns } => columns.len(),
            Shape::Aggregate { group_by, measures } => group_by.len() + measures.len(),
        };
        if n.len() != width {
            return Err(unsupported(format!(
                "RelRoot names for nested types ({} names for {width} columns)",
                n.len()
            )));
        }
    }
    Ok(PlanQuery {
        table: stage.table,
        shape,
        filter,
        limit: stage.limit,
        names,
    })
}

fn emit(common: &Option<RelCommon>, cols: Vec<Col>) -> Result<Vec<Col>> {
    match common.as_ref().and_then(|c| c.emit_kind.as_ref()) {
        Some(EmitKind::Emit(e)) => e
            .output_mapping
            .iter()
            .map(|i| {
                cols.get(*i as usize)
                    .cloned()
                    .ok_or_else(|| invalid(format!("Substrait emit of field {i} out of range")))
            })
            .collect(),
        _ => Ok(cols),
    }
}

impl Ctx<'_> {
    fn rel(&self, rel: &Rel) -> Result<Stage> {
        let kind = rel
            .rel_type
            .as_ref()
            .ok_or_else(|| invalid("Substrait relation without a type"))?;
        match kind {
            RelType::Read(read) => {
                let Some(ReadType::NamedTable(named)) = &read.read_type else {
                    return Err(unsupported("a ReadRel of anything but a named table"));
                };
                if named.names.is_empty() {
                    return Err(invalid("Substrait NamedTable without a name"));
                }
                let (namespace, name) = named.names.split_at(named.names.len() - 1);
                let table = TableRef {
                    namespace: namespace.to_vec(),
                    name: name[0].clone(),
                };
                let schema = read
                    .base_schema
                    .as_ref()
                    .ok_or_else(|| invalid("Substrait ReadRel without base_schema"))?;
                let types = schema
                    .r#struct
                    .as_ref()
                    .map(|s| s.types.clone())
                    .unwrap_or_default();
                // top-level names only: nested struct fields add names after their parent
                let mut base = Vec::new();
                let mut name_iter = schema.names.iter();
                for t in &types {
                    let n = name_iter.next().ok_or_else(|| {
                        invalid("Substrait base_schema with fewer names than types")
                    })?;
                    if matches!(t.kind, Some(Kind::Struct(_))) {
                        return Err(unsupported(format!(
                            "a struct column (`{n}`) in the base schema"
                        )));
                    }
                    let kind = match self.columns {
                        Some(columns) => *columns.get(n.as_str()).ok_or_else(|| {
                            invalid(format!(
                                "Substrait base_schema names `{n}`, which is not a column of the table"
                            ))
                        })?,
                        None => ColumnKind {
                            float: matches!(t.kind, Some(Kind::Fp32(_)) | Some(Kind::Fp64(_))),
                            integer: matches!(
                                t.kind,
                                Some(Kind::I8(_))
                                    | Some(Kind::I16(_))
                                    | Some(Kind::I32(_))
                                    | Some(Kind::I64(_))
                            ),
                        },
                    };
                    let ColumnKind { float, integer } = kind;
                    base.push(Col {
                        sql: quote(n),
                        column: Some(n.clone()),
                        float,
                        integer,
                    });
                }
                let mut filters = Vec::new();
                for f in [&read.filter, &read.best_effort_filter]
                    .into_iter()
                    .flatten()
                {
                    filters.push(self.expr(f, &base)?.sql);
                }
                let mut cols = match &read.projection {
                    Some(mask) => {
                        let select = mask
                            .select
                            .as_ref()
                            .map(|s| s.struct_items.clone())
                            .unwrap_or_default();
                        select
                            .iter()
                            .map(|item| {
                                if item.child.is_some() {
                                    return Err(unsupported("a projection into nested fields"));
                                }
                                base.get(item.field as usize).cloned().ok_or_else(|| {
                                    invalid("Substrait projection field out of range")
                                })
                            })
                            .collect::<Result<Vec<_>>>()?
                    }
                    None => base,
                };
                cols = emit(&read.common, cols)?;
                Ok(Stage {
                    table,
                    cols,
                    filters,
                    aggregate: None,
                    limit: None,
                })
            }
            RelType::Filter(filter) => {
                let mut stage = self.rel(
                    filter
                        .input
                        .as_ref()
                        .ok_or_else(|| invalid("Substrait FilterRel without input"))?,
                )?;
                if stage.aggregate.is_some() {
                    return Err(unsupported("a FilterRel above an aggregate (HAVING)"));
                }
                if stage.limit.is_some() {
                    return Err(unsupported("a FilterRel above a FetchRel"));
                }
                let condition = filter
                    .condition
                    .as_ref()
                    .ok_or_else(|| invalid("Substrait FilterRel without condition"))?;
                stage.filters.push(self.expr(condition, &stage.cols)?.sql);
                stage.cols = emit(&filter.common, stage.cols)?;
                Ok(stage)
            }
            RelType::Project(project) => {
                let mut stage = self.rel(
                    project
                        .input
                        .as_ref()
                        .ok_or_else(|| invalid("Substrait ProjectRel without input"))?,
                )?;
                if stage.aggregate.is_some() || stage.limit.is_some() {
                    return Err(unsupported("a ProjectRel above an aggregate or a FetchRel"));
                }
                let mut cols = stage.cols.clone();
                for e in &project.expressions {
                    cols.push(self.expr(e, &stage.cols)?);
                }
                stage.cols = emit(&project.common, cols)?;
                Ok(stage)
            }
            RelType::Aggregate(agg) => {
                let mut stage = self.rel(
                    agg.input
                        .as_ref()
                        .ok_or_else(|| invalid("Substrait AggregateRel without input"))?,
                )?;
                if stage.aggregate.is_some() || stage.limit.is_some() {
                    return Err(unsupported(
                        "an AggregateRel above an aggregate or a FetchRel",
                    ));
                }
                let keys: Vec<&Expression> = match agg.groupings.as_slice() {
                    [] => Vec::new(),
                    [g] => {
                        if !g.expression_references.is_empty() {
                            g.expression_references
                                .iter()
                                .map(|i| {
                                    agg.grouping_expressions.get(*i as usize).ok_or_else(|| {
                                        invalid("Substrait grouping reference out of range")
                                    })
                                })
                                .collect::<Result<_>>()?
                        } else {
                            #[allow(deprecated)]
                            g.grouping_expressions.iter().collect()
                        }
                    }
                    _ => {
                        return Err(unsupported(
                            "several grouping sets (ROLLUP, CUBE, GROUPING SETS)",
                        ))
                    }
                };
                let mut group_by = Vec::new();
                let mut out = Vec::new();
                for k in keys {
                    let c = self.expr(k, &stage.cols)?;
                    group_by.push(GroupKey {
                        name: c.column.clone().unwrap_or_else(|| c.sql.clone()),
                        expression: c.column.is_none().then(|| c.sql.clone()),
                    });
                    out.push(c);
                }
                let mut measures = Vec::new();
                for m in &agg.measures {
                    if m.filter.is_some() {
                        return Err(unsupported("a measure with a filter (FILTER (WHERE ...))"));
                    }
                    let f = m
                        .measure
                        .as_ref()
                        .ok_or_else(|| invalid("Substrait measure without a function"))?;
                    let name = self.function_name(f.function_reference)?;
                    let distinct = f.invocation == AggregationInvocation::Distinct as i32;
                    let args = f
                        .arguments
                        .iter()
                        .map(|a| self.arg(a, &stage.cols))
                        .collect::<Result<Vec<_>>>()?;
                    let function = match (name.as_str(), args.len(), distinct) {
                        ("count", 0, false) => AGG_COUNT_STAR,
                        ("count", 1, false) => AGG_COUNT,
                        ("count", 1, true) => AGG_COUNT_DISTINCT,
                        ("sum", 1, false) => AGG_SUM,
                        ("min", 1, _) => AGG_MIN,
                        ("max", 1, _) => AGG_MAX,
                        ("avg" | "mean", 1, false) => AGG_AVG,
                        _ => {
                            return Err(unsupported(format!(
                                "the aggregate `{name}` with {} argument(s){}",
                                args.len(),
                                if distinct { " DISTINCT" } else { "" }
                            )))
                        }
                    };
                    let (column, expression) = match args.first() {
                        None => (None, None),
                        Some(c) => match &c.column {
                            Some(name) => (Some(name.clone()), None),
                            None if function == AGG_COUNT_DISTINCT => {
                                return Err(unsupported("COUNT(DISTINCT) of an expression"))
                            }
                            None => (None, Some(c.sql.clone())),
                        },
                    };
                    measures.push(Measure {
                        function,
                        column,
                        expression,
                    });
                    out.push(Col {
                        sql: String::new(),
                        column: None,
                        float: false,
                        integer: false,
                    });
                }
                stage.cols = emit(&agg.common, out)?;
                if stage.cols.len() != group_by.len() + measures.len() {
                    return Err(unsupported("an emit that reorders an aggregate's output"));
                }
                stage.aggregate = Some((group_by, measures));
                Ok(stage)
            }
            RelType::Fetch(fetch) => {
                let mut stage = self.rel(
                    fetch
                        .input
                        .as_ref()
                        .ok_or_else(|| invalid("Substrait FetchRel without input"))?,
                )?;
                let offset = match &fetch.offset_mode {
                    #[allow(deprecated)]
                    Some(OffsetMode::Offset(o)) => *o,
                    Some(OffsetMode::OffsetExpr(e)) => literal_i64(e)
                        .ok_or_else(|| unsupported("a FetchRel offset that is not a literal"))?,
                    None => 0,
                };
                if offset != 0 {
                    return Err(unsupported("a FetchRel with an offset"));
                }
                let count = match &fetch.count_mode {
                    #[allow(deprecated)]
                    Some(CountMode::Count(c)) => Some(*c),
                    Some(CountMode::CountExpr(e)) => Some(
                        literal_i64(e)
                            .ok_or_else(|| unsupported("a FetchRel count that is not a literal"))?,
                    ),
                    None => None,
                };
                if let Some(c) = count {
                    if c < 0 {
                        // -1: all rows
                        if c != -1 {
                            return Err(invalid(format!("Substrait FetchRel count {c}")));
                        }
                    } else {
                        stage.limit = Some(stage.limit.map_or(c, |l| l.min(c)));
                    }
                }
                stage.cols = emit(&fetch.common, stage.cols)?;
                Ok(stage)
            }
            RelType::Sort(_) => Err(unsupported("SortRel (ORDER BY)")),
            RelType::Join(_)
            | RelType::HashJoin(_)
            | RelType::MergeJoin(_)
            | RelType::NestedLoopJoin(_)
            | RelType::Cross(_) => Err(unsupported("a join")),
            RelType::Set(_) => Err(unsupported("SetRel (UNION, INTERSECT, EXCEPT)")),
            RelType::Window(_) => Err(unsupported("a window relation")),
            RelType::Write(_) | RelType::Ddl(_) | RelType::Update(_) => {
                Err(unsupported("a write relation"))
            }
            _ => Err(unsupported("this relation type")),
        }
    }
}
