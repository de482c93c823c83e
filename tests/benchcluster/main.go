// Command benchcluster measures partitioned runs against a run on one
// node and writes its section of docs/benchmarks.md. It is run by
// `make bench-cluster`, never by `make test`:
//
//	go run ./tests/benchcluster -rows 2000000 -nodes 3 -out docs/benchmarks.md
//
// It generates a SQLite table (ten mixed columns), starts -nodes snapstore
// processes with transfer listeners on one HBase table (the test HBase of
// SNAPSTORE_TEST_HBASE_THRIFT, a table of its own, dropped at the end), and
// drives them over HTTP only: a local run of the table on node 1 (the
// baseline) and a partitioned run coordinated by node 1, first and after 1%
// churn, then with nothing changed (a partitioned run verified by the
// source's key-range checksums on its coordinator, against the local
// first run), and after 1% of the rows changed in 4 key ranges (a
// partitioned run that reads only those ranges, the owners carrying the
// others over, against the local first run); the bytes node 1 sent to
// the others for a first run with each transfer_compression; and node
// 1's peak RSS while one owner is down and
// the whole run waits for it, at a quarter of the table and at the whole
// table (flat in table size: the rows wait on disk).
package main

import (
	"bufio"
	"bytes"
	"context"
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
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/snapstore/snapstore/store/hbase"
	"github.com/snapstore/snapstore/tests/procstat"

	"github.com/snapstore/snapstore/internal/testenv"
)

var (
	rows   = flag.Int("rows", 2_000_000, "rows of the synthetic table")
	nodes  = flag.Int("nodes", 3, "nodes of the cluster (at least 2)")
	out    = flag.String("out", "docs/benchmarks.md", "markdown report whose cluster section is written")
	bin    = flag.String("bin", "bin/snapstore", "snapstore binary")
	thrift = flag.String("thrift", os.Getenv(testenv.EnvHBaseThrift), "HBase Thrift2 gateway")
	qmem   = flag.Int64("queue-memory", 8<<20, "cluster.transfer.queue_memory of every node: below the run's rows for a down owner, so that they spill")
)

func main() {
	flag.Parse()
	log.SetFlags(0)
	if *thrift == "" {
		log.Fatal("benchcluster: no HBase: set SNAPSTORE_TEST_HBASE_THRIFT (make bench-cluster does)")
	}
	if *nodes < 2 {
		log.Fatal("benchcluster: -nodes must be at least 2")
	}
	tmp, err := os.MkdirTemp("", "snapbenchcluster-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	hb := hbase.Options{Addr: *thrift, Namespace: "snapstore_test", Table: fmt.Sprintf("benchcluster_%d", os.Getpid())}
	defer func() {
		if err := hbase.DropTable(context.Background(), hb); err != nil {
			log.Printf("benchcluster: dropping %s: %v", hb.Table, err)
		}
	}()

	src := filepath.Join(tmp, "src.db")
	start := time.Now()
	sqlite(src, fmt.Sprintf(genSQL, "ledger", *rows))
	sqlite(src, fmt.Sprintf(genSQL, "quarter", *rows/4))
	log.Printf("benchcluster: %d rows generated in %v", *rows, time.Since(start).Round(time.Millisecond))
	c := startCluster(tmp, src, hb)
	defer c.stop()
	n1 := c.nodes[0]
	var rep report

	rep.local, rep.localRec = n1.run("local")
	log.Printf("benchcluster: local first run %v", rep.local)
	before := n1.sentBytes()
	rep.part, rep.partRec = n1.run("spread_all")
	rep.sent[2] = n1.sentBytes() - before
	log.Printf("benchcluster: partitioned first run %v", rep.part)
	for i, a := range []string{"spread_none", "spread_metadata"} {
		before := n1.sentBytes()
		n1.run(a)
		rep.sent[i] = n1.sentBytes() - before
	}
	sqlite(src, "UPDATE ledger SET qty = qty + 1, note = 'churn ' || id WHERE id % 100 = 1;")
	rep.localChurn, rep.localChurnRec = n1.run("local")
	rep.partChurn, rep.partChurnRec = n1.run("spread_all")
	log.Printf("benchcluster: 1%% churn: local %v, partitioned %v", rep.localChurn, rep.partChurn)
	rep.localSame, rep.partSame, rep.load = unchanged(n1)
	log.Printf("benchcluster: nothing changed: local %v, partitioned %v (load average %s)", rep.localSame, rep.partSame, rep.load)
	rep.localRanges, rep.localRangesRec, rep.partRanges, rep.partRangesRec = changedRanges(src, n1)
	log.Printf("benchcluster: 1%% changed in 4 key ranges: local %v, partitioned %v (%d of %d ranges read)",
		rep.localRanges, rep.partRanges, rep.partRangesRec.Chunks-rep.partRangesRec.ChunksSkipped, rep.partRangesRec.Chunks)
	for _, p := range c.nodes {
		rep.applied = append(rep.applied, p.metric("snapstore_cluster_partition_rows_applied_total"))
	}

	// Memory with one owner down: node 1 restarted (its high-water mark
	// anew), the last node killed, a run of the quarter table and one of
	// the whole table, each aborted once its rows are all read and queued.
	n1.restart()
	down := c.nodes[len(c.nodes)-1]
	down.kill()
	rep.rssBase = n1.peakRSS()
	rep.rssQuarter, rep.spillQuarter = n1.waitingRun("quarter_none", *rows/4)
	rep.rssWhole, rep.spillWhole = n1.waitingRun("spread_none", *rows)
	log.Printf("benchcluster: owner down: peak RSS %s at %d rows, %s at %d rows", mib(rep.rssQuarter), *rows/4, mib(rep.rssWhole), *rows)
	rep.write(*out)
	log.Printf("benchcluster: wrote %s", *out)
}

// unchanged runs the local and the partitioned adapter twice each with
// nothing changed and returns the second runs' wall times, which verify
// by the key-range checksums the first ones computed after their full
// read, and the load average at the partitioned one.
func unchanged(n1 *node) (local, part time.Duration, load string) {
	for _, a := range []string{"local", "spread_all"} {
		n1.run(a)
		d, rec := n1.run(a)
		if rec.Mode != "verify" || !rec.Verified {
			log.Fatalf("benchcluster: a run of %s with nothing changed after one that read it: mode %q verified %v, want verify", a, rec.Mode, rec.Verified)
		}
		if a == "local" {
			local = d
			continue
		}
		part = d
		b, err := os.ReadFile("/proc/loadavg")
		if err != nil {
			log.Fatal(err)
		}
		load = strings.Join(strings.Fields(string(b))[:3], " ")
	}
	return local, part, load
}

// changedRanges changes 1% of the table's rows in 4 key ranges (at a
// tenth, 35%, 60% and 85% of its keys) and runs the local and the
// partitioned adapter, which both read only the ranges that changed
// (mode chunks) after the verified runs of unchanged; it returns their
// wall times and records.
func changedRanges(src string, n1 *node) (local time.Duration, localRec runRecord, part time.Duration, partRec runRecord) {
	span := max(*rows/400, 1)
	var sql strings.Builder
	for _, at := range []int{10, 35, 60, 85} {
		lo := *rows * at / 100
		fmt.Fprintf(&sql, "UPDATE ledger SET qty = qty + 1, note = 'range ' || id WHERE id BETWEEN %d AND %d;\n", lo, lo+span-1)
	}
	sqlite(src, sql.String())
	local, localRec = n1.run("local")
	part, partRec = n1.run("spread_all")
	for _, rec := range []runRecord{localRec, partRec} {
		if rec.Mode != "chunks" || rec.Stats.Updated != int64(4*span) {
			log.Fatalf("benchcluster: a run after 4 ranges changed: mode %q, %d updated; want chunks, %d", rec.Mode, rec.Stats.Updated, 4*span)
		}
	}
	return local, localRec, part, partRec
}

// genSQL makes table %s of %d rows of ten mixed columns.
const genSQL = `DROP TABLE IF EXISTS %[1]s;
CREATE TABLE %[1]s(id INTEGER PRIMARY KEY, code TEXT, name TEXT, qty INTEGER, price REAL, ratio REAL, created TEXT, status TEXT, note TEXT, flags INTEGER);
WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM c WHERE i < %[2]d)
INSERT INTO %[1]s SELECT i, hex(randomblob(16)), 'customer ' || (i * 7919 %% 100003), i %% 1000, (i %% 10007) / 100.0, (i %% 97) / 97.0,
  datetime(1700000000 + i * 37, 'unixepoch'), CASE i %% 4 WHEN 0 THEN 'new' WHEN 1 THEN 'paid' WHEN 2 THEN 'shipped' ELSE 'closed' END,
  hex(randomblob(20)), i %% 256 FROM c;`

func sqlite(file, script string) {
	cmd := exec.Command(*bin, "sqlite", file)
	cmd.Stdin = strings.NewReader(script)
	if b, err := cmd.CombinedOutput(); err != nil {
		log.Fatalf("benchcluster: sqlite: %v: %s", err, b)
	}
}

type cluster struct {
	nodes []*node
}

type node struct {
	cmd  *exec.Cmd
	args []string
	url  string
	port string
}

func freePort(host string) string {
	l, err := net.Listen("tcp", host+":0")
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// startCluster starts the nodes, node 1 first, and waits until each owns
// partitions.
func startCluster(tmp, src string, hb hbase.Options) *cluster {
	certs := filepath.Join(tmp, "certs")
	mustRun(*bin, "cert", "ca", certs)
	adapters := "adapters:\n  - {name: local, connection: src, resource: ledger, dataset: local, guard: {max_shrink: 1}}\n"
	for _, comp := range []string{"none", "metadata", "all"} {
		adapters += fmt.Sprintf("  - {name: spread_%s, connection: src, resource: ledger, dataset: spread_%s, strategy: partition-by-key, transfer_compression: %s, guard: {max_shrink: 1}}\n", comp, comp, comp)
	}
	adapters += "  - {name: quarter_none, connection: src, resource: quarter, dataset: quarter, strategy: partition-by-key, transfer_compression: none, guard: {max_shrink: 1}}\n"
	c := &cluster{}
	var join string
	for i := range *nodes {
		host := fmt.Sprintf("127.0.0.%d", i+1)
		data := filepath.Join(tmp, fmt.Sprintf("node%d", i+1))
		mustRun(*bin, "cert", "node", certs, "--data", data)
		id, err := os.ReadFile(filepath.Join(data, "node-id"))
		if err != nil {
			log.Fatal(err)
		}
		gossip := host + ":" + freePort(host)
		n := &node{port: freePort(host)}
		n.url = "http://" + host + ":" + n.port
		cfg := filepath.Join(tmp, fmt.Sprintf("node%d.yaml", i+1))
		conf := fmt.Sprintf(`data: %s
listen: %s:%s
log: {level: warn}
storage: {backend: hbase, hbase: {thrift: %q, namespace: %s, table: %s}}
cluster:
  bind: %s
  preset: loopback
  partition_moves: 32
  partition_move_interval: 500ms
  transfer: {listen: "%s:%s", ca_file: %s, cert_file: %s, key_file: %s, owner_wait: 1h, queue_memory: %d}
connections: [{name: src, type: sqlite, options: {path: %q}}]
`, data, host, n.port, hb.Addr, hb.Namespace, hb.Table, gossip, host, freePort(host),
			filepath.Join(certs, "ca.crt"), filepath.Join(certs, strings.TrimSpace(string(id))+".crt"), filepath.Join(certs, strings.TrimSpace(string(id))+".key"), *qmem, src) + adapters
		if join == "" {
			join = gossip
		} else {
			conf = strings.Replace(conf, "  preset: loopback\n", "  preset: loopback\n  join: ["+join+"]\n", 1)
		}
		if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
			log.Fatal(err)
		}
		n.args = []string{"serve", "--config", cfg}
		n.start()
		c.nodes = append(c.nodes, n)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for _, n := range c.nodes {
		for n.metric("snapstore_cluster_partitions_owned") < 1 {
			if time.Now().After(deadline) {
				log.Fatal("benchcluster: the nodes did not all get partitions within 2 minutes")
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	return c
}

func mustRun(name string, args ...string) {
	if b, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		log.Fatalf("benchcluster: %s %v: %v: %s", name, args, err, b)
	}
}

func (n *node) start() {
	n.cmd = exec.Command(*bin, n.args...)
	n.cmd.Stderr = os.Stderr
	if err := n.cmd.Start(); err != nil {
		log.Fatal(err)
	}
	for i := 0; i < 600; i++ {
		if r, err := http.Get(n.url + "/readyz"); err == nil {
			r.Body.Close()
			if r.StatusCode == 200 {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	log.Fatal("benchcluster: a node did not become ready")
}

func (n *node) kill() {
	n.cmd.Process.Signal(syscall.SIGKILL)
	n.cmd.Wait()
}

func (n *node) restart() {
	n.cmd.Process.Signal(syscall.SIGTERM)
	n.cmd.Wait()
	n.start()
}

func (c *cluster) stop() {
	for _, n := range c.nodes {
		if n.cmd.ProcessState == nil {
			n.cmd.Process.Signal(syscall.SIGTERM)
			n.cmd.Wait()
		}
	}
}

type runRecord struct {
	ID       string `json:"id"`
	Status   string `json:"status"`
	Error    string `json:"error"`
	RowsRead int64  `json:"rows_read"`
	Mode     string `json:"mode"`
	Verified bool   `json:"verified"`
	// Chunks are the key ranges of the version's source digest,
	// ChunksSkipped those carried over unread.
	Chunks        int `json:"chunks"`
	ChunksSkipped int `json:"chunks_skipped"`
	Stats         struct {
		Rows         int64 `json:"rows"`
		Inserted     int64 `json:"inserted"`
		Updated      int64 `json:"updated"`
		BytesWritten int64 `json:"bytes_written"`
	} `json:"stats"`
}

func (n *node) post(path string) runRecord {
	r, err := http.Post(n.url+path, "application/json", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer r.Body.Close()
	body, _ := io.ReadAll(r.Body)
	var rec runRecord
	if err := json.Unmarshal(body, &rec); err != nil {
		log.Fatalf("benchcluster: %s: %d %s", path, r.StatusCode, body)
	}
	return rec
}

// run runs adapter a to its end and returns the wall time.
func (n *node) run(a string) (time.Duration, runRecord) {
	start := time.Now()
	rec := n.post("/v1/adapters/" + a + "/runs?wait=true")
	if rec.Status != "succeeded" {
		log.Fatalf("benchcluster: run of %s: %s %s", a, rec.Status, rec.Error)
	}
	return time.Since(start), rec
}

// waitingRun starts a run of adapter a, whose owner is down, waits until
// its want rows are read and queued, and returns node 1's peak RSS and
// bytes spilled to disk then; the run is left to wait (the next run of
// another dataset is independent).
func (n *node) waitingRun(a string, want int) (int64, float64) {
	rec := n.post("/v1/adapters/" + a + "/runs")
	for {
		var cur runRecord
		r, err := http.Get(n.url + "/v1/runs/" + rec.ID)
		if err != nil {
			log.Fatal(err)
		}
		json.NewDecoder(r.Body).Decode(&cur)
		r.Body.Close()
		if cur.Status != "running" {
			log.Fatalf("benchcluster: the run of %s waiting for its owner ended: %s %s", a, cur.Status, cur.Error)
		}
		if cur.RowsRead >= int64(want) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(2 * time.Second) // the last batches queued
	return n.peakRSS(), n.metric("snapstore_cluster_transfer_spilled_bytes_total")
}

func (n *node) metric(name string) float64 {
	r, err := http.Get(n.url + "/metrics")
	if err != nil {
		return -1
	}
	defer r.Body.Close()
	sc := bufio.NewScanner(r.Body)
	sum, found := 0.0, false
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, name+" ") || strings.HasPrefix(line, name+"{") {
			f := strings.Fields(line)
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			sum, found = sum+v, true
		}
	}
	if !found {
		return -1
	}
	return sum
}

func (n *node) sentBytes() float64 {
	return max(n.metric("snapstore_cluster_transfer_sent_bytes_total"), 0)
}

func (n *node) peakRSS() int64 {
	rss, err := procstat.PeakRSS(n.cmd.Process.Pid)
	if err != nil {
		log.Fatalf("benchcluster: %v", err)
	}
	return rss
}

func mib(n int64) string { return procstat.MiB(n) }

type report struct {
	local, part, localChurn, partChurn             time.Duration
	localSame, partSame                            time.Duration // nothing changed
	localRanges, partRanges                        time.Duration // 1% changed in 4 key ranges
	localRangesRec, partRangesRec                  runRecord
	load                                           string // the load average at partSame
	localRec, partRec, localChurnRec, partChurnRec runRecord
	sent                                           [3]float64
	applied                                        []float64
	rssBase, rssQuarter, rssWhole                  int64
	spillQuarter, spillWhole                       float64
}

func ratio(a, b float64) string {
	if b == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2fx", a/b)
}

// The cluster section of docs/benchmarks.md lies between these markers;
// the rest of the file is kept.
const (
	beginMarker = "<!-- begin bench-cluster -->\n"
	endMarker   = "<!-- end bench-cluster -->\n"
)

func (r *report) write(path string) {
	var b strings.Builder
	b.WriteString(beginMarker)
	fmt.Fprintf(&b, "## Partitioned runs (`make bench-cluster`)\n\nMeasured %s on %d cores (%s), %d snapstore processes and one HBase standalone on this machine.\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 MST"), runtime.NumCPU(), runtime.GOARCH, *nodes)
	fmt.Fprintf(&b, "Command: `go run ./tests/benchcluster %s`. Table: %d rows of ten mixed columns (SQLite). Bytes a row are over every source row (the coordinator sends only the rows of the partitions it does not own).\n\n", strings.Join(os.Args[1:], " "), *rows)
	b.WriteString("| what | measured | baseline | ratio |\n|---|---|---|---|\n")
	fmt.Fprintf(&b, "| first run, partitioned over %d nodes, wall | %v | one node, local strategy %v | %s |\n", *nodes, r.part.Round(time.Millisecond), r.local.Round(time.Millisecond), ratio(r.part.Seconds(), r.local.Seconds()))
	fmt.Fprintf(&b, "| 1%% churn re-run (%d updated), partitioned, wall | %v | one node %v | %s |\n", r.partChurnRec.Stats.Updated, r.partChurn.Round(time.Millisecond), r.localChurn.Round(time.Millisecond), ratio(r.partChurn.Seconds(), r.localChurn.Seconds()))
	fmt.Fprintf(&b, "| partitioned run over %d nodes, nothing changed (mode verify; load average %s), wall | %v | one node's first run (full) %v | %s (goal <= 0.5x) |\n", *nodes, r.load, r.partSame.Round(time.Millisecond), r.local.Round(time.Millisecond), ratio(r.partSame.Seconds(), r.local.Seconds()))
	fmt.Fprintf(&b, "| the same by one node (mode verify), wall | %v | one node's first run (full) %v | %s |\n", r.localSame.Round(time.Millisecond), r.local.Round(time.Millisecond), ratio(r.localSame.Seconds(), r.local.Seconds()))
	pr := r.partRangesRec
	fmt.Fprintf(&b, "| partitioned run over %d nodes, 1%% changed in 4 key ranges (%d updated; mode chunks, %d of %d ranges read, %d rows read), wall | %v | one node's first run (full) %v | %s |\n",
		*nodes, pr.Stats.Updated, pr.Chunks-pr.ChunksSkipped, pr.Chunks, pr.RowsRead, r.partRanges.Round(time.Millisecond), r.local.Round(time.Millisecond), ratio(r.partRanges.Seconds(), r.local.Seconds()))
	fmt.Fprintf(&b, "| the same by one node (mode chunks), wall | %v | one node's first run (full) %v | %s |\n", r.localRanges.Round(time.Millisecond), r.local.Round(time.Millisecond), ratio(r.localRanges.Seconds(), r.local.Seconds()))
	for i, name := range []string{"none", "metadata", "all"} {
		fmt.Fprintf(&b, "| bytes sent by the coordinator, first run, `transfer_compression: %s` | %s (%.1f bytes a row) | none %s | %s |\n", name, mib(int64(r.sent[i])), r.sent[i]/float64(*rows), mib(int64(r.sent[0])), ratio(r.sent[i], r.sent[0]))
	}
	fmt.Fprintf(&b, "| coordinator's peak RSS, an owner down, a run of %d rows queued for it (`none`) | %s (%.1f MiB spilled to disk in all) | %d rows %s | %s |\n", *rows, mib(r.rssWhole), r.spillWhole/(1<<20), *rows/4, mib(r.rssQuarter), ratio(float64(r.rssWhole), float64(r.rssQuarter)))
	fmt.Fprintf(&b, "| its growth over the restarted coordinator's peak before these two runs | %s | `queue_memory` %s | %s |\n", mib(r.rssWhole-r.rssBase), mib(*qmem), ratio(float64(r.rssWhole-r.rssBase), float64(*qmem)))
	fmt.Fprintf(&b, "\nRows written per node (all runs): %v.\n", r.applied)
	b.WriteString(endMarker)
	prev, _ := os.ReadFile(path)
	var doc string
	if i := bytes.Index(prev, []byte(beginMarker)); i >= 0 {
		j := bytes.Index(prev, []byte(endMarker))
		doc = string(prev[:i]) + b.String() + string(prev[j+len(endMarker):])
	} else {
		doc = string(prev) + "\n" + b.String()
	}
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		log.Fatal(err)
	}
}
