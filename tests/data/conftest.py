"""Fixtures for the data tests: the offline mirror and a local HTTP server (127.0.0.1 only)."""

from __future__ import annotations

import http.server
import threading
import time
from pathlib import Path

import pytest

from tests.data.tb_data_helpers import MIRROR


@pytest.fixture(scope="session")
def mirror() -> Path:
    if MIRROR is None:
        pytest.skip("not in mirror: no mirror directory (set TREEBENCH_MIRROR)")
    return MIRROR


class _Handler(http.server.BaseHTTPRequestHandler):
    """Serves ``server.files`` (url path → bytes) with per-path behaviours in ``server.modes``.

    ``corrupt`` (flip bytes), ``cut`` (send half, then close), ``cut_once`` (cut the first request
    only), ``slow`` (dribble the body), ``500`` (server error).
    """

    def log_message(self, *args):  # keep test output clean
        pass

    def do_GET(self):
        srv = self.server
        path = self.path.split("?", 1)[0]
        with srv.lock:
            srv.hits[path] = srv.hits.get(path, 0) + 1
            nth = srv.hits[path]
        body = srv.files.get(path)
        mode = srv.modes.get(path, "")
        if body is None:
            self.send_error(404)
            return
        if mode == "500":
            self.send_error(500, "boom")
            return
        if mode == "corrupt":
            body = bytes(b ^ 0x55 for b in body[:64]) + body[64:]
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if mode == "cut" or (mode == "cut_once" and nth == 1):
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        if mode == "slow":
            step = max(1, len(body) // 20)
            for i in range(0, len(body), step):
                self.wfile.write(body[i : i + step])
                self.wfile.flush()
                time.sleep(0.05)
            return
        self.wfile.write(body)


@pytest.fixture
def http_server():
    """Yield a threaded HTTP server on 127.0.0.1; returns (server, base_url)."""
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    srv.files, srv.modes, srv.hits, srv.lock = {}, {}, {}, threading.Lock()
    srv.daemon_threads = True
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        yield srv, f"http://127.0.0.1:{srv.server_address[1]}"
    finally:
        srv.shutdown()
        srv.server_close()
