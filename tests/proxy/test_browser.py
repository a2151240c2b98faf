"""A web page cannot use ``llmvcr serve``: in a real headless Chromium, a page on another loopback
origin sends the requests a cross-site attacker can (a ``text/plain`` fetch, a form POST), and a
name rebound to 127.0.0.1 loads the control API; the proxy acts on none of them."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from browser import start
from llm_server import LLMServer
from selenium.webdriver.support.ui import WebDriverWait

from llmvcr.proxy import ProxyServer

REBOUND = "rebind.llmvcr.test"
MESSAGE = {"model": "claude-test", "max_tokens": 8, "messages": [{"role": "user", "content": "from a page"}]}

PAGE = """<!doctype html><meta charset="utf-8"><title>attacker</title>
<form id="form" method="post" enctype="text/plain" target="sink" action="{proxy}/cassettes/by-form/v1/messages">
<input name='{head}' value='{tail}'></form><iframe name="sink"></iframe>
<script>
window.results = {{}};
async function attempt(name, url, body) {{
  try {{
    const r = await fetch(url, {{method: "POST", mode: "no-cors", headers: {{"content-type": "text/plain"}}, body}});
    window.results[name] = r.type;
  }} catch (e) {{ window.results[name] = "error: " + e; }}
}}
(async () => {{
  await attempt("control", "{proxy}/_llmvcr/cassettes/opened-by-page", JSON.stringify({{record_mode: "all", prune: true}}));
  await attempt("call", "{proxy}/cassettes/by-fetch/v1/messages", {message});
  document.querySelector("iframe").addEventListener("load", () => {{ window.results.form = "sent"; }});
  document.getElementById("form").submit();
}})();
</script>"""


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    driver = start(flags=(f"--host-resolver-rules=MAP {REBOUND} 127.0.0.1",))
    try:
        yield driver
    finally:
        driver.quit()


def page_server(html: str) -> ThreadingHTTPServer:
    class Page(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            data = html.encode()
            self.send_response(200)
            self.send_header("content-type", "text/html; charset=utf-8")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


@pytest.mark.slow
def test_a_page_on_another_loopback_origin_cannot_open_record_or_prune(
    browser: Any, cassette_dir: Path, server: LLMServer
) -> None:
    upstreams = {"anthropic": server.url}
    before = server.request_count
    with ProxyServer(cassette_dir, upstreams=upstreams) as proxy:
        text = json.dumps(MESSAGE)
        html = PAGE.format(
            proxy=proxy.url, head=text[:-3], tail=text[-3:], message=json.dumps(json.dumps(MESSAGE))
        )
        httpd = page_server(html)
        try:
            browser.get(f"http://127.0.0.1:{httpd.server_address[1]}/")
            WebDriverWait(browser, 30).until(lambda d: len(d.execute_script("return window.results")) == 3)
            time.sleep(0.5)  # the form's request has been answered once its frame loaded
            results = browser.execute_script("return window.results")
            assert results["control"] == "opaque" and results["call"] == "opaque"  # each request was sent
            assert proxy.app.cassettes.names() == []  # base: opened-by-page, by-fetch and by-form
        finally:
            httpd.shutdown()
            httpd.server_close()
    assert server.request_count == before
    assert not cassette_dir.exists() or list(cassette_dir.iterdir()) == []


@pytest.mark.slow
def test_a_name_rebound_to_loopback_gets_nothing_from_the_control_api(
    browser: Any, cassette_dir: Path
) -> None:
    with ProxyServer(cassette_dir) as proxy:
        proxy.app.cassettes.open("secret-prompts", {})
        browser.get(f"http://{REBOUND}:{proxy.port}/_llmvcr/cassettes")
        shown = browser.find_element("tag name", "body").text
        assert "secret-prompts" not in shown and "refused a request for Host" in shown
        browser.get(f"http://127.0.0.1:{proxy.port}/_llmvcr/cassettes")  # the proxy's own origin still works
        assert "secret-prompts" in browser.find_element("tag name", "body").text
