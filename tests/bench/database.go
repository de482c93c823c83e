package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

var (
	databaseRun  = flag.Bool("database", true, "measure a database of 20 tables (the bench rows split between them) read by one adapter, on MariaDB and, when SNAPSTORE_TEST_POSTGRES_* is set, on PostgreSQL, against a dump in one transaction (database.go)")
	onlyDatabase = flag.Bool("only-database", false, "measure only the database of 20 tables (and a first run of the bench table, for its RSS), print the figures and write no report")
)

// dbTables is the number of tables of the database figures.
const dbTables = 20

// dbAdapter is the adapter of the database figures: every table tNN
// (never the bench table t), at one point of the source.
const dbAdapter = `  - name: tables
    connection: %s
    include: ["t[0-9][0-9]"]
    parallelism: 4
    retention: {ttl: 0s, min_versions: 100}
    guard: {max_shrink: 1}
`

// dbTableNames are t01..t20.
func dbTableNames() []string {
	var ns []string
	for k := 1; k <= dbTables; k++ {
		ns = append(ns, fmt.Sprintf("t%02d", k))
	}
	return ns
}

// dbChanged is the table changed by 1% in the figure "one table changed".
const dbChanged = "t07"

// dbFigure is the database of dbTables tables on one source.
type dbFigure struct {
	source   string // MariaDB, PostgreSQL
	dumpWhat string // the baseline's command, as the report names it
	rows     int    // rows of each table
	dump     time.Duration
	first    time.Duration
	firstRec tablesRun
	rss      int64 // peak RSS of the server that made only the first run
	same     time.Duration
	sameRec  tablesRun
	changed  time.Duration
	chRec    tablesRun
	skipped  string // why not measured, with dump zero
}

// tablesRun is the record of a run of several tables: runRecord with the
// point and the tables.
type tablesRun struct {
	runRecord
	Point *struct {
		Mode        string `json:"mode"`
		Reason      string `json:"reason"`
		Connections int    `json:"connections"`
	} `json:"point"`
	Tables []struct {
		Name          string `json:"name"`
		Mode          string `json:"mode"`
		RowsRead      int64  `json:"rows_read"`
		Chunks        int    `json:"chunks"`
		ChunksSkipped int    `json:"chunks_skipped"`
	} `json:"tables"`
}

// point says the run's point mode and connections, and why that mode
// when the source gave a reason.
func (r tablesRun) point() string {
	if r.Point == nil {
		return "no point"
	}
	s := fmt.Sprintf("point %s over %d connections", r.Point.Mode, r.Point.Connections)
	if r.Point.Reason != "" {
		s += " (" + r.Point.Reason + ")"
	}
	return s
}

// modes counts the run's tables by read mode and sums their chunks.
func (r tablesRun) modes() string {
	n := map[string]int{}
	chunks, skipped := 0, 0
	for _, t := range r.Tables {
		n[t.Mode]++
		chunks, skipped = chunks+t.Chunks, skipped+t.ChunksSkipped
	}
	var s []string
	for _, m := range sortedKeys(n) {
		s = append(s, fmt.Sprintf("%d %s", n[m], m))
	}
	return fmt.Sprintf("tables %s, %d of %d chunks read", strings.Join(s, ", "), chunks-skipped, chunks)
}

// runTables starts a run of the adapter named over HTTP, waits for it and
// returns the wall time seen by the client and the run's record.
func (s *server) runTables(name string) (time.Duration, tablesRun) {
	start := time.Now()
	r, err := s.client.Post(s.url+"/v1/adapters/"+name+"/runs?wait=true", "application/json", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer r.Body.Close()
	body, _ := io.ReadAll(r.Body)
	var rec tablesRun
	if err := json.Unmarshal(body, &rec); err != nil || rec.Status != "succeeded" {
		log.Fatalf("bench: run of %s: %d %s", name, r.StatusCode, body)
	}
	return time.Since(start), rec
}

// databaseRuns measures the database of dbTables tables on MariaDB and on
// PostgreSQL when its settings are set.
func databaseRuns(e env, tmp string) []dbFigure {
	out := []dbFigure{mariadbDatabase(e, tmp)}
	p, ok := lookupPG()
	if !ok {
		log.Printf("bench: database of %d tables on PostgreSQL skipped: SNAPSTORE_TEST_POSTGRES_* unset (eval \"$(scripts/postgres.sh env)\")", dbTables)
		return append(out, dbFigure{source: "PostgreSQL", skipped: "not measured (no SNAPSTORE_TEST_POSTGRES_*)"})
	}
	return append(out, pgDatabaseRuns(e, p, tmp))
}

// mariadbDatabase splits the rows of snapbench.t (-rows rows) between
// t01..t20 in snapbench and measures them against mariadb-dump.
func mariadbDatabase(e env, tmp string) dbFigure {
	n := max(*rows/dbTables, 1)
	log.Printf("bench: database: %d MariaDB tables of %d rows", dbTables, n)
	var q strings.Builder
	q.WriteString("USE snapbench;\n")
	for k, t := range dbTableNames() {
		fmt.Fprintf(&q, "DROP TABLE IF EXISTS %[1]s; CREATE TABLE %[1]s LIKE t; INSERT INTO %[1]s SELECT * FROM t WHERE id BETWEEN %[2]d AND %[3]d; ANALYZE TABLE %[1]s;\n", t, k*n+1, (k+1)*n)
	}
	e.sql(q.String())
	f := dbFigure{source: "MariaDB", rows: n, dumpWhat: fmt.Sprintf("`mysqldump --single-transaction` of the %d tables", dbTables)}
	f.dump = medianRun(*repeat, func() *exec.Cmd {
		cmd := exec.Command("mariadb-dump", append([]string{"-h", e.host, "-P", e.port, "-u", e.user, "--single-transaction", "--quick", "snapbench"}, dbTableNames()...)...)
		cmd.Env = append(os.Environ(), "MYSQL_PWD="+e.pw)
		return cmd
	})
	log.Printf("bench: database: MariaDB dump %v", f.dump)
	port := freePort()
	data := filepath.Join(tmp, "data-tables-mariadb")
	if err := os.MkdirAll(data, 0o700); err != nil {
		log.Fatal(err)
	}
	conf := fmt.Sprintf(`data: %s
listen: 127.0.0.1:%s
log: {level: warn}
connections:
  - name: bench
    type: mysql
    options: {host: %s, port: %s, user: %s, password: "env:BENCH_MYSQL_PASSWORD", database: snapbench}
adapters:
`+dbAdapter, data, port, e.host, e.port, e.user, "bench")
	s := launch(data+".yaml", conf, &server{url: "http://127.0.0.1:" + port, data: data, env: e, client: http.DefaultClient}, "tables-mariadb")
	defer s.stop()
	f.measure(s, func() {
		e.sql(fmt.Sprintf("UPDATE snapbench.%s SET qty = qty + 1, note = CONCAT('tables ', id) WHERE id %% 100 = 7", dbChanged))
	})
	return f
}

// pgDatabaseRuns makes t01..t20 in pgDatabase, -rows/20 rows each, and
// measures them against psql copying each in one REPEATABLE READ
// transaction.
func pgDatabaseRuns(e env, p pgEnv, tmp string) dbFigure {
	n := max(*rows/dbTables, 1)
	log.Printf("bench: database: %d PostgreSQL tables of %d rows", dbTables, n)
	script := "BEGIN ISOLATION LEVEL REPEATABLE READ;\n"
	for k, t := range dbTableNames() {
		p.generate(t, k*n+1, (k+1)*n)
		script += "COPY " + t + " TO STDOUT;\n"
	}
	script += "COMMIT;\n"
	f := dbFigure{source: "PostgreSQL", rows: n, dumpWhat: fmt.Sprintf("`psql` `BEGIN ISOLATION LEVEL REPEATABLE READ; COPY tNN TO STDOUT` of the %d tables", dbTables)}
	f.dump = p.timedRead(script)
	log.Printf("bench: database: PostgreSQL COPY of the tables %v", f.dump)
	s := startPG(e, p, filepath.Join(tmp, "data-tables-pg"), fmt.Sprintf(dbAdapter, "pg"), "tables-postgres")
	defer s.stop()
	f.measure(s, func() {
		p.sql(pgDatabase, fmt.Sprintf("UPDATE %s SET qty = qty + 1, note = 'tables ' || id WHERE id %% 100 = 7", dbChanged))
	})
	return f
}

// measure runs the adapter "tables" of the fresh server s: a first run
// (its peak RSS that of s), a run with nothing changed, which reads in
// full and records the chunks' checksums, then change (1% of one table)
// and a run that reads by them.
func (f *dbFigure) measure(s *server, change func()) {
	f.first, f.firstRec = s.runTables("tables")
	f.rss = s.peakRSS()
	log.Printf("bench: database: %s first run %v (%d rows, %s; %s), peak RSS %s", f.source, f.first, f.firstRec.Stats.Rows, f.firstRec.point(), phases(f.firstRec.runRecord), mib(f.rss))
	f.same, f.sameRec = s.runTables("tables")
	log.Printf("bench: database: %s nothing changed %v (mode %s, %s; %s)", f.source, f.same, f.sameRec.Mode, f.sameRec.modes(), phases(f.sameRec.runRecord))
	change()
	f.changed, f.chRec = s.runTables("tables")
	log.Printf("bench: database: %s %s 1%% changed %v (mode %s, %d updated, %s; %s)", f.source, dbChanged, f.changed, f.chRec.Mode, f.chRec.Stats.Updated, f.chRec.modes(), phases(f.chRec.runRecord))
}

// medianRun runs the commands cmd makes n times, their output discarded,
// and returns the median wall time.
func medianRun(n int, cmd func() *exec.Cmd) time.Duration {
	var ds []time.Duration
	for i := 0; i < max(n, 1); i++ {
		c := cmd()
		c.Stdout = io.Discard
		var stderr bytes.Buffer
		c.Stderr = &stderr
		start := time.Now()
		if err := c.Run(); err != nil {
			log.Fatalf("bench: %s: %v: %s", c.Path, err, stderr.String())
		}
		ds = append(ds, time.Since(start))
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[len(ds)/2]
}

// databaseGoals are the rows of the goal table for the database figures;
// rss1 is the peak RSS of the bench table's first run, beside which the
// database's is reported.
func databaseGoals(fs []dbFigure, rss1 int64) []goal {
	if len(fs) == 0 {
		return []goal{{what: fmt.Sprintf("database of %d tables, first run", dbTables), measured: "not measured (-database=false)", target: "<= 1.2x"}}
	}
	var g []goal
	for _, f := range fs {
		what := fmt.Sprintf("database of %d tables of %d rows, %s", dbTables, f.rows, f.source)
		if f.dump == 0 {
			g = append(g, goal{what: fmt.Sprintf("database of %d tables, %s", dbTables, f.source), measured: f.skipped, target: "<= 1.2x, <= 0.6x"})
			continue
		}
		base := f.dumpWhat + " " + secs(f.dump)
		row := func(what string, d time.Duration, limit float64, note string) goal {
			x := d.Seconds() / f.dump.Seconds()
			return goal{what: what, measured: secs(d) + note, baseline: base, ratio: fmt.Sprintf("%.2fx", x),
				target: fmt.Sprintf("<= %gx", limit), met: yes(x <= limit)}
		}
		g = append(g,
			row(what+": first run, one adapter (`include`)", f.first, 1.2, fmt.Sprintf(", %d rows, %s; %s", f.firstRec.Stats.Rows, f.firstRec.point(), phases(f.firstRec.runRecord))),
			row(fmt.Sprintf("%s: re-run, 1%% of %s changed (after a run with nothing changed, %s, that recorded the checksums)", what, dbChanged, secs(f.same)), f.changed, 0.6,
				fmt.Sprintf(", %d updated, %s; %s", f.chRec.Stats.Updated, f.chRec.modes(), phases(f.chRec.runRecord))))
		rss := goal{what: what + ": peak RSS, first run", measured: mib(f.rss), target: "flat, <= 256 MiB", met: yes(f.rss <= 256<<20)}
		if rss1 > 0 {
			rss.baseline, rss.ratio = fmt.Sprintf("first run of the bench table, %d rows, %s", *rows, mib(rss1)), ratio(float64(f.rss), float64(rss1))
		}
		g = append(g, rss)
	}
	return g
}

// printGoals prints goal rows as the report's table does, for the -only
// flags.
func printGoals(g []goal) {
	for _, r := range g {
		status := ""
		if r.met != nil {
			status = "met"
			if !*r.met {
				status = "MISSED"
			}
		}
		fmt.Printf("%s: %s", r.what, r.measured)
		if r.baseline != "" {
			fmt.Printf("; baseline %s", r.baseline)
		}
		if r.ratio != "" {
			fmt.Printf("; %s", r.ratio)
		}
		if r.target != "" {
			fmt.Printf("; goal %s %s", r.target, status)
		}
		fmt.Println()
	}
}

// onlyDatabaseRuns is -only-database: a first run of the bench table for
// its peak RSS, then the database figures, printed.
func onlyDatabaseRuns(e env, tmp, loadStart string) {
	s := startServer(e, filepath.Join(tmp, "data"), *storage, "", "first")
	s.run()
	rss1 := s.peakRSS()
	s.stop()
	printGoals(databaseGoals(databaseRuns(e, tmp), rss1))
	fmt.Printf("1-minute load average %s, %s (start, end)\n", loadStart, loadAvg())
}
