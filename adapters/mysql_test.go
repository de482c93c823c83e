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
