package adapters

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/snapstore/snapstore/api"
	"github.com/snapstore/snapstore/internal/testenv"
)

// TestSecretRendering: Secret never prints its text (N4).
func TestSecretRendering(t *testing.T) {
	s := newSecret(testFilePassword)
	var sb strings.Builder
	l := slog.New(slog.NewTextHandler(&sb, nil))
	l.Info("x", "secret", s, "group", slog.GroupValue(slog.Any("p", s)))
	b, _ := json.Marshal(map[string]any{"p": s})
	texts := []string{
		fmt.Sprint(s), fmt.Sprintf("%v %+v %#v %s %q %x %X %d", s, s, s, s, s, s, s, s),
		fmt.Sprintf("%v %+v", struct{ P Secret }{s}, &struct{ P Secret }{s}), sb.String(), string(b),
	}
	for _, txt := range texts {
		noteText(txt)
		if strings.Contains(txt, testFilePassword) || strings.Contains(txt, hexOf(testFilePassword)) {
			t.Errorf("secret printed: %s", txt)
		}
	}
	if s.Reveal() != testFilePassword || newSecret("").String() != "" {
		t.Fatal("Reveal or empty String wrong")
	}
}

func hexOf(s string) string { return fmt.Sprintf("%x", []byte(s)) }

// TestSecretsNeverShown drives literal secrets (password and a DSN) through
// every reporting path: responses, run records, test results, metrics and
// logs, and checks the password appears in none (TestMain checks the whole
// suite's logs and errors again at the end).
func TestSecretsNeverShown(t *testing.T) {
	e := mysqlEnv(t)
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	var logs testenv.SyncBuffer
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ts := newStack(t, Options{Registerer: reg, Logger: logger})
	dsn := fmt.Sprintf("%s:%s@tcp(%s:%s)/sakila", e.User, e.Password, e.Host, e.Port)
	badDSN := fmt.Sprintf("%s:%s@tcp(%s:%s)/sakila?bogus_param=%%", e.User, e.Password, e.Host, e.Port)
	var texts []string
	add := func(v any, err error) {
		b, _ := json.Marshal(v)
		texts = append(texts, string(b))
		if err != nil {
			texts = append(texts, err.Error(), fmt.Sprintf("%+v %#v", err, err))
		}
	}
	add(ts.svc.CreateConnection(ctx, api.Connection{Name: "lit", Type: "mysql", Sharing: string(SharingPooled), Options: map[string]any{
		"host": e.Host, "port": e.Port, "user": e.User, "password": e.Password, "database": "sakila", "max_open": 1}}))
	add(ts.svc.CreateConnection(ctx, api.Connection{Name: "dsn", Type: "mysql", Options: map[string]any{"dsn": dsn}}))
	c, err := ts.svc.CreateConnection(ctx, api.Connection{Name: "baddsn", Type: "mysql", Options: map[string]any{"dsn": badDSN}})
	if !errors.Is(err, ErrBadOption) {
		t.Errorf("literal bad DSN accepted: %v", err)
	}
	add(c, err)
	// By reference it is only resolved, and refused, when opened.
	t.Setenv("SNAPSTORE_TEST_BAD_DSN", badDSN)
	add(ts.svc.CreateConnection(ctx, api.Connection{Name: "baddsn", Type: "mysql", Options: map[string]any{"dsn": "env:SNAPSTORE_TEST_BAD_DSN"}}))
	add(ts.svc.CreateConnection(ctx, api.Connection{Name: "badopt", Type: "mysql", Options: map[string]any{"user": e.User, "password": 42, "pasword": e.Password}}))
	add(ts.svc.ListConnections(), nil)
	for _, n := range []string{"lit", "dsn", "baddsn"} {
		add(ts.svc.GetConnection(ctx, n))
		add(ts.svc.TestConnection(ctx, n))
		add(ts.svc.Resources(ctx, n))
		add(ts.svc.CreateAdapter(ctx, api.Adapter{Name: "a-" + n, Connection: n, Resource: "language"}))
		rec := ts.runWait(t, "a-"+n)
		add(rec, nil)
		if n != "baddsn" {
			mustSucceed(t, rec)
		} else if rec.Status != RunFailed {
			t.Errorf("run through a bad DSN: %+v", rec)
		}
	}
	add(ts.svc.ListRuns(ctx, "", 0))
	add(ts.svc.ListAdapters(), nil)
	mfs, _ := reg.Gather()
	add(mfs, nil)
	texts = append(texts, logs.String())
	for _, txt := range texts {
		noteText(txt)
		if strings.Contains(txt, e.Password) {
			t.Errorf("password in %s", txt)
		}
	}
	if !strings.Contains(strings.Join(texts, "\n"), "options.pasword") {
		t.Errorf("bad option key not named")
	}
}

// A client that GETs a connection and PUTs the body back (secrets shown as
// REDACTED) keeps the real secret; the placeholder is never stored as a
// password, so the next run does not fail on auth (N4).
func TestPutConnectionKeepsRedactedSecret(t *testing.T) {
	ctx := context.Background()
	e := mysqlEnv(t)
	ts := newStack(t, Options{Logger: testLogger()})
	spec := api.Connection{Name: "lit", Type: "mysql", Options: e.literalOptions("sakila")}
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
	back := api.Connection{Name: got.Name, Type: got.Type, Sharing: string(got.Sharing), Options: got.Options}
	back.Options["chunk_rows"] = 1000 // the change the client meant to make (not where the password goes)
	c, created, err := ts.svc.PutConnection(ctx, back)
	if err != nil || created || c.Revision != 2 {
		t.Fatalf("put back: %+v created=%v err=%v", c, created, noteErr(err))
	}
	res, err := ts.svc.TestConnection(ctx, "lit")
	if err != nil || !res.OK {
		t.Fatalf("test after put back: %+v %v (the password must still be the real one)", res, noteErr(err))
	}

	// No previous literal secret: the placeholder is refused, naming the key.
	_, err = ts.svc.CreateConnection(ctx, api.Connection{Name: "fresh", Type: "mysql", Options: map[string]any{"host": e.Host, "user": e.User, "password": redacted}})
	var oe *OptionError
	if !errors.As(err, &oe) || oe.Key != "options.password" {
		t.Fatalf("create with the placeholder: %v, want an OptionError on options.password", noteErr(err))
	}
}
