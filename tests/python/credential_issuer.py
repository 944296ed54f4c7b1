"""Short-lived storage keys for the credential-refresh tests (issue 60), Python's and the JVM's:
an HTTP endpoint that hands out a new IAM access key of the moto S3 server per request, valid
for a given lifetime, deleted at moto when it ends; and the moto set-up that makes moto accept
live IAM keys only."""

import json
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import boto3


def iam_world(endpoint: str):
    """Turns moto's IAM checks on: an admin user (every action) and a group `readers` (S3 only);
    from the call on, moto accepts live IAM keys only. Returns (iam client of the admin, the
    admin's key)."""
    anon = dict(endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="setup",
                aws_secret_access_key="setup")
    iam = boto3.client("iam", **anon)
    iam.create_user(UserName="admin")
    iam.put_user_policy(UserName="admin", PolicyName="all", PolicyDocument=json.dumps(
        {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}))
    admin_key = iam.create_access_key(UserName="admin")["AccessKey"]
    iam.create_group(GroupName="readers")
    iam.put_group_policy(GroupName="readers", PolicyName="s3", PolicyDocument=json.dumps(
        {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}))
    req = urllib.request.Request(endpoint + "/moto-api/reset-auth", data=b"0", method="POST",
                                 headers={"Content-Type": "text/plain"})
    urllib.request.urlopen(req, timeout=30).read()
    admin = boto3.client("iam", endpoint_url=endpoint, region_name="us-east-1",
                         aws_access_key_id=admin_key["AccessKeyId"], aws_secret_access_key=admin_key["SecretAccessKey"])
    return admin, admin_key


class Issuer:
    """Hands out a new IAM access key per request, valid for `lifetime` seconds: the key is deleted at
    moto when its lifetime ends. `revoke()` deletes every live key and refuses further vends."""

    def __init__(self, iam, lifetime: float):
        self.iam, self.lock, self.lifetime = iam, threading.Lock(), lifetime
        self.live, self.issued, self.deleted = {}, [], set()
        self.revoked, self.stopping, self.n = False, False, 0
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                try:
                    body = issuer.vend()
                except PermissionError:
                    self.send_response(403)
                    self.end_headers()
                    return
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}/credentials"
        threading.Thread(target=self.http.serve_forever, daemon=True).start()
        self.reaper = threading.Thread(target=self.reap, daemon=True)
        self.reaper.start()

    def vend(self):
        with self.lock:
            if self.revoked:
                raise PermissionError("revoked")
            self.n += 1
            user = f"reader{self.n}"
        self.iam.create_user(UserName=user)
        self.iam.add_user_to_group(GroupName="readers", UserName=user)
        key = self.iam.create_access_key(UserName=user)["AccessKey"]
        expires = time.time() + self.lifetime
        with self.lock:
            self.live[key["AccessKeyId"]] = (user, expires)
            self.issued.append(key["AccessKeyId"])
        return {"aws_access_key_id": key["AccessKeyId"], "aws_secret_access_key": key["SecretAccessKey"],
                "expires_at_millis": str(int(expires * 1000))}

    def delete(self, key_id):
        user, _ = self.live.pop(key_id)
        self.iam.delete_access_key(UserName=user, AccessKeyId=key_id)
        self.deleted.add(key_id)

    def reap(self):
        while not self.stopping:
            now = time.time()
            with self.lock:
                for key_id in [k for k, (_, exp) in self.live.items() if exp <= now]:
                    self.delete(key_id)
            time.sleep(0.05)

    def revoke(self, revoked=True):
        with self.lock:
            self.revoked = revoked
            if revoked:
                for key_id in list(self.live):
                    self.delete(key_id)

    def stop(self):
        self.stopping = True
        self.reaper.join(10)
        self.http.shutdown()
