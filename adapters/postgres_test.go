package adapters

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/snapstore/snapstore/api"
	"github.com/snapstore/snapstore/internal/testenv"
)

// TestPostgresAwkwardCredentials: a role name and password full of
// connection-string syntax (spaces, quotes, backslashes, = and @) connect,
// because they are set on pgconn's config and never written into a
// connection string; and the password shows in no response, record, test
// result, metric or log line (N4).
func TestPostgresAwkwardCredentials(t *testing.T) {
	e := postgresEnv(t)
	ctx := context.Background()
	var b [4]byte
	rand.Read(b[:])
	user := `snap user'"= \x` + hex.EncodeToString(b[:])
	pw := `p@ss w/rd?&=%'"\ ` + testFilePassword
	quoteLit := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
	// The role outlives the database (cleanups run last first).
	e.exec(t, "", "CREATE ROLE "+quotePostgresIdent(user)+" LOGIN PASSWORD "+quoteLit(pw))
	t.Cleanup(func() {
		e.exec(t, "", "DROP OWNED BY "+quotePostgresIdent(user), "DROP ROLE "+quotePostgresIdent(user))
	})
	db := e.tempDatabase(t, "creds")
	e.exec(t, db, "CREATE TABLE t (id int PRIMARY KEY)", "INSERT INTO t VALUES (1), (2)", "GRANT SELECT ON t TO "+quotePostgresIdent(user))
	e.exec(t, "", "GRANT CONNECT ON DATABASE "+quotePostgresIdent(db)+" TO "+quotePostgresIdent(user))

	reg := prometheus.NewRegistry()
	var logs testenv.SyncBuffer
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ts := newStack(t, Options{Registerer: reg, Logger: logger})
	var texts []string
	add := func(v any, err error) {
		b, _ := json.Marshal(v)
		texts = append(texts, string(b))
		if err != nil {
			texts = append(texts, err.Error())
		}
	}
	add(ts.svc.CreateConnection(ctx, api.Connection{Name: "weird", Type: "postgres", Sharing: string(SharingPooled), Options: map[string]any{
		"host": e.Host, "port": e.Port, "user": user, "password": pw, "database": db, "sslmode": "disable", "max_open": 2}}))
	res, err := ts.svc.TestConnection(ctx, "weird")
	add(res, err)
	if err != nil || !res.OK {
		t.Fatalf("test %+v %v", res, noteErr(err))
	}
	add(ts.svc.Resources(ctx, "weird"))
	if _, err := ts.svc.CreateAdapter(ctx, api.Adapter{Name: "t", Connection: "weird", Resource: "t"}); err != nil {
		t.Fatal(err)
	}
	rec := ts.runWait(t, "t")
	mustSucceed(t, rec)
	add(rec, nil)
	// A wrong password: auth, and still never shown.
	add(ts.svc.CreateConnection(ctx, api.Connection{Name: "wrong", Type: "postgres", Options: map[string]any{
		"host": e.Host, "port": e.Port, "user": user, "password": pw + "x", "database": db, "sslmode": "disable"}}))
	res, err = ts.svc.TestConnection(ctx, "wrong")
	add(res, err)
	if res.OK || res.Cause != "auth" {
		t.Errorf("wrong password: %+v", res)
	}
	add(ts.svc.GetConnection(ctx, "weird"))
	add(ts.svc.ListConnections(), nil)
	add(ts.svc.ListRuns(ctx, "", 0))
	mfs, _ := reg.Gather()
	add(mfs, nil)
	texts = append(texts, logs.String())
	for _, txt := range texts {
		noteText(txt)
		if strings.Contains(txt, testFilePassword) {
			t.Errorf("password in %s", txt)
		}
	}
}

// TestPostgresOptions: option combinations are checked, naming the key.
func TestPostgresOptions(t *testing.T) {
	c, err := lookupConnector("postgres")
	if err != nil {
		t.Fatal(err)
	}
	parse := func(sharing Sharing, raw map[string]any) (*OptionValues, PoolOptions, error) {
		o, pool, err := parseOptions("options.", c.Options(), sharing, raw)
		if err != nil {
			return nil, pool, err
		}
		if err := c.Validate(o); err != nil {
			return nil, pool, err
		}
		return &o, pool, nil
	}
	for _, tc := range []struct {
		raw map[string]any
		key string
	}{
		{map[string]any{"host": "h"}, "user"},
		{map[string]any{"user": "u", "sslmode": "sometimes"}, "options.sslmode"},
		{map[string]any{"user": "u", "sslmode": "disable", "sslrootcert": "/ca.pem"}, "sslrootcert"},
		{map[string]any{"user": "u", "statement_timeout": 30}, "options.statement_timeout"},
	} {
		_, _, err := parse(SharingShared, tc.raw)
		var oe *OptionError
		if !errors.As(err, &oe) || !strings.Contains(err.Error(), tc.key) {
			t.Errorf("%v: %v, want an error naming %s", tc.raw, err, tc.key)
		}
	}
}

// TestPostgresUnknownEstimate: a table PostgreSQL never analyzed lists an
// unknown estimate (UnknownRows, null in JSON), not 0 rows; after ANALYZE
// its estimate; a view has none.
func TestPostgresUnknownEstimate(t *testing.T) {
	e := postgresEnv(t)
	ctx := context.Background()
	db := e.tempDatabase(t, "est")
	e.exec(t, db,
		"CREATE TABLE fresh (id int PRIMARY KEY, v text)",
		"INSERT INTO fresh SELECT g, 'x' FROM generate_series(1, 50) g",
		"CREATE VIEW fresh_v AS SELECT * FROM fresh",
	)
	src := openEnvSource(t, e, db, nil)
	list := func() map[string]Resource {
		res, err := src.(ResourceLister).Resources(ctx)
		if err != nil {
			t.Fatal(noteErr(err))
		}
		out := map[string]Resource{}
		for _, r := range res {
			out[r.Name] = r
		}
		return out
	}
	got := list()
	if got["fresh"].EstimatedRows != UnknownRows || got["fresh_v"].EstimatedRows != UnknownRows {
		t.Errorf("never analyzed: %+v", got)
	}
	b, _ := json.Marshal(got["fresh"])
	var back Resource
	if !strings.Contains(string(b), `"estimated_rows":null`) || json.Unmarshal(b, &back) != nil || back.EstimatedRows != UnknownRows {
		t.Errorf("JSON of an unknown estimate: %s, back %+v", b, back)
	}
	e.exec(t, db, "ANALYZE fresh")
	if got = list(); got["fresh"].EstimatedRows != 50 {
		t.Errorf("after ANALYZE: %+v", got["fresh"])
	}
	if b, _ = json.Marshal(got["fresh"]); !strings.Contains(string(b), `"estimated_rows":50`) {
		t.Errorf("JSON of an estimate: %s", b)
	}
}

// grantedPostgresAdapter makes a role of its own (dropped at the end), a
// database (named after what) whose table t it may read and connect to,
// and on a new stack the connection "src" as that role (of sharing mode
// sharing, "" for the default) and the adapter "t" of table t.
func grantedPostgresAdapter(t *testing.T, e postgresTestEnv, what string, sharing Sharing) (ts *testStack, db, user string) {
	t.Helper()
	var b [4]byte
	rand.Read(b[:])
	user = "snap_" + what + "_" + hex.EncodeToString(b[:])
	e.exec(t, "", "CREATE ROLE "+user+" LOGIN PASSWORD '"+testFilePassword+"'")
	t.Cleanup(func() { e.exec(t, "", "DROP OWNED BY "+user, "DROP ROLE "+user) })
	db = e.tempDatabase(t, what)
	e.exec(t, db, "CREATE TABLE t (id int PRIMARY KEY)", "INSERT INTO t VALUES (1), (2)", "GRANT SELECT ON t TO "+user)
	e.exec(t, "", "GRANT CONNECT ON DATABASE "+quotePostgresIdent(db)+" TO "+user)
	ts = newStack(t, Options{})
	ctx := context.Background()
	if _, err := ts.svc.CreateConnection(ctx, api.Connection{Name: "src", Type: "postgres", Sharing: string(sharing), Options: map[string]any{
		"host": e.Host, "port": e.Port, "user": user, "password": testFilePassword, "database": db, "sslmode": "disable"}}); err != nil {
		t.Fatal(noteErr(err))
	}
	if _, err := ts.svc.CreateAdapter(ctx, api.Adapter{Name: "t", Connection: "src", Resource: "t"}); err != nil {
		t.Fatal(noteErr(err))
	}
	return ts, db, user
}

// TestPostgresPermissionDenied: a run of a table whose SELECT privilege
// the user lost fails with source_permission (a grant to fix), not the
// catch-all error or source_auth (the credentials are fine), and the
// current version stays; saving the adapter again is accepted with a
// warning that says so (the catalog shows the table, only a read fails).
func TestPostgresPermissionDenied(t *testing.T) {
	e := postgresEnv(t)
	ts, db, user := grantedPostgresAdapter(t, e, "perm", "")
	first := ts.runWait(t, "t")
	mustSucceed(t, first)
	e.exec(t, db, "REVOKE SELECT ON t FROM "+user)
	r := ts.runWait(t, "t")
	if r.Status != RunFailed || r.Code != "source_permission" || !strings.Contains(r.Error, "permission denied") {
		t.Fatalf("a run of a table the user may no longer read: %s %s: %s", r.Status, r.Code, r.Error)
	}
	if cur := mustVersion(t, ts.db, "t", 0); cur.Version != first.Version {
		t.Fatalf("current version %d after the refused read, want %d", cur.Version, first.Version)
	}
	a, _, err := ts.svc.PutAdapter(context.Background(), api.Adapter{Name: "t", Connection: "src", Resource: "t", Schedule: "@hourly"})
	if err != nil {
		t.Fatal(noteErr(err))
	}
	if len(a.Warnings) != 1 || !strings.Contains(a.Warnings[0], `resource "t" could not be read: `) || !strings.Contains(a.Warnings[0], "permission denied") ||
		!strings.HasSuffix(a.Warnings[0], "; its runs fail with source_permission until the source grants the connection's user SELECT on it") {
		t.Errorf("warnings of an adapter whose table the user may not read: %q", a.Warnings)
	}
	e.exec(t, db, "GRANT SELECT ON t TO "+user)
	if a, _, err = ts.svc.PutAdapter(context.Background(), api.Adapter{Name: "t", Connection: "src", Resource: "t"}); err != nil || len(a.Warnings) != 0 {
		t.Errorf("the adapter saved once the grant is back: warnings %q, %v", a.Warnings, err)
	}
}

// TestPostgresNoConnectPrivilege: a user refused CONNECT on the database
// (PostgreSQL says so in the error's detail, not its message) is refused
// at the connection, as the credentials are: cause auth, run code
// source_auth, not source_permission, which is for a grant on a table,
// column or schema once connected.
func TestPostgresNoConnectPrivilege(t *testing.T) {
	e := postgresEnv(t)
	ctx := context.Background()
	ts, db, user := grantedPostgresAdapter(t, e, "noconn", SharingSingleUse)
	e.exec(t, "", "REVOKE CONNECT ON DATABASE "+quotePostgresIdent(db)+" FROM PUBLIC, "+user)
	res, err := ts.svc.TestConnection(ctx, "src")
	if err != nil || res.OK || res.Cause != "auth" {
		t.Errorf("test of a connection refused CONNECT: %+v %v", res, err)
	}
	if r := ts.runWait(t, "t"); r.Status != RunFailed || r.Code != "source_auth" {
		t.Fatalf("a run refused CONNECT: %s %s: %s", r.Status, r.Code, r.Error)
	}
}
