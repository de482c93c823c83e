// Command bench measures snapstore's main job against its goals and
// writes docs/benchmarks.md. It is run by `make bench`, never by
// `make test`:
//
//	go run ./tests/bench -rows 2000000 -out docs/benchmarks.md
//
// It loads a synthetic MariaDB table (gen.sql.tmpl, about 190 bytes a row as
// text), times the source-read floor (`mariadb --quick --batch -e 'SELECT *
// FROM t' > /dev/null`), then drives the built binary over HTTP only: a first
// run, a run where nothing changed, ten runs with 1% of the rows changed at
// random, a run with 1% changed in a few key ranges, storage on disk, peak
// RSS at two table sizes, HTTP reads under wrk against a trivial echo
// handler (trivial.go), the same point reads over HTTPS against those over
// plain HTTP (httpsPointReads), the go test benchmarks of package snapshot against raw
// Pebble, when HBase is available a first run on HBase, and the copy of a
// changed version by diff between two servers against a full copy of it
// (copyByDiff), the same table on PostgreSQL against `COPY ... TO STDOUT`
// (pgRuns) and a database of 20 tables read by one adapter against a dump
// in one transaction (databaseRuns). Every figure
// is a ratio against a baseline measured in the same run; goals.go prints
// each beside its goal and says which are missed.
package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/snapstore/snapstore/store/hbase"
	"github.com/snapstore/snapstore/tests/procstat"

	"github.com/snapstore/snapstore/internal/testenv"
)

var (
	rows         = flag.Int("rows", 2_000_000, "rows of the synthetic table")
	rssScale     = flag.Int("rss-scale", 10, "also measure peak RSS at rows*rss-scale (0 to skip)")
	churnRuns    = flag.Int("churn-runs", 10, "runs with 1% churn for the storage figure")
	out          = flag.String("out", "docs/benchmarks.md", "markdown report to write")
	bin          = flag.String("bin", "bin/snapstore", "snapstore binary")
	wrkDur       = flag.Duration("wrk", 10*time.Second, "duration of each wrk measurement")
	repeat       = flag.Int("repeat", 2, "repetitions of the source-read baseline (median)")
	goBench      = flag.Bool("go-bench", true, "run the go test benchmarks of package snapshot")
	hbaseRun     = flag.Bool("hbase", true, "measure a first run on HBase when SNAPSTORE_TEST_HBASE_THRIFT is set")
	storage      = flag.String("storage", "", "YAML storage section of the Pebble server, e.g. \"storage: {pebble: {cache_size: 536870912}}\" (default: the defaults)")
	httpsRun     = flag.Bool("https", true, "also measure the point reads over HTTPS (keep-alive) against plain HTTP, interleaved, on two servers (httpsPointReads)")
	onlyFormats  = flag.Bool("only-formats", false, "measure only the whole scans as NDJSON, Arrow and Parquet (after one run to load the table; -format-rounds times, in turn) and, with -rss-scale, the export's peak RSS, print the figures and write no report")
	formatRounds = flag.Int("format-rounds", 1, "with -only-formats: rounds of the whole scans, each format in turn")
	onlyHTTPS    = flag.Bool("only-https", false, "measure only the point reads over HTTPS against plain HTTP (after one run to load the table), print the figure and write no report")
	onlyMaria    = flag.Bool("only-mariadb", false, "measure only the runs of the bench table on MariaDB that read by checksums (a first run, nothing changed twice, 1% changed in 4 key ranges twice) against the source read, print the figures and write no report")
	parallel     = flag.Int("parallelism", 0, "the parallelism of the bench table's adapters on MariaDB and PostgreSQL: the connections of one point their chunk checksums are computed over (0: the default, 1)")
	profDir      = flag.String("cpuprofile-dir", "", "write a CPU profile of each phase's server to this directory (serve --cpuprofile); the server is restarted at each phase, so RSS figures then cover one phase")
)

type env struct {
	host, port, user, pw string
	hbase                string // Thrift2 gateway address, "" without HBase
}

func mustEnv() env {
	my, ok := testenv.LookupMySQL()
	if !ok {
		log.Fatal("bench: SNAPSTORE_TEST_MYSQL_* unset; run through `make bench`")
	}
	thrift, _ := testenv.LookupHBaseThrift()
	return env{my.Host, my.Port, my.User, my.Password, thrift}
}

func (e env) sql(q string) string {
	cmd := exec.Command("mariadb", "-h", e.host, "-P", e.port, "-u", e.user, "--batch", "--skip-column-names", "-e", q)
	cmd.Env = append(os.Environ(), "MYSQL_PWD="+e.pw)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		log.Fatalf("bench: mariadb: %v: %s", err, stderr.String())
	}
	return strings.TrimSpace(string(b))
}

func (e env) generate(n int) time.Duration {
	tmpl, err := os.ReadFile("tests/bench/gen.sql.tmpl")
	if err != nil {
		log.Fatal(err)
	}
	start := time.Now()
	e.sql(strings.ReplaceAll(string(tmpl), "@ROWS@", strconv.Itoa(n)))
	return time.Since(start)
}

// sourceRead times the CLI read of the whole table, the floor of any pull.
func (e env) sourceRead() time.Duration {
	var ds []time.Duration
	for i := 0; i < *repeat; i++ {
		cmd := exec.Command("mariadb", "-h", e.host, "-P", e.port, "-u", e.user, "--quick", "--batch", "-e", "SELECT * FROM snapbench.t")
		cmd.Env = append(os.Environ(), "MYSQL_PWD="+e.pw)
		cmd.Stdout = io.Discard
		start := time.Now()
		if err := cmd.Run(); err != nil {
			log.Fatal(err)
		}
		ds = append(ds, time.Since(start))
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[len(ds)/2]
}

// server is a running snapstore serve.
type server struct {
	cmd     *exec.Cmd
	url     string
	data    string
	env     env
	storage string
	pki     string       // the directory of its CA and certificate when it serves HTTPS
	client  *http.Client // trusts that CA
}

func freePort() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// startServer starts snapstore serve on data with the bench connection and
// adapter and storage (YAML, "" for Pebble), serving HTTPS with the
// certificate of pki (makePKI) unless pki is "", profiled into the file
// named phase.prof under -cpuprofile-dir when that is set.
func startServer(e env, data, storage, pki, phase string) *server {
	port := freePort()
	if err := os.MkdirAll(data, 0o700); err != nil {
		log.Fatal(err)
	}
	cfg := filepath.Join(data, "..", filepath.Base(data)+".yaml")
	scheme, client, extra := "http", http.DefaultClient, storage
	if pki != "" {
		scheme, client = "https", tlsClient(pki)
		extra += fmt.Sprintf("\ntls: {cert_file: %s, key_file: %s}", filepath.Join(pki, "server.crt"), filepath.Join(pki, "server.key"))
	}
	conf := fmt.Sprintf(`data: %s
listen: 127.0.0.1:%s
log: {level: warn}
%s
connections:
  - name: bench
    type: mysql
    options: {host: %s, port: %s, user: %s, password: "env:BENCH_MYSQL_PASSWORD", database: snapbench}
adapters:
  - name: t
    connection: bench
    resource: t
    retention: {ttl: 0s, min_versions: 100}
    guard: {max_shrink: 1}
    parallelism: %d
`, data, port, extra, e.host, e.port, e.user, *parallel)
	return launch(cfg, conf, &server{url: scheme + "://127.0.0.1:" + port, data: data, env: e, storage: storage, pki: pki, client: client}, phase)
}

// launch writes conf to the file cfg and starts snapstore serve on it as
// s (its url, data and client set), profiled into phase.prof under
// -cpuprofile-dir when that is set; it returns s once s answers /readyz.
func launch(cfg, conf string, s *server, phase string) *server {
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		log.Fatal(err)
	}
	args := []string{"serve", "--config", cfg}
	if *profDir != "" {
		args = append(args, "--cpuprofile", filepath.Join(*profDir, phase+".prof"))
	}
	cmd := exec.Command(*bin, args...)
	cmd.Env = append(os.Environ(), "BENCH_MYSQL_PASSWORD="+s.env.pw)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		log.Fatal(err)
	}
	s.cmd = cmd
	for i := 0; i < 600; i++ {
		if r, err := s.client.Get(s.url + "/readyz"); err == nil {
			r.Body.Close()
			if r.StatusCode == 200 {
				return s
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	log.Fatal("bench: server did not become ready")
	return nil
}

// onlyMariaDBRuns is -only-mariadb: the source read, a first run, a run
// with nothing changed twice (the first reads in full and records the
// checksums) and 1% of the rows changed in 4 key ranges twice, printed
// as ratios to the source read.
func onlyMariaDBRuns(e env, tmp, loadStart string) {
	src := e.sourceRead()
	s := startServer(e, filepath.Join(tmp, "data"), *storage, "", "first")
	defer func() { s.stop() }()
	first, _ := s.run()
	fmt.Printf("source read %s; first run %s %.2fx\n", secs(src), secs(first), first.Seconds()/src.Seconds())
	for i := 1; i <= 2; i++ {
		s = s.phase(fmt.Sprintf("same-%d", i))
		d, rec := s.run()
		fmt.Printf("nothing changed (%d) %s %.2fx, mode %s, verified %v; %s\n", i, secs(d), d.Seconds()/src.Seconds(), rec.Mode, rec.Verified, phases(rec))
	}
	for i := 1; i <= 2; i++ {
		s = s.phase(fmt.Sprintf("ranges-%d", i))
		e.sql(fmt.Sprintf("UPDATE snapbench.t SET qty = qty + %d, note = CONCAT('ranges %d ', id) WHERE ", i, i) + strings.Join(keyRanges(*rows), " OR "))
		d, rec := s.run()
		fmt.Printf("1%% in 4 key ranges (%d) %s %.2fx, mode %s, %d of %d chunks read; %s\n", i, secs(d), d.Seconds()/src.Seconds(), rec.Mode, rec.Chunks-rec.ChunksSkipped, rec.Chunks, phases(rec))
	}
	fmt.Printf("1-minute load average %s, %s (start, end)\n", loadStart, loadAvg())
}

func (s *server) stop() {
	s.cmd.Process.Signal(syscall.SIGTERM)
	s.cmd.Wait()
}

// phase returns the server the next phase runs on: s itself, or, when
// profiling, a new process on the same data whose profile is phase's.
func (s *server) phase(phase string) *server {
	if *profDir == "" {
		return s
	}
	s.stop()
	return startServer(s.env, s.data, s.storage, s.pki, phase)
}

// makePKI makes a CA and a server certificate for 127.0.0.1 in dir with
// the binary's own `snapstore cert`, as an operator without a CA does,
// and returns dir.
func makePKI(dir string) string {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		log.Fatal(err)
	}
	for _, args := range [][]string{{"cert", "ca", dir}, {"cert", "server", dir, "--host", "127.0.0.1"}} {
		if b, err := exec.Command(*bin, args...).CombinedOutput(); err != nil {
			log.Fatalf("bench: snapstore %s: %v: %s", strings.Join(args, " "), err, b)
		}
	}
	return dir
}

// tlsClient is an HTTP client that trusts the CA of pki only.
func tlsClient(pki string) *http.Client {
	b, err := os.ReadFile(filepath.Join(pki, "ca.crt"))
	if err != nil {
		log.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		log.Fatalf("bench: no certificate in %s", filepath.Join(pki, "ca.crt"))
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
}

// peakRSS is the process's high-water resident set (VmHWM) in bytes.
func (s *server) peakRSS() int64 {
	n, err := procstat.PeakRSS(s.cmd.Process.Pid)
	if err != nil {
		log.Fatalf("bench: %v", err)
	}
	return n
}

type runRecord struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Error  string `json:"error"`
	Stats  struct {
		Rows         int64 `json:"rows"`
		Inserted     int64 `json:"inserted"`
		Updated      int64 `json:"updated"`
		Deleted      int64 `json:"deleted"`
		BytesWritten int64 `json:"bytes_written"`
	} `json:"stats"`
	Version       int64  `json:"version"`
	Verified      bool   `json:"verified"`
	Mode          string `json:"mode"`
	RowsRead      int64  `json:"rows_read"`
	Chunks        int    `json:"chunks"`
	ChunksSkipped int    `json:"chunks_skipped"`
	Phases        []struct {
		Name  string    `json:"name"`
		Start time.Time `json:"started_at"`
		End   time.Time `json:"ended_at"`
	} `json:"phases"`
}

// run starts a run of the bench adapter over HTTP and waits for it; it
// returns the wall time seen by the client and the run record.
func (s *server) run() (time.Duration, runRecord) { return s.runAdapter("t") }

// runAdapter starts a run of the adapter named over HTTP and waits for it;
// it returns the wall time seen by the client and the run record.
func (s *server) runAdapter(name string) (time.Duration, runRecord) {
	start := time.Now()
	r, err := s.client.Post(s.url+"/v1/adapters/"+name+"/runs?wait=true", "application/json", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer r.Body.Close()
	var rec runRecord
	body, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(body, &rec); err != nil || rec.Status != "succeeded" {
		log.Fatalf("bench: run: %d %s", r.StatusCode, body)
	}
	return time.Since(start), rec
}

// dirSizes sums the sizes of the files under dir: all, SSTables and WAL.
func dirSizes(dir string) (all, sst, wal int64) {
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			all += fi.Size()
			switch filepath.Ext(p) {
			case ".sst":
				sst += fi.Size()
			case ".log":
				wal += fi.Size()
			}
		}
		return nil
	})
	return all, sst, wal
}

// dumpZstd is the size of `mysqldump snapbench t | zstd`, what users keep by
// hand per run.
func (e env) dumpZstd() int64 {
	sh := fmt.Sprintf("mariadb-dump -h %s -P %s -u %s --single-transaction --quick snapbench t | zstd -q -c | wc -c", e.host, e.port, e.user)
	cmd := exec.Command("bash", "-o", "pipefail", "-c", sh)
	cmd.Env = append(os.Environ(), "MYSQL_PWD="+e.pw)
	b, err := cmd.Output()
	if err != nil {
		log.Printf("bench: mysqldump | zstd: %v (is zstd installed?)", err)
		return -1
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n
}

// wrk runs wrk with a Lua script for -wrk and returns requests per second.
func wrk(url, script string) float64 { return wrkFor(url, script, *wrkDur) }

// wrkFor runs wrk with a Lua script for d and returns requests per
// second. Its connections are kept alive for the whole measurement; over
// https it does not check the certificate.
func wrkFor(url, script string, d time.Duration) float64 {
	f, err := os.CreateTemp("", "wrk-*.lua")
	if err != nil {
		log.Fatal(err)
	}
	defer os.Remove(f.Name())
	f.WriteString(script)
	f.Close()
	cmd := exec.Command("wrk", "-t2", "-c16", "-d"+d.String(), "-s", f.Name(), url)
	b, err := cmd.CombinedOutput()
	if err != nil {
		log.Fatalf("bench: wrk: %v: %s", err, b)
	}
	m := regexp.MustCompile(`Requests/sec:\s+([\d.]+)`).FindSubmatch(b)
	if m == nil {
		log.Fatalf("bench: wrk output: %s", b)
	}
	v, _ := strconv.ParseFloat(string(m[1]), 64)
	if regexp.MustCompile(`Non-2xx or 3xx responses`).Match(b) {
		log.Fatalf("bench: wrk saw errors: %s", b)
	}
	return v
}

func mib(n int64) string { return procstat.MiB(n) }

func machine() string {
	cpu := "unknown cpu"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		if m := regexp.MustCompile(`model name\s*:\s*(.*)`).FindSubmatch(b); m != nil {
			cpu = string(m[1])
		}
	}
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		if m := regexp.MustCompile(`MemTotal:\s+(\d+) kB`).FindSubmatch(b); m != nil {
			kb, _ := strconv.ParseInt(string(m[1]), 10, 64)
			mem = fmt.Sprintf(", %.0f GiB", float64(kb)/(1<<20))
		}
	}
	ver := strings.Fields(string(must(exec.Command("mariadbd", "--version").Output())))
	mv := strings.Join(ver[min(2, len(ver)):min(3, len(ver))], " ")
	return fmt.Sprintf("%d cores (%s)%s, %s, MariaDB %s, %s", runtime.NumCPU(), cpu, mem, runtime.Version(), mv, runtime.GOOS+"/"+runtime.GOARCH)
}

func must(b []byte, err error) []byte {
	if err != nil {
		return []byte(err.Error())
	}
	return b
}

// loadAvg is the 1-minute load average.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(b))[0]
}

func commit() string {
	b, err := exec.Command("git", "describe", "--always", "--dirty").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
}

func main() {
	flag.Parse()
	log.SetFlags(0)
	e := mustEnv()
	tmp, err := os.MkdirTemp("", "snapbench-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	var rep report
	rep.cmd = "make bench (go run ./tests/bench " + strings.Join(os.Args[1:], " ") + ")"
	rep.machine = machine() + fmt.Sprintf(" (InnoDB buffer pool %s MiB)", e.sql("SELECT @@innodb_buffer_pool_size DIV 1048576"))
	rep.commit = commit()
	rep.load = append(rep.load, loadAvg())

	if *onlyPG {
		printGoals(pgRuns(e, tmp).goals())
		fmt.Printf("1-minute load average %s, %s (start, end)\n", rep.load[0], loadAvg())
		return
	}
	log.Printf("bench: generating %d rows", *rows)
	rep.genTime = e.generate(*rows)
	if *onlyDatabase {
		onlyDatabaseRuns(e, tmp, rep.load[0])
		return
	}
	if *onlyFormats {
		onlyFormatScans(e, tmp, rep.load[0])
		return
	}
	if *onlyHTTPS {
		s := startServer(e, filepath.Join(tmp, "data"), *storage, "", "first")
		s.run()
		s.stop()
		f := httpsPointReads(e, s.data, filepath.Join(tmp, "pki"), pointScript(*rows))
		fmt.Printf("%s\npairs (HTTP, HTTPS req/s):", f)
		for i := range f.plain {
			fmt.Printf(" (%.0f, %.0f)", f.plain[i], f.tls[i])
		}
		fmt.Printf("\n1-minute load average %s, %s (start, end)\n", rep.load[0], loadAvg())
		return
	}
	if *onlyCopy {
		c := copyByDiff(e, tmp)
		fmt.Printf("first copy in full %s (mode %s, %d rows)\n", secs(c.first), c.firstRec.Mode, c.firstRec.Stats.Rows)
		for _, k := range c.kinds {
			fmt.Println(k)
		}
		fmt.Printf("1-minute load average %s, %s (start, end)\n", rep.load[0], loadAvg())
		return
	}
	if *onlyMaria {
		onlyMariaDBRuns(e, tmp, rep.load[0])
		return
	}
	rep.tableBytes, _ = strconv.ParseInt(e.sql("SELECT SUM(LENGTH(CONCAT_WS(',',id,code,name,qty,price,ratio,created,status,note,flags))) FROM snapbench.t"), 10, 64)
	rep.source = e.sourceRead()
	log.Printf("bench: source read %v", rep.source)

	s := startServer(e, filepath.Join(tmp, "data"), *storage, "", "first")
	rep.first, rep.firstRec = s.run()
	rep.rss1 = s.peakRSS()
	rep.oneCopy, _, _ = dirSizes(s.data)
	log.Printf("bench: first run %v, %s", rep.first, mib(rep.firstRec.Stats.BytesWritten))

	// Nothing changed, twice: the first such run reads in full (the run
	// before it changed everything) and records the checksums the next
	// one verifies with (adapters/checksums.go).
	for i := 0; i < 2; i++ {
		s = s.phase(fmt.Sprintf("same-%d", i+1))
		d, rec := s.run()
		rep.same = append(rep.same, d)
		rep.sameRec = rec
		log.Printf("bench: run with nothing changed %v (mode %s, verified %v, version %d)", d, rec.Mode, rec.Verified, rec.Version)
	}

	for i := 1; i <= *churnRuns; i++ {
		if i <= 2 {
			s = s.phase(fmt.Sprintf("churn-%d", i))
		}
		e.sql(fmt.Sprintf("UPDATE snapbench.t SET qty = qty + 1, note = CONCAT('churn %d ', id) WHERE id %% 100 = %d", i, i))
		d, rec := s.run()
		rep.churn = append(rep.churn, d)
		if i == 1 {
			rep.churnRec = rec
			log.Printf("bench: run with 1%% churn %v, %s, %d updated", d, mib(rec.Stats.BytesWritten), rec.Stats.Updated)
		}
	}
	rep.afterChurn, rep.afterSST, rep.afterWAL = dirSizes(s.data)
	rep.dump = e.dumpZstd()

	// 1% of the rows in four key ranges.
	ranges := keyRanges(*rows)
	// Twice: the first such run after the random churn reads in full and
	// records the range checksums the second reads by.
	for i := 1; i <= 2; i++ {
		s = s.phase(fmt.Sprintf("ranges-%d", i))
		e.sql(fmt.Sprintf("UPDATE snapbench.t SET qty = qty + %d, note = CONCAT('ranges %d ', id) WHERE ", i, i) + strings.Join(ranges, " OR "))
		d, rec := s.run()
		rep.ranges, rep.rangesRec = append(rep.ranges, d), rec
		log.Printf("bench: run with 1%% changed in 4 key ranges %v (mode %s, %d of %d chunks skipped), %d updated", d, rec.Mode, rec.ChunksSkipped, rec.Chunks, rec.Stats.Updated)
	}
	rep.rssSession = s.peakRSS()

	// HTTP reads: point gets and 1,000-row NDJSON pages against the trivial handler.
	s = s.phase("http-point")
	pointScript := pointScript(*rows)
	rep.pointRPS = wrk(s.url, pointScript)
	s = s.phase("http-ndjson")
	rep.scanRPS = wrk(s.url, fmt.Sprintf(`math.randomseed(2)
wrk.headers["Accept"] = "application/x-ndjson"
request = function() return wrk.format("GET", "/v1/datasets/t/rows?limit=1000&start=" .. math.random(1, %d)) end`, *rows-1000))
	s = s.phase("http-formats")
	rep.formats = formatScans(s.url, *rows)
	s.stop()
	if *httpsRun {
		rep.https = httpsPointReads(e, s.data, filepath.Join(tmp, "pki"), pointScript)
		log.Printf("bench: %s", rep.https)
	}
	trivCtx, stopTriv := context.WithCancel(context.Background())
	rep.trivialRPS = wrk("http://"+serveTrivial(trivCtx), `request = function() return wrk.format("GET", "/trivial/42") end`)
	stopTriv()
	rep.load = append(rep.load, loadAvg())

	if *goBench {
		rep.goBench = runGoBench()
	}
	if *hbaseRun && e.hbase != "" {
		rep.hbaseFirst, rep.hbaseRows = hbaseFirstRun(e, tmp)
	}
	if *copyRun {
		rep.copies = copyByDiff(e, tmp)
	}
	if *pgRun {
		rep.pg = pgRuns(e, tmp)
	}
	if *databaseRun {
		rep.databases = databaseRuns(e, tmp)
	}
	if *rssScale > 1 {
		rep.rssBigRows, rep.rssBig, rep.rssExport = bigExport(e, tmp)
	}
	rep.load = append(rep.load, loadAvg())
	rep.write(*out)
	log.Printf("bench: wrote %s", *out)
}

// pointScript is wrk's Lua script of the point reads: random keys of a
// table of n rows, the same sequence in every measurement.
func pointScript(n int) string {
	return fmt.Sprintf(`math.randomseed(1)
request = function() return wrk.format("GET", "/v1/datasets/t/rows/" .. math.random(1, %d)) end`, n)
}

// hbaseFirstRun times a first run of the table on the HBase backend (a
// table of its own, dropped afterwards).
func hbaseFirstRun(e env, tmp string) (time.Duration, int64) {
	table := fmt.Sprintf("bench_%d", os.Getpid())
	opts := hbase.Options{Addr: e.hbase, Namespace: "snapstore_bench", Table: table}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := hbase.DropTable(ctx, opts); err != nil {
			log.Printf("bench: dropping HBase table %s: %v", table, err)
		}
	}()
	s := startServer(e, filepath.Join(tmp, "data-hbase"), fmt.Sprintf("storage: {backend: hbase, hbase: {thrift: %q, namespace: %s, table: %s}}", e.hbase, opts.Namespace, table), "", "first-hbase")
	defer s.stop()
	log.Printf("bench: first run on HBase")
	d, rec := s.run()
	log.Printf("bench: first run on HBase %v", d)
	return d, rec.Stats.Rows
}

// goBenchResult is one go test benchmark with its ratio to its baseline.
type goBenchResult struct {
	name      string
	nsPerOp   float64
	baseline  float64 // ns/op of the baseline
	xBaseline float64
}

// runGoBench runs the point-read and scan benchmarks of package snapshot
// (each beside raw Pebble in the same process) and the diff benchmark
// (time-bound beside the full walk, on a table of -rows rows), and returns
// their results.
func runGoBench() map[string]goBenchResult {
	out := map[string]goBenchResult{}
	for _, args := range [][]string{
		{"-test.bench", "BenchmarkGet/history=100", "-test.benchtime", "20000x"},
		{"-test.bench", "BenchmarkScan", "-test.benchtime", "3x", "-snapbench.rows=200000"},
		{"-test.bench", "BenchmarkDiff", "-test.benchtime", "3x", "-test.timeout", "60m", "-snapbench.rows=" + strconv.Itoa(*rows)},
	} {
		log.Printf("bench: go test %s", strings.Join(args, " "))
		cmd := exec.Command("go", append([]string{"test", "-run", "^$", "-count", "1", "./snapshot"}, args...)...)
		b, err := cmd.CombinedOutput()
		if err != nil {
			log.Printf("bench: go test: %v: %s", err, b)
			continue
		}
		var base float64
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
				continue
			}
			ns, _ := strconv.ParseFloat(f[2], 64)
			r := goBenchResult{name: f[0], nsPerOp: ns}
			floor := false                     // a figure printed for comparison, no baseline
			for i := 4; i+1 < len(f); i += 2 { // name, N, ns, "ns/op", then value-unit pairs
				switch f[i+1] {
				case "x_baseline":
					r.xBaseline, _ = strconv.ParseFloat(f[i], 64)
				case "ns_floor":
					floor = true
				}
			}
			switch {
			case floor:
			case r.xBaseline == 0:
				base = ns
			default:
				r.baseline = base
			}
			out[f[0]] = r
		}
	}
	return out
}
