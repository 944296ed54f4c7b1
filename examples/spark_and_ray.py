"""lance-host under Apache Spark and Ray Data: the README's "From Python, Spark and Ray" example
as a program. Run it on any Lance table with a vector column:

    python3 examples/spark_and_ray.py /path/to/table.lance <vector column> <filter column>

It reads the table through Spark (scan split per partition, Spark applying the filter) and Ray
(one read task per split), and runs the same vector search through both engines and in one
process, printing the three top-10 id lists, which are equal. The tests call `spark_example`
and `ray_example` with their own session and cluster.
"""

import json
import sys


def spark_example(spark, uri, vector_column, query, where, k=10):
    """Count the rows matching `where` and search `query`; returns (count, top-k row ids)."""
    from pyspark.sql import functions as F

    from lance_host.spark import merge_top_k, register

    register(spark)  # "lance_host" and "lance_host_search"; Spark applies where() itself
    df = spark.read.format("lance_host").option("uri", uri).load()
    matching = df.where(where).agg(F.count("*")).collect()[0][0]
    hits = (spark.read.format("lance_host_search").option("uri", uri).option("column", vector_column)
            .option("vector", json.dumps(list(query))).option("k", str(k)).option("nprobes", "16")
            .option("refine", "5").load())
    top = [r["_rowid"] for r in hits.orderBy("_distance", "_rowid").limit(k).collect()]
    assert top == merge_top_k(hits, k)["_rowid"].to_pylist()  # the library's own merge
    return matching, top


def ray_example(uri, vector_column, query, where, k=10):
    """The same through Ray Data: (count, top-k row ids)."""
    import lance_host.ray as lhr

    matching = lhr.read_lance_host(uri, filter=where).count()
    top = lhr.vector_search(uri, vector_column, list(query), k, nprobes=16, refine=5)
    return matching, top["_rowid"].to_pylist()


def single_process(uri, vector_column, query, where, k=10):
    """What one process gets from the library: (count, top-k row ids)."""
    import lance_host as lh

    ds = lh.open(uri)
    parts = [ds.search_split(s, vector_column, list(query), k, nprobes=16, refine_factor=5)
             for s in ds.plan_vector_search(vector_column)]
    return ds.count_rows(where), lh.merge_top_k(parts, k).read_all()["_rowid"].to_pylist()


def main():
    uri, vector_column, where = sys.argv[1], sys.argv[2], sys.argv[3]
    import lance_host as lh
    import ray
    from pyspark.sql import SparkSession

    first = lh.open(uri).scan(columns=[vector_column], limit=1).read_all()
    query = first[vector_column][0].as_py()
    spark = SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false").getOrCreate()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        results = {"spark": spark_example(spark, uri, vector_column, query, where),
                   "ray": ray_example(uri, vector_column, query, where),
                   "one process": single_process(uri, vector_column, query, where)}
    finally:
        spark.stop()
        ray.shutdown()
    for name, (count, top) in results.items():
        print(f"{name:12} rows where {where}: {count}  top 10 row ids: {top}")
    assert len({json.dumps(r) for r in results.values()}) == 1, "the engines disagree"


if __name__ == "__main__":
    main()
