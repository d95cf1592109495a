#!/usr/bin/env python3
"""Full-text search at scale: the first page of a one-word `q=` on the reference application's
critters, against a Directus-style `ilike '%word%'` over the same members, on SQLite and
PostgreSQL.

It migrates a fresh database with the reference application's own migrations (the search
index among them), loads ROWS critters straight into the table (names of two words from a
vocabulary, species from a list; the SQLite triggers and PostgreSQL's generated column index
them as any write would), starts the server, and times each request REPEAT times from this
process over loopback, printing the median and the 90th percentile in milliseconds with the
number of matches.

    cargo build --release -p reference-app
    benches/search/run.py --server target/release/reference-app [--rows 1000000] [--backend sqlite|postgres|both]

Take the figures on a quiet machine (load average under 1): they are wall-clock times.
"""

import argparse
import json
import os
import random
import sqlite3
import statistics
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request
import uuid

PG_ADMIN = "postgres://postgres@127.0.0.1:5432/test"
SPECIES = [f"species{i}" for i in range(50)]


def vocabulary(n):
    rng = random.Random(7)
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = set()
    while len(words) < n:
        words.add("".join(rng.choice(letters) for _ in range(rng.randint(4, 9))))
    return sorted(words)


def rows(n):
    """(id, created_at, name, species): every name two words of a 2,000-word vocabulary, so
    a word is in about 1,000 of 1,000,000 names; `species7` is in one row of 50."""
    rng = random.Random(11)
    words = vocabulary(2000)
    base = 1_700_000_000
    for i in range(n):
        t = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(base + i))
        yield (
            str(uuid.UUID(int=rng.getrandbits(128), version=4)),
            f"{t}.000000Z",
            f"{rng.choice(words)} {rng.choice(words)}",
            rng.choice(SPECIES),
        )


def cli(server, cwd, env, *args):
    out = subprocess.run([server, *args], cwd=cwd, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(args)}: {out.stderr}")
    return out.stdout.strip()


def load_sqlite(path, n):
    db = sqlite3.connect(path)
    db.execute("PRAGMA journal_mode=WAL")
    db.executemany(
        "INSERT INTO critters (id, created_at, updated_at, name, species, cuteness_level) "
        "VALUES (?, ?, ?, ?, ?, 10)",
        ((i, c, c, name, sp) for i, c, name, sp in rows(n)),
    )
    db.commit()
    db.execute("ANALYZE")
    db.close()


def load_postgres(uri, n):
    buf = "".join(f"{i}\t{c}\t{c}\t{name}\t{sp}\t10\n" for i, c, name, sp in rows(n))
    subprocess.run(
        ["psql", uri, "-q", "-c",
         "COPY critters (id, created_at, updated_at, name, species, cuteness_level) FROM STDIN"],
        input=buf, text=True, check=True)
    subprocess.run(["psql", uri, "-q", "-c", "VACUUM ANALYZE critters"], check=True)


def get(base, token, path):
    req = urllib.request.Request(base + path, headers={"authorization": f"Bearer {token}"})
    start = time.perf_counter()
    with urllib.request.urlopen(req) as r:
        body = r.read()
    return (time.perf_counter() - start) * 1000, json.loads(body)


def measure(base, token, label, path, repeat):
    times = []
    total = None
    for _ in range(repeat):
        ms, page = get(base, token, path)
        times.append(ms)
        total = page["pagination"]["total"]
    times.sort()
    p90 = times[int(len(times) * 0.9) - 1]
    print(f"  {label:<44} median {statistics.median(times):8.2f} ms   p90 {p90:8.2f} ms   matches {total}")


def run(server, backend, n, repeat):
    work = tempfile.mkdtemp(prefix="search-bench-")
    env = dict(os.environ, BCRYPT_COST="4", RUST_LOG="warn", ORM_PERFORMANCE_MONITORING="false")
    env["JWT_SECRET_KEY"] = "search-bench-secret-key-of-enough-length-0123456789"
    if backend == "postgres":
        name = f"search_bench_{os.getpid()}"
        subprocess.run(["psql", PG_ADMIN, "-q", "-c", f"CREATE DATABASE {name}"], check=True)
        env["ORM_DATABASE_URI"] = f"postgres://postgres@127.0.0.1:5432/{name}"
    else:
        env["ORM_DATABASE_URI"] = f"sqlite://{work}/bench.db"
    try:
        cli(server, work, env, "migrate")
        start = time.time()
        if backend == "postgres":
            load_postgres(env["ORM_DATABASE_URI"], n)
        else:
            load_sqlite(f"{work}/bench.db", n)
        print(f"{backend}: {n} critters loaded and indexed in {time.time() - start:.0f} s")
        pw_env = dict(env, CRUDFORGE_PASSWORD="bench-password-1234")
        cli(server, work, pw_env, "create-user", "--email", "bench@example.com")
        port = 18000 + os.getpid() % 1000
        proc = subprocess.Popen([server, "serve", "--bind", f"127.0.0.1:{port}"], cwd=work, env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        base = f"http://127.0.0.1:{port}"
        for _ in range(200):
            try:
                urllib.request.urlopen(base + "/health")
                break
            except Exception:
                time.sleep(0.1)
        try:
            login = urllib.request.Request(
                base + "/api/user/login/",
                data=json.dumps({"email": "bench@example.com", "password": "bench-password-1234"}).encode(),
                headers={"content-type": "application/json"})
            with urllib.request.urlopen(login) as r:
                token = json.loads(r.read())["access_token"]
            word = vocabulary(2000)[1234]
            like = urllib.parse.quote(f"name ilike '%{word}%' or species ilike '%{word}%'")
            like_sp = urllib.parse.quote("name ilike '%species7%' or species ilike '%species7%'")
            cases = [
                (f"q={word} (one word, ~0.1% of rows)", f"/api/critters/?q={word}&count=none"),
                (f"ilike '%{word}%' on name, species", f"/api/critters/?filter={like}&count=none"),
                ("q=species7 (one word, 2% of rows)", "/api/critters/?q=species7&count=none"),
                ("ilike '%species7%' on name, species", f"/api/critters/?filter={like_sp}&count=none"),
                ("q=species7&sort=-created_at (not ranked)", "/api/critters/?q=species7&sort=-created_at&count=none"),
                (f"q={word} with its count", f"/api/critters/?q={word}"),
                (f"ilike '%{word}%' with its count", f"/api/critters/?filter={like}"),
            ]
            for label, path in cases:
                get(base, token, path)  # warm
                measure(base, token, label, path, repeat)
        finally:
            proc.terminate()
            proc.wait()
    finally:
        if backend == "postgres":
            subprocess.run(["psql", PG_ADMIN, "-q", "-c", f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"])


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--server", required=True)
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--repeat", type=int, default=30)
    p.add_argument("--backend", choices=["sqlite", "postgres", "both"], default="both")
    a = p.parse_args()
    server = os.path.abspath(a.server)
    for b in (["sqlite", "postgres"] if a.backend == "both" else [a.backend]):
        run(server, b, a.rows, a.repeat)


if __name__ == "__main__":
    main()
