"""Arrow types as the Spark data sources of `lance_host.spark` hand them to Spark: the Spark type
of each Lance column, the Arrow type Spark receives, the conversion of a batch, and the Spark
schema of a table's columns (a vector's dimension kept as field metadata)."""

from __future__ import annotations

from typing import Optional

import pyarrow as pa
from pyspark.sql import types as T

from lance_host._vectors import DIM_KEY


def spark_type(t: pa.DataType) -> Optional["T.DataType"]:
    """The Spark type a column of Arrow type `t` is handed over as (None: not supported)."""
    if pa.types.is_boolean(t):
        return T.BooleanType()
    if pa.types.is_int8(t):
        return T.ByteType()
    if pa.types.is_int16(t) or pa.types.is_uint8(t):
        return T.ShortType()
    if pa.types.is_int32(t) or pa.types.is_uint16(t):
        return T.IntegerType()
    if pa.types.is_int64(t) or pa.types.is_uint32(t) or pa.types.is_uint64(t):
        return T.LongType()
    if pa.types.is_float16(t) or pa.types.is_float32(t):
        return T.FloatType()
    if pa.types.is_float64(t):
        return T.DoubleType()
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return T.StringType()
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return T.BinaryType()
    if pa.types.is_date32(t):
        return T.DateType()
    if pa.types.is_timestamp(t):
        return T.TimestampType() if t.tz else T.TimestampNTZType()
    if pa.types.is_decimal(t):
        return T.DecimalType(t.precision, t.scale)
    if pa.types.is_fixed_size_list(t) or pa.types.is_list(t) or pa.types.is_large_list(t):
        inner = spark_type(t.value_type)
        return None if inner is None else T.ArrayType(inner, True)
    if pa.types.is_struct(t):
        fields = [T.StructField(f.name, spark_type(f.type), True) for f in t]
        return None if any(f.dataType is None for f in fields) else T.StructType(fields)
    if pa.types.is_dictionary(t):
        return spark_type(t.value_type)
    return None


def arrow_type_for(t: pa.DataType) -> pa.DataType:
    """The Arrow type Spark receives for a column of type `t` (see `spark_type`)."""
    if pa.types.is_uint8(t):
        return pa.int16()
    if pa.types.is_uint16(t):
        return pa.int32()
    if pa.types.is_uint32(t) or pa.types.is_uint64(t):
        return pa.int64()
    if pa.types.is_float16(t):
        return pa.float32()
    if pa.types.is_large_string(t):
        return pa.string()
    if pa.types.is_large_binary(t):
        return pa.binary()
    if pa.types.is_fixed_size_list(t) or pa.types.is_large_list(t):
        return pa.list_(arrow_type_for(t.value_type))
    if pa.types.is_list(t):
        return pa.list_(arrow_type_for(t.value_type))
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, arrow_type_for(f.type)) for f in t])
    if pa.types.is_dictionary(t):
        return arrow_type_for(t.value_type)
    return t


def for_spark(batch: pa.RecordBatch) -> pa.RecordBatch:
    """Convert a batch's columns to the types Spark is told about (uint64 above 2^63 - 1 fails)."""
    cols = []
    for col, f in zip(batch.columns, batch.schema):
        want = arrow_type_for(f.type)
        cols.append(col if want == f.type else col.cast(want, safe=True))
    return pa.RecordBatch.from_arrays(cols, names=batch.schema.names)


def _struct_of(schema: pa.Schema, columns) -> tuple[T.StructType, list[str], list[str]]:
    """The Spark schema of the supported columns among `columns` (all when None). A column the
    table lacks is InvalidArgumentError naming it and the table's columns."""
    import lance_host as lh

    lh._marshal._check_columns(schema, columns)
    fields, names, skipped = [], [], []
    for f in schema:
        if columns is not None and f.name not in columns:
            continue
        st = spark_type(f.type)
        if st is None:
            skipped.append(f.name)
            continue
        # A vector's dimension travels as field metadata: a write of the DataFrame back (or to a
        # new table) makes the column fixed_size_list<T, n> again.
        meta = {DIM_KEY: f.type.list_size} if pa.types.is_fixed_size_list(f.type) else {}
        fields.append(T.StructField(f.name, st, True, meta))
        names.append(f.name)
    return T.StructType(fields), names, skipped
