// Command bench measures snapstore's main job against its goals and
// writes docs/benchmarks.md. It is run by `make bench`, never by
// `make test`:
//
//	go run ./tests/bench -rows 2000000 -out docs/benchmarks.md
//
// It loads a synthetic MariaDB table (gen.sql.tmpl, about 190 bytes a row as
// text), times the source-read floor (`mariadb --quick --batch -e 'SELECT *
// FROM t' > /dev/null`), then drives the built binary over HTTP only: a first
// run, ten runs with 1% churn, storage on disk, peak RSS at two table sizes,
// and HTTP reads under wrk against a trivial handler of the same binary.
// Every figure is a ratio against a baseline measured in the same run.
package main

import (
	"bytes"
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
)

var (
	rows      = flag.Int("rows", 2_000_000, "rows of the synthetic table")
	rssScale  = flag.Int("rss-scale", 10, "also measure peak RSS at rows*rss-scale (0 to skip)")
	churnRuns = flag.Int("churn-runs", 10, "runs with 1% churn for the storage figure")
	out       = flag.String("out", "docs/benchmarks.md", "markdown report to write")
	bin       = flag.String("bin", "bin/snapstore", "snapstore binary")
	wrkDur    = flag.Duration("wrk", 10*time.Second, "duration of each wrk measurement")
	repeat    = flag.Int("repeat", 2, "repetitions of the source-read baseline (median)")
)

type env struct {
	host, port, user, pw, sock string
}

func mustEnv() env {
	e := env{os.Getenv("SNAPSTORE_TEST_MYSQL_HOST"), os.Getenv("SNAPSTORE_TEST_MYSQL_PORT"),
		os.Getenv("SNAPSTORE_TEST_MYSQL_USER"), os.Getenv("SNAPSTORE_TEST_MYSQL_PASSWORD"), os.Getenv("SNAPSTORE_TEST_MYSQL_SOCKET")}
	if e.host == "" {
		log.Fatal("bench: SNAPSTORE_TEST_MYSQL_* unset; run through `make bench`")
	}
	return e
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
	cmd  *exec.Cmd
	url  string
	data string
}

func freePort() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

func startServer(e env, data string) *server {
	port := freePort()
	cfg := filepath.Join(data, "..", filepath.Base(data)+".yaml")
	conf := fmt.Sprintf(`data: %s
listen: 127.0.0.1:%s
log: {level: warn}
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
`, data, port, e.host, e.port, e.user)
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		log.Fatal(err)
	}
	cmd := exec.Command(*bin, "serve", "--config", cfg)
	cmd.Env = append(os.Environ(), "BENCH_MYSQL_PASSWORD="+e.pw)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		log.Fatal(err)
	}
	s := &server{cmd: cmd, url: "http://127.0.0.1:" + port, data: data}
	for i := 0; i < 300; i++ {
		if r, err := http.Get(s.url + "/readyz"); err == nil {
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

func (s *server) stop() {
	s.cmd.Process.Signal(syscall.SIGTERM)
	s.cmd.Wait()
}

// peakRSS is the process's high-water resident set (VmHWM) in bytes.
func (s *server) peakRSS() int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		log.Fatal(err)
	}
	m := regexp.MustCompile(`VmHWM:\s+(\d+) kB`).FindSubmatch(b)
	if m == nil {
		log.Fatal("bench: no VmHWM")
	}
	kb, _ := strconv.ParseInt(string(m[1]), 10, 64)
	return kb * 1024
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
	Version int64 `json:"version"`
}

// run starts a run over HTTP and waits for it; it returns the wall time seen
// by the client and the run record.
func (s *server) run() (time.Duration, runRecord) {
	start := time.Now()
	r, err := http.Post(s.url+"/v1/adapters/t/runs?wait=true", "application/json", nil)
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

func dirSize(dir string) int64 {
	var n int64
	filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			n += fi.Size()
		}
		return nil
	})
	return n
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

// wrk runs wrk with a Lua script and returns requests per second.
func wrk(url, script string) float64 {
	f, err := os.CreateTemp("", "wrk-*.lua")
	if err != nil {
		log.Fatal(err)
	}
	defer os.Remove(f.Name())
	f.WriteString(script)
	f.Close()
	cmd := exec.Command("wrk", "-t2", "-c16", "-d"+wrkDur.String(), "-s", f.Name(), url)
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

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

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
	rep.machine = machine()

	log.Printf("bench: generating %d rows", *rows)
	rep.genTime = e.generate(*rows)
	rep.tableBytes, _ = strconv.ParseInt(e.sql("SELECT SUM(LENGTH(CONCAT_WS(',',id,code,name,qty,price,ratio,created,status,note,flags))) FROM snapbench.t"), 10, 64)
	rep.source = e.sourceRead()
	log.Printf("bench: source read %v", rep.source)

	s := startServer(e, filepath.Join(tmp, "data"))
	rep.first, rep.firstRec = s.run()
	rep.rss1 = s.peakRSS()
	rep.oneCopy = dirSize(s.data)
	log.Printf("bench: first run %v, %s", rep.first, mib(rep.firstRec.Stats.BytesWritten))
	for i := 1; i <= *churnRuns; i++ {
		e.sql(fmt.Sprintf("UPDATE snapbench.t SET qty = qty + 1, note = CONCAT('churn %d ', id) WHERE id %% 100 = %d", i, i))
		d, rec := s.run()
		if i == 1 {
			rep.second, rep.secondRec = d, rec
			log.Printf("bench: second run %v, %s, %d updated", d, mib(rec.Stats.BytesWritten), rec.Stats.Updated)
		}
	}
	rep.afterChurn = dirSize(s.data)
	rep.dump = e.dumpZstd()

	// HTTP reads: point gets and 1,000-row scans against the trivial handler.
	rep.pointRPS = wrk(s.url, fmt.Sprintf(`math.randomseed(1)
request = function() return wrk.format("GET", "/v1/datasets/t/rows/" .. math.random(1, %d)) end`, *rows))
	rep.scanRPS = wrk(s.url, fmt.Sprintf(`math.randomseed(2)
request = function() return wrk.format("GET", "/v1/datasets/t/rows?limit=1000&start=" .. math.random(1, %d)) end`, *rows-1000))
	s.stop()
	tport := freePort()
	triv := exec.Command(*bin, "trivial-http", "--listen", "127.0.0.1:"+tport)
	if err := triv.Start(); err != nil {
		log.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	rep.trivialRPS = wrk("http://127.0.0.1:"+tport, `request = function() return wrk.format("GET", "/trivial/42") end`)
	triv.Process.Kill()
	triv.Wait()

	if *rssScale > 1 {
		big := *rows * *rssScale
		log.Printf("bench: generating %d rows for the RSS figure", big)
		e.generate(big)
		s := startServer(e, filepath.Join(tmp, "data-big"))
		_, rec := s.run()
		rep.rssBigRows = rec.Stats.Rows
		rep.rssBig = s.peakRSS()
		s.stop()
		e.generate(*rows)
	}
	rep.write(*out)
	log.Printf("bench: wrote %s", *out)
}

type report struct {
	cmd, machine        string
	genTime, source     time.Duration
	tableBytes          int64
	first, second       time.Duration
	firstRec, secondRec runRecord
	oneCopy, afterChurn int64
	dump                int64
	rss1, rssBig        int64
	rssBigRows          int64
	pointRPS, scanRPS   float64
	trivialRPS          float64
}

func ratio(a, b float64) string {
	if b == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2fx", a/b)
}

func (r *report) write(path string) {
	var b strings.Builder
	fmt.Fprintf(&b, "# Benchmarks\n\nMeasured %s on %s.\n\nCommand: `%s`.\n\n", time.Now().UTC().Format("2006-01-02 15:04 MST"), r.machine, r.cmd)
	fmt.Fprintf(&b, "Table: %d rows, %s as text (%.0f bytes a row), generated in %v.\n\n", *rows, mib(r.tableBytes), float64(r.tableBytes)/float64(*rows), r.genTime.Round(time.Millisecond))
	b.WriteString("| what | measured | baseline | ratio | target |\n|---|---|---|---|---|\n")
	fmt.Fprintf(&b, "| first run, wall | %v | source read %v | %s | <= 1.25x |\n", r.first.Round(time.Millisecond), r.source.Round(time.Millisecond), ratio(r.first.Seconds(), r.source.Seconds()))
	fmt.Fprintf(&b, "| second run (1%% churn: %d updated), wall | %v | source read %v | %s | <= 1.1x |\n", r.secondRec.Stats.Updated, r.second.Round(time.Millisecond), r.source.Round(time.Millisecond), ratio(r.second.Seconds(), r.source.Seconds()))
	fmt.Fprintf(&b, "| second run, bytes written | %s | first run %s | %.2f%% | <= 3%% |\n", mib(r.secondRec.Stats.BytesWritten), mib(r.firstRec.Stats.BytesWritten), 100*float64(r.secondRec.Stats.BytesWritten)/float64(max(1, r.firstRec.Stats.BytesWritten)))
	fmt.Fprintf(&b, "| storage after %d runs with 1%% churn (data dir, WAL included) | %s | one copy: the table as text %s | %s | <= 1.3x |\n", *churnRuns+1, mib(r.afterChurn), mib(r.tableBytes), ratio(float64(r.afterChurn), float64(r.tableBytes)))
	fmt.Fprintf(&b, "| same, vs the data dir after run 1 | %s | %s | %s | |\n", mib(r.afterChurn), mib(r.oneCopy), ratio(float64(r.afterChurn), float64(r.oneCopy)))
	if r.dump > 0 {
		fmt.Fprintf(&b, "| same, vs `mysqldump \\| zstd` kept per run | %s | %d dumps %s | %s | |\n", mib(r.afterChurn), *churnRuns+1, mib(r.dump*int64(*churnRuns+1)), ratio(float64(r.afterChurn), float64(r.dump*int64(*churnRuns+1))))
	}
	fmt.Fprintf(&b, "| same, vs a full rewrite per run (estimated: runs x the first run's bytes written) | %s | %s | %s | |\n", mib(r.afterChurn), mib(r.firstRec.Stats.BytesWritten*int64(*churnRuns+1)), ratio(float64(r.afterChurn), float64(r.firstRec.Stats.BytesWritten*int64(*churnRuns+1))))
	fmt.Fprintf(&b, "| peak RSS of the server, run of %d rows | %s | | | flat |\n", *rows, mib(r.rss1))
	if r.rssBig > 0 {
		fmt.Fprintf(&b, "| peak RSS of the server, run of %d rows | %s | %d rows %s | %s | flat |\n", r.rssBigRows, mib(r.rssBig), *rows, mib(r.rss1), ratio(float64(r.rssBig), float64(r.rss1)))
	}
	fmt.Fprintf(&b, "| HTTP point reads (wrk -t2 -c16 %v) | %.0f req/s | trivial echo handler %.0f req/s | %.0f%% | >= 70%% |\n", *wrkDur, r.pointRPS, r.trivialRPS, 100*r.pointRPS/r.trivialRPS)
	fmt.Fprintf(&b, "| HTTP 1,000-row scans | %.0f req/s (%.0f rows/s) | | | |\n", r.scanRPS, r.scanRPS*1000)
	os.MkdirAll(filepath.Dir(path), 0o755)
	prev, _ := os.ReadFile(path)
	// Keep any hand-written sections after the generated table.
	const marker = "\n<!-- end of generated section -->\n"
	tail := ""
	if i := bytes.Index(prev, []byte(marker)); i >= 0 {
		tail = string(prev[i+len(marker):])
	}
	if err := os.WriteFile(path, []byte(b.String()+marker+tail), 0o644); err != nil {
		log.Fatal(err)
	}
}
