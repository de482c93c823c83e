package adapters

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/snapstore/snapstore/api"
	"github.com/snapstore/snapstore/snapshot"
	"github.com/snapstore/snapstore/store/pebble"
)

// TestConnectionCRUD: create, replace (a new revision), resources, test,
// restart and drop of an API connection; a literal secret shows as
// REDACTED and a reference as given (N4).
func TestConnectionCRUD(t *testing.T) {
	e := mysqlEnv(t)
	ctx := context.Background()
	ts := newStack(t, Options{})
	svc := ts.svc
	c, err := svc.CreateConnection(ctx, api.Connection{Name: "src", Type: "mysql", Options: e.literalOptions("sakila")})
	if err != nil {
		t.Fatal(noteErr(err))
	}
	if c.Revision != 1 || c.Source != OriginAPI || c.Status != "active" || c.Sharing != SharingShared {
		t.Fatalf("created %+v", c)
	}
	if c.Options["password"] != redacted {
		t.Fatalf("password shown as %v", c.Options["password"])
	}
	body, _ := json.Marshal(c)
	noteText(string(body))
	if strings.Contains(string(body), e.Password) {
		t.Fatalf("secret in response %s", body)
	}
	if _, err := svc.CreateConnection(ctx, api.Connection{Name: "src", Type: "mysql", Options: e.literalOptions("")}); !errors.Is(noteErr(err), ErrConnectionExists) {
		t.Fatalf("second create: %v", err)
	}
	c2, created, err := svc.PutConnection(ctx, api.Connection{Name: "src", Type: "mysql", Sharing: string(SharingPooled), Options: map[string]any{
		"host": e.Host, "port": e.Port, "user": e.User, "password": "env:SNAPSTORE_TEST_MYSQL_PASSWORD", "database": "sakila", "max_open": 4,
	}})
	if err != nil || created || c2.Revision != 2 || c2.Sharing != SharingPooled {
		t.Fatalf("replace: %+v created=%v err=%v", c2, created, noteErr(err))
	}
	if c2.Options["password"] != "env:SNAPSTORE_TEST_MYSQL_PASSWORD" {
		t.Fatalf("reference not shown: %v", c2.Options["password"])
	}
	res, err := svc.Resources(ctx, "src")
	if err != nil {
		t.Fatal(noteErr(err))
	}
	tables, views := 0, 0
	for _, r := range res {
		if r.Schema != "sakila" {
			t.Errorf("resource of schema %q", r.Schema)
		}
		switch r.Type {
		case "table":
			tables++
			if r.Name == "rental" && r.EstimatedRows < 1000 {
				t.Errorf("rental estimated rows %d", r.EstimatedRows)
			}
			// The key a run would choose, listed for every table.
			if want := map[string]string{"rental": "rental_id", "film_actor": "actor_id,film_id"}[r.Name]; want != "" && strings.Join(r.Key, ",") != want {
				t.Errorf("%s key %v, want %s", r.Name, r.Key, want)
			}
			if len(r.Key) == 0 {
				t.Errorf("table %s lists no key", r.Name)
			}
		case "view":
			views++
			// MySQL has no estimate of a view's rows: unknown, not 0.
			if r.EstimatedRows != UnknownRows {
				t.Errorf("view %s estimated rows %d, want unknown", r.Name, r.EstimatedRows)
			}
		}
	}
	if tables != 16 || views != 7 {
		t.Errorf("sakila resources: %d tables, %d views, want 16 and 7", tables, views)
	}
	tr, err := svc.TestConnection(ctx, "src")
	if err != nil || !tr.OK || !strings.Contains(tr.ServerVersion, "MariaDB") && tr.ServerVersion == "" {
		t.Fatalf("test: %+v %v", tr, err)
	}
	// Persisted: a restart sees revision 2.
	ts.close()
	ts = openStack(t, ts.dir, Options{})
	got, err := ts.svc.GetConnection(ctx, "src")
	if err != nil || got.Revision != 2 || got.Sharing != SharingPooled {
		t.Fatalf("after restart: %+v %v", got, noteErr(err))
	}
	if err := ts.svc.DropConnection(ctx, "src", false); err != nil {
		t.Fatal(noteErr(err))
	}
	if _, err := ts.svc.GetConnection(ctx, "src"); !errors.Is(noteErr(err), ErrConnectionNotFound) || !strings.Contains(err.Error(), `data connection does not exist: "src"`) {
		t.Fatalf("after drop: %v", err)
	}
	if err := ts.svc.DropConnection(ctx, "src", false); !errors.Is(noteErr(err), ErrConnectionNotFound) {
		t.Fatalf("second drop: %v", err)
	}
}

// TestConnectionOptionErrors: every bad spec is an *OptionError naming
// its key, and nothing is created.
func TestConnectionOptionErrors(t *testing.T) {
	ctx := context.Background()
	ts := newStack(t, Options{})
	cases := []struct {
		spec api.Connection
		keys []string
		is   error
	}{
		{api.Connection{Name: "a", Type: "mysql", Options: map[string]any{"user": "u", "prot": 1}}, []string{"options.prot"}, nil},
		{api.Connection{Name: "a", Type: "mysql", Options: map[string]any{"user": "u", "port": 70000}}, []string{"options.port"}, nil},
		{api.Connection{Name: "a", Type: "mysql", Options: map[string]any{"user": "u", "port": "x1"}}, []string{"options.port"}, nil},
		{api.Connection{Name: "a", Type: "mysql", Options: map[string]any{"user": "u", "max_open": 3}}, []string{"options.max_open"}, nil},
		{api.Connection{Name: "a", Type: "mysql", Options: map[string]any{"host": "h"}}, []string{"options.user"}, nil},
		{api.Connection{Name: "a", Type: "mysql", Options: map[string]any{"dsn": "u:p@tcp(h)/d", "host": "h"}}, []string{"options.host"}, nil},
		{api.Connection{Name: "a", Type: "mysql", Options: map[string]any{"user": "u", "tls": "maybe"}}, []string{"options.tls"}, nil},
		{api.Connection{Name: "a", Type: "mysql", Options: map[string]any{"user": "u", "password": "env:"}}, []string{"options.password"}, nil},
		{api.Connection{Name: "a", Type: "mysql", Options: map[string]any{"user": "u", "password": "file:relative"}}, []string{"options.password"}, nil},
		{api.Connection{Name: "a", Type: "mysql", Options: map[string]any{"user": "u", "params": map[string]any{"time_zone": "'+01:00'"}}}, []string{"options.params.time_zone"}, nil},
		{api.Connection{Name: "a", Type: "mysql", Options: map[string]any{"user": "u", "params": map[string]any{"x; DROP": "1"}}}, []string{"options.params.x; DROP"}, nil},
		{api.Connection{Name: "a", Type: "mysql", Sharing: "sometimes", Options: map[string]any{"user": "u"}}, []string{"sharing"}, nil},
		{api.Connection{Name: "a b", Type: "mysql", Options: map[string]any{"user": "u"}}, []string{"name"}, nil},
		{api.Connection{Name: "a", Type: "oracle"}, []string{"type"}, ErrUnknownType},
		{api.Connection{Name: "a", Type: "sqlite"}, []string{"options.path"}, nil},
		{api.Connection{Name: "a", Type: "sqlite", Options: map[string]any{"path": 3, "chunk_rows": 0}}, []string{"options.chunk_rows", "options.path"}, nil},
	}
	for _, tc := range cases {
		_, err := ts.svc.CreateConnection(ctx, tc.spec)
		noteErr(err)
		if !errors.Is(err, ErrBadOption) {
			t.Errorf("%+v: err %v, want ErrBadOption", tc.spec, err)
			continue
		}
		if tc.is != nil && !errors.Is(err, tc.is) {
			t.Errorf("%+v: err %v, want %v", tc.spec, err, tc.is)
		}
		var oe *OptionError
		if !errors.As(err, &oe) {
			t.Errorf("no *OptionError in %v", err)
		}
		for _, k := range tc.keys {
			if !strings.Contains(err.Error(), `option "`+k+`"`) {
				t.Errorf("%+v: error %q does not name %q", tc.spec, err, k)
			}
		}
	}
	if l := ts.svc.ListConnections(); len(l) != 0 {
		t.Fatalf("bad specs created connections: %+v", l)
	}
}

// TestConfigConnectionsReadOnlyAndShadowing: a config connection is
// read-only and shadows an API one of its name, which is kept and in force
// again without the config one; a single-use connection keeps no handle;
// a bad config names every key.
func TestConfigConnectionsReadOnlyAndShadowing(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	sqlitePath := newSQLiteFixture(t)
	ts := openStack(t, dir, Options{})
	if _, err := ts.svc.CreateConnection(ctx, api.Connection{Name: "c", Type: "sqlite", Options: map[string]any{"path": sqlitePath}}); err != nil {
		t.Fatal(err)
	}
	ts.close()
	cfg := Options{Connections: []api.Connection{{Name: "c", Type: "sqlite", Sharing: string(SharingSingleUse), Options: map[string]any{"path": sqlitePath}}}}
	ts = openStack(t, dir, cfg)
	list := ts.svc.ListConnections()
	if len(list) != 2 || list[0].Source != OriginAPI || list[0].Status != "shadowed" || list[1].Source != OriginConfig || list[1].Status != "active" {
		t.Fatalf("list %+v", list)
	}
	got, _ := ts.svc.GetConnection(ctx, "c")
	if got.Source != OriginConfig || got.Sharing != SharingSingleUse {
		t.Fatalf("get %+v", got)
	}
	if _, _, err := ts.svc.PutConnection(ctx, api.Connection{Name: "c", Type: "sqlite", Options: map[string]any{"path": sqlitePath}}); !errors.Is(err, ErrConnectionReadOnly) {
		t.Fatalf("put over config: %v", err)
	}
	if err := ts.svc.DropConnection(ctx, "c", true); !errors.Is(err, ErrConnectionReadOnly) {
		t.Fatalf("drop config: %v", err)
	}
	// A single-use connection opens for the run and keeps nothing open.
	if _, err := ts.svc.CreateAdapter(ctx, api.Adapter{Name: "a", Connection: "c", Resource: "items"}); err != nil {
		t.Fatal(err)
	}
	mustSucceed(t, ts.runWait(t, "a"))
	ts.svc.mu.Lock()
	if ts.svc.conns.config["c"].h != nil {
		t.Errorf("single-use connection kept a handle")
	}
	ts.svc.mu.Unlock()
	if err := ts.svc.DeleteAdapter(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	ts.close()
	// Without the config definition the API one is active again: it was
	// never deleted.
	ts = openStack(t, dir, Options{})
	got, err := ts.svc.GetConnection(ctx, "c")
	if err != nil || got.Source != OriginAPI || got.Status != "active" {
		t.Fatalf("after config removal: %+v %v", got, err)
	}
	// A bad config names the key.
	st, _ := pebble.Open(t.TempDir(), pebble.Options{})
	defer st.Close()
	db, _ := snapshot.Open(ctx, st, snapshot.Options{})
	defer db.Close()
	_, err = New(ctx, db, Options{
		Connections: []api.Connection{{Name: "ok", Type: "sqlite", Options: map[string]any{"path": sqlitePath, "pth": 1}}},
		Adapters:    []api.Adapter{{Name: "a", Connection: "nope", Resource: "t"}, {Name: "b", Connection: "ok", Resource: "t", Schedule: "61 * * * *"}},
	})
	for _, want := range []string{`"connections[0].options.pth"`, `"adapters[0].connection"`, `"adapters[1].schedule"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("bad config error %v does not name %s", err, want)
		}
	}
	if !errors.Is(err, ErrBadSchedule) || !errors.Is(err, ErrConnectionNotFound) {
		t.Errorf("bad config error %v lacks sentinels", err)
	}
}

// TestDurationOptions_NumbersRefused: one rule for durations, as for
// adapter bodies; a stored number of seconds still loads.
func TestDurationOptions_NumbersRefused(t *testing.T) {
	ctx := context.Background()
	path := newSQLiteFixture(t)
	ts := newStack(t, Options{})
	_, err := ts.svc.CreateConnection(ctx, api.Connection{Name: "s", Type: "sqlite", Options: map[string]any{"path": path, "busy_timeout": float64(30)}})
	var oe *OptionError
	if !errors.As(err, &oe) || oe.Key != "options.busy_timeout" || !strings.Contains(oe.Msg, `"30s"`) {
		t.Fatalf("numeric duration: %v", err)
	}
	if _, err := ts.svc.CreateConnection(ctx, api.Connection{Name: "s", Type: "sqlite", Options: map[string]any{"path": path, "busy_timeout": "30s"}}); err != nil {
		t.Fatal(err)
	}
	spec := api.Connection{Name: "old", Type: "sqlite", Sharing: string(SharingPooled), Options: map[string]any{"path": path, "busy_timeout": float64(3), "conn_max_lifetime": float64(60)}}
	upgradeDurations(spec)
	if spec.Options["busy_timeout"] != "3s" || spec.Options["conn_max_lifetime"] != "60s" {
		t.Fatalf("upgraded: %v", spec.Options)
	}
}
