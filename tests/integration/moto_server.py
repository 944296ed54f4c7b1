"""Run moto's S3-compatible server on 127.0.0.1:PORT for the lance-host tests, logging every
request to stderr, until the process that started it exits (so a server owned by a test
binary's static never outlives the binary).

`--iam-keys`: once the caller switches moto's authentication on (POST `/moto-api/reset-auth`),
requests are accepted only with an IAM access key that exists, and a key deleted through
IAM is refused (403 InvalidAccessKeyId) — the credential tests use that to make keys expire
and to revoke them. moto's recomputation of SigV4 signatures disagrees with the one the
object_store crate sends for listings (a canonical-query difference), so with this flag moto
checks which key signed a request and that it is live, not the signature itself."""

import logging
import os
import sys
import time

from moto.server import ThreadedMotoServer


def main() -> None:
    port = int(sys.argv[1])
    if "--iam-keys" in sys.argv[2:]:
        from moto.iam import access_control

        access_control.IAMRequestBase.check_signature = lambda self: None
    parent = os.getppid()
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(message)s")
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        while os.getppid() == parent:
            time.sleep(0.2)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
