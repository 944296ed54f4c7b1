"""Substrait plans for tests, written with the `substrait` package's protobuf classes (filters
also with pyarrow's own Substrait producer): the plans the ADBC driver and the library's aggregate
specs are given."""

import datetime
import decimal

import pyarrow as pa
import pyarrow.substrait as pa_substrait
from substrait.proto import (
    AggregateFunction, AggregateRel, Expression, ExtendedExpression, FunctionArgument, NamedStruct, Plan, PlanRel,
    ReadRel, Rel, RelRoot, SimpleExtensionDeclaration, Type)


def sx_field(i):
    """A reference to field `i` of the input."""
    return Expression(selection=Expression.FieldReference(
        direct_reference=Expression.ReferenceSegment(struct_field=Expression.ReferenceSegment.StructField(field=i)),
        root_reference=Expression.FieldReference.RootReference()))


def sx_call(anchor, *args):
    """A call of the function declared as `anchor`."""
    return Expression(scalar_function=Expression.ScalarFunction(
        function_reference=anchor, arguments=[FunctionArgument(value=a) for a in args]))


def sx_decimal(value: str, precision: int, scale: int):
    """A decimal literal: `value` as text, stored unscaled in 16 little-endian bytes."""
    unscaled = int(decimal.Decimal(value).scaleb(scale))
    return Expression(literal=Expression.Literal(decimal=Expression.Literal.Decimal(
        value=unscaled.to_bytes(16, "little", signed=True), precision=precision, scale=scale)))


def sx_date(d):
    """A date literal (days since 1970-01-01)."""
    return Expression(literal=Expression.Literal(date=(d - datetime.date(1970, 1, 1)).days))


def sx_fp64(v):
    return Expression(literal=Expression.Literal(fp64=v))


def sx_type(t: pa.DataType):
    """The Substrait type of an Arrow column type."""
    if pa.types.is_decimal(t):
        return Type(decimal=Type.Decimal(precision=t.precision, scale=t.scale))
    simple = {pa.int8(): ("i8", Type.I8), pa.int16(): ("i16", Type.I16), pa.int32(): ("i32", Type.I32),
              pa.int64(): ("i64", Type.I64), pa.float32(): ("fp32", Type.FP32), pa.float64(): ("fp64", Type.FP64),
              pa.string(): ("string", Type.String), pa.bool_(): ("bool", Type.Boolean), pa.date32(): ("date", Type.Date)}
    if t in simple:
        kind, cls = simple[t]
        return Type(**{kind: cls()})
    if pa.types.is_timestamp(t):
        return Type(precision_timestamp=Type.PrecisionTimestamp(precision={"s": 0, "ms": 3, "us": 6, "ns": 9}[t.unit]))
    raise ValueError(f"no Substrait type for {t}")


def sx_read(table_name, schema, filter_expr=None, project=None, types=None):
    """A ReadRel of the named table with `schema` as its base schema (`types` overrides the
    declared type of some columns: {name: Substrait Type})."""
    types = types or {}
    read = ReadRel(base_schema=NamedStruct(names=schema.names, struct=Type.Struct(
        types=[types.get(f.name) or sx_type(f.type) for f in schema])), named_table=ReadRel.NamedTable(names=[table_name]))
    if filter_expr is not None:
        read.filter.CopyFrom(filter_expr)
    if project is not None:
        read.projection.CopyFrom(Expression.MaskExpression(select=Expression.MaskExpression.StructSelect(
            struct_items=[Expression.MaskExpression.StructItem(field=i) for i in project])))
    return Rel(read=read)


def sx_measure(anchor, *args, distinct=False):
    """An aggregate measure calling the function declared as `anchor`."""
    return AggregateRel.Measure(measure=AggregateFunction(
        function_reference=anchor, arguments=[FunctionArgument(value=a) for a in args],
        invocation=AggregateFunction.AGGREGATION_INVOCATION_DISTINCT if distinct else
        AggregateFunction.AGGREGATION_INVOCATION_ALL))


def sx_plan(rel, names, functions):
    """A plan whose root is `rel`, output `names`, declaring `functions` ({anchor: name})."""
    plan = Plan(relations=[PlanRel(root=RelRoot(input=rel, names=names))])
    for anchor, name in functions.items():
        plan.extensions.append(SimpleExtensionDeclaration(extension_function=SimpleExtensionDeclaration.ExtensionFunction(
            function_anchor=anchor, name=name)))
    return plan


def pyarrow_filter(expr, schema):
    """A filter as pyarrow's Substrait producer writes it: the expression and its functions."""
    ext = ExtendedExpression()
    ext.ParseFromString(bytes(pa_substrait.serialize_expressions([expr], ["cond"], schema)))
    functions = {d.extension_function.function_anchor: d.extension_function.name for d in ext.extensions}
    return ext.referred_expr[0].expression, functions
