"""A moto S3 server on 127.0.0.1 that accepts short-lived IAM keys only, one table pylance wrote
there, and an issuer that hands out a new key per request (valid for a few seconds, deleted at
moto when it ends): for the Java test of credentials a host refreshes itself (issue 60).

    python3 java/tests/credentials_fixture.py

Prints one JSON line (the table's uri, the storage options without a key, the issuer's URL, the
keys' lifetime in seconds, the table's row count as pylance reads it, and a key that does not
expire for checks), then serves until its standard input closes, and stops everything.
"""
import json
import sys
from pathlib import Path

import lance
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "python"))
from credential_issuer import Issuer, iam_world  # noqa: E402
from emulators import s3_create_bucket, start_moto  # noqa: E402

LIFETIME_S = 4.0


def main():
    moto = start_moto(iam_keys=True)
    issuer = None
    try:
        ep = moto.endpoint
        s3_create_bucket(ep, "jvmcred")
        admin_iam, admin_key = iam_world(ep)
        base = {"aws_endpoint": ep, "allow_http": "true", "aws_region": "us-east-1",
                "aws_virtual_hosted_style_request": "false"}
        admin = dict(base, aws_access_key_id=admin_key["AccessKeyId"], aws_secret_access_key=admin_key["SecretAccessKey"])
        uri = "s3://jvmcred/t.lance"
        n = 3000
        lance.write_dataset(pa.table({"id": pa.array(range(n), pa.int64())}), uri, storage_options=admin,
                            max_rows_per_file=500)
        issuer = Issuer(admin_iam, LIFETIME_S)
        print(json.dumps({"uri": uri, "base": base, "issuer": issuer.url, "lifetime_s": LIFETIME_S,
                          "count": lance.dataset(uri, storage_options=admin).count_rows(), "admin": admin}),
              flush=True)
        sys.stdin.read()
    finally:
        if issuer is not None:
            issuer.stop()
        moto.stop()


if __name__ == "__main__":
    main()
