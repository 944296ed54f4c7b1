"""A moto S3 server on 127.0.0.1 that accepts short-lived IAM keys only, one table pylance wrote
there, and an issuer that hands out a new key per request (valid for a few seconds, deleted at
moto when it ends): for the Java test of credentials a host refreshes itself (issue 60).

    python3 java/tests/credentials_fixture.py [--rest REST_SERVER_BINARY]

Prints one JSON line (the table's uri, the storage options without a key, the issuer's URL, the
keys' lifetime in seconds, the table's row count and sum of ids as pylance reads them, a key that
does not expire for checks, and with --rest the URI of this repo's REST namespace server over the
warehouse, vending the issuer's keys), then serves until its standard input closes, and stops
everything.
"""
import argparse
import json
import subprocess
import sys
from pathlib import Path

import lance
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "python"))
from credential_issuer import Issuer, iam_world  # noqa: E402
from emulators import s3_create_bucket, start_moto  # noqa: E402

LIFETIME_S = 4.0


def main():
    args = argparse.ArgumentParser()
    args.add_argument("--rest", help="the lance-host-rest-server binary: serve the warehouse as a REST namespace")
    rest_binary = args.parse_args().rest
    moto = start_moto(iam_keys=True)
    issuer = rest = None
    try:
        ep = moto.endpoint
        s3_create_bucket(ep, "jvmcred")
        admin_iam, admin_key = iam_world(ep)
        base = {"aws_endpoint": ep, "allow_http": "true", "aws_region": "us-east-1",
                "aws_virtual_hosted_style_request": "false"}
        admin = dict(base, aws_access_key_id=admin_key["AccessKeyId"], aws_secret_access_key=admin_key["SecretAccessKey"])
        root = "s3://jvmcred/warehouse"
        uri = f"{root}/t.lance"
        n = 3000
        lance.write_dataset(pa.table({"id": pa.array(range(n), pa.int64())}), uri, storage_options=admin,
                            max_rows_per_file=500)
        issuer = Issuer(admin_iam, LIFETIME_S)
        rest_uri = None
        if rest_binary:
            flags = [a for k, v in admin.items() for a in ("--storage", f"{k}={v}")]
            rest = subprocess.Popen([rest_binary, root, *flags, "--vend-url", issuer.url], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, text=True)
            line = rest.stdout.readline()
            if not line.startswith("LISTENING "):
                raise SystemExit(f"the REST server did not start: {line!r}")
            rest_uri = f"http://127.0.0.1:{int(line.split()[1])}"
        table = lance.dataset(uri, storage_options=admin).to_table()
        print(json.dumps({"uri": uri, "base": base, "issuer": issuer.url, "lifetime_s": LIFETIME_S,
                          "count": table.num_rows, "sum_id": sum(table["id"].to_pylist()), "admin": admin,
                          "rest": rest_uri}), flush=True)
        sys.stdin.read()
    finally:
        if rest is not None:
            rest.stdin.close()
            rest.wait(timeout=30)
        if issuer is not None:
            issuer.stop()
        moto.stop()


if __name__ == "__main__":
    main()
