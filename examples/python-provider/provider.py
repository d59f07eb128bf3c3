#!/usr/bin/env python3
"""An environment/v1 provider written with the Python standard library only.

It serves POST /v1/operations with bearer authentication and runs six
descriptors, named by {"name": ...} in the execute's implementation:

  echo        answers {"echo": <input>}
  sleep       {"ms": N}: sleeps N ms; honours deadline_ms (failure timeout)
              and cancel (failure cancelled)
  write/read  {"key", "value"?}: a key/value store per binding
  allocation  answers the id of the binding's store, allocated once on
              first use however many callers arrive at once
  progress    answers a progress receipt and leaves the Tool's outcome
              unknown

It tracks bindings (a second setup answers already_exists, anything after
teardown answers unavailable), runs a setup or an execute at most once
per (session, environment, sequence) among the latest --max-remembered
(65536) it dispatched, keeps a cancel that arrives before its execute (the execute
then answers cancelled without running), and completes a Tool by
calling the finish service of its callback grant, once: a finish Brain
refused (a 4xx answer: nothing was committed) answers a failure with
Brain's code, and one whose answer was lost (none, a 5xx, a redirect,
which is never followed) answers unknown.
Run it with

  python3 provider.py --listen 127.0.0.1:8090 --token "$PROVIDER_TOKEN"

and check it with `brain conformance --url http://127.0.0.1:8090
--token "$PROVIDER_TOKEN" --profile profile.json`.
"""

import argparse
import hmac
import http.client
import json
import os
import re
import socket
import sys
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CONTRACT = "environment/v1"
IDENTIFIER = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")
DEFAULT_MAX_BODY = 1 << 20
DEFAULT_MAX_REMEMBERED = 1 << 16
MAX_MESSAGE = 4096


class BadRequest(Exception):
    """A command that does not decode: answered 400 naming the field."""

    def __init__(self, field, reason):
        super().__init__(f"{field}: {reason}" if field else reason)
        self.field = field


class Unsupported(Exception):
    """A well-formed command of a request type this provider does not know."""


class Failure(Exception):
    """An operation that fails: answered with a failure receipt."""

    def __init__(self, code, message, retryable=False, details=None):
        super().__init__(message)
        self.code, self.message, self.retryable, self.details = code, message, retryable, details


def _no_duplicate_keys(pairs):
    obj = {}
    for k, v in pairs:
        if k in obj:
            raise BadRequest("", f"duplicate key {k!r}")
        obj[k] = v
    return obj


def _object(v, field, allowed, required=()):
    if not isinstance(v, dict):
        raise BadRequest(field, "must be an object")
    for k in v:
        if k not in allowed:
            raise BadRequest(f"{field}.{k}" if field else k, "unknown field")
    for k in required:
        if k not in v:
            raise BadRequest(f"{field}.{k}" if field else k, "is required")
    return v


def _identifier(v, field):
    if not isinstance(v, str) or not IDENTIFIER.fullmatch(v):
        raise BadRequest(field, f"{v!r} is not an identifier")
    return v


def _integer(v, field, minimum):
    if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
        raise BadRequest(field, f"must be an integer >= {minimum}")
    return v


def _grant(v, field):
    _object(v, field, ("url", "token", "methods"), ("url", "token", "methods"))
    if not isinstance(v["url"], str) or not v["url"].startswith(("http://", "https://")):
        raise BadRequest(field + ".url", "must be an absolute http(s) URL")
    if not isinstance(v["token"], str) or not v["token"]:
        raise BadRequest(field + ".token", "is required")
    if not isinstance(v["methods"], list):
        raise BadRequest(field + ".methods", "must be an array")
    for i, m in enumerate(v["methods"]):
        _identifier(m, f"{field}.methods[{i}]")
    return v


REQUEST_FIELDS = {
    "setup": (("type", "configuration"), ()),
    "execute": (("type", "implementation", "input", "deadline_ms", "callback"), ("implementation", "input")),
    "call": (("type", "name", "input"), ("name", "input")),
    "cancel": (("type", "target_sequence"), ("target_sequence",)),
    "detach": (("type",), ()),
    "teardown": (("type",), ()),
}


def decode_command(data):
    """Decodes a command strictly; raises BadRequest or Unsupported."""
    try:
        doc = json.loads(data, object_pairs_hook=_no_duplicate_keys)
    except (ValueError, RecursionError) as e:
        if isinstance(e, BadRequest):
            raise
        raise BadRequest("", f"malformed JSON: {e}") from None
    _object(doc, "", ("contract", "operation"), ("contract", "operation"))
    if doc["contract"] != CONTRACT:
        raise BadRequest("contract", f"must be {CONTRACT!r}")
    op = _object(doc["operation"], "operation",
                 ("session_id", "environment", "sequence", "request", "binding",
                  "configuration", "template", "context", "reporter"),
                 ("session_id", "environment", "sequence", "request"))
    _identifier(op["session_id"], "operation.session_id")
    _identifier(op["environment"], "operation.environment")
    _integer(op["sequence"], "operation.sequence", 1)
    if op.get("binding") is not None:
        b = _object(op["binding"], "operation.binding", ("name", "sequence"), ("name", "sequence"))
        _identifier(b["name"], "operation.binding.name")
        _integer(b["sequence"], "operation.binding.sequence", 1)
    if op.get("template"):
        _identifier(op["template"], "operation.template")
    for g in ("context", "reporter"):
        if op.get(g) is not None:
            _grant(op[g], "operation." + g)
    req = op["request"]
    if not isinstance(req, dict) or not isinstance(req.get("type"), str):
        raise BadRequest("operation.request.type", "is required")
    if req["type"] not in REQUEST_FIELDS:
        raise Unsupported(f"unsupported request type {req['type']!r}")
    allowed, required = REQUEST_FIELDS[req["type"]]
    _object(req, "operation.request", allowed, required)
    if req["type"] == "execute":
        if req.get("deadline_ms") is not None:
            _integer(req["deadline_ms"], "operation.request.deadline_ms", 0)
        if req.get("callback") is not None:
            _grant(req["callback"], "operation.request.callback")
    elif req["type"] == "call":
        _identifier(req["name"], "operation.request.name")
    elif req["type"] == "cancel":
        _integer(req["target_sequence"], "operation.request.target_sequence", 1)
    return doc


def failure(code, message, retryable=False, details=None):
    r = {"type": "failure", "code": code, "message": message[:MAX_MESSAGE] or code, "retryable": retryable}
    if details is not None:
        r["details"] = details
    return r


def ack_lost(e):
    return {"type": "unknown", "message": f"the completion acknowledgement was lost; the result may or may not be committed: {e}"}


def refused_finish(e):
    """Answers a finish Brain refused with e, a 4xx answer: a failure with
    Brain's code (environment_failed when it sent no identifier) and its
    status, code and message in details."""
    try:
        doc = json.loads(e.read(DEFAULT_MAX_BODY))
    except (OSError, ValueError, RecursionError, http.client.HTTPException):
        doc = None
    code = message = ""
    if isinstance(doc, dict) and isinstance(doc.get("code", ""), str) and isinstance(doc.get("message", ""), str):
        code, message = doc.get("code", "")[:MAX_MESSAGE], doc.get("message", "")[:MAX_MESSAGE]
    details = {"status": e.code}
    said = f"finish answered {e.code}"
    if code:
        details["code"] = code
        said += f" {code}"
    if message:
        details["message"] = message
        said += f": {message}"
    return failure(code if IDENTIFIER.fullmatch(code) else "environment_failed",
                   "Brain refused the finish of the result; nothing was committed: " + said, details=details)


def binding_key(op):
    seq = (op.get("binding") or {}).get("sequence", 1)
    key = f"{op['session_id']}/{op['environment']}"
    return key if seq == 1 else f"{key}/{seq}"


class Binding:
    """One binding's state; its store is allocated on first use, once."""

    def __init__(self):
        self.lock = threading.Lock()
        self.store = None


class Memory:
    """The latest keys noted, at most limit of them, each with a value:
    noting one more forgets the oldest. Not locked: its owner locks."""

    def __init__(self, limit):
        self.limit = max(1, limit)
        self.items = {}  # key -> value, oldest first

    def __contains__(self, key):
        return key in self.items

    def get(self, key):
        return self.items.get(key)

    def note(self, key, value=None):
        self.items.pop(key, None)
        self.items[key] = value
        while len(self.items) > self.limit:
            del self.items[next(iter(self.items))]

    def forget(self, key):
        self.items.pop(key, None)


class Provider:
    """The provider's state and operations, independent of HTTP.

    It remembers the latest max_remembered setups and executes it
    dispatched (or whose cancel came first) and as many torn-down
    bindings, so that its memory stays bounded however long it serves: a
    repeat of an older setup or execute runs again, and an operation on an older torn-down binding
    answers unavailable as on one never set up here."""

    def __init__(self, max_remembered=DEFAULT_MAX_REMEMBERED):
        self.lock = threading.Lock()
        self.live = {}       # binding key -> Binding
        self.gone = Memory(max_remembered)  # torn-down binding keys
        # setups and executes already dispatched -> False, or executes
        # whose cancel came before them -> True
        self.seen = Memory(max_remembered)
        self.running = {}    # execute key -> threading.Event (set on cancel)
        self.allocations = 0

    def operate(self, op):
        req = op["request"]
        kind = req["type"]
        key = binding_key(op)
        if kind == "setup":
            op_key = f"{op['session_id']}/{op['environment']}/{op['sequence']}"
            with self.lock:
                if self.seen.get(op_key) is False:
                    return {"type": "unknown", "message": f"setup {op['sequence']} was already run; it is never run twice"}
                self.seen.note(op_key, False)
            return self.setup(key, req.get("configuration"))
        if kind == "cancel":
            target = f"{op['session_id']}/{op['environment']}/{req['target_sequence']}"
            with self.lock:
                ev = self.running.get(target)
                if ev is None and target not in self.seen:
                    # The cancel overtook its execute (Brain sends each
                    # once, on connections of their own): keep it, so the
                    # execute answers cancelled without running.
                    self.seen.note(target, True)
            if ev is not None:
                ev.set()
            return {"type": "accepted"}
        if kind == "detach":
            return {"type": "accepted"}
        if kind == "teardown":
            with self.lock:
                self.live.pop(key, None)
                self.gone.note(key)
            return {"type": "accepted"}
        b = self.binding(key)
        if kind == "call":
            return self.call(b, req["name"])
        return self.execute(op, b)

    def setup(self, key, configuration):
        if configuration is not None and not isinstance(configuration, dict):
            raise Failure("invalid_configuration", "configuration must be an object")
        with self.lock:
            if key in self.live:
                raise Failure("already_exists", f"binding {key} is already set up")
            self.gone.forget(key)
            self.live[key] = Binding()
        return {"type": "accepted"}

    def binding(self, key):
        with self.lock:
            if key in self.gone:
                raise Failure("unavailable", f"binding {key} was torn down")
            b = self.live.get(key)
        if b is None:
            raise Failure("unavailable", f"binding {key} is not set up here")
        return b

    def store(self, b):
        with b.lock:  # concurrent first callers wait for the one allocation
            if b.store is None:
                with self.lock:
                    self.allocations += 1
                    n = self.allocations
                b.store = {"id": n, "data": {}}
            return b.store

    def call(self, b, name):
        if name != "inspect":
            raise Failure("unsupported", f"unsupported method {name!r}")
        allocated = b.store is not None
        return {"type": "result", "output": {"allocated": allocated}}

    def execute(self, op, b):
        req = op["request"]
        exec_key = f"{op['session_id']}/{op['environment']}/{op['sequence']}"
        with self.lock:
            if self.seen.get(exec_key):
                self.seen.note(exec_key, False)
                return failure("cancelled", "the invocation was cancelled before it arrived")
            if exec_key in self.seen:
                return {"type": "unknown", "message": f"sequence {op['sequence']} was already dispatched; it is never run twice"}
            self.seen.note(exec_key, False)
            cancel = self.running[exec_key] = threading.Event()
        try:
            impl = req["implementation"]
            name = impl.get("name") if isinstance(impl, dict) else None
            deadline = None
            if req.get("deadline_ms") is not None:
                deadline = time.monotonic() + req["deadline_ms"] / 1000
                if req["deadline_ms"] <= 0:
                    # The time ran out on the way: nothing runs.
                    raise Failure("timeout", "the invocation's deadline had passed when it arrived")
            output = self.run(name, req["input"], b, deadline, cancel)
            if cancel.is_set():
                raise Failure("cancelled", "the invocation was cancelled")
            if deadline is not None and time.monotonic() >= deadline:
                # The deadline came first: the stop is the answer, and a
                # result reached afterwards is never finished.
                raise Failure("timeout", "the invocation's deadline expired")
            if name == "progress":
                return {"type": "progress", "data": output}
            callback = req.get("callback")
            if callback and "finish" in callback["methods"]:
                # Still running: a cancel that comes while the finish is
                # on the way is seen.
                return self.complete(callback, output, deadline, cancel)
            return {"type": "result", "output": output}
        finally:
            with self.lock:
                self.running.pop(exec_key, None)

    def run(self, name, data, b, deadline, cancel):
        if name == "echo":
            return {"echo": data}
        if name == "sleep":
            if not isinstance(data, dict) or not isinstance(data.get("ms"), int):
                raise Failure("invalid_input", "want {\"ms\": <integer>}")
            wait = data["ms"] / 1000
            stop_for = "ok"
            if deadline is not None and deadline - time.monotonic() < wait:
                wait, stop_for = max(0.0, deadline - time.monotonic()), "timeout"
            if cancel.wait(wait):
                raise Failure("cancelled", "the invocation was cancelled")
            if stop_for == "timeout":
                raise Failure("timeout", "the invocation's deadline expired")
            return {"slept": data["ms"]}
        if name in ("write", "read"):
            if not isinstance(data, dict) or not isinstance(data.get("key"), str) or not data["key"]:
                raise Failure("invalid_input", "want {\"key\": <string>, \"value\"?: <any>}")
            s = self.store(b)
            with b.lock:
                if name == "write":
                    s["data"][data["key"]] = data.get("value")
                    return {"written": data["key"]}
                found = data["key"] in s["data"]
                return {"found": found, "value": s["data"].get(data["key"])}
        if name == "allocation":
            return {"allocation": self.store(b)["id"]}
        if name == "progress":
            return {"step": 1}
        raise Failure("unsupported", f"unsupported descriptor {json.dumps(name)}")

    @staticmethod
    def complete(grant, output, deadline, cancel):
        """Finishes the Tool with output, once, and answers the execute.

        A 4xx answer is Brain's refusal: nothing was committed. A 5xx
        answer, a redirect (never followed), no answer or one that is not
        a committed sequence leaves the outcome unknown. Nothing is sent
        again."""
        try:
            Provider.finish(grant, output, deadline)
        except urllib.error.HTTPError as e:
            if not 400 <= e.code <= 499:
                return ack_lost(e)
            # Brain closes a Tool it cancels (or whose deadline passed)
            # before the cancel comes: then that is why it refused.
            if cancel.is_set():
                return failure("cancelled", "the invocation was cancelled")
            if deadline is not None and time.monotonic() >= deadline:
                return failure("timeout", "the invocation's deadline expired")
            return refused_finish(e)
        except (OSError, ValueError, RecursionError, http.client.HTTPException) as e:
            return ack_lost(e)
        return {"type": "result", "output": output}

    @staticmethod
    def finish(grant, output, deadline):
        """Calls finish once; an error means it was not acknowledged.

        The acknowledgement is the committed sequence, a positive integer;
        any other answer is none. A non-2xx answer, a redirect included,
        raises HTTPError."""
        body = json.dumps({"method": "finish", "input": {"status": "ok", "value": output}}).encode()
        req = urllib.request.Request(grant["url"], data=body, method="POST", headers={
            "Content-Type": "application/json", "Authorization": "Bearer " + grant["token"]})
        timeout = 30.0
        if deadline is not None:
            timeout = max(1.0, deadline - time.monotonic())
        with CALLBACKS.open(req, timeout=timeout) as res:
            ack = json.loads(res.read())
        if isinstance(ack, bool) or not isinstance(ack, int) or ack < 1:
            raise ValueError(f"finish answered {ack!r}, not a committed sequence")


class NoRedirect(urllib.request.HTTPRedirectHandler):
    """Follows no redirect, as Brain's own callback client does: a 3xx
    answer is an HTTPError, and the grant's token never goes to the
    address it names."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


CALLBACKS = urllib.request.build_opener(NoRedirect)


class Handler(BaseHTTPRequestHandler):
    """Serves POST /v1/operations: token, route, method, size, decoding."""

    protocol_version = "HTTP/1.1"
    server_version = "python-provider"
    provider = None  # set by serve
    token = ""
    max_body = DEFAULT_MAX_BODY

    def log_message(self, format, *args):  # keep tokens and bodies out of logs
        sys.stderr.write("%s %s\n" % (self.command, format % args))

    def authorized(self):
        got = self.headers.get("Authorization", "")
        return hmac.compare_digest(got.encode(), ("Bearer " + self.token).encode())

    def response_sequence(self, sequence):
        return sequence

    def reply(self, status, doc, extra=()):
        body = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in extra:
            self.send_header(k, v)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def drain(self, length):
        """Reads and drops up to a few limits of body, then closes."""
        left = min(length, 4 * self.max_body)
        while left > 0:
            chunk = self.rfile.read(min(left, 1 << 16))
            if not chunk:
                break
            left -= len(chunk)
        self.close_connection = True

    def handle_any(self):
        length = self.headers.get("Content-Length")
        if not self.authorized():
            self.drain(int(length) if length and length.isdigit() else 0)
            return self.reply(401, {"error": "a valid bearer token is required"}, [("WWW-Authenticate", "Bearer")])
        if self.path != "/v1/operations":
            self.drain(int(length) if length and length.isdigit() else 0)
            return self.reply(404, {"error": "no route " + self.path + "; POST /v1/operations"})
        if self.command != "POST":
            return self.reply(405, {"error": "use POST"}, [("Allow", "POST")])
        if length is None or not length.isdigit():
            self.close_connection = True
            return self.reply(411, {"error": "Content-Length is required"})
        if int(length) > self.max_body:
            self.drain(int(length))
            return self.reply(413, {"error": f"body larger than {self.max_body} bytes"})
        data = self.rfile.read(int(length))
        try:
            doc = decode_command(data)
        except BadRequest as e:
            return self.reply(400, {"error": str(e), "field": e.field})
        except Unsupported as e:
            seq = json.loads(data)["operation"]["sequence"]
            return self.reply(200, self.response(seq, failure("unsupported", str(e))))
        op = doc["operation"]
        try:
            receipt = self.provider.operate(op)
        except Failure as f:
            receipt = failure(f.code, f.message, f.retryable, f.details)
        except Exception as e:  # a bug: answer it, keep serving
            receipt = failure("environment_failed", f"{type(e).__name__}: {e}")
        self.reply(200, self.response(op["sequence"], receipt))

    def response(self, sequence, receipt):
        return {"contract": CONTRACT, "sequence": self.response_sequence(sequence), "receipt": receipt}

    do_POST = do_GET = do_PUT = do_DELETE = do_PATCH = do_HEAD = handle_any


def listen_address(value):
    """Reads --listen: host:port, the host an IPv6 address in brackets or
    not given (every interface), the port 0 (any free one) to 65535."""
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise argparse.ArgumentTypeError(f"{value!r}: want host:port with a port from 0 to 65535, such as 127.0.0.1:8090")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        raise argparse.ArgumentTypeError(f"{value!r}: write an IPv6 address in brackets, such as [::1]:8090")
    return host, int(port)


def at_least_one(value):
    """Reads a count or a size that must be at least 1."""
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"{n}: want at least 1")
    return n


def serve(handler_class=Handler, argv=None):
    ap = argparse.ArgumentParser(description="an environment/v1 provider in Python")
    ap.add_argument("--listen", default="127.0.0.1:8090", type=listen_address,
                    help="host:port to listen on (port 0: any free port)")
    ap.add_argument("--token", default=os.environ.get("PROVIDER_TOKEN", ""),
                    help="bearer token Brain must present (default: $PROVIDER_TOKEN)")
    ap.add_argument("--max-body-bytes", type=at_least_one, default=DEFAULT_MAX_BODY,
                    help="largest operation body accepted, at least 1")
    ap.add_argument("--max-remembered", type=at_least_one, default=DEFAULT_MAX_REMEMBERED,
                    help="how many of the latest setups, executes and torn-down bindings are remembered, at least 1")
    args = ap.parse_args(argv)
    if not args.token:
        ap.error("a token is required (--token or $PROVIDER_TOKEN)")
    host, port = args.listen

    class Bound(handler_class):
        provider = Provider(args.max_remembered)
        token = args.token
        max_body = args.max_body_bytes

    class Server(ThreadingHTTPServer):
        address_family = socket.AF_INET6 if ":" in host else socket.AF_INET

    try:
        srv = Server((host, port), Bound)
    except OSError as e:  # in use, not this machine's, no such host
        sys.exit(f"{ap.prog}: cannot listen on {host or '*'}:{port}: {e}")
    srv.daemon_threads = True
    shown = f"[{host}]" if ":" in host else host
    print(f"listening on http://{shown}:{srv.server_address[1]}", flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    serve()
