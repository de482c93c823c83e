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
	"path/filepath"
	"strings"
	"time"
)

var (
	copyRun  = flag.Bool("copy", true, "measure the copy of a 1% churn version by diff against a full copy of it, between two servers (copyByDiff)")
	onlyCopy = flag.Bool("only-copy", false, "measure only the copy by diff against a full copy, print the figures and write no report")
)

// copyFigure is one kind of churn copied by diff beside a full copy of
// the same source version, both runs of the central server.
type copyFigure struct {
	churn         string // what changed on the edge
	diff, full    time.Duration
	diffRec       runRecord
	fullRec       runRecord
	sourceVersion int64 // the edge version both copied
}

// ratio is the diff copy's time over the full copy's.
func (f copyFigure) ratio() float64 { return f.diff.Seconds() / f.full.Seconds() }

func (f copyFigure) String() string {
	return fmt.Sprintf("copy of edge version %d, %s: by diff %s (mode %s, %d rows read, %d updated; %s), in full %s (mode %s, %d rows read; %s): %.3fx",
		f.sourceVersion, f.churn, secs(f.diff), f.diffRec.Mode, f.diffRec.RowsRead, f.diffRec.Stats.Updated, phases(f.diffRec),
		secs(f.full), f.fullRec.Mode, f.fullRec.RowsRead, phases(f.fullRec), f.ratio())
}

// phases lists a run's phases with their durations.
func phases(rec runRecord) string {
	var s []string
	for _, p := range rec.Phases {
		s = append(s, fmt.Sprintf("%s %s", p.Name, secs(p.End.Sub(p.Start))))
	}
	return strings.Join(s, ", ")
}

// copyFigures is what copyByDiff measured.
type copyFigures struct {
	first    time.Duration // the first copy of the edge's first version, in full
	firstRec runRecord
	kinds    []copyFigure
}

// copyByDiff measures a copy by diff against a full copy: two snapstore
// processes, the edge holding the bench table (one run of its own
// adapter, on a data directory of its own) and the central one copying
// its dataset through a `snapstore` data connection. After a first copy,
// for each kind of churn (1% of the rows in four key ranges, then 1% at
// random), the table changes, the edge runs, the central copy runs by
// diff from the version it copied last, and a new central adapter copies
// the same edge version (`t@N`) in full into a dataset of its own. The
// figure is the diff copy's wall time (a run started over HTTP and waited
// for) over the full copy's.
func copyByDiff(e env, tmp string) copyFigures {
	edge := startServer(e, filepath.Join(tmp, "data-edge"), "", "", "copy-edge")
	_, erec := edge.run()
	log.Printf("bench: copy: the edge's first version %d (%d rows)", erec.Version, erec.Stats.Rows)
	central := startCentral(e, filepath.Join(tmp, "data-central"), edge.url, "copy-central")
	defer func() { edge.stop(); central.stop() }()
	var out copyFigures
	out.first, out.firstRec = central.runAdapter("copy")
	log.Printf("bench: copy: first copy %s (mode %s, %d rows)", secs(out.first), out.firstRec.Mode, out.firstRec.Stats.Rows)

	span := max(*rows/400, 1)
	var ranges []string
	for k := 0; k < 4; k++ {
		lo := 1 + k*(*rows/4) + *rows/16
		ranges = append(ranges, fmt.Sprintf("id BETWEEN %d AND %d", lo, lo+span-1))
	}
	for i, c := range []struct{ name, where string }{
		{"1% of the rows in 4 key ranges", strings.Join(ranges, " OR ")},
		{"1% of the rows at random", "id % 100 = 37"},
	} {
		e.sql(fmt.Sprintf("UPDATE snapbench.t SET qty = qty + 1, note = CONCAT('copy %d ', id) WHERE %s", i, c.where))
		edge = edge.phase(fmt.Sprintf("copy-edge-%d", i+1))
		_, erec := edge.run()
		f := copyFigure{churn: c.name, sourceVersion: erec.Version}
		log.Printf("bench: copy: edge version %d, %s (%d updated)", erec.Version, c.name, erec.Stats.Updated)
		if *profDir != "" {
			central.stop()
			central = startCentral(e, central.data, edge.url, fmt.Sprintf("copy-central-diff-%d", i+1))
		}
		f.diff, f.diffRec = central.runAdapter("copy")
		full := fmt.Sprintf("full-%d", i+1)
		central.createAdapter(map[string]any{"name": full, "connection": "edge", "resource": fmt.Sprintf("t@%d", erec.Version),
			"dataset": "t_" + strings.ReplaceAll(full, "-", "_"), "guard": map[string]any{"max_shrink": 1}})
		if *profDir != "" {
			central.stop()
			central = startCentral(e, central.data, edge.url, fmt.Sprintf("copy-central-full-%d", i+1))
		}
		f.full, f.fullRec = central.runAdapter(full)
		log.Printf("bench: %s", f)
		out.kinds = append(out.kinds, f)
	}
	return out
}

// startCentral starts the central server of copyByDiff on data: a
// `snapstore` data connection "edge" to edgeURL and an adapter "copy" of
// its dataset t.
func startCentral(e env, data, edgeURL, phase string) *server {
	if err := os.MkdirAll(data, 0o700); err != nil {
		log.Fatal(err)
	}
	port := freePort()
	conf := fmt.Sprintf(`data: %s
listen: 127.0.0.1:%s
log: {level: warn}
connections:
  - name: edge
    type: snapstore
    options: {url: %q}
adapters:
  - name: copy
    connection: edge
    resource: t
    dataset: t_copy
    retention: {ttl: 0s, min_versions: 100}
    guard: {max_shrink: 1}
`, data, port, edgeURL)
	return launch(filepath.Join(data, "..", filepath.Base(data)+".yaml"), conf,
		&server{url: "http://127.0.0.1:" + port, data: data, env: e, client: http.DefaultClient}, phase)
}

// createAdapter creates an adapter through the admin API.
func (s *server) createAdapter(def map[string]any) {
	b, _ := json.Marshal(def)
	r, err := s.client.Post(s.url+"/v1/adapters", "application/json", bytes.NewReader(b))
	if err != nil {
		log.Fatal(err)
	}
	defer r.Body.Close()
	if r.StatusCode != http.StatusCreated && r.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(r.Body)
		log.Fatalf("bench: creating adapter %s: %d %s", def["name"], r.StatusCode, body)
	}
}
