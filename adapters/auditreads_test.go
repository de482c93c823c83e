package adapters

import (
	"context"
	"testing"

	"github.com/snapstore/snapstore/api"
)

// TestAuditsReads: the set of datasets whose reads are audited follows
// the definitions in force: config adapters at start, API adapters
// created, replaced and deleted, the dataset an adapter names rather than
// its name; the definitions another process changed follow at Reload.
func TestAuditsReads(t *testing.T) {
	ctx := context.Background()
	path := newSQLiteFixture(t)
	conn := api.Connection{Name: "src", Type: "sqlite", Options: map[string]any{"path": path}}
	ts := newStack(t, Options{
		Connections: []api.Connection{conn},
		Adapters:    []api.Adapter{{Name: "cfg", Connection: "src", Resource: "items", AuditReads: true}},
	})
	want := func(ds string, audited bool) {
		t.Helper()
		if got := ts.svc.AuditsReads(ds); got != audited {
			t.Errorf("AuditsReads(%q) = %v, want %v", ds, got, audited)
		}
	}
	want("cfg", true)
	want("items", false)
	if _, err := ts.svc.CreateAdapter(ctx, api.Adapter{Name: "api", Connection: "src", Resource: "items", Dataset: "sales", AuditReads: true}); err != nil {
		t.Fatal(err)
	}
	want("sales", true)
	want("api", false)
	if _, _, err := ts.svc.PutAdapter(ctx, api.Adapter{Name: "api", Connection: "src", Resource: "items", Dataset: "sales"}); err != nil {
		t.Fatal(err)
	}
	want("sales", false)
	if _, _, err := ts.svc.PutAdapter(ctx, api.Adapter{Name: "api", Connection: "src", Resource: "items", Dataset: "sales", AuditReads: true}); err != nil {
		t.Fatal(err)
	}
	if err := ts.svc.DeleteAdapter(ctx, "api"); err != nil {
		t.Fatal(err)
	}
	want("sales", false)

	// Another process on the same store creates one: it is audited here
	// once the definitions are reread.
	other, err := New(ctx, ts.db, Options{Logger: testLogger(), Connections: []api.Connection{conn}})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(ctx)
	if _, err := other.CreateAdapter(ctx, api.Adapter{Name: "remote", Connection: "src", Resource: "items", AuditReads: true}); err != nil {
		t.Fatal(err)
	}
	want("remote", false)
	if _, err := ts.svc.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	want("remote", true)
}
