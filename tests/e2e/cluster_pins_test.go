package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestClusterPins runs two nodes over one HBase table and a dataset whose
// TTL is 2 s (docs/cluster.md, "Reads on other nodes"; snapshot.G8): a
// paged scan on node 2 of a version past its TTL, with a GC on node 1
// between every two pages, reads every row of that version, and GC keeps
// the version until the pins of the scan lapse (a writer slot lease after
// its last page with a token), then collects it.
func TestClusterPins(t *testing.T) {
	if binPath == "" {
		t.Skip("the snapstore binary was not built: -short, or no test service is set")
	}
	const rows, lease = 200, 6 * time.Second
	src := ledgerTable(t, rows)
	cfg := fmt.Sprintf(`connections: [{name: src, type: sqlite, options: {path: %q}}]
adapters:
  - {name: kept, connection: src, resource: ledger, dataset: kept, guard: {max_shrink: 1}, retention: {ttl: 2s, min_versions: 1}}
`, src)
	c := startPartitionedCluster(t, 2, cfg, "10m",
		"SNAPSTORE_STORAGE_HBASE_WRITER_SLOT_LEASE="+lease.String(), "SNAPSTORE_STORAGE_HBASE_WRITER_SLOT_RENEW=2s")
	n1, n2 := c.nodes[0], c.nodes[1]
	v1 := n1.mustRun(t, "kept").Version
	cli(t, "sqlite", src, "UPDATE ledger SET name = 'changed';")
	v2 := n1.mustRun(t, "kept").Version
	// Node 2 reads the dataset's row within its refresh interval.
	poll(t, 10*time.Second, "node 2 sees the second version", func() bool {
		r, err := n2.call("GET", "/v1/datasets/kept", nil)
		var d datasetInfo
		return err == nil && r.status == http.StatusOK && json.Unmarshal(r.body, &d) == nil && d.CurrentVersion == v2
	})
	readCommitted(t, n2, "kept", v2)
	time.Sleep(2500 * time.Millisecond) // v1 is past its TTL

	gc := func() []int64 {
		var rep struct {
			VersionsExpired []int64 `json:"versions_expired"`
		}
		n1.jsonCall(t, http.StatusOK, "POST", "/v1/datasets/kept/gc", nil, &rep)
		return rep.VersionsExpired
	}
	seen := map[int64]bool{}
	q := fmt.Sprintf("limit=30&version=%d", v1)
	pages := 0
	for {
		r := n2.mustCall(t, http.StatusOK, "GET", "/v1/datasets/kept/rows?"+q, nil)
		var page struct {
			Version int64 `json:"version"`
			Rows    []struct {
				ID   int64  `json:"id"`
				Name string `json:"name"`
			} `json:"rows"`
			NextPageToken string `json:"next_page_token"`
		}
		if err := json.Unmarshal(r.body, &page); err != nil {
			t.Fatal(err)
		}
		if page.Version != v1 {
			t.Fatalf("page %d at version %d, want %d", pages, page.Version, v1)
		}
		for _, row := range page.Rows {
			if seen[row.ID] || row.Name != fmt.Sprintf("name-%d", row.ID) {
				t.Fatalf("page %d: row %d %q (twice: %v)", pages, row.ID, row.Name, seen[row.ID])
			}
			seen[row.ID] = true
		}
		pages++
		if page.NextPageToken == "" {
			break
		}
		if exp := gc(); slices.Contains(exp, v1) {
			t.Fatalf("GC on node 1 between pages %d and %d expired version %d, which node 2's scan reads", pages, pages+1, v1)
		}
		q = "limit=30&page_token=" + url.QueryEscape(page.NextPageToken)
	}
	if len(seen) != rows || pages < 5 {
		t.Fatalf("the paged scan read %d rows in %d pages, want %d", len(seen), pages, rows)
	}
	ended := time.Now()
	var collected time.Duration
	poll(t, 4*lease, "GC on node 1 collects the version once the pins lapsed", func() bool {
		if slices.Contains(gc(), v1) {
			collected = time.Since(ended)
			return true
		}
		time.Sleep(500 * time.Millisecond)
		return false
	})
	t.Logf("version %d collected %s after the last page", v1, collected.Round(100*time.Millisecond))
	poll(t, 10*time.Second, "node 2 refuses the collected version", func() bool {
		r, err := n2.call("GET", fmt.Sprintf("/v1/datasets/kept/rows?limit=1&version=%d", v1), nil)
		return err == nil && r.status == http.StatusGone
	})
	if strings.Contains(n1.logTail(1000)+n2.logTail(1000), "panic") {
		t.Error("a node logged a panic")
	}
}
