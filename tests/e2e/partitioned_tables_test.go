package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// shopTables creates the SQLite source of the partitioned runs of
// several tables: ledger (n rows) and lines (3 lines of each of n/4
// orders, keyed by two columns).
func shopTables(t *testing.T, n int) string {
	t.Helper()
	src := ledgerTable(t, n)
	cli(t, "sqlite", src, fmt.Sprintf(`CREATE TABLE lines(order_id INTEGER NOT NULL, line INTEGER NOT NULL, sku TEXT NOT NULL, PRIMARY KEY(order_id, line));
WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i+1 FROM c WHERE i < %d)
INSERT INTO lines SELECT i / 3, i %% 3, 'sku-' || i FROM c;`, 3*(n/4)-1))
	return src
}

// tableRows reads every row of table of dataset at its current version
// through the table's route (NDJSON), sorted, and the version; version 0
// while p's view shows no version yet.
func tableRows(t *testing.T, p *proc, dataset, table string) ([]string, int64) {
	t.Helper()
	r, err := p.call("GET", "/v1/datasets/"+dataset+"/tables/"+table+"/rows", nil, "Accept", "application/x-ndjson")
	switch {
	case err != nil:
		t.Fatal(err)
	case r.status == http.StatusNotFound && strings.Contains(string(r.body), "no_version"):
		return nil, 0
	case r.status != http.StatusOK:
		t.Fatalf("rows of table %s of %s: status %d: %s", table, dataset, r.status, r.body)
	}
	version, _ := strconv.ParseInt(r.header.Get("Snapstore-Version"), 10, 64)
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(r.body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	slices.Sort(out)
	return out, version
}

// sameTables fails the test unless every table of dataset a at version
// va (read on pa) has the rows of the same table of dataset b, read on
// pb, which the source holds.
func sameTables(t *testing.T, what string, pa *proc, a string, va int64, pb *proc, b string, tables ...string) {
	t.Helper()
	for _, table := range tables {
		var got []string
		poll(t, 10*time.Second, fmt.Sprintf("version %d of %s", va, a), func() bool {
			var v int64
			got, v = tableRows(t, pa, a, table)
			return v == va
		})
		want, _ := tableRows(t, pb, b, table)
		if !slices.Equal(got, want) || len(got) == 0 {
			t.Fatalf("%s: table %s of %s has %d rows, %s's %d", what, table, a, len(got), b, len(want))
		}
	}
}

// TestPartitionedTables runs a cluster of three nodes over one HBase
// table and a SQLite source of two tables read by a partition-by-key
// adapter of several tables (docs/cluster.md, partitioned runs of several
// tables):
//
//   - a run coordinated by node 1 commits one version in which each table
//     holds the source's rows (read back through the table routes on
//     node 2), with the counts and checksum of the same tables read by a
//     local adapter, and every node wrote rows of it;
//   - a second run after changes to both tables, likewise, and a third
//     with no change records that version verified;
//   - a run whose owner is killed fails after owner_wait with
//     node_unreachable, and every table stays at the version before.
func TestPartitionedTables(t *testing.T) {
	if binPath == "" {
		t.Skip("the snapstore binary was not built: -short, or no test service is set")
	}
	const rows = 20000
	src := shopTables(t, rows)
	cfg := fmt.Sprintf(`connections: [{name: src, type: sqlite, options: {path: %q}}]
adapters:
  - {name: spread, connection: src, resources: [ledger, lines], dataset: shop, strategy: partition-by-key, transfer_compression: metadata, guard: {max_shrink: 1}}
  - {name: single, connection: src, resources: [ledger, lines], dataset: local, guard: {max_shrink: 1}}
`, src)
	const ownerWait = 8 * time.Second
	c := startPartitionedCluster(t, 3, cfg, ownerWait.String())
	n1, n2, n3 := c.nodes[0], c.nodes[1], c.nodes[2]

	rec := n1.mustRun(t, "spread")
	single := n1.mustRun(t, "single")
	if rec.Stats != single.Stats || rec.Stats.Inserted != rows+3*(rows/4) {
		t.Errorf("partitioned run's stats %+v, one node's %+v", rec.Stats, single.Stats)
	}
	sameTables(t, "first version", n2, "shop", rec.Version, n1, "local", "ledger", "lines")
	if a, b := checksumOf(t, n1, "shop", rec.Version), checksumOf(t, n1, "local", single.Version); a != b || a == "" {
		t.Errorf("checksum %q partitioned, %q by one node", a, b)
	}
	var applied float64
	for i, p := range c.nodes {
		n := p.metric(t, "snapstore_cluster_partition_rows_applied_total")
		if n <= 0 {
			t.Errorf("node %d wrote no rows of the partitioned run", i+1)
		}
		applied += n
	}
	if applied != float64(rows+3*(rows/4)) {
		t.Errorf("the nodes wrote %v rows in all, want %d", applied, rows+3*(rows/4))
	}
	var vi struct {
		Tables []struct {
			Name       string `json:"name"`
			Partitions int    `json:"partitions"`
		} `json:"tables"`
	}
	n1.jsonCall(t, http.StatusOK, "GET", fmt.Sprintf("/v1/datasets/shop/versions/%d", rec.Version), nil, &vi)
	if len(vi.Tables) != 2 || vi.Tables[0].Partitions != 32 || vi.Tables[1].Partitions != 32 {
		t.Errorf("the version's tables: %+v", vi.Tables)
	}

	// Changes to both tables.
	cli(t, "sqlite", src, `UPDATE ledger SET name = 'changed' WHERE id % 37 = 0;
DELETE FROM ledger WHERE id % 100 = 0;
DELETE FROM lines WHERE order_id % 50 = 0;
UPDATE lines SET sku = 'new-' || sku WHERE order_id % 7 = 0;
INSERT INTO lines VALUES (100000, 0, 'late');`)
	rec2 := n1.mustRun(t, "spread")
	single2 := n1.mustRun(t, "single")
	if rec2.Stats != single2.Stats || rec2.Stats.Deleted == 0 || rec2.Stats.Updated == 0 || rec2.Stats.Inserted != 1 {
		t.Errorf("second partitioned run's stats %+v, one node's %+v", rec2.Stats, single2.Stats)
	}
	sameTables(t, "second version", n3, "shop", rec2.Version, n1, "local", "ledger", "lines")

	// Nothing changed: the run records the version verified.
	same := n1.mustRun(t, "spread")
	if !same.Verified || same.Version != rec2.Version {
		t.Errorf("a run of unchanged tables: verified %v, version %d (want %d)", same.Verified, same.Version, rec2.Version)
	}

	// An owner killed and not back: the whole run fails.
	n3.kill()
	cli(t, "sqlite", src, "UPDATE ledger SET name = 'lost' WHERE id % 5 = 0; UPDATE lines SET sku = 'lost' WHERE line = 1;")
	failed, err := n1.runWait("spread")
	if err != nil {
		t.Fatal(err)
	}
	if failed.Status != "failed" || failed.Code != "node_unreachable" || !strings.Contains(failed.Error, c.ids[2]) {
		t.Fatalf("a run whose owner stays down: %s %s %s", failed.Status, failed.Code, failed.Error)
	}
	for _, table := range []string{"ledger", "lines"} {
		got, v := tableRows(t, n2, "shop", table)
		if v != rec2.Version {
			t.Fatalf("after the failed run node 2 reads version %d, want %d", v, rec2.Version)
		}
		if slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, `"lost"`) }) {
			t.Fatalf("table %s shows a row of the failed run", table)
		}
	}
	sameTables(t, "after the failed run", n2, "shop", rec2.Version, n1, "local", "ledger", "lines")
}
