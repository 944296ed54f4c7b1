"""Local object-store emulators for the storage tests, started on 127.0.0.1 and stopped by the
test that asked for them: Azurite (Azure Blob Storage, from npm) and fake-gcs-server (Google
Cloud Storage, a Go program). `scripts/ensure-emulators.sh` installs both; `./test.sh` passes
their paths as LANCE_HOST_AZURITE and LANCE_HOST_FAKE_GCS."""
import base64
import email.utils
import hashlib
import hmac
import http.client
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

# Azurite's well-known development account (documented by Azure; not a secret).
AZURITE_ACCOUNT = "devstoreaccount1"
AZURITE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _tool(env: str, default: str) -> str:
    path = os.environ.get(env) or str(Path.home() / ".cache" / "lance-host" / "emulators" / default)
    if not os.access(path, os.X_OK):
        raise RuntimeError(f"{env}: no emulator at {path}; run scripts/ensure-emulators.sh (./test.sh does)")
    return path


class Emulator:
    """A server process on 127.0.0.1:port, with its log and data in a temporary directory."""

    def __init__(self, argv, port: int, workdir: str):
        self.port, self.workdir = port, workdir
        self.log = open(os.path.join(workdir, "server.log"), "wb")
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT, cwd=workdir)
        deadline = time.time() + 120
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return
            except OSError:
                if self.proc.poll() is not None or time.time() > deadline:
                    self.stop()
                    raise RuntimeError(f"{argv[0]} did not start: {self.log_text()}")
                time.sleep(0.2)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log_text(self) -> str:
        try:
            return Path(self.workdir, "server.log").read_text(errors="replace")[-4000:]
        except OSError:
            return ""

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)
        self.log.close()
        shutil.rmtree(self.workdir, ignore_errors=True)


def start_azurite() -> Emulator:
    port = free_port()
    work = tempfile.mkdtemp(prefix="azurite-")
    return Emulator([_tool("LANCE_HOST_AZURITE", "azurite/node_modules/.bin/azurite-blob"),
                     "--blobHost", "127.0.0.1", "--blobPort", str(port), "--location", work,
                     "--skipApiVersionCheck", "--silent"], port, work)


def start_fake_gcs() -> Emulator:
    port = free_port()
    work = tempfile.mkdtemp(prefix="fake-gcs-")
    return Emulator([_tool("LANCE_HOST_FAKE_GCS", "bin/fake-gcs-server"), "-scheme", "http", "-host", "127.0.0.1",
                     "-port", str(port), "-backend", "memory", "-public-host", f"127.0.0.1:{port}",
                     "-log-level", "warn"], port, work)


def start_moto(iam_keys: bool = False) -> Emulator:
    """moto's server (S3, and DynamoDB for `s3+ddb://` commits), the one the Rust tests use;
    `iam_keys`: it can be switched to accept live IAM access keys only (moto_server.py)."""
    import sys
    port = free_port()
    work = tempfile.mkdtemp(prefix="moto-")
    script = Path(__file__).resolve().parents[1] / "integration" / "moto_server.py"
    return Emulator([sys.executable, str(script), str(port), *(["--iam-keys"] if iam_keys else [])], port, work)


def s3_options(endpoint: str) -> dict:
    return {"aws_endpoint": endpoint, "allow_http": "true", "aws_virtual_hosted_style_request": "false",
            "aws_access_key_id": "testing", "aws_secret_access_key": "testing", "aws_region": "us-east-1",
            "dynamodb_endpoint": endpoint}


def s3_create_bucket(endpoint: str, bucket: str) -> None:
    host, port = endpoint.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        conn.request("PUT", f"/{bucket}", body=b"")
        r = conn.getresponse()
        r.read()
    finally:
        conn.close()
    if r.status not in (200, 409):
        raise RuntimeError(f"creating bucket {bucket}: HTTP {r.status}")


def _dynamodb(endpoint: str, target: str, body: dict):
    """One DynamoDB JSON API call to moto (which checks no signature)."""
    host, port = endpoint.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        conn.request("POST", "/", body=json.dumps(body), headers={
            "Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": f"DynamoDB_20120810.{target}",
            "Authorization": "AWS4-HMAC-SHA256 Credential=testing/20260101/us-east-1/dynamodb/aws4_request, "
                             "SignedHeaders=host, Signature=0"})
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


def dynamodb_create_commit_table(endpoint: str, table: str) -> None:
    """The table Lance's DynamoDB commit store needs: HASH key base_uri (S), RANGE key version (N)."""
    body = {"TableName": table, "BillingMode": "PAY_PER_REQUEST",
            "AttributeDefinitions": [{"AttributeName": "base_uri", "AttributeType": "S"},
                                     {"AttributeName": "version", "AttributeType": "N"}],
            "KeySchema": [{"AttributeName": "base_uri", "KeyType": "HASH"},
                          {"AttributeName": "version", "KeyType": "RANGE"}]}
    status, text = _dynamodb(endpoint, "CreateTable", body)
    if status != 200 and b"ResourceInUseException" not in text:
        raise RuntimeError(f"creating DynamoDB table {table}: HTTP {status} {text[:300]!r}")


def dynamodb_versions(endpoint: str, table: str, base_uri_part: str) -> list:
    """The versions Lance's DynamoDB commit store recorded for tables whose base URI contains
    `base_uri_part`."""
    status, text = _dynamodb(endpoint, "Scan", {"TableName": table})
    if status != 200:
        raise RuntimeError(f"scanning DynamoDB table {table}: HTTP {status} {text[:300]!r}")
    items = json.loads(text)["Items"]
    return sorted(int(i["version"]["N"]) for i in items if base_uri_part in i["base_uri"]["S"])


def azure_create_container(endpoint: str, container: str, key: str = AZURITE_KEY) -> None:
    """Create a blob container with a Shared Key signed request (Azurite checks signatures)."""
    date = email.utils.formatdate(usegmt=True)
    headers = {"x-ms-date": date, "x-ms-version": "2021-08-06"}
    canonical_headers = "".join(f"{k}:{v}\n" for k, v in sorted(headers.items()))
    resource = f"/{AZURITE_ACCOUNT}/{AZURITE_ACCOUNT}/{container}\nrestype:container"
    to_sign = "PUT\n" + "\n" * 11 + canonical_headers + resource
    sig = base64.b64encode(hmac.new(base64.b64decode(key), to_sign.encode(), hashlib.sha256).digest()).decode()
    host, port = endpoint.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        conn.request("PUT", f"/{AZURITE_ACCOUNT}/{container}?restype=container", body=b"",
                     headers={**headers, "Authorization": f"SharedKey {AZURITE_ACCOUNT}:{sig}"})
        r = conn.getresponse()
        body = r.read()
    finally:
        conn.close()
    if r.status not in (201, 409):
        raise RuntimeError(f"creating container {container}: HTTP {r.status} {body[:300]!r}")


def gcs_create_bucket(endpoint: str, bucket: str) -> None:
    host, port = endpoint.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        conn.request("POST", "/storage/v1/b?project=lance-host-tests", body=json.dumps({"name": bucket}),
                     headers={"Content-Type": "application/json"})
        r = conn.getresponse()
        body = r.read()
    finally:
        conn.close()
    if r.status not in (200, 409):
        raise RuntimeError(f"creating bucket {bucket}: HTTP {r.status} {body[:300]!r}")


def azure_options(endpoint: str, key: str = AZURITE_KEY) -> dict:
    """Storage options of a table on Azurite: the names pylance takes (object_store's Azure keys).
    The account endpoint is given per table (`azure_storage_use_emulator` would take it from the
    process environment)."""
    return {"azure_storage_account_name": AZURITE_ACCOUNT, "azure_storage_account_key": key,
            "azure_storage_endpoint": f"{endpoint}/{AZURITE_ACCOUNT}", "allow_http": "true"}


def gcs_options(endpoint: str) -> dict:
    """Storage options of a table on fake-gcs-server. The emulator serves GCS's JSON API but not
    the XML API object_store's GCS client writes with, so tests take Lance's OpenDAL GCS client
    (`use_opendal`), with anonymous access (the emulator checks no credentials)."""
    return {"use_opendal": "true", "endpoint": endpoint, "allow_anonymous": "true",
            "disable_vm_metadata": "true", "disable_config_load": "true"}
