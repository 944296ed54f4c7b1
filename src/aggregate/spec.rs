//! What an aggregate asks for, checked against a table's schema, and the partial states each
//! aggregate ships between a split and the merge.

use std::collections::HashMap;

use arrow_schema::{DataType, Field, Schema};
use lance::deps::datafusion::logical_expr::Expr;

use crate::error::{HostError, Result};

/// Most aggregates one spec may hold (each is at most three state columns).
pub const MAX_AGGREGATES: usize = 1024;
/// Most group-by columns one spec may hold.
pub const MAX_GROUP_BY: usize = 64;

/// An aggregate function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Function {
    /// COUNT(*): rows.
    CountStar = 1,
    /// COUNT(col): rows where the column is not NULL.
    Count = 2,
    Sum = 3,
    Min = 4,
    Max = 5,
    /// AVG, shipped as a sum and a count so partial states merge exactly.
    Avg = 6,
    /// COUNT(DISTINCT col): distinct non-NULL values, shipped as each group's set of values so
    /// partial states merge exactly (floats: every NaN one value, -0.0 equal to 0.0, as SQL
    /// engines count). Since 0.15.
    CountDistinct = 7,
    /// APPROX_COUNT_DISTINCT(col): a HyperLogLog estimate of the distinct non-NULL values
    /// (standard error 1.6 %), shipped as a 4 KiB sketch per group so partial states merge
    /// (`hll.rs`). Since 0.15.
    ApproxCountDistinct = 8,
}

impl Function {
    pub fn from_i32(v: i32) -> Option<Self> {
        Some(match v {
            1 => Function::CountStar,
            2 => Function::Count,
            3 => Function::Sum,
            4 => Function::Min,
            5 => Function::Max,
            6 => Function::Avg,
            7 => Function::CountDistinct,
            8 => Function::ApproxCountDistinct,
            _ => return None,
        })
    }

    pub fn sql_name(self) -> &'static str {
        match self {
            Function::CountStar | Function::Count => "count",
            Function::CountDistinct => "count_distinct",
            Function::ApproxCountDistinct => "approx_count_distinct",
            Function::Sum => "sum",
            Function::Min => "min",
            Function::Max => "max",
            Function::Avg => "avg",
        }
    }
}

/// One aggregate of a spec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Aggregate {
    pub function: Function,
    /// The column it aggregates (None for COUNT(*) and for an expression).
    pub column: Option<String>,
    /// The result column's name (None = `count(*)`, `sum(col)`, ...).
    pub alias: Option<String>,
    /// A Lance SQL expression over the row it aggregates instead of a column
    /// (`l_extendedprice * (1 - l_discount)`). Since 0.15.
    pub expression: Option<String>,
}

impl Aggregate {
    pub fn name(&self) -> String {
        match (&self.alias, self.argument()) {
            (Some(a), _) => a.clone(),
            (None, None) => "count(*)".to_string(),
            (None, Some(c)) => format!("{}({c})", self.function.sql_name()),
        }
    }

    /// What it aggregates as written: the column or the expression (None for COUNT(*)).
    pub fn argument(&self) -> Option<&str> {
        self.expression.as_deref().or(self.column.as_deref())
    }
}

/// An aggregate query over a table: group keys, aggregates, an optional Lance SQL filter.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AggregateSpec {
    /// The group keys' result column names: a column of the table, or the name of the key
    /// expression beside it in `group_expressions`.
    pub group_by: Vec<String>,
    /// Lance SQL expressions over the row grouped by instead of a column
    /// (`date_part('year', l_shipdate)`): empty, or one entry per `group_by` (None = that key
    /// is the column it names). Since 0.15.
    pub group_expressions: Vec<Option<String>>,
    pub aggregates: Vec<Aggregate>,
    pub filter: Option<String>,
}

/// The group keys of a spec given as two parallel lists, as the C ABI takes them: key `i` is the
/// column `names[i]` names, or the expression `expressions[i]` named `names[i]` (None: named
/// by its own text). Returns `AggregateSpec::group_by` and `group_expressions` (empty when no
/// key is an expression). `lists` names the two lists in messages.
pub fn group_keys(
    names: Vec<Option<String>>,
    expressions: Vec<Option<String>>,
    lists: (&str, &str),
) -> Result<(Vec<String>, Vec<Option<String>>)> {
    let group_by = names
        .into_iter()
        .zip(&expressions)
        .enumerate()
        .map(|(i, (name, expression))| {
            name.or_else(|| expression.clone()).ok_or_else(|| {
                HostError::invalid(format!("{}[{i}] is NULL: give a column, or an expression in {}[{i}]", lists.0, lists.1))
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let expressions = if expressions.iter().all(Option::is_none) { Vec::new() } else { expressions };
    Ok((group_by, expressions))
}

impl AggregateSpec {
    /// The expression of group key `i` (None: the key is a column).
    pub fn group_expression(&self, i: usize) -> Option<&str> {
        self.group_expressions.get(i).and_then(|e| e.as_deref())
    }
}

/// A group key resolved against the schema: its result field and, for an expression key, the
/// planned expression.
#[derive(Debug, Clone)]
pub struct GroupKey {
    pub field: Field,
    pub expression: Option<Expr>,
}

/// How an aggregated column's values add up and compare; decides its states and result type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// No column (COUNT(*)).
    None,
    Signed,
    Unsigned,
    Float,
    Decimal128 { precision: u8, scale: i8 },
    /// Compared only (MIN/MAX/COUNT): strings, binary, booleans, dates, times, timestamps.
    Ordered,
    /// COUNT only: any other type.
    Other,
}

impl Kind {
    pub fn of(t: &DataType) -> Kind {
        use DataType::*;
        match t {
            Int8 | Int16 | Int32 | Int64 => Kind::Signed,
            UInt8 | UInt16 | UInt32 | UInt64 => Kind::Unsigned,
            Float16 | Float32 | Float64 => Kind::Float,
            Decimal128(p, s) => Kind::Decimal128 { precision: *p, scale: *s },
            Utf8 | LargeUtf8 | Utf8View | Binary | LargeBinary | BinaryView | Boolean | Date32 | Date64 | Time32(_)
            | Time64(_) | Timestamp(_, _) | Duration(_) => Kind::Ordered,
            _ => Kind::Other,
        }
    }

    /// The tag the partial schema carries for this kind (read back by the merge).
    pub fn tag(&self) -> String {
        match self {
            Kind::None => "none".into(),
            Kind::Signed => "signed".into(),
            Kind::Unsigned => "unsigned".into(),
            Kind::Float => "float".into(),
            Kind::Decimal128 { precision, scale } => format!("decimal128:{precision}:{scale}"),
            Kind::Ordered => "ordered".into(),
            Kind::Other => "other".into(),
        }
    }

    pub fn from_tag(tag: &str) -> Option<Kind> {
        Some(match tag {
            "none" => Kind::None,
            "signed" => Kind::Signed,
            "unsigned" => Kind::Unsigned,
            "float" => Kind::Float,
            "ordered" => Kind::Ordered,
            "other" => Kind::Other,
            t => {
                let mut parts = t.strip_prefix("decimal128:")?.split(':');
                let precision = parts.next()?.parse().ok()?;
                let scale = parts.next()?.parse().ok()?;
                Kind::Decimal128 { precision, scale }
            }
        })
    }
}

/// What one partial-state column holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Rows counted (Int64, never NULL).
    Count,
    /// The sum of the non-NULL values: Decimal128(38, 0) for integers (exact), Float64 for
    /// floats, Decimal128(38, s) for decimals; NULL when there were none.
    Sum,
    /// The least / greatest non-NULL value (floats: NaN left out), in the column's type.
    Min,
    Max,
    /// Float MIN/MAX only: how many values were NaN (Int64), so that an all-NaN group is NaN.
    NaNs,
    /// COUNT(DISTINCT): the group's distinct non-NULL values, a list of the column's type.
    Distinct,
    /// APPROX_COUNT_DISTINCT: the group's HyperLogLog sketch (Binary, 4,096 registers).
    Hll,
}

impl State {
    pub fn suffix(self) -> &'static str {
        match self {
            State::Count => "count",
            State::Sum => "sum",
            State::Min => "min",
            State::Max => "max",
            State::NaNs => "nans",
            State::Distinct => "distinct",
            State::Hll => "hll",
        }
    }

    pub fn from_suffix(s: &str) -> Option<State> {
        Some(match s {
            "count" => State::Count,
            "sum" => State::Sum,
            "min" => State::Min,
            "max" => State::Max,
            "nans" => State::NaNs,
            "distinct" => State::Distinct,
            "hll" => State::Hll,
            _ => return None,
        })
    }
}

/// The metadata keys of a partial-state field.
pub const META_AGGREGATE: &str = "lance_host.aggregate";
pub const META_STATE: &str = "lance_host.state";
pub const META_KIND: &str = "lance_host.kind";
pub const META_NAME: &str = "lance_host.name";
pub const META_FUNCTION: &str = "lance_host.function";
/// The aggregated column (empty for COUNT(*)): partials of `sum(a) AS s` and `sum(b) AS s`
/// differ here, so a merge refuses to combine them. Since 0.15.
pub const META_INPUT: &str = "lance_host.input";

/// One aggregate resolved against the schema.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub aggregate: Aggregate,
    pub kind: Kind,
    /// The aggregated column's or expression's type (None for COUNT(*)).
    pub input: Option<DataType>,
    pub states: Vec<State>,
    /// The aggregated expression, planned (None for a column and for COUNT(*)).
    pub argument: Option<Expr>,
}

/// Plans an aggregate's expression argument against the schema: the expression and its type
/// (refusals name the aggregate, `what`).
pub type PlanExpression<'a> = &'a dyn Fn(&str, &str) -> Result<(Expr, DataType)>;

/// Check `spec` against `schema` and decide each aggregate's states. Every refusal names the
/// aggregate (by position and text) and why. A spec with expression arguments needs `plan`.
pub fn resolve(spec: &AggregateSpec, schema: &Schema) -> Result<Vec<Resolved>> {
    let (_, resolved) = resolve_with(spec, schema, &|_, what| {
        Err(HostError::not_supported(format!("{what}: expressions are planned against a table")))
    })?;
    Ok(resolved)
}

/// `resolve`, planning expression arguments and group keys with `plan`: the group keys and the
/// aggregates.
pub fn resolve_with(spec: &AggregateSpec, schema: &Schema, plan: PlanExpression) -> Result<(Vec<GroupKey>, Vec<Resolved>)> {
    if spec.aggregates.is_empty() {
        return Err(HostError::invalid("an aggregate spec needs at least one aggregate"));
    }
    if spec.aggregates.len() > MAX_AGGREGATES {
        return Err(HostError::invalid(format!(
            "{} aggregates in one spec; at most {MAX_AGGREGATES}",
            spec.aggregates.len()
        )));
    }
    if spec.group_by.len() > MAX_GROUP_BY {
        return Err(HostError::invalid(format!(
            "{} group-by columns in one spec; at most {MAX_GROUP_BY}",
            spec.group_by.len()
        )));
    }
    if let Some(f) = &spec.filter {
        if f.trim().is_empty() {
            return Err(HostError::invalid("the aggregate's filter is empty"));
        }
    }
    let field = |name: &str, what: &str| -> Result<&Field> {
        schema
            .field_with_name(name)
            .map_err(|_| HostError::invalid(format!("{what}: unknown column '{name}'")))
    };
    let keys = resolve_group_keys(spec, schema, plan)?;
    let mut names: std::collections::HashSet<String> = spec.group_by.iter().cloned().collect();
    let mut out = Vec::with_capacity(spec.aggregates.len());
    for (i, a) in spec.aggregates.iter().enumerate() {
        let what = format!("aggregate {i} ({})", a.name());
        let name = a.name();
        if name.is_empty() {
            return Err(HostError::invalid(format!("aggregate {i} has an empty alias")));
        }
        if !names.insert(name.clone()) {
            return Err(HostError::invalid(format!(
                "{what}: its result column '{name}' is already a group-by column or another aggregate's (give it an alias)"
            )));
        }
        if a.column.is_some() && a.expression.is_some() {
            return Err(HostError::invalid(format!("{what}: give a column or an expression, not both")));
        }
        let mut argument = None;
        let (kind, input) = match (a.function, &a.column, &a.expression) {
            (Function::CountStar, None, None) => (Kind::None, None),
            (Function::CountStar, _, _) => {
                return Err(HostError::invalid(format!(
                    "{what}: COUNT(*) takes no column or expression (got '{}'); use COUNT(col)",
                    a.argument().unwrap_or_default()
                )))
            }
            (_, None, None) => {
                return Err(HostError::invalid(format!("{what}: {} needs a column or an expression", a.function.sql_name())))
            }
            (_, Some(c), None) => {
                let f = field(c, &what)?;
                (Kind::of(f.data_type()), Some(f.data_type().clone()))
            }
            (_, None, Some(e)) => {
                if e.trim().is_empty() {
                    return Err(HostError::invalid(format!("{what}: the expression is empty")));
                }
                let (expr, t) = plan(e, &what)?;
                argument = Some(expr);
                (Kind::of(&t), Some(t))
            }
            (_, Some(_), Some(_)) => unreachable!("refused above"),
        };
        let type_name = input.as_ref().map(|t| t.to_string()).unwrap_or_default();
        let states = match (a.function, &kind) {
            (Function::CountStar | Function::Count, _) => vec![State::Count],
            (Function::CountDistinct, Kind::Signed | Kind::Unsigned | Kind::Float | Kind::Decimal128 { .. } | Kind::Ordered) => {
                vec![State::Distinct]
            }
            (
                Function::ApproxCountDistinct,
                Kind::Signed | Kind::Unsigned | Kind::Float | Kind::Decimal128 { .. } | Kind::Ordered,
            ) => vec![State::Hll],
            (Function::Sum, Kind::Signed | Kind::Unsigned | Kind::Float | Kind::Decimal128 { .. }) => vec![State::Sum],
            (Function::Avg, Kind::Signed | Kind::Unsigned | Kind::Float | Kind::Decimal128 { .. }) => {
                vec![State::Sum, State::Count]
            }
            (Function::Min, Kind::Float) => vec![State::Min, State::NaNs],
            (Function::Max, Kind::Float) => vec![State::Max, State::NaNs],
            (Function::Min, Kind::Signed | Kind::Unsigned | Kind::Decimal128 { .. } | Kind::Ordered) => vec![State::Min],
            (Function::Max, Kind::Signed | Kind::Unsigned | Kind::Decimal128 { .. } | Kind::Ordered) => vec![State::Max],
            (f, _) => {
                return Err(HostError::not_supported(format!(
                    "{what}: {} of a {type_name} value is not supported (SUM and AVG take numbers; MIN, MAX and \
                     COUNT(DISTINCT) and APPROX_COUNT_DISTINCT numbers, strings, binary, booleans, dates, times and timestamps; COUNT any column)",
                    f.sql_name().to_uppercase()
                )))
            }
        };
        out.push(Resolved { aggregate: a.clone(), kind, input, states, argument });
    }
    Ok((keys, out))
}

/// The group keys of `spec`: each a column of `schema` or an expression planned by `plan`, of a
/// type rows can be grouped by; names unique.
fn resolve_group_keys(spec: &AggregateSpec, schema: &Schema, plan: PlanExpression) -> Result<Vec<GroupKey>> {
    if !spec.group_expressions.is_empty() && spec.group_expressions.len() != spec.group_by.len() {
        return Err(HostError::invalid(format!(
            "{} group-by expressions for {} group keys (give one entry per key, None for a column)",
            spec.group_expressions.len(),
            spec.group_by.len()
        )));
    }
    let mut seen = std::collections::HashSet::new();
    let mut keys = Vec::with_capacity(spec.group_by.len());
    for (i, g) in spec.group_by.iter().enumerate() {
        if g.is_empty() {
            return Err(HostError::invalid(format!("group key {i} has an empty name")));
        }
        if !seen.insert(g.as_str()) {
            return Err(HostError::invalid(format!("group key '{g}' is given more than once")));
        }
        let (field, expression) = match spec.group_expression(i) {
            None => {
                let f = schema.field_with_name(g).map_err(|_| HostError::invalid(format!("group by: unknown column '{g}'")))?;
                (f.clone(), None)
            }
            Some(text) => {
                let what = format!("group key {i} ({g} = {text})");
                if text.trim().is_empty() {
                    return Err(HostError::invalid(format!("{what}: the expression is empty")));
                }
                let (expr, t) = plan(text, &what)?;
                let meta = HashMap::from([(META_INPUT.to_string(), text.to_string())]);
                (Field::new(g, t, true).with_metadata(meta), Some(expr))
            }
        };
        let t = field.data_type();
        if matches!(Kind::of(t), Kind::Other) && !matches!(t, DataType::Dictionary(_, _)) {
            return Err(HostError::not_supported(format!(
                "group by '{g}': grouping on {t} values is not supported (group on numbers, strings, binary, booleans, \
                 dates, times, timestamps or dictionaries)"
            )));
        }
        keys.push(GroupKey { field, expression });
    }
    Ok(keys)
}

/// The type of a state column for an aggregate of `kind` over `input`.
pub fn state_type(state: State, kind: &Kind, input: Option<&DataType>) -> DataType {
    match (state, kind) {
        (State::Count | State::NaNs, _) => DataType::Int64,
        (State::Hll, _) => DataType::Binary,
        (State::Distinct, _) => DataType::List(std::sync::Arc::new(Field::new("item", input.cloned().unwrap_or(DataType::Null), true))),
        (State::Sum, Kind::Signed | Kind::Unsigned) => DataType::Decimal128(38, 0),
        (State::Sum, Kind::Float) => DataType::Float64,
        (State::Sum, Kind::Decimal128 { scale, .. }) => DataType::Decimal128(38, *scale),
        (State::Min | State::Max, _) => input.cloned().unwrap_or(DataType::Null),
        (State::Sum, _) => DataType::Null, // refused by `resolve`
    }
}

/// The name of aggregate `i`'s `state` column, beside the group-by columns `groups`: `agg{i}_…`,
/// with as many leading `_` as it takes to start unlike every group-by column (a table may
/// have a column named `agg0_count`).
pub fn state_column(groups: &[String], i: usize, state: State) -> String {
    let mut prefix = String::from("agg");
    while groups.iter().any(|g| g.starts_with(&prefix)) {
        prefix.insert(0, '_');
    }
    format!("{prefix}{i}_{}", state.suffix())
}

/// The result type of an aggregate.
pub fn result_type(r: &Resolved) -> DataType {
    match (r.aggregate.function, &r.kind) {
        (Function::CountStar | Function::Count | Function::CountDistinct | Function::ApproxCountDistinct, _) => DataType::Int64,
        (Function::Sum, Kind::Signed) => DataType::Int64,
        (Function::Sum, Kind::Unsigned) => DataType::UInt64,
        (Function::Sum, Kind::Float) => DataType::Float64,
        (Function::Sum, Kind::Decimal128 { scale, .. }) => DataType::Decimal128(38, *scale),
        (Function::Avg, Kind::Decimal128 { precision, scale }) => DataType::Decimal128(*precision, *scale),
        (Function::Avg, _) => DataType::Float64,
        (Function::Min | Function::Max, _) => r.input.clone().unwrap_or(DataType::Null),
        (Function::Sum, _) => DataType::Null,
    }
}
