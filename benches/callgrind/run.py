#!/usr/bin/env python3
"""Instructions per request of the reference application, counted by callgrind.

Starts the reference application's server (a release build of `reference-app`) under
`valgrind --tool=callgrind --instr-atstart=no`, pinned to one CPU (so actix-web starts one
worker), on a fresh SQLite file or a fresh PostgreSQL database; creates an ordinary user,
signs in, creates the critters through the API, then for each workload sends warm-up
requests, zeroes the counters, sends the measured requests on one keep-alive connection and
dumps the counters. It prints the instructions per request of each workload (all of the
server's threads: workers, the log writer, the runtime's timers).

Any other crudforge application with the same command line (`migrate`, `create-user`,
`serve`), users at `/api/user/` and a resource with the critters' members can be measured the
same way: `--server` names its binary, `--prefix` the resource (benches/feature-cost).

Python 3 standard library only. See README.md beside this file.

    benches/callgrind/run.py --server target/release/reference-app --backend sqlite
    benches/callgrind/run.py --server target/release/reference-app --backend postgres \\
        --postgres-url postgres://postgres@127.0.0.1:5432/test
    benches/callgrind/run.py --server target/release/feature-cost --backend sqlite --prefix /feed/
"""

import argparse
import http.client
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import uuid

USER_EMAIL = "user@callgrind.example"
PASSWORD = "callgrind-password-0123"
JWT_SECRET = "callgrind-signing-key-long-enough-0123456789abcdef"
LOGIN_PATH = "/api/user/login/"
# The resource measured (`--prefix`): the reference application's critters by default.
CRITTERS = "/api/critters/"
# The filter, order and page of api-bench's W2 (benches/api-bench/src/measure.rs), after the
# resource's prefix.
W2_QUERY = "?species=cat&cuteness_level__gte=5&page=2&page_size=25"
# Seeded species (as api-bench's); only `cat` rows can match W2's filter.
SPECIES = ["cat", "dog", "otter", "hedgehog", "owl", "fox", "rabbit", "axolotl"]
# Cats matching W2's filter, whatever the number of rows (from 5,736 rows on), as api-bench.
MATCHES = 717
# Species of W3's critters: matched by no filter.
INSERTED_SPECIES = "bench"
# Each workload's request, `{prefix}` standing for the resource's prefix.
WORKLOADS = {
    "w1": "GET {prefix}{{id}}",
    "w2": "GET {prefix}" + W2_QUERY,
    "w3": "POST {prefix}",
    "w4": "PATCH {prefix}{{id}}",
}


def workload(key, prefix):
    """Workload `key`'s request at `prefix`, as the table shows it."""
    return WORKLOADS[key].format(prefix=prefix)


def log(msg):
    """A progress line on stderr."""
    print(msg, file=sys.stderr, flush=True)


def seed_row(i):
    """Critter `i` of the seed: api-bench's species and cuteness (`setup::seed`)."""
    species = SPECIES[i % len(SPECIES)]
    if species == "cat":
        k = i // len(SPECIES)
        level = 5 + k % 6 if k < MATCHES else 1 + k % 4
    else:
        level = 1 + i % 10
    return {"name": f"critter {i}", "species": species, "cuteness_level": level}


class Conn(http.client.HTTPConnection):
    """One HTTP/1.1 keep-alive connection that counts how often it (re)connects."""

    def __init__(self, host, port, token=None):
        super().__init__(host, port, timeout=600)
        self.connects = 0
        self.token = token

    def connect(self):
        super().connect()
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.connects += 1

    def send_req(self, method, path, body=None, want=None):
        """Sends one request (the headers api-bench sends) and reads the whole answer;
        returns (status, body). `want`: the status expected, else an exception."""
        data = None if body is None else json.dumps(body).encode()
        self.putrequest(method, path, skip_accept_encoding=True)
        self.putheader("Accept", "application/json")
        if self.token:
            self.putheader("Authorization", f"Bearer {self.token}")
        if data is not None:
            self.putheader("Content-Type", "application/json")
            self.putheader("Content-Length", str(len(data)))
        self.endheaders(data)
        resp = self.getresponse()
        text = resp.read()
        if want is not None and resp.status != want:
            raise RuntimeError(
                f"{method} {path}: status {resp.status}, expected {want}: {text[:300]!r}"
            )
        if resp.will_close:
            raise RuntimeError(f"{method} {path}: the server closes the connection")
        return resp.status, text


class Scratch:
    """A fresh database for one run (a SQLite file in a temporary directory, or a PostgreSQL
    database created on the server and dropped by `cleanup`) and the server's environment."""

    def __init__(self, backend, postgres_url, keep, extra_env):
        self.dir = tempfile.mkdtemp(prefix="callgrind-")
        os.makedirs(os.path.join(self.dir, "data"))
        self.keep = keep
        self.pg = None
        self.extra_env = extra_env
        if backend == "sqlite":
            self.uri = "sqlite://" + os.path.join(self.dir, "bench.db")
        else:
            name = "cg_" + uuid.uuid4().hex[:16]
            psql(postgres_url, f"CREATE DATABASE {name}")
            self.pg = (postgres_url, name)
            parts = urllib.parse.urlsplit(postgres_url)
            self.uri = urllib.parse.urlunsplit(parts._replace(path="/" + name))

    def env(self):
        """The server's whole environment (only PATH is inherited)."""
        env = {
            "ORM_DATABASE_URI": self.uri,
            "CRUDFORGE_DATA_DIR": os.path.join(self.dir, "data"),
            "JWT_SECRET_KEY": JWT_SECRET,
            # A day: seeding under valgrind outlasts the default 15 minutes on PostgreSQL.
            "JWT_ACCESS_TOKEN_EXPIRES": "86400",
            "DEBUG": "false",
            "ORM_PERFORMANCE_MONITORING": "false",
            # The sign-in is one bcrypt check: quick under valgrind at the lowest cost.
            "BCRYPT_COST": "4",
            # Requests under valgrind are slow; none may time out.
            "REQUEST_TIMEOUT": "600",
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        }
        env.update(self.extra_env)
        return env

    def cleanup(self):
        """Drops the PostgreSQL database and removes the temporary directory."""
        if self.pg:
            try:
                psql(self.pg[0], f"DROP DATABASE IF EXISTS {self.pg[1]} WITH (FORCE)")
            except RuntimeError as e:
                log(f"warning: {e}")
        if self.keep:
            log(f"kept {self.dir}")
        else:
            shutil.rmtree(self.dir, ignore_errors=True)


def psql(url, sql):
    """Runs one statement with `psql` (outside a transaction)."""
    out = subprocess.run(
        ["psql", url, "-v", "ON_ERROR_STOP=1", "-qAt", "-c", sql],
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        raise RuntimeError(f"psql {sql!r}: {out.stderr.strip()}")


def run_cli(server, scratch, args, stdin=None):
    """Runs one command of the server binary's command line."""
    out = subprocess.run(
        [server, *args],
        env=scratch.env(),
        cwd=scratch.dir,
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        raise RuntimeError(f"{os.path.basename(server)} {' '.join(args)}: {out.stderr.strip()}")
    return out.stdout


def free_port():
    """A free port on the loopback interface."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """The reference application under callgrind, pinned to one CPU."""

    def __init__(self, binary, scratch, cpu, valgrind_args):
        self.port = free_port()
        self.out = os.path.join(scratch.dir, "callgrind.out")
        self.log = os.path.join(scratch.dir, "server.log")
        cmd = [
            "taskset",
            "-c",
            str(cpu),
            "valgrind",
            "--tool=callgrind",
            "--instr-atstart=no",
            f"--callgrind-out-file={self.out}",
            *valgrind_args,
            binary,
            "serve",
            "--bind",
            f"127.0.0.1:{self.port}",
        ]
        self.cmd = cmd
        with open(self.log, "wb") as f:
            # taskset and valgrind exec in place: the child's pid is the server's.
            self.proc = subprocess.Popen(
                cmd,
                env=scratch.env(),
                cwd=scratch.dir,
                stdin=subprocess.DEVNULL,
                stdout=f,
                stderr=subprocess.STDOUT,
            )
        self.wait_ready()

    def wait_ready(self, seconds=600):
        until = time.monotonic() + seconds
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the server exited ({self.proc.returncode}):\n{self.tail()}")
            try:
                c = Conn("127.0.0.1", self.port)
                status, _ = c.send_req("GET", "/ready")
                c.close()
                if status == 200:
                    return
            except (OSError, http.client.HTTPException, RuntimeError):
                pass
            if time.monotonic() > until:
                raise RuntimeError(f"the server was not ready within {seconds} s:\n{self.tail()}")
            time.sleep(0.5)

    def tail(self, lines=30):
        try:
            with open(self.log, errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return ""

    def threads(self):
        """The names of the server's threads."""
        names = []
        task = f"/proc/{self.proc.pid}/task"
        for t in sorted(os.listdir(task)):
            try:
                with open(f"{task}/{t}/comm") as f:
                    names.append(f.read().strip())
            except OSError:
                pass
        return names

    def control(self, *args):
        """Runs `callgrind_control ARGS PID`."""
        out = subprocess.run(
            ["callgrind_control", *args, str(self.proc.pid)],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        if out.returncode != 0 or "Error" in out.stdout:
            raise RuntimeError(
                f"callgrind_control {' '.join(args)}: {out.stdout.strip()} {out.stderr.strip()}"
            )
        return out.stdout

    def dump(self):
        """Dumps the counters; returns the new dump file's path."""
        before = set(self.dumps())
        self.control("-d")
        until = time.monotonic() + 60
        while True:
            new = sorted(set(self.dumps()) - before, key=os.path.getmtime)
            if new:
                path = new[-1]
                # Wait until the file is complete (its totals line written).
                if totals(path) is not None:
                    return path
            if time.monotonic() > until:
                raise RuntimeError("no complete callgrind dump appeared")
            time.sleep(0.2)

    def dumps(self):
        d = os.path.dirname(self.out)
        base = os.path.basename(self.out)
        return [os.path.join(d, n) for n in os.listdir(d) if n.startswith(base + ".")]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def totals(path):
    """The total instructions (Ir) of a callgrind dump: its `totals:` (or `summary:`) line."""
    found = None
    with open(path, errors="replace") as f:
        for line in f:
            m = re.match(r"(totals|summary):\s+(\d+)", line)
            if m:
                found = int(m.group(2))
                if m.group(1) == "totals":
                    return found
    return found


def annotate(dump, dest, lines, note):
    """Writes `note` and the head of `callgrind_annotate --inclusive=yes DUMP` to `dest`."""
    out = subprocess.run(
        ["callgrind_annotate", "--inclusive=yes", dump],
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        raise RuntimeError(f"callgrind_annotate {dump}: {out.stderr.strip()}")
    text = out.stdout.splitlines()
    # The header (up to the column titles and their rule), then `lines` function lines.
    head = 0
    for i, line in enumerate(text):
        if "file:function" in line:
            head = i + 2
            break
    with open(dest, "w") as f:
        f.write(note + "\n" + "\n".join(text[: head + lines]) + "\n")


def request_maker(key, prefix, ids):
    """The `n`-th request of workload `key` on the resource at `prefix` as (method, path, body,
    expected status)."""
    stride = len(ids) // 2

    def w1(n):
        return "GET", f"{prefix}{ids[n % len(ids)]}", None, 200

    def w2(_n):
        return "GET", prefix + W2_QUERY, None, 200

    def w3(n):
        body = {"name": f"bench {n}", "species": INSERTED_SPECIES, "cuteness_level": 3}
        return "POST", prefix, body, 201

    def w4(n):
        # Other rows than W1's first ones; each request renames its row.
        return "PATCH", f"{prefix}{ids[(stride + n) % len(ids)]}", {"name": f"patched {n}"}, 200

    return {"w1": w1, "w2": w2, "w3": w3, "w4": w4}[key]


def measure(
    server, key, prefix, ids, token, warmup, requests, offset, keep_dir, label, annotate_lines
):
    """Warm-up, zero, `requests` measured requests on one connection, dump; returns the
    instructions counted."""
    make = request_maker(key, prefix, ids)
    conn = Conn("127.0.0.1", server.port, token)
    n = offset
    for _ in range(warmup):
        method, path, body, want = make(n)
        conn.send_req(method, path, body, want)
        n += 1
    server.control("-z")
    server.control("-i", "on")
    connects = conn.connects
    t = time.monotonic()
    for _ in range(requests):
        method, path, body, want = make(n)
        conn.send_req(method, path, body, want)
        n += 1
    elapsed = time.monotonic() - t
    if conn.connects != connects:
        raise RuntimeError(f"{key}: the connection was reopened during the measurement")
    dump = server.dump()
    conn.close()
    ir = totals(dump)
    log(f"  {key}: {ir} instructions in {requests} requests ({elapsed:.1f} s), dump {dump}")
    if keep_dir:
        os.makedirs(keep_dir, exist_ok=True)
        kept = os.path.join(keep_dir, f"{label}-{key}.callgrind.out")
        shutil.copyfile(dump, kept)
        if annotate_lines:
            note = (
                f"# {label} {key.upper()} ({workload(key, prefix)}): {ir} instructions in "
                f"{requests} measured requests, {ir / requests / 1000:.1f}k per request"
            )
            dest = os.path.join(keep_dir, f"{label}-{key}.annotate.txt")
            annotate(kept, dest, annotate_lines, note)
    return ir


def seed(server, token, prefix, rows):
    """Creates `rows` critters through the API (at `prefix`) on one connection; returns their
    ids in creation order."""
    conn = Conn("127.0.0.1", server.port, token)
    ids = []
    t = time.monotonic()
    for i in range(rows):
        _, text = conn.send_req("POST", prefix, seed_row(i), 201)
        ids.append(json.loads(text)["id"])
        if (i + 1) % 1000 == 0:
            log(f"  seeded {i + 1} critters ({time.monotonic() - t:.0f} s)")
    conn.close()
    return ids


def sign_in(server):
    conn = Conn("127.0.0.1", server.port)
    _, text = conn.send_req("POST", LOGIN_PATH, {"email": USER_EMAIL, "password": PASSWORD}, 200)
    conn.close()
    return json.loads(text)["access_token"]


def main():
    p = argparse.ArgumentParser(
        description="Instructions per request of the reference application under callgrind."
    )
    p.add_argument(
        "--server",
        required=True,
        help="the server's release binary (reference-app, or another crudforge App such as "
        "feature-cost)",
    )
    p.add_argument(
        "--prefix",
        default=CRITTERS,
        help=f"the resource seeded and measured: its collection path (default {CRITTERS}); "
        "it needs the critters' members name, species and cuteness_level",
    )
    p.add_argument("--backend", choices=["sqlite", "postgres"], required=True)
    p.add_argument(
        "--postgres-url",
        default=os.environ.get(
            "CRUDFORGE_TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/test"
        ),
        help="PostgreSQL server (a database cg_<random> is created there and dropped after)",
    )
    p.add_argument("--workloads", default="w1,w2,w3,w4", help="comma-separated, of w1-w4")
    p.add_argument("--rows", type=int, default=6000, help="critters to create (default 6000)")
    p.add_argument("--warmup", type=int, default=50, help="warm-up requests per workload")
    p.add_argument("--requests", type=int, default=300, help="measured requests per workload")
    p.add_argument("--cpu", type=int, default=0, help="the CPU the server is pinned to")
    p.add_argument("--label", default=None, help="name of the run in the table and file names")
    p.add_argument("--keep-dumps", metavar="DIR", help="copy each workload's dump into DIR")
    p.add_argument(
        "--annotate",
        type=int,
        default=0,
        metavar="N",
        help="with --keep-dumps: also write the top N lines of callgrind_annotate --inclusive=yes",
    )
    p.add_argument("--keep-scratch", action="store_true", help="keep the temporary directory")
    p.add_argument(
        "--server-env", action="append", default=[], metavar="K=V", help="more server environment"
    )
    p.add_argument(
        "--valgrind-arg", action="append", default=[], metavar="ARG", help="more valgrind options"
    )
    p.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    a = p.parse_args()

    binary = os.path.abspath(a.server)
    if not os.path.isfile(binary):
        sys.exit(f"no server binary at {binary}")
    keys = [w.strip().lower() for w in a.workloads.split(",") if w.strip()]
    for k in keys:
        if k not in WORKLOADS:
            sys.exit(f"unknown workload {k!r} (w1-w4)")
    if a.rows < 2 or a.requests < 1 or a.warmup < 0:
        sys.exit("--rows must be at least 2, --requests at least 1, --warmup at least 0")
    extra = {}
    for kv in a.server_env:
        k, sep, v = kv.partition("=")
        if not sep:
            sys.exit(f"--server-env {kv!r}: expected K=V")
        extra[k] = v
    label = a.label or a.backend
    prefix = a.prefix
    if not (prefix.startswith("/") and prefix.endswith("/")):
        sys.exit(f"--prefix {prefix!r}: expected a path that starts and ends with /")

    scratch = Scratch(a.backend, a.postgres_url, a.keep_scratch, extra)
    server = None
    results = {}
    matches = None
    try:
        log(f"{label}: {a.backend} database {scratch.uri}")
        run_cli(binary, scratch, ["migrate"])
        user = ["create-user", "--email", USER_EMAIL, "--password-stdin"]
        run_cli(binary, scratch, user, PASSWORD + "\n")
        t = time.monotonic()
        server = Server(binary, scratch, a.cpu, a.valgrind_arg)
        took = time.monotonic() - t
        log(f"  server pid {server.proc.pid} ready in {took:.0f} s: {' '.join(server.cmd)}")
        names = server.threads()
        # actix-web's workers are arbiters, "actix-rt|system:0|arbiter:N" (cut to 15 bytes).
        workers = [n for n in names if n.startswith("actix-rt|system")]
        log(f"  {len(names)} threads, {len(workers)} actix worker(s): {', '.join(names)}")
        token = sign_in(server)
        ids = seed(server, token, prefix, a.rows)
        conn = Conn("127.0.0.1", server.port, token)
        _, text = conn.send_req("GET", prefix + W2_QUERY, None, 200)
        conn.close()
        matches = json.loads(text).get("pagination", {}).get("total")
        log(f"  seeded {len(ids)} critters; W2's filter matches {matches}")
        offset = 0
        for k in keys:
            results[k] = measure(
                server,
                k,
                prefix,
                ids,
                token,
                a.warmup,
                a.requests,
                offset,
                a.keep_dumps,
                label,
                a.annotate,
            )
            offset += a.warmup + a.requests
    finally:
        if server:
            server.stop()
        scratch.cleanup()

    print(f"\n{label}: {a.backend}, {a.rows} critters at {prefix} (W2 matches {matches}), "
          f"{a.warmup} warm-up + {a.requests} measured requests per workload, one connection")
    print(f"server: {binary}\n")
    print("| workload | instructions | thousands per request |")
    print("|---|---:|---:|")
    for k in keys:
        per = results[k] / a.requests / 1000
        print(f"| {k.upper()} `{workload(k, prefix)}` | {results[k]} | {per:.1f} |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(
                {
                    "label": label,
                    "backend": a.backend,
                    "server": binary,
                    "prefix": prefix,
                    "rows": a.rows,
                    "w2_matches": matches,
                    "warmup": a.warmup,
                    "requests": a.requests,
                    "instructions": results,
                    "k_per_request": {k: results[k] / a.requests / 1000 for k in keys},
                },
                f,
                indent=2,
            )


if __name__ == "__main__":
    main()
