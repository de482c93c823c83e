package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// TestParquetCache_PyarrowByRanges: pyarrow reads a Parquet answer of
// the served binary over HTTP as readers of Parquet over HTTP do, a HEAD
// for the size and a Range request per read (testdata/parquet_ranges.py),
// and gets the version's rows; the server, whose cache of built answers
// is on by default (parquet_cache.size), builds the file once for all of
// these requests.
func TestParquetCache_PyarrowByRanges(t *testing.T) {
	e := getMySQLEnv(t)
	py := pyclientsPython(t)
	dbName := fmt.Sprintf("e2e_pqcache_%d", os.Getpid())
	root := e.open(t, "")
	for _, q := range []string{"DROP DATABASE IF EXISTS `" + dbName + "`", "CREATE DATABASE `" + dbName + "`"} {
		if _, err := root.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { root.Exec("DROP DATABASE IF EXISTS `" + dbName + "`") })
	src := e.open(t, dbName)
	const rows = 100000 // seven row groups of at most 16384 rows
	for _, q := range []string{
		"CREATE TABLE items (id BIGINT PRIMARY KEY, name VARCHAR(64) NOT NULL, price DECIMAL(10,2))",
		// MariaDB's SEQUENCE engine: seq_1_to_N holds 1 to N.
		fmt.Sprintf("INSERT INTO items SELECT seq, CONCAT('item ', seq), seq %% 1000 + 0.5 FROM seq_1_to_%d", rows),
	} {
		if _, err := src.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	p := startServer(t, e.Password)
	p.createMySQLConnection(t, "src", e.Host, e.Port, e.User, dbName)
	p.createAdapter(t, map[string]any{"name": "items", "connection": "src", "resource": "items"})
	v := p.mustRun(t, "items").Version
	url := fmt.Sprintf("%s/v1/datasets/items/rows?version=%d&format=parquet", p.base, v)
	out, err := exec.Command(py, "testdata/parquet_ranges.py", url).CombinedOutput()
	if err != nil {
		t.Fatalf("parquet_ranges.py: %v\n%s", err, out)
	}
	var got struct {
		Rows      int64 `json:"rows"`
		RowGroups int64 `json:"row_groups"`
		IDSum     int64 `json:"id_sum"`
		Heads     int64 `json:"heads"`
		Ranges    int64 `json:"ranges"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("parquet_ranges.py: %v\n%s", err, out)
	}
	t.Logf("pyarrow: %+v", got)
	if got.Rows != rows || got.IDSum != rows*(rows+1)/2 || got.RowGroups != 7 {
		t.Errorf("pyarrow read %+v, want %d rows in 7 row groups, ids summing to %d", got, rows, rows*(rows+1)/2)
	}
	if got.Heads != 1 || got.Ranges < 8 {
		t.Errorf("pyarrow sent %d HEAD and %d Range requests, want one and a range per row group and more", got.Heads, got.Ranges)
	}
	builds, hits := p.metric(t, "snapstore_server_parquet_cache_builds_total"), p.metric(t, "snapstore_server_parquet_cache_hits_total")
	if builds != 1 || hits != float64(got.Ranges) {
		t.Errorf("%d requests: %v builds and %v cache hits, want one build and a hit for each range", got.Heads+got.Ranges, builds, hits)
	}
}
