"""Vector columns across hosts that have no fixed-size list type: Spark hands vectors over as
arrays (Arrow `list`), Ray as tensors (an extension type over `large_list`) or lists. Before a
write, such columns are cast to `fixed_size_list<T, n>`, the type Lance indexes and searches:

- to the target table's type, where the column exists there as a fixed-size list (an append,
  an overwrite that keeps the table's schema);
- to `n` given for the column (`dims`: a Spark option, a Ray argument, or the field metadata a
  lance_host read puts on the column), on a create or a new schema;
- to the tensor's own shape, for a Ray tensor column of one dimension;
- to the rows' one length, for Ray's variable-shaped tensors of one dimension (what a numpy
  `map_batches` gives a vector column back as); ragged rows are written as lists of their values.

A column of Python objects Ray pickled is refused naming the column.

Other columns the target table holds with another integer, float, string or binary type (Spark
widens uint32 to bigint) are cast back to the table's type, refusing values that do not fit.

A row whose length is not `n` is InvalidArgumentError naming the column, the row and its length;
nothing is ever narrowed or padded silently. Columns not named by any of these stay as they are.
"""

from __future__ import annotations

from typing import Mapping, Optional

import pyarrow as pa
import pyarrow.compute as pc

# The Spark field-metadata key (and Arrow field-metadata key) carrying a vector's dimension.
DIM_KEY = "lance_host.vector_dim"


def _err(message: str):
    import lance_host as lh

    return lh.errors._error(1, message)


# Ray's extension type for a numpy column of dtype object it could not type: pickled objects.
_PICKLED = "ray.data.arrow_pickled_object"


def _variable_tensor(t: pa.DataType) -> bool:
    """Ray's variable-shaped tensor (what `map_batches(batch_format="numpy")` gives a vector
    column back as): storage struct<data: list of the flat values, shape: list<int64>>."""
    if not isinstance(t, pa.ExtensionType) or not pa.types.is_struct(t.storage_type):
        return False
    names = [t.storage_type.field(i).name for i in range(t.storage_type.num_fields)]
    return sorted(names) == ["data", "shape"] and _is_listlike(t.storage_type.field("data").type)


def _storage(arr: pa.Array):
    """An extension array's storage and the tensor shape it declares (None: not a tensor). A
    variable-shaped tensor's storage is its flat values per row (NULL rows kept), its shape
    `(None,) * ndim`."""
    if _variable_tensor(arr.type):
        ndim = getattr(arr.type, "ndim", None)
        data = arr.storage.flatten()[arr.type.storage_type.get_field_index("data")]
        return data, ((None,) * ndim if isinstance(ndim, int) else (None, None))
    if isinstance(arr.type, pa.ExtensionType):
        shape = getattr(arr.type, "shape", None)
        return arr.storage, (tuple(shape) if shape is not None else None)
    return arr, None


def _refuse_pickled(name: str, t: pa.DataType) -> None:
    if getattr(t, "extension_name", None) == _PICKLED:
        raise _err(f"column {name!r} holds Python objects (Ray pickles a numpy column of dtype object); return "
                   "vectors as a 2-D numpy array of shape (rows, dimension), or lists, to write them")


def _one_length(name: str, col: pa.ChunkedArray) -> Optional[int]:
    """The one length of every non-NULL row of a variable-shaped tensor column of one
    dimension (None: the rows have different lengths, or there is no non-NULL row)."""
    lengths = set()
    for chunk in col.chunks:
        data, _ = _storage(chunk)
        mm = pc.min_max(pc.list_value_length(data)).as_py()
        if mm["min"] is not None:
            lengths.update((mm["min"], mm["max"]))
    return lengths.pop() if len(lengths) == 1 and next(iter(lengths)) > 0 else None


def _scalar(t: pa.DataType) -> bool:
    return (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_string(t)
            or pa.types.is_large_string(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t))


def _is_listlike(t: pa.DataType) -> bool:
    return pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)


def _to_fixed(name: str, col: pa.ChunkedArray, value_type: pa.DataType, n: int) -> pa.ChunkedArray:
    want = pa.list_(value_type, n)
    chunks, offset = [], 0
    for chunk in col.chunks:
        storage, shape = _storage(chunk)
        if shape is not None and len(shape) != 1:
            raise _err(f"column {name!r}: a tensor of shape {shape} is not a vector; write vectors of one dimension")
        if not _is_listlike(storage.type):
            raise _err(f"column {name!r} of type {chunk.type} cannot hold vectors of {n} values")
        if pa.types.is_fixed_size_list(storage.type):
            if storage.type.list_size != n:
                raise _err(f"column {name!r}: vectors of {storage.type.list_size} values, the table's hold {n}")
        else:
            lengths = pc.list_value_length(storage)
            bad = pc.and_(pc.is_valid(lengths), pc.not_equal(lengths, n))
            if pc.any(bad).as_py():
                row = pc.index(bad, True).as_py()
                raise _err(f"column {name!r}: row {offset + row} has {lengths[row].as_py()} values, "
                           f"the vectors hold {n}")
        try:
            chunks.append(storage.cast(want, safe=True))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise _err(f"column {name!r}: cannot write its values as {want}: {e}") from None
        offset += len(chunk)
    return pa.chunked_array(chunks, type=want)


def conform(table: pa.Table, target: Optional[pa.Schema] = None,
            dims: Optional[Mapping[str, int]] = None) -> pa.Table:
    """`table` with its vector columns as `fixed_size_list` (see the module's rules)."""
    dims = dict(dims or {})
    unknown = [c for c in dims if c not in table.column_names]
    if unknown:
        raise _err(f"vector columns {unknown} are not among the written columns {table.column_names}")
    cols, fields, changed = [], [], False
    for field, col in zip(table.schema, table.columns):
        name = field.name
        _refuse_pickled(name, field.type)
        tf = target.field(name) if target is not None and name in target.names else None
        new = None
        if tf is not None and pa.types.is_fixed_size_list(tf.type):
            if field.type != tf.type:
                new = _to_fixed(name, col, tf.type.value_type, tf.type.list_size)
        elif tf is not None and field.type != tf.type and _scalar(field.type) and _scalar(tf.type):
            # A host's wider or plainer type of the table's column (Spark's bigint for uint32,
            # string for large_string): back to the table's type, refusing values that do not fit.
            try:
                new = col.cast(tf.type, safe=True)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
                raise _err(f"column {name!r}: its values do not fit the table's type {tf.type}: {e}") from None
        elif name in dims:
            n = dims[name]
            value = field.type
            storage_type = value.storage_type if isinstance(value, pa.ExtensionType) else value
            if _variable_tensor(value):
                storage_type = storage_type.field("data").type
            if not _is_listlike(storage_type):
                raise _err(f"column {name!r} of type {field.type} cannot be written as vectors")
            vt = storage_type.value_type
            if not (pa.types.is_fixed_size_list(field.type) and field.type.list_size == n):
                new = _to_fixed(name, col, vt, n)
        elif _variable_tensor(field.type) and tf is None:
            # A column Ray gives back as variable-shaped tensors: vectors when every row has one
            # length, else a list per row of its values (nothing padded or cut).
            ndim = getattr(field.type, "ndim", None)
            if ndim != 1:
                raise _err(f"column {name!r}: tensors of {ndim} dimensions are not vectors; write vectors of one "
                           "dimension")
            value_type = field.type.storage_type.field("data").type.value_type
            n = _one_length(name, col)
            if n is not None:
                new = _to_fixed(name, col, value_type, n)
            else:
                new = pa.chunked_array([_storage(c)[0] for c in col.chunks],
                                       type=field.type.storage_type.field("data").type)
        elif isinstance(field.type, pa.ExtensionType) and tf is None:
            shape = getattr(field.type, "shape", None)
            storage_type = field.type.storage_type
            if shape is not None and len(shape) == 1 and shape[0] and _is_listlike(storage_type):
                new = _to_fixed(name, col, storage_type.value_type, int(shape[0]))
        if new is None:
            cols.append(col)
            fields.append(field)
        else:
            changed = True
            cols.append(new)
            fields.append(pa.field(name, new.type, field.nullable, field.metadata))
    if not changed:
        return table
    return pa.Table.from_arrays(cols, schema=pa.schema(fields, metadata=table.schema.metadata))


def parse_dims(text: Optional[str], what: str) -> dict:
    """`vec=16,emb=8` as {"vec": 16, "emb": 8}; InvalidArgumentError naming `what` otherwise."""
    out = {}
    for part in (text or "").split(","):
        part = part.strip()
        if not part:
            continue
        name, sep, n = part.partition("=")
        try:
            value = int(n.strip()) if sep else 0
        except ValueError:
            value = 0
        if not name.strip() or value <= 0:
            raise _err(f"{what} must look like 'vec=16,other=8' (column=dimension), not {text!r}")
        out[name.strip()] = value
    return out
