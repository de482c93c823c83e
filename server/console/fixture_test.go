package console

import (
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/snapstore/snapstore/adapters"
	"github.com/snapstore/snapstore/api"
	"github.com/snapstore/snapstore/internal/testenv"
	"github.com/snapstore/snapstore/notify"
	"github.com/snapstore/snapstore/server"
	"github.com/snapstore/snapstore/snapshot"
	"github.com/snapstore/snapstore/store/pebble"
	_ "modernc.org/sqlite"
)

// knownSecret is a password given to a connection in the tests; no response
// body and no log line may contain it.
const knownSecret = "hunter2-Kx9-secret"

const shopSQL = `
CREATE TABLE products (id INTEGER PRIMARY KEY, name TEXT NOT NULL, price DECIMAL(8,2) NOT NULL, stock INTEGER);
INSERT INTO products VALUES (1,'cup',4.50,120),(2,'jug',8.90,40),(3,'grinder',59,12),(4,'filters',3.20,300),
  (5,'tamper',19.90,25),(6,'kettle',34,18),(7,'scale',27.50,NULL),(8,'beans',21,64);
CREATE TABLE order_lines (order_id INTEGER NOT NULL, line INTEGER NOT NULL, qty INTEGER NOT NULL, PRIMARY KEY (order_id, line));
INSERT INTO order_lines VALUES (1001,1,2),(1001,2,1),(1002,1,1),(1003,1,5);
CREATE TABLE notes (k TEXT PRIMARY KEY, v TEXT);
INSERT INTO notes VALUES ('a/b','slash'),('x y','space'),('100%','percent'),('plain','p');
`

// fixture is a real stack: Pebble on disk, snapshot, adapters with a SQLite
// source, the server with its console behind an httptest server. The
// server's own tests check its JSON answers against openapi.yaml; the
// console's pages are HTML.
type fixture struct {
	t       testing.TB
	src     *sql.DB
	srcPath string // the SQLite file of src
	srv     *server.Server
	ts      *httptest.Server
	db      *snapshot.DB
	svc     *adapters.Service
	reg     *prometheus.Registry
	logs    *testenv.SyncBuffer
	token   string // sent as bearer when set
	bodies  []string
}

type fixtureOpts struct {
	tokens     []server.Token
	secretRefs adapters.SecretRefLimits
	cluster    server.Cluster
	transfer   server.Transfer
	audit      server.AuditOptions
	// notify, when set, gives the server a notifier with these options,
	// observing the runs.
	notify *notify.Options
	// now is the server's clock; nil: time.Now.
	now func() time.Time
	// sessionIdle is Options.SessionIdle.
	sessionIdle time.Duration
}

func newFixture(t testing.TB, fo fixtureOpts) *fixture {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	srcPath := filepath.Join(dir, "shop.db")
	src, err := sql.Open("sqlite", "file:"+srcPath)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.Exec(shopSQL); err != nil {
		t.Fatal(err)
	}
	logs := &testenv.SyncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	reg := prometheus.NewRegistry()
	st, err := pebble.Open(filepath.Join(dir, "data"), pebble.Options{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	db, err := snapshot.Open(ctx, st, snapshot.Options{Logger: log, Registerer: reg})
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	var notifier *notify.Notifier
	if fo.notify != nil {
		no := *fo.notify
		no.Logger = log
		if notifier, err = notify.New(no); err != nil {
			t.Fatal(err)
		}
	}
	svc, err := adapters.New(ctx, db, adapters.Options{
		Observer:   observer(notifier),
		Logger:     log,
		Registerer: reg,
		Connections: []api.Connection{
			{Name: "shop", Type: "sqlite", Options: map[string]any{"path": srcPath}},
		},
		Adapters: []api.Adapter{
			{Name: "products", Connection: "shop", Resource: "products", Retention: api.Retention{TTL: api.Duration(90 * api.Day), MinVersions: 10}},
			{Name: "notes", Connection: "shop", Resource: "notes"},
		},
		SecretRefs: fo.secretRefs,
		SecretKeys: adapters.SecretKeys{GenerateDir: filepath.Join(dir, "data")},
		// The console's forms name SQLite files anywhere under the test's
		// directories, as a server without tokens takes them.
		FileOptions: adapters.FileOptionLimits{AnyFile: true},
	})
	if err != nil {
		db.Close()
		st.Close()
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{Console: New, DB: db, Adapters: svc, Tokens: fo.tokens, Logger: log, Registerer: reg, Gatherer: reg, BuildVersion: "test", Cluster: fo.cluster, Transfer: fo.transfer, Audit: fo.audit, Notifier: notifier, Now: fo.now, SessionIdle: fo.sessionIdle})
	if err != nil {
		t.Fatal(err)
	}
	if notifier != nil {
		notifier.Start(db, svc, "", nil)
	}
	f := &fixture{t: t, src: src, srcPath: srcPath, srv: srv, db: db, svc: svc, reg: reg, logs: logs}
	f.ts = httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		f.ts.Close()
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := svc.Close(cctx); err != nil {
			t.Errorf("closing adapters: %v", err)
		}
		if notifier != nil {
			if err := notifier.Close(cctx); err != nil {
				t.Errorf("closing the notifier: %v", err)
			}
		}
		if err := db.Close(); err != nil {
			t.Errorf("closing db: %v", err)
		}
		if err := st.Close(); err != nil {
			t.Errorf("closing store: %v", err)
		}
		src.Close()
		for _, b := range f.bodies {
			if strings.Contains(b, knownSecret) {
				t.Errorf("a response body contains the secret: %s", b)
			}
		}
		if strings.Contains(logs.String(), knownSecret) {
			t.Errorf("the log contains the secret")
		}
	})
	return f
}

// exec changes the source.
func (f *fixture) exec(q string) {
	f.t.Helper()
	if _, err := f.src.Exec(q); err != nil {
		f.t.Fatal(err)
	}
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) json(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decoding %s: %v", r.body, err)
	}
}

func (r response) problem(t testing.TB) server.Problem {
	t.Helper()
	if ct := r.header.Get("Content-Type"); ct != server.ProblemContentType {
		t.Fatalf("status %d content type %q, want a problem: %s", r.status, ct, r.body)
	}
	var p server.Problem
	r.json(t, &p)
	if p.Status != r.status || p.Code == "" {
		t.Fatalf("malformed problem for status %d: %s", r.status, r.body)
	}
	return p
}

// noHeader, as the value of a header given to do, leaves the header out
// (Content-Type, which do sets for a body).
const noHeader = "\x00none"

// do sends a request; path is used as given (already escaped). hdr are
// header names and values; "Host" sets the request's Host.
func (f *fixture) do(method, path, body string, hdr ...string) response {
	f.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, f.ts.URL+path, rd)
	if err != nil {
		f.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		switch {
		case strings.EqualFold(hdr[i], "Host"):
			req.Host = hdr[i+1]
		case hdr[i+1] == noHeader:
			req.Header.Del(hdr[i])
		default:
			req.Header.Set(hdr[i], hdr[i+1])
		}
	}
	if f.token != "" && req.Header.Get("Authorization") == "" {
		req.Header.Set("Authorization", "Bearer "+f.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		f.t.Fatalf("%s %s: reading body: %v", method, path, err)
	}
	f.bodies = append(f.bodies, string(b))
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

// must sends a request and fails unless the status is want.
func (f *fixture) must(want int, method, path, body string, hdr ...string) response {
	f.t.Helper()
	r := f.do(method, path, body, hdr...)
	if r.status != want {
		f.t.Fatalf("%s %s: status %d, want %d: %s", method, path, r.status, want, r.body)
	}
	return r
}

// run runs an adapter through the API and waits; it returns the version.
func (f *fixture) run(adapter string) int64 {
	f.t.Helper()
	r := f.must(200, "POST", "/v1/adapters/"+adapter+"/runs?wait=true", "")
	var rec adapters.RunRecord
	r.json(f.t, &rec)
	if rec.Status != adapters.RunSucceeded || rec.Version == 0 {
		f.t.Fatalf("run of %s: %+v", adapter, rec)
	}
	return rec.Version
}

// observer is n as an adapters.RunObserver: nil when n is (a nil
// *notify.Notifier in the interface would be called).
func observer(n *notify.Notifier) adapters.RunObserver {
	if n == nil {
		return nil
	}
	return n
}
