"""Run moto's S3-compatible server on 127.0.0.1:PORT for the lance-host tests, logging every
request to stderr, until the process that started it exits (so a server owned by a test
binary's static never outlives the binary)."""

import logging
import os
import sys
import time

from moto.server import ThreadedMotoServer


def main() -> None:
    port = int(sys.argv[1])
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
