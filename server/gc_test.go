package server

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"strconv"
	"strings"

	"github.com/snapstore/snapstore/adapters"
	"github.com/snapstore/snapstore/snapshot"
	"github.com/snapstore/snapstore/store/pebble"
)

// TestCollectGarbage_AppliesRetention: with min_versions 1 and a TTL of
// 1ns only the current version is kept, so a collection after three runs
// expires the two older versions, reclaims their cells, and makes them 410;
// a dataset with TTL 0 (forever) keeps all of its versions.
func TestCollectGarbage_AppliesRetention(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.must(201, "POST", "/v1/adapters", `{"name":"short","connection":"shop","resource":"notes","dataset":"short","retention":{"ttl":"1ns","min_versions":1}}`)
	f.run("products")
	v1 := f.run("short")
	f.exec(`UPDATE notes SET v = 'two'; UPDATE products SET stock = 1`)
	f.run("short")
	f.run("products")
	f.exec(`UPDATE notes SET v = 'three'`)
	v3 := f.run("short")
	reps, err := f.srv.CollectGarbage(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(reps) != 2 {
		t.Fatalf("reports %+v", reps)
	}
	for _, rep := range reps {
		switch rep.Dataset {
		case "short":
			if len(rep.VersionsExpired) != 2 || rep.CellsDeleted == 0 || rep.BytesReclaimed == 0 {
				t.Fatalf("short: %+v", rep)
			}
		case "products":
			if len(rep.VersionsExpired) != 0 || rep.CellsDeleted != 0 {
				t.Fatalf("products (ttl 0 keeps all): %+v", rep)
			}
		}
	}
	f.must(410, "GET", "/v1/datasets/short/rows/plain?version="+strconv.FormatInt(v1, 10), "")
	var got rowResult
	f.must(200, "GET", "/v1/datasets/short/rows/plain", "").json(t, &got)
	if got.Version != v3 || got.Row["v"] != "three" {
		t.Fatalf("current after GC: %+v", got)
	}
	if body := string(f.must(200, "GET", "/metrics", "").body); !strings.Contains(body, `snapstore_server_gc_cells_deleted_total{dataset="short"}`) {
		t.Fatal("gc metrics not counted")
	}
}

// readOnlyServer is a server of a read-only process (a reader of a store
// another process writes) on an empty Pebble store; all closes at cleanup.
func readOnlyServer(t *testing.T) *Server {
	t.Helper()
	ctx := context.Background()
	st, err := pebble.Open(t.TempDir(), pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	db, err := snapshot.Open(ctx, st, snapshot.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	svc, err := adapters.New(ctx, db, adapters.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close(ctx) })
	s, err := New(Options{DB: db, Adapters: svc})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestRun_ReadOnlyProcessSaysReadOnly: a manual run asked of a read-only
// process alone is 409 read_only, also for an adapter only a writer's
// config file defines (this process does not know it), rather than 404.
func TestRun_ReadOnlyProcessSaysReadOnly(t *testing.T) {
	s := readOnlyServer(t)
	rr := httptest.NewRecorder()
	s.Handler().ServeHTTP(rr, httptest.NewRequest(http.MethodPost, "http://127.0.0.1/v1/adapters/film/runs", nil))
	var p Problem
	if err := json.Unmarshal(rr.Body.Bytes(), &p); err != nil || rr.Code != http.StatusConflict || p.Code != "read_only" || !strings.Contains(p.Detail, `run adapter "film" there`) {
		t.Fatalf("a run asked of a read-only process: %d %s", rr.Code, rr.Body)
	}
}
