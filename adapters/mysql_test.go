package adapters

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/snapstore/snapstore/api"
)

// TestDSNFromConfigWithAwkwardCredentials: a user name and password full
// of DSN syntax (@ : / ? & = % quotes) connect, because the DSN is built
// with mysql.Config, never concatenated; and they never show.
func TestDSNFromConfigWithAwkwardCredentials(t *testing.T) {
	e := mysqlEnv(t)
	ctx := context.Background()
	db := e.tempDatabase(t, "creds")
	user := "snap@x:y/" + db[len(db)-8:]
	pw := `p@ss:w/rd?&=%` + "`'\"" + testFilePassword
	a := e.admin(t, "")
	quoted := func(s string) string { return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'" }
	for _, s := range []string{
		"CREATE USER " + quoted(user) + "@'%' IDENTIFIED BY " + quoted(pw),
		"GRANT SELECT ON " + quoteMySQLIdent(db) + ".* TO " + quoted(user) + "@'%'",
	} {
		if _, err := a.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { a.Exec("DROP USER " + quoted(user) + "@'%'") })
	e.exec(t, db, "CREATE TABLE t (id INT PRIMARY KEY)", "INSERT INTO t VALUES (1), (2)")
	ts := newStack(t, Options{})
	if _, err := ts.svc.CreateConnection(ctx, api.Connection{Name: "weird", Type: "mysql", Options: map[string]any{
		"host": e.Host, "port": e.Port, "user": user, "password": pw, "database": db}}); err != nil {
		t.Fatal(noteErr(err))
	}
	res, err := ts.svc.TestConnection(ctx, "weird")
	if err != nil || !res.OK {
		t.Fatalf("test %+v %v", res, noteErr(err))
	}
	if _, err := ts.svc.CreateAdapter(ctx, api.Adapter{Name: "t", Connection: "weird", Resource: "t"}); err != nil {
		t.Fatal(err)
	}
	rec := ts.runWait(t, "t")
	mustSucceed(t, rec)
	if rec.RowsRead != 2 {
		t.Fatalf("rows %d", rec.RowsRead)
	}
	c, _ := ts.svc.GetConnection(ctx, "weird")
	b, _ := json.Marshal(c)
	if strings.Contains(string(b), testFilePassword) {
		t.Fatalf("password shown: %s", b)
	}
	noteText(string(b))
}

// TestMySQLTableNotReadable: a MariaDB user granted INSERT but not SELECT
// on a table sees it in the catalog; saving an adapter on it is accepted
// with a warning that the read is refused, and its run fails with
// source_permission (MySQL error 1142), not the catch-all error.
func TestMySQLTableNotReadable(t *testing.T) {
	e := mysqlEnv(t)
	ctx := context.Background()
	db := e.tempDatabase(t, "noselect")
	user := "snap_ns_" + db[len(db)-8:]
	a := e.admin(t, "")
	e.exec(t, db, "CREATE TABLE ok (id INT PRIMARY KEY)", "CREATE TABLE t (id INT PRIMARY KEY)", "INSERT INTO t VALUES (1)")
	for _, s := range []string{
		"CREATE USER '" + user + "'@'%' IDENTIFIED BY '" + testFilePassword + "'",
		"GRANT SELECT ON " + quoteMySQLIdent(db) + ".ok TO '" + user + "'@'%'",
		"GRANT INSERT ON " + quoteMySQLIdent(db) + ".t TO '" + user + "'@'%'",
	} {
		if _, err := a.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { a.Exec("DROP USER '" + user + "'@'%'") })
	ts := newStack(t, Options{})
	if _, err := ts.svc.CreateConnection(ctx, api.Connection{Name: "src", Type: "mysql", Options: map[string]any{
		"host": e.Host, "port": e.Port, "user": user, "password": testFilePassword, "database": db}}); err != nil {
		t.Fatal(noteErr(err))
	}
	ad, err := ts.svc.CreateAdapter(ctx, api.Adapter{Name: "t", Connection: "src", Resource: "t"})
	if err != nil {
		t.Fatal(noteErr(err))
	}
	if len(ad.Warnings) != 1 || !strings.Contains(ad.Warnings[0], `resource "t" could not be read: `) || !strings.Contains(ad.Warnings[0], "SELECT command denied") ||
		!strings.HasSuffix(ad.Warnings[0], "; its runs fail with source_permission until the source grants the connection's user SELECT on it") {
		t.Errorf("warnings of an adapter on a table the user may not read: %q", ad.Warnings)
	}
	if r := ts.runWait(t, "t"); r.Status != RunFailed || r.Code != "source_permission" {
		t.Errorf("run of a table the user may not read: %s %s: %s", r.Status, r.Code, r.Error)
	}
	if ad, err = ts.svc.CreateAdapter(ctx, api.Adapter{Name: "ok", Connection: "src", Resource: "ok"}); err != nil || len(ad.Warnings) != 0 {
		t.Errorf("an adapter on a table the user may read, empty: warnings %q, %v", ad.Warnings, err)
	}
}
