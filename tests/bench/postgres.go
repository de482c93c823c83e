package main

import (
	"bytes"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/snapstore/snapstore/internal/testenv"
)

var (
	pgRun  = flag.Bool("postgres", true, "measure runs of the bench table on PostgreSQL against psql's COPY ... TO STDOUT when SNAPSTORE_TEST_POSTGRES_* is set (postgres.go)")
	onlyPG = flag.Bool("only-postgres", false, "measure only the runs of the bench table on PostgreSQL, print the figures and write no report")
)

// pgDatabase is the PostgreSQL database the bench tables live in.
const pgDatabase = "snapbench"

// pgEnv is the PostgreSQL server of the PostgreSQL figures; the password
// is a test fixture, handed to snapstore through BENCH_POSTGRES_PASSWORD.
type pgEnv struct {
	host, port, user, pw string
}

// lookupPG reads the test PostgreSQL's settings; ok is false when they are
// unset.
func lookupPG() (pgEnv, bool) {
	s, ok := testenv.LookupPostgres()
	return pgEnv{s.Host, s.Port, s.User, s.Password}, ok
}

// psql is a psql command on database db that stops at the first error.
func (p pgEnv) psql(db string, args ...string) *exec.Cmd {
	cmd := exec.Command("psql", append([]string{"-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", p.host, "-p", p.port, "-U", p.user, "-d", db}, args...)...)
	cmd.Env = append(os.Environ(), "PGPASSWORD="+p.pw, "PGOPTIONS=-c client_min_messages=warning")
	return cmd
}

// sql runs the statements q on db and returns what they print, unaligned.
func (p pgEnv) sql(db, q string) string {
	cmd := p.psql(db, "-tA")
	cmd.Stdin = strings.NewReader(q)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		log.Fatalf("bench: psql: %v: %s", err, stderr.String())
	}
	return strings.TrimSpace(string(b))
}

// generate makes table in pgDatabase (created when missing) with the
// rows lo..hi of gen.sql.tmpl: the same columns, types as close as
// PostgreSQL has them (unsigned integers widened, an enum type), the
// same values (SHA1 from pgcrypto's digest), built server-side by
// generate_series.
func (p pgEnv) generate(table string, lo, hi int) time.Duration {
	if p.sql("postgres", fmt.Sprintf("SELECT 1 FROM pg_database WHERE datname = '%s'", pgDatabase)) == "" {
		p.sql("postgres", "CREATE DATABASE "+pgDatabase)
	}
	start := time.Now()
	p.sql(pgDatabase, fmt.Sprintf(`CREATE EXTENSION IF NOT EXISTS pgcrypto;
DO $$ BEGIN
  CREATE TYPE bench_status AS ENUM ('new', 'active', 'suspended', 'closed');
EXCEPTION WHEN duplicate_object THEN NULL;
END $$;
DROP TABLE IF EXISTS %[1]s;
CREATE TABLE %[1]s (
  id BIGINT NOT NULL PRIMARY KEY,
  code CHAR(12) NOT NULL,
  name VARCHAR(64) NOT NULL,
  qty INTEGER NOT NULL,
  price NUMERIC(12,2) NOT NULL,
  ratio DOUBLE PRECISION NULL,
  created TIMESTAMP NOT NULL,
  status bench_status NOT NULL,
  note VARCHAR(96) NULL,
  flags INTEGER NOT NULL
);
INSERT INTO %[1]s
SELECT seq,
       upper(left(md5(seq::text), 12)),
       'customer-' || seq || '-' || encode(digest(seq::text, 'sha1'), 'hex'),
       (seq * 7919) %% 100000,
       ((seq * 104729) %% 10000000) / 100.0,
       CASE WHEN seq %% 10 = 0 THEN NULL ELSE (seq %% 1000) / 7.0 END,
       TIMESTAMP '2020-01-01 00:00:00' + (seq %% 100000000) * INTERVAL '1 second',
       (ARRAY['new', 'active', 'suspended', 'closed'])[1 + seq %% 4]::bench_status,
       CASE WHEN seq %% 3 = 0 THEN NULL ELSE 'note ' || encode(digest((seq * 31)::text, 'sha1'), 'hex') || ' ' || md5((seq * 17)::text) || ' ' || seq %% 977 END,
       seq %% 65536
FROM generate_series(%[2]d::bigint, %[3]d::bigint) AS seq;
VACUUM ANALYZE %[1]s;`, table, lo, hi))
	return time.Since(start)
}

// timedRead runs psql on pgDatabase with script as its input, its output
// to /dev/null, -repeat times, and returns the median wall time.
func (p pgEnv) timedRead(script string) time.Duration {
	return medianRun(*repeat, func() *exec.Cmd {
		cmd := p.psql(pgDatabase)
		cmd.Stdin = strings.NewReader(script)
		return cmd
	})
}

// startPG starts snapstore serve on data with a `postgres` data
// connection "pg" to pgDatabase and the adapters in adapters (YAML list
// items, their connection "pg").
func startPG(e env, p pgEnv, data, adapters, phase string) *server {
	if err := os.MkdirAll(data, 0o700); err != nil {
		log.Fatal(err)
	}
	os.Setenv("BENCH_POSTGRES_PASSWORD", p.pw)
	port := freePort()
	conf := fmt.Sprintf(`data: %s
listen: 127.0.0.1:%s
log: {level: warn}
connections:
  - name: pg
    type: postgres
    options: {host: %s, port: %s, user: %s, password: "env:BENCH_POSTGRES_PASSWORD", database: %s, sslmode: disable}
adapters:
%s`, data, port, p.host, p.port, p.user, pgDatabase, adapters)
	return launch(filepath.Join(data, "..", filepath.Base(data)+".yaml"), conf,
		&server{url: "http://127.0.0.1:" + port, data: data, env: e, client: http.DefaultClient}, phase)
}

// pgFigures is what pgRuns measured; copyOut zero: not measured.
type pgFigures struct {
	rows               int
	copyOut            time.Duration // psql COPY (SELECT * FROM t) TO STDOUT, median
	first              time.Duration
	firstRec           runRecord
	same, ranges       []time.Duration
	sameRec, rangesRec runRecord
	skipped            string // why not measured
}

// pgRuns measures the bench table on PostgreSQL as main does on MariaDB:
// the table generated with -rows rows, the COPY baseline, a first run,
// a run with nothing changed twice (the first reads in full and records
// the chunks' checksums the second verifies with) and 1% of the rows
// changed in 4 key ranges twice (the first after nothing changed reads
// by chunks already; both are kept).
func pgRuns(e env, tmp string) pgFigures {
	p, ok := lookupPG()
	if !ok {
		log.Printf("bench: PostgreSQL figures skipped: SNAPSTORE_TEST_POSTGRES_* unset (eval \"$(scripts/postgres.sh env)\")")
		return pgFigures{skipped: "not measured (no SNAPSTORE_TEST_POSTGRES_*)"}
	}
	f := pgFigures{rows: *rows}
	log.Printf("bench: PostgreSQL: generating %d rows", *rows)
	p.generate("t", 1, *rows)
	f.copyOut = p.timedRead("COPY (SELECT * FROM t) TO STDOUT;\n")
	log.Printf("bench: PostgreSQL: COPY TO STDOUT %v", f.copyOut)

	s := startPG(e, p, filepath.Join(tmp, "data-pg"), fmt.Sprintf(`  - name: t
    connection: pg
    resource: t
    retention: {ttl: 0s, min_versions: 100}
    guard: {max_shrink: 1}
    parallelism: %d
`, *parallel), "postgres")
	defer s.stop()
	f.first, f.firstRec = s.run()
	log.Printf("bench: PostgreSQL: first run %v (%d rows)", f.first, f.firstRec.Stats.Rows)
	for i := 0; i < 2; i++ {
		d, rec := s.run()
		f.same, f.sameRec = append(f.same, d), rec
		log.Printf("bench: PostgreSQL: run with nothing changed %v (mode %s, verified %v; %s)", d, rec.Mode, rec.Verified, phases(rec))
	}
	for i := 1; i <= 2; i++ {
		p.sql(pgDatabase, fmt.Sprintf("UPDATE t SET qty = qty + %d, note = 'ranges %d ' || id WHERE %s", i, i, strings.Join(keyRanges(*rows), " OR ")))
		d, rec := s.run()
		f.ranges, f.rangesRec = append(f.ranges, d), rec
		log.Printf("bench: PostgreSQL: run with 1%% changed in 4 key ranges %v (mode %s, %d of %d chunks skipped, %d updated; %s)", d, rec.Mode, rec.ChunksSkipped, rec.Chunks, rec.Stats.Updated, phases(rec))
	}
	return f
}

// keyRanges is the 1% of n rows in four key ranges that the runs "1%
// changed in 4 key ranges" update, as SQL conditions on id.
func keyRanges(n int) []string {
	span := max(n/400, 1)
	var out []string
	for k := 0; k < 4; k++ {
		lo := 1 + k*(n/4) + n/8
		out = append(out, fmt.Sprintf("id BETWEEN %d AND %d", lo, lo+span-1))
	}
	return out
}

// goals are the PostgreSQL rows of the goal table.
func (f pgFigures) goals() []goal {
	if f.copyOut == 0 {
		why := f.skipped
		if why == "" {
			why = "not measured (-postgres=false)"
		}
		return []goal{
			{what: "re-run, nothing changed, PostgreSQL", measured: why, target: "<= 0.5x"},
			{what: "re-run, 1% of rows changed in 4 key ranges, PostgreSQL", measured: why, target: "<= 0.6x"},
		}
	}
	base := "`COPY (SELECT * FROM t) TO STDOUT` " + secs(f.copyOut)
	// row is a run's goal row; limit 0: for comparison, no goal.
	row := func(what string, d time.Duration, limit float64, note string) goal {
		x := d.Seconds() / f.copyOut.Seconds()
		g := goal{what: what, measured: secs(d) + note, baseline: base, ratio: fmt.Sprintf("%.2fx", x)}
		if limit > 0 {
			g.target, g.met = fmt.Sprintf("<= %gx", limit), yes(x <= limit)
		}
		return g
	}
	last := func(ds []time.Duration) time.Duration { return ds[len(ds)-1] }
	same := fmt.Sprintf(", mode %s", f.sameRec.Mode)
	if f.sameRec.Verified {
		same += ", verified, no new version"
	}
	same += "; " + phases(f.sameRec)
	return []goal{
		row(fmt.Sprintf("first run, PostgreSQL, %d rows", f.rows), f.first, 0, fmt.Sprintf(", %d rows", f.firstRec.Stats.Rows)),
		row(fmt.Sprintf("re-run, nothing changed, PostgreSQL (the second such run; the first: %s)", durations(f.same[:len(f.same)-1])), last(f.same), 0.5, same),
		row(fmt.Sprintf("re-run, 1%% of rows changed in 4 key ranges, PostgreSQL (the second such run; the first: %s)", durations(f.ranges[:len(f.ranges)-1])), last(f.ranges), 0.6,
			fmt.Sprintf(", %d updated, mode %s, %d of %d chunks read; %s", f.rangesRec.Stats.Updated, f.rangesRec.Mode, f.rangesRec.Chunks-f.rangesRec.ChunksSkipped, f.rangesRec.Chunks, phases(f.rangesRec))),
	}
}
