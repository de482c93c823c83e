package adapters

import (
	"context"
	"errors"
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
