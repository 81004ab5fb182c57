"""A Hugging Face Hub on 127.0.0.1 for the tests: folders served in the hub's HTTP layout, so
that huggingface_hub's real client (snapshot_download, its cache, offline mode, tokens) runs
against it with `HF_ENDPOINT` pointing here.

What huggingface_hub 2.4 asks of a hub (hf_api.py, file_download.py, utils/_http.py):
  GET  /api/models/{repo}/revision/{rev}        {"id", "sha": the commit, "siblings"}
  GET  /api/models/{repo}/tree/{commit}?recursive=...   [{"type": "file", "path", "size",
                                                 "oid"}, ...] (one page: no Link header)
  HEAD /{repo}/resolve/{rev}/{path}             X-Repo-Commit, ETag (the blob's name in the
                                                 cache), Content-Length
  GET  /{repo}/resolve/{rev}/{path}             the bytes
Errors carry `X-Error-Code`, the header huggingface_hub maps to its exception classes:
RepoNotFound (404), RevisionNotFound (404), EntryNotFound (404, with X-Repo-Commit), GatedRepo
(401, a gated repo's files asked for without the right `Authorization: Bearer` token).
"""

import collections
import hashlib
import http.server
import json
import os
import re
import threading
import time
import urllib.parse

_API = re.compile(r"^/api/models/(?P<repo>.+?)/(?P<kind>revision|tree)/(?P<rev>[^/]+)(/.*)?$")
_RESOLVE = re.compile(r"^/(?P<repo>.+?)/resolve/(?P<rev>[^/]+)/(?P<path>.+)$")


def point_huggingface_hub_at(server, cache, monkeypatch):
    """huggingface_hub pointed at `server`, with the cache folder `cache` and no token. Its
    settings are read from the environment at import (huggingface_hub.constants): set there."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "ENDPOINT", server.url)
    monkeypatch.setattr(constants, "HUGGINGFACE_CO_URL_TEMPLATE",
                        server.url + "/{repo_id}/resolve/{revision}/{filename}")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(cache) + ".no_token")
    monkeypatch.delenv("HF_TOKEN", raising=False)


class HubServer:
    """Serves repos added with `add(repo, folder, revision)`; counts the file GETs it answers
    (`gets[(repo, path)]`). `gate(repo, token)` asks a token for a repo's files; `cut(repo,
    path, times)` drops the connection in that file's next `times` GETs (halfway through the
    bytes, or before any answer to a request that resumes)."""

    def __init__(self):
        self.repos = collections.defaultdict(dict)  # repo -> {commit: {path: bytes}}
        self.refs = collections.defaultdict(dict)  # repo -> {branch: commit}
        self.tokens = {}  # gated repo -> token
        self.gets = collections.Counter()
        self.cuts = collections.Counter()  # (repo, path) -> GETs still to cut
        self.requests = []
        handler = type("Handler", (_Handler,), {"hub": self})
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()

    def add(self, repo, folder, revision="main"):
        """Serve the files under `folder` as `repo` at branch `revision`; returns the commit."""
        files = {}
        for root, _, names in os.walk(folder):
            for name in names:
                path = os.path.join(root, name)
                with open(path, "rb") as file:
                    files[os.path.relpath(path, folder).replace(os.sep, "/")] = file.read()
        digest = hashlib.sha1(repo.encode())
        for path in sorted(files):
            digest.update(path.encode() + b"\0" + files[path])
        commit = digest.hexdigest()
        self.repos[repo][commit] = files
        self.refs[repo][revision] = commit
        return commit

    def gate(self, repo, token):
        self.tokens[repo] = token

    def cut(self, repo, path, times=1):
        self.cuts[(repo, path)] = times


class _Handler(http.server.BaseHTTPRequestHandler):
    hub = None
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # quiet: pytest shows what the tests print
        pass

    def do_HEAD(self):
        self._answer(body=False)

    def do_GET(self):
        self._answer(body=True)

    def _answer(self, body):
        hub = self.hub
        path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path)
        hub.requests.append((self.command, path))
        api, resolve = _API.match(path), _RESOLVE.match(path)
        match = api or resolve
        if match is None:
            return self._error(404, "RepoNotFound")
        repo, revision = match["repo"], match["rev"]
        if repo not in hub.repos:
            return self._error(404, "RepoNotFound")
        commit = hub.refs[repo].get(revision, revision)
        if commit not in hub.repos[repo]:
            return self._error(404, "RevisionNotFound")
        files = hub.repos[repo][commit]
        if api and api["kind"] == "revision":
            info = {"id": repo, "modelId": repo, "sha": commit, "private": False,
                    "gated": "manual" if repo in hub.tokens else False,
                    "siblings": [{"rfilename": name} for name in sorted(files)]}
            return self._send(200, json.dumps(info).encode(), "application/json", body=body)
        if api:
            tree = [{"type": "file", "path": name, "size": len(data),
                     "oid": hashlib.sha1(data).hexdigest()} for name, data in sorted(files.items())]
            return self._send(200, json.dumps(tree).encode(), "application/json", body=body)
        token = hub.tokens.get(repo)
        if token is not None and self.headers.get("Authorization") != f"Bearer {token}":
            return self._error(401, "GatedRepo", commit)
        name = resolve["path"]
        if name not in files:
            return self._error(404, "EntryNotFound", commit)
        data = files[name]
        headers = {"X-Repo-Commit": commit,
                   "ETag": f'"{hashlib.sha256(data).hexdigest()}"'}
        if not body:
            return self._send(200, data, "application/octet-stream", headers, body=False)
        hub.gets[(repo, name)] += 1
        if hub.cuts[(repo, name)] > 0:
            hub.cuts[(repo, name)] -= 1
            return self._cut(data, headers)
        return self._send(200, data, "application/octet-stream", headers)

    def _cut(self, data, headers):
        """Promise the whole file, send half of it, and drop the connection; a request to
        resume (Range) is dropped before any answer."""
        self.close_connection = True
        if self.headers.get("Range"):
            self.connection.shutdown(2)
            return
        self.send_response(200)
        for key, value in {**headers, "Content-Length": str(len(data))}.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data[:len(data) // 2])
        self.wfile.flush()
        time.sleep(0.05)
        self.connection.shutdown(2)

    def _error(self, status, code, commit=None):
        headers = {"X-Error-Code": code, "X-Error-Message": code}
        if commit:
            headers["X-Repo-Commit"] = commit
        self._send(status, json.dumps({"error": code}).encode(), "application/json", headers,
                   body=self.command != "HEAD")

    def _send(self, status, data, kind, headers=None, body=True):
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        if body:
            self.wfile.write(data)
