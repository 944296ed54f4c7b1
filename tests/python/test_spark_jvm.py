"""pyspark over the JVM connector (`format("lance_host")`, the bundle jar Maven builds in java/):
what a Python user of Spark does on top of a lance_host scan, with pylance's reading of the same
table as the judge. The Spark session runs in a process of its own (one for the file): the JVM
needs the connector's jar (natives inside) when it starts, and the other Spark tests of this run
already started theirs without it."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from jvm_jars import spark_bundle

lance = pytest.importorskip("lance")
import pyspark  # noqa: E402,F401  (installed by the test command: never skipped)

SESSION = r'''
import json, sys
from pyspark.sql import SparkSession, functions as F
from pyspark.sql.types import LongType, StringType

bundle, uri = sys.argv[1], sys.argv[2]
spark = (SparkSession.builder.master("local[2]").appName("lance-host-jvm-from-python")
         .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
         .config("spark.driver.bindAddress", "127.0.0.1").config("spark.driver.host", "127.0.0.1")
         .config("spark.jars", bundle)
         .getOrCreate())

@F.udf(returnType=LongType(), useArrow=True)
def twice(x):
    return None if x is None else 2 * x

@F.udf(returnType=StringType(), useArrow=True)
def shout(s):
    return None if s is None else s.upper()

out = {}
for batch_size in ("128", None):
    reader = spark.read.format("lance_host")
    if batch_size:
        reader = reader.option("batch_size", batch_size)
    df = reader.load(uri)
    rows = df.select("id", twice("id").alias("d"), shout("name").alias("s")).collect()
    filtered = df.where("id % 7 = 3").select(twice("id").alias("d")).collect()
    out[batch_size or "default"] = {"rows": [[r["id"], r["d"], r["s"]] for r in rows],
                                    "filtered": sorted(r["d"] for r in filtered)}
spark.stop()
print("RESULT " + json.dumps(out))
'''


@pytest.fixture(scope="module")
def answers(tmp_path_factory):
    bundle = spark_bundle()
    uri = str(tmp_path_factory.mktemp("jvm") / "t.lance")
    n = 5000
    lance.write_dataset(pa.table({
        "id": pa.array(range(n), pa.int64()),
        "name": pa.array([None if i % 11 == 0 else f"n{i % 97}" for i in range(n)]),
        "price": pa.array([i * 0.25 for i in range(n)], pa.float64()),
    }), uri, max_rows_per_file=1700)
    run = subprocess.run([sys.executable, "-c", SESSION, str(bundle), uri], capture_output=True, text=True,
                         timeout=600)
    lines = [line for line in run.stdout.splitlines() if line.startswith("RESULT ")]
    assert run.returncode == 0 and lines, run.stderr[-6000:]
    return lance.dataset(uri).to_table(), json.loads(lines[0][len("RESULT "):])


@pytest.mark.parametrize("batch_size", ["128", "default"])
def test_arrow_python_udf_over_a_scan_equals_pylance(answers, batch_size):
    """Issue 58 item 10: Spark's Arrow-optimized Python UDF read the last batch of a partition
    after the connector had freed it (IndexOutOfBoundsException in ArrowColumnVector)."""
    pyl, out = answers
    got = out[batch_size]
    want = {i: [2 * i, None if s is None else s.upper()] for i, s in zip(pyl["id"].to_pylist(), pyl["name"].to_pylist())}
    assert len(got["rows"]) == len(want)
    assert {r[0]: r[1:] for r in got["rows"]} == want
    # after a filter that leaves a short last batch in every split
    assert got["filtered"] == sorted(2 * i for i in want if i % 7 == 3)


PACKAGES_SESSION = r'''
import json, sys
from pyspark.sql import SparkSession

coords, ivy, uri = sys.argv[1], sys.argv[2], sys.argv[3]
spark = (SparkSession.builder.master("local[2]").appName("lance-host-packages")
         .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
         .config("spark.driver.bindAddress", "127.0.0.1").config("spark.driver.host", "127.0.0.1")
         .config("spark.jars.packages", coords).config("spark.jars.ivy", ivy)
         .getOrCreate())
df = spark.read.format("lance_host").load(uri)
out = {"count": df.count(),
       "sum_filtered": df.where("id % 7 = 3").agg({"price": "sum"}).collect()[0][0],
       "jars": sorted(j.split("/")[-1] for j in spark.sparkContext._jsc.sc().listJars().mkString(",").split(","))}
spark.stop()
print("RESULT " + json.dumps(out))
'''


def test_the_lean_connector_resolves_with_spark_packages_from_the_local_repository(tmp_path):
    """`--packages org.lancehost:lance-host-spark-4.x_2.13:<version>` after `mvn install`: Spark's
    resolver finds the connector and lance-host (natives inside) in ~/.m2 and nothing else — Arrow
    Java and SLF4J are Spark's own."""
    spark_bundle()  # skips when java/ was not built
    version = re.search(r'^version = "([^"]+)"', (Path(__file__).resolve().parents[2] / "Cargo.toml").read_text(),
                        re.M).group(1)
    uri = str(tmp_path / "t.lance")
    n = 3000
    lance.write_dataset(pa.table({"id": pa.array(range(n), pa.int64()),
                                  "price": pa.array([i * 0.5 for i in range(n)], pa.float64())}),
                        uri, max_rows_per_file=1000)
    run = subprocess.run([sys.executable, "-c", PACKAGES_SESSION, f"org.lancehost:lance-host-spark-4.x_2.13:{version}",
                          str(tmp_path / "ivy"), uri], capture_output=True, text=True, timeout=600)
    lines = [line for line in run.stdout.splitlines() if line.startswith("RESULT ")]
    assert run.returncode == 0 and lines, run.stderr[-6000:]
    out = json.loads(lines[0][len("RESULT "):])
    t = lance.dataset(uri).to_table()
    assert out["count"] == t.num_rows
    assert out["sum_filtered"] == sum(p for i, p in zip(t["id"].to_pylist(), t["price"].to_pylist()) if i % 7 == 3)
    assert out["jars"] == sorted([f"org.lancehost_lance-host-spark-4.x_2.13-{version}.jar",
                                  f"org.lancehost_lance-host-{version}.jar"]), out["jars"]
