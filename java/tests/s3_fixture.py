"""A moto S3 server on 127.0.0.1 holding one table pylance wrote, for the Java tests that need
object-store requests (I/O statistics, Spark's scan metrics: a local table reports none).

    python3 java/tests/s3_fixture.py

Prints one JSON line (uri, storage options, row count and the sum of `id` as pylance reads them)
once the table is written, then serves until its standard input closes, and stops the server.
"""
import json
import sys
from pathlib import Path

import lance
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "python"))
from emulators import s3_create_bucket, s3_options, start_moto  # noqa: E402


def main():
    moto = start_moto()
    try:
        opts = s3_options(moto.endpoint)
        s3_create_bucket(moto.endpoint, "jvm")
        uri = "s3://jvm/t.lance"
        n = 6000
        lance.write_dataset(pa.table({
            "id": pa.array(range(n), pa.int64()),
            "name": pa.array([f"row-{i:05d}" for i in range(n)]),
        }), uri, storage_options=opts, max_rows_per_file=2000)
        ds = lance.dataset(uri, storage_options=opts)
        t = ds.to_table()
        print(json.dumps({"uri": uri, "options": opts, "count": ds.count_rows(),
                          "sum_id": sum(t["id"].to_pylist())}), flush=True)
        sys.stdin.read()
    finally:
        moto.stop()


if __name__ == "__main__":
    main()
