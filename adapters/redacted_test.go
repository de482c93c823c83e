package adapters

import (
	"context"
	"errors"
	"os"
	"testing"
)

// A client that GETs a connection and PUTs the body back (secrets shown as
// REDACTED) keeps the real secret; the placeholder is never stored as a
// password. Found by the break-it test: the second run failed on auth.
func TestPutConnectionKeepsRedactedSecret(t *testing.T) {
	ctx := context.Background()
	e := mysqlEnv(t)
	ts := newStack(t, Options{Logger: testLogger()})
	spec := ConnectionSpec{Name: "lit", Type: "mysql", Options: e.literalOptions("sakila")}
	if _, err := ts.svc.CreateConnection(ctx, spec); err != nil {
		t.Fatal(noteErr(err))
	}
	got, err := ts.svc.GetConnection(ctx, "lit")
	if err != nil {
		t.Fatal(err)
	}
	if got.Options["password"] != redacted {
		t.Fatalf("password shown as %v, want %s", got.Options["password"], redacted)
	}
	back := ConnectionSpec{Name: got.Name, Type: got.Type, Sharing: got.Sharing, Options: got.Options}
	back.Options["database"] = "mysql" // the change the client meant to make
	c, created, err := ts.svc.PutConnection(ctx, back)
	if err != nil || created || c.Revision != 2 {
		t.Fatalf("put back: %+v created=%v err=%v", c, created, noteErr(err))
	}
	res, err := ts.svc.TestConnection(ctx, "lit")
	if err != nil || !res.OK {
		t.Fatalf("test after put back: %+v %v (the password must still be the real one)", res, noteErr(err))
	}

	// No previous literal secret: the placeholder is refused, naming the key.
	_, err = ts.svc.CreateConnection(ctx, ConnectionSpec{Name: "fresh", Type: "mysql", Options: map[string]any{"host": e.Host, "user": e.User, "password": redacted}})
	var oe *OptionError
	if !errors.As(err, &oe) || oe.Key != "options.password" {
		t.Fatalf("create with the placeholder: %v, want an OptionError on options.password", noteErr(err))
	}
}

// A sqlite connection whose path is not a database (a text file, a
// directory) lists no resources with ErrSourceUnavailable, never an
// unclassified error (which the server would answer with a 500).
func TestSQLiteNotADatabase(t *testing.T) {
	ctx := context.Background()
	ts := newStack(t, Options{Logger: testLogger()})
	text := t.TempDir() + "/text.db"
	if err := os.WriteFile(text, []byte("root:x:0:0:root:/root:/bin/bash\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, path := range map[string]string{"text": text, "dir": t.TempDir()} {
		if _, err := ts.svc.CreateConnection(ctx, ConnectionSpec{Name: name, Type: "sqlite", Options: map[string]any{"path": path}}); err != nil {
			t.Fatal(err)
		}
		_, err := ts.svc.Resources(ctx, name)
		if !errors.Is(err, ErrSourceUnavailable) {
			t.Errorf("%s: resources: %v, want ErrSourceUnavailable", name, err)
		}
	}
}
