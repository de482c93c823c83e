package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"testing"
	"time"
)

// retentionTTL is the TTL of TestRetention's adapters.
const retentionTTL = 2 * time.Second

// TestRetention gives two adapters a TTL of 2s, one keeping at least 2
// versions and one keeping none beyond the current; after four runs (each
// after a source change) and the TTL, GC collects exactly the versions
// retention lets go, the kept versions and the current one (older than the
// TTL, no new run) read exactly, and reads at a collected version get 410.
func TestRetention(t *testing.T) {
	e := getMySQLEnv(t)
	start := time.Now()
	dbName := fmt.Sprintf("e2e_retention_%d", os.Getpid())
	src := e.cloneTable(t, dbName, "category")
	spec := loadSpec(t, src, dbName, "category")

	p := startServer(t, e.Password)
	p.createMySQLConnection(t, "src", e.Host, e.Port, e.User, dbName)
	minVersions := map[string]int{"keep2": 2, "keep0": 0}
	for name, mv := range minVersions {
		p.createAdapter(t, map[string]any{
			"name": name, "connection": "src", "resource": "category", "dataset": name,
			"retention": map[string]any{"ttl": retentionTTL.String(), "min_versions": mv},
		})
	}
	type version struct {
		v    int64
		rows map[string]canonRow
	}
	hist := map[string][]version{}
	for i := 1; i <= 4; i++ {
		if i > 1 {
			// Rows on the first and on later pages of 5.
			execAll(t, src, []stmt{{fmt.Sprintf("UPDATE category SET name = 'generation %d' WHERE category_id IN (1, %d, %d)", i, i, 10+i), 3}})
		}
		rows := spec.read(t, src)
		// A paged scan begun before the run keeps its version across the
		// run's commit: the page token carries it.
		var first struct {
			Version       int64                        `json:"version"`
			Rows          []map[string]json.RawMessage `json:"rows"`
			NextPageToken string                       `json:"next_page_token"`
		}
		if i > 1 {
			p.jsonCall(t, http.StatusOK, "GET", "/v1/datasets/keep2/rows?limit=5", nil, &first)
		}
		for name := range minVersions {
			r := p.mustRun(t, name)
			hist[name] = append(hist[name], version{r.Version, rows})
		}
		if i > 1 {
			prev := hist["keep2"][i-2]
			sink := newRowSink(spec)
			for _, row := range first.Rows {
				sink.add(row)
			}
			tok := first.NextPageToken
			for tok != "" {
				r := p.mustCall(t, http.StatusOK, "GET", "/v1/datasets/keep2/rows?limit=5&page_token="+url.QueryEscape(tok), nil)
				var page struct {
					Version       int64                        `json:"version"`
					Rows          []map[string]json.RawMessage `json:"rows"`
					NextPageToken string                       `json:"next_page_token"`
				}
				if err := json.Unmarshal(r.body, &page); err != nil {
					t.Fatal(err)
				}
				if page.Version != prev.v || first.Version != prev.v {
					t.Errorf("paged scan across a commit: pages at versions %d and %d, want %d", first.Version, page.Version, prev.v)
				}
				for _, row := range page.Rows {
					sink.add(row)
				}
				tok = page.NextPageToken
			}
			sink.check(t, "paged scan across a commit")
			sameRows(t, fmt.Sprintf("keep2 paged across the commit of version %d", hist["keep2"][i-1].v), prev.rows, sink.rows)
		}
	}
	// What retention keeps once the TTL has passed: the newest
	// max(min_versions, 1) versions, the current one always.
	for name, mv := range minVersions {
		h := hist[name]
		keep := max(mv, 1)
		var wantExpired, wantKept []int64
		for i, v := range h {
			if i < len(h)-keep {
				wantExpired = append(wantExpired, v.v)
			} else {
				wantKept = append([]int64{v.v}, wantKept...) // newest first
			}
		}
		current := h[len(h)-1]

		// Before GC every version reads exactly.
		for _, v := range h {
			got, ver := p.scanNDJSON(t, spec, name, fmt.Sprintf("version=%d", v.v))
			if ver != v.v {
				t.Errorf("%s: read at version %d, want %d", name, ver, v.v)
			}
			sameRows(t, fmt.Sprintf("%s version %d before GC", name, v.v), v.rows, got)
		}

		// Wait out the TTL of every version, the current one included,
		// watching a dry run: it never proposes a version retention keeps,
		// and ends up proposing exactly the others.
		vs := p.versions(t, name)
		if len(vs) != len(h) {
			t.Fatalf("%s: %d versions before GC, want %d", name, len(vs), len(h))
		}
		newest := vs[0].CommittedAt
		var dry gcReport
		poll(t, 60*time.Second, name+": the TTL of every version", func() bool {
			p.jsonCall(t, http.StatusOK, "POST", "/v1/datasets/"+name+"/gc?dry_run=true", nil, &dry)
			for _, x := range dry.VersionsExpired {
				if !slices.Contains(wantExpired, x) {
					t.Fatalf("%s: GC dry run proposes version %d, which retention keeps: %+v", name, x, dry)
				}
			}
			return slices.Equal(dry.VersionsExpired, wantExpired) && time.Since(newest) > retentionTTL+100*time.Millisecond
		})
		if !dry.DryRun {
			t.Errorf("%s: dry run report %+v has dry_run false", name, dry)
		}
		if got := versionIDs(p.versions(t, name)); len(got) != len(h) {
			t.Errorf("%s: a dry run changed the versions to %v", name, got)
		}

		var rep gcReport
		p.jsonCall(t, http.StatusOK, "POST", "/v1/datasets/"+name+"/gc", nil, &rep)
		t.Logf("%s: GC %+v", name, rep)
		if !slices.Equal(rep.VersionsExpired, wantExpired) || rep.DryRun || rep.CellsDeleted == 0 {
			t.Errorf("%s: GC %+v, want versions %v expired and their cells deleted", name, rep, wantExpired)
		}
		if got := versionIDs(p.versions(t, name)); !slices.Equal(got, wantKept) {
			t.Errorf("%s: versions after GC %v, want %v", name, got, wantKept)
		}
		p.jsonCall(t, http.StatusOK, "POST", "/v1/datasets/"+name+"/gc", nil, &rep)
		if len(rep.VersionsExpired) != 0 || rep.CellsDeleted != 0 {
			t.Errorf("%s: a second GC %+v, want nothing left to collect", name, rep)
		}

		// The current version, past its TTL with no new run, reads exactly;
		// so do the other kept versions.
		if d := p.dataset(t, name); d.CurrentVersion != current.v {
			t.Errorf("%s: current version %d after GC, want %d", name, d.CurrentVersion, current.v)
		}
		got, ver, _ := p.scanPages(t, spec, name, "", 5)
		if ver != current.v {
			t.Errorf("%s: current read at version %d, want %d", name, ver, current.v)
		}
		sameRows(t, name+" current after the TTL and GC", current.rows, got)
		for _, v := range h {
			if !slices.Contains(wantKept, v.v) {
				continue
			}
			got, _ := p.scanNDJSON(t, spec, name, fmt.Sprintf("version=%d", v.v))
			sameRows(t, fmt.Sprintf("%s kept version %d after GC", name, v.v), v.rows, got)
		}

		// Every read at a collected version is 410 version_not_kept.
		for _, x := range wantExpired {
			what := fmt.Sprintf("%s at collected version %d", name, x)
			for _, path := range []string{
				fmt.Sprintf("/v1/datasets/%s/rows?version=%d", name, x),
				fmt.Sprintf("/v1/datasets/%s/rows/1?version=%d", name, x),
				fmt.Sprintf("/v1/datasets/%s/versions/%d", name, x),
				fmt.Sprintf("/v1/datasets/%s/diff?from=%d&to=%d", name, x, current.v),
			} {
				r, err := p.call("GET", path, nil)
				if err != nil {
					t.Fatal(err)
				}
				wantProblem(t, what+": GET "+path, r, http.StatusGone, "version_not_kept")
			}
			r, err := p.call("GET", fmt.Sprintf("/v1/datasets/%s/rows?version=%d", name, x), nil, "Accept", "application/x-ndjson")
			if err != nil {
				t.Fatal(err)
			}
			wantProblem(t, what+" (NDJSON)", r, http.StatusGone, "version_not_kept")
		}
	}

	// Other bad reads are problem+json with their stable codes too.
	for _, c := range []struct {
		path   string
		status int
		code   string
	}{
		{"/v1/datasets/nope/rows", http.StatusNotFound, "dataset_not_found"},
		{"/v1/datasets/keep2/rows?tag=nope", http.StatusNotFound, "tag_not_found"},
		{"/v1/datasets/keep2/rows/999", http.StatusNotFound, "row_not_found"},
		{"/v1/datasets/keep2/rows?version=1&tag=x", http.StatusBadRequest, "bad_request"},
		{"/v1/datasets/keep2/rows?page_token=garbage", http.StatusBadRequest, "bad_page_token"},
		{"/v1/runs/nope", http.StatusNotFound, "run_not_found"},
	} {
		r, err := p.call("GET", c.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		wantProblem(t, "GET "+c.path, r, c.status, c.code)
	}
	t.Logf("whole test: %s", time.Since(start).Round(time.Millisecond))
}
