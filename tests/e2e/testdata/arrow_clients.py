"""Read snapstore's Arrow and Parquet answers with real data tools.

Run by tests/e2e/arrow_test.go with the venv of scripts/pyclients.sh:

    python arrow_clients.py BASE DATASET KEY DIR V1 V2 TYPES

BASE is the server's URL, KEY the dataset's first key column; DIR holds,
for each version V, ref-V.ndjson (the JSON read of the version, one row a
line) and DATASET-V/DATASET.parquet (what `snapstore export` wrote), and
diff.ndjson (the NDJSON diff from V1 to V2). Every reader's values must
equal the JSON read's, NULLs included; the first difference is printed
and the exit status is 1. TYPES is a JSON object of column names and the
Arrow type (pyarrow's name) the stream must give each.
"""

import base64
import datetime
import decimal
import io
import json
import math
import os
import re
import sys
import urllib.request

import duckdb
import pandas
import polars
import pyarrow
import pyarrow.ipc
import pyarrow.parquet

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg)


def parse_duration(s):
    neg = s.startswith("-")
    h, m, sec = s.lstrip("-").split(":")
    d = datetime.timedelta(hours=int(h), minutes=int(m), seconds=float(sec))
    return -d if neg else d


def same(a, j):
    """Whether a reader's value a is the JSON read's value j."""
    if j is None or a is None:
        return a is None and j is None
    if isinstance(a, bool):
        return int(a) == int(j)
    if isinstance(a, int):
        return a == int(j)
    if isinstance(a, float):
        jf = float(j)
        return (math.isnan(a) and math.isnan(jf)) or a == jf
    if isinstance(a, decimal.Decimal):
        # the same number: SQLite keeps no scale ("12.5" in DECIMAL(10,2))
        return a == decimal.Decimal(j)
    if isinstance(a, datetime.datetime):
        # a PostgreSQL timestamptz is served in UTC with "+00"
        return a.replace(tzinfo=None) == datetime.datetime.fromisoformat(j.removesuffix("+00"))
    if isinstance(a, datetime.date):
        return a.isoformat() == j
    if isinstance(a, datetime.time):
        return a == datetime.time.fromisoformat(j)
    if isinstance(a, datetime.timedelta):
        return a == parse_duration(j)
    if isinstance(a, (bytes, bytearray)):
        return bytes(a) == base64.b64decode(j)
    if isinstance(a, str):
        if isinstance(j, (list, dict)):
            # a PostgreSQL array: JSON text in Arrow, the array itself in JSON
            return json.loads(a) == j
        return a == j
    return False


def compare(what, table, ref, key, skip=()):
    """Compare a pyarrow table with the JSON rows ref (by key)."""
    rows = table.to_pylist()
    if len(rows) != len(ref):
        fail(f"{what}: {len(rows)} rows, want {len(ref)}")
        return
    want = {int(r[key]): r for r in ref}
    checked = 0
    for row in rows:
        r = want.get(int(row[key]))
        if r is None:
            fail(f"{what}: row {row[key]} not in the JSON read")
            continue
        for col, j in r.items():
            if col in skip:
                continue
            if col not in row:
                fail(f"{what}: no column {col}")
                continue
            if not same(row[col], j):
                fail(f"{what}: row {row[key]} column {col}: {row[col]!r}, JSON {j!r}")
            checked += 1
    print(f"ok {what}: {len(rows)} rows, {checked} values")


def check_types(what, schema, types):
    for name, want in types.items():
        got = str(schema.field(name).type)
        if got != want:
            fail(f"{what}: column {name} is {got}, want {want}")


def read_ndjson(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def main():
    base, ds, key, d, v1, v2 = sys.argv[1:7]
    types = json.loads(sys.argv[7])
    refs = {v: read_ndjson(f"{d}/ref-{v}.ndjson") for v in (v1, v2)}
    files = {v: f"{d}/{ds}-{v}/{ds}.parquet" for v in (v1, v2)}
    for v in (v1, v2):
        ref = refs[v]
        url = f"{base}/v1/datasets/{ds}/rows?version={v}"
        # pyarrow: the IPC stream read as it arrives over HTTP.
        with urllib.request.urlopen(url + "&format=arrow") as resp:
            reader = pyarrow.ipc.open_stream(resp)
            table = reader.read_all()
        md = table.schema.metadata
        if md.get(b"snapstore.version") != v.encode() or md.get(b"snapstore.dataset") != ds.encode():
            fail(f"arrow v{v}: schema metadata {md}")
        check_types(f"arrow v{v}", table.schema, types)
        compare(f"pyarrow.ipc.open_stream v{v}", table, ref, key)
        # pyarrow: the exported Parquet file.
        pq = pyarrow.parquet.read_table(files[v])
        compare(f"pyarrow.parquet.read_table v{v}", pq, ref, key)
        # pandas: read_parquet of the URL, snappy this time.
        df = pandas.read_parquet(url + "&format=parquet&compression=snappy", dtype_backend="pyarrow")
        compare(f"pandas.read_parquet(URL) v{v}", pyarrow.Table.from_pandas(df, preserve_index=False), ref, key)
        # polars: Parquet and the Arrow stream. Polars decimals hold up
        # to 38 digits: wider ones are left out.
        wide = [f.name for f in pq.schema if pyarrow.types.is_decimal256(f.type)]
        pl = polars.read_parquet(files[v], columns=[f.name for f in pq.schema if f.name not in wide])
        compare(f"polars.read_parquet v{v}", pl.to_arrow(), ref, key, skip=wide)
        # polars: the URL itself, read by byte ranges (the footer first).
        plu = polars.read_parquet(url + "&format=parquet", columns=[f.name for f in pq.schema if f.name not in wide])
        compare(f"polars.read_parquet(URL) v{v}", plu.to_arrow(), ref, key, skip=wide)
        with urllib.request.urlopen(url + "&format=arrow&columns=" + ",".join(f.name for f in pq.schema if f.name not in wide)) as resp:
            pls = polars.read_ipc_stream(io.BytesIO(resp.read()))
        compare(f"polars.read_ipc_stream v{v}", pls.to_arrow(), ref, key, skip=wide)
        # DuckDB: SELECT from the file. DuckDB decimals hold up to 38
        # digits too.
        cols = ", ".join('"' + f.name + '"' for f in pq.schema if f.name not in wide)
        dt = duckdb.sql(f"SELECT {cols} FROM '{files[v]}' ORDER BY \"{key}\"").to_arrow_table()
        compare(f"duckdb SELECT FROM file v{v}", dt, ref, key, skip=wide)

    # DuckDB: a join of the two exported versions gives the diff's counts.
    diff = read_ndjson(f"{d}/diff.ndjson")
    want = {op: sum(1 for c in diff if c["op"] == op) for op in ("insert", "update", "delete")}
    a, b = files[v1], files[v2]
    got = duckdb.sql(f"""
        SELECT
          count(*) FILTER (WHERE v_from."{key}" IS NULL) AS inserted,
          count(*) FILTER (WHERE v_to."{key}" IS NULL) AS deleted,
          count(*) FILTER (WHERE v_from."{key}" IS NOT NULL AND v_to."{key}" IS NOT NULL
                           AND to_json(v_from) IS DISTINCT FROM to_json(v_to)) AS updated
        FROM '{a}' v_from FULL OUTER JOIN '{b}' v_to ON v_from."{key}" = v_to."{key}"
    """).fetchall()[0]
    if (got[0], got[2], got[1]) != (want["insert"], want["update"], want["delete"]):
        fail(f"duckdb join of v{v1} and v{v2}: inserted, updated, deleted {got[0]}, {got[2]}, {got[1]}; the diff has {want}")
    else:
        print(f"ok duckdb join of v{v1} and v{v2}: {want}")

    # pyarrow: the diff as an Arrow stream, one row per change.
    with urllib.request.urlopen(f"{base}/v1/datasets/{ds}/diff?from={v1}&to={v2}&format=arrow") as resp:
        dtab = pyarrow.ipc.open_stream(resp).read_all()
    rows = dtab.to_pylist()
    if len(rows) != len(diff):
        fail(f"arrow diff: {len(rows)} changes, want {len(diff)}")
    for row, ch in zip(rows, diff):
        if row["_change"] != ch["op"] or not same(row[key], ch["key"][0]):
            fail(f"arrow diff: {row['_change']} {row[key]}, want {ch['op']} {ch['key']}")
            continue
        if ch["op"] == "update" and sorted(row["_changed"] or []) != sorted(ch["changed"]):
            fail(f"arrow diff: changed {row['_changed']}, want {ch['changed']}")
        for side in ("before", "after"):
            for col, j in (ch.get(side) or {}).items():
                if not same(row[f"{side}_{col}"], j):
                    fail(f"arrow diff {ch['op']} {ch['key']}: {side}_{col} {row[side + '_' + col]!r}, JSON {j!r}")
    print(f"ok arrow diff: {len(rows)} changes")

    if failures:
        print(f"{len(failures)} differences")
        sys.exit(1)


if __name__ == "__main__":
    main()
    sys.stdout.flush()
    # Every check passed; leave without the interpreter's teardown, where
    # pyarrow's thread pool, after reads through Python file objects (an
    # HTTP response, pandas' handle of a URL), can abort the process with
    # "terminate called without an active exception" (apache/arrow issues
    # 34314, 50482).
    os._exit(0)
