package adapters

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snapstore/snapstore/api"
	"github.com/snapstore/snapstore/internal/testenv"
)

// TestConnectionTestCauses classifies failed connection tests.
func TestConnectionTestCauses(t *testing.T) {
	forEachSource(t, func(t *testing.T, e sourceEnv) { testConnectionCauses(t, e) })
}

func testConnectionCauses(t *testing.T, e sourceEnv) {
	ctx := context.Background()
	logs := &testenv.SyncBuffer{}
	ts := newStack(t, Options{Logger: slog.New(slog.NewJSONHandler(io.MultiWriter(lockedWriter{}, logs), nil))})
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	closedPort := closed.Addr().(*net.TCPAddr).Port
	closed.Close()
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			defer c.Close() // never answers the handshake
		}
	}()
	pwFile := filepath.Join(t.TempDir(), "pw")
	os.WriteFile(pwFile, []byte(testFilePassword+"\n"), 0o600)
	t.Setenv("SNAPSTORE_TEST_FILE_PW", testFilePassword)
	type testCase struct {
		name  string
		opts  map[string]any
		cause string
	}
	with := func(db string, kv ...any) map[string]any {
		o := e.literalOptions(db)
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i+1] == nil {
				delete(o, kv[i].(string))
			} else {
				o[kv[i].(string)] = kv[i+1]
			}
		}
		return o
	}
	sample := "sakila"
	if e.typ() == "postgres" {
		sample = "pagila"
	}
	cases := []testCase{
		{"ok", e.literalOptions(sample), ""},
		{"auth", with("", "password", "file:"+pwFile), "auth"},
		{"authenv", with("", "password", "env:SNAPSTORE_TEST_FILE_PW"), "auth"},
		{"unknowndb", e.literalOptions("no_such_db_snapstore"), "unknown_database"},
		{"unreachable", with("", "host", "127.0.0.1", "port", closedPort, "user", "u"), "unreachable"},
		{"timeout", with("", "host", "127.0.0.1", "port", silent.Addr().(*net.TCPAddr).Port, "user", "u", "connect_timeout", "300ms"), "timeout"},
		{"config", with("", "password", "env:SNAPSTORE_TEST_UNSET_VARIABLE"), "config"},
	}
	switch pe := e.(type) {
	case mysqlTestEnv:
		cases = append(cases,
			testCase{"dsn", map[string]any{"dsn": fmt.Sprintf("%s:%s@tcp(%s:%s)/sakila", pe.User, pe.Password, pe.Host, pe.Port)}, ""},
			testCase{"socket", map[string]any{"socket": pe.Socket, "user": pe.User, "password": pe.Password}, ""},
			testCase{"dsnauth", map[string]any{"dsn": fmt.Sprintf("%s:%s@tcp(%s:%s)/sakila", pe.User, testFilePassword, pe.Host, pe.Port)}, "auth"},
		)
	case postgresTestEnv:
		cases = append(cases,
			testCase{"socket", with(sample, "host", pe.SocketDir), ""},
			testCase{"sslrequire", with(sample, "sslmode", "require"), "config"}, // the test server has no TLS
			testCase{"nocert", with(sample, "sslmode", "verify-full", "sslrootcert", "/nonexistent/ca.pem"), "config"},
			testCase{"dsnauth", with(sample, "password", testFilePassword), "auth"},
		)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "socket" && (tc.opts["socket"] == "" || tc.opts["host"] == "") {
				t.Skip("the test socket is unset")
			}
			if _, _, err := ts.svc.PutConnection(ctx, api.Connection{Name: tc.name, Type: e.typ(), Options: tc.opts}); err != nil {
				t.Fatal(noteErr(err))
			}
			res, err := ts.svc.TestConnection(ctx, tc.name)
			if err != nil {
				t.Fatal(noteErr(err))
			}
			b, _ := json.Marshal(res)
			noteText(string(b))
			c, _ := ts.svc.GetConnection(ctx, tc.name)
			b, _ = json.Marshal(c)
			noteText(string(b))
			if tc.cause == "" {
				if !res.OK || !strings.Contains(res.ServerVersion, e.serverName()) {
					t.Fatalf("test %+v", res)
				}
				return
			}
			if res.OK || res.Cause != tc.cause {
				t.Fatalf("test %+v, want cause %s", res, tc.cause)
			}
			checkSourceFailure(t, ts, logs, tc.name, tc.cause, tc.opts, res)
		})
	}
	if _, err := ts.svc.TestConnection(ctx, "nope"); !errors.Is(err, ErrConnectionNotFound) {
		t.Fatalf("unknown: %v", err)
	}
	// A pull through a connection with a wrong password fails with
	// ErrSourceAuth in its error text, never the password.
	if _, err := ts.svc.CreateAdapter(ctx, api.Adapter{Name: "a", Connection: "dsnauth", Resource: "actor"}); err != nil {
		t.Fatal(err)
	}
	rec := ts.runWait(t, "a")
	if rec.Status != RunFailed || !strings.Contains(rec.Error, "refused the credentials") {
		t.Fatalf("run with bad password: %+v", rec)
	}
}

// runCodeOfCause is the run code of a run that fails for the same reason
// as a connection test with the cause.
var runCodeOfCause = map[string]string{
	"auth":             "source_auth",
	"unknown_database": "source_unavailable",
	"unreachable":      "source_unavailable",
	"timeout":          "source_unavailable",
	"config":           "config",
}

// checkSourceFailure checks what a user reads about a data connection
// conn that failed its test with res: a run of an adapter through it fails
// with the code of the cause and the test's very message; the message
// names the connection once, its server's address, the cause in words
// and, for a timeout, the bound; an adapter created through it is saved
// with a log line that says why its resource was not checked.
func checkSourceFailure(t *testing.T, ts *testStack, logs *testenv.SyncBuffer, conn, cause string, opts map[string]any, res TestResult) {
	t.Helper()
	ctx := context.Background()
	msg := res.Message
	if n := strings.Count(msg, fmt.Sprintf("data connection %q", conn)); n != 1 {
		t.Errorf("the message names the connection %d times: %s", n, msg)
	}
	if host, ok := opts["host"].(string); ok && cause != "config" && !strings.HasPrefix(host, "/") {
		if !strings.Contains(msg, fmt.Sprintf("%s:%v", host, opts["port"])) {
			t.Errorf("the message does not name the server %s:%v: %s", host, opts["port"], msg)
		}
	}
	for c, words := range map[string]string{
		"auth":             "refused the credentials",
		"unreachable":      "cannot connect: connection refused",
		"timeout":          "no answer within 300ms (connect_timeout)",
		"unknown_database": "no such database",
		"config":           "",
	} {
		if c == cause && !strings.Contains(msg, words) {
			t.Errorf("cause %s: the message lacks %q: %s", cause, words, msg)
		}
	}
	for _, bad := range []string{"did not answer", "context deadline exceeded", "invalid connection", "through data connection"} {
		if strings.Contains(msg, bad) {
			t.Errorf("the message says %q: %s", bad, msg)
		}
	}
	adapter := "a_" + conn
	if _, err := ts.svc.CreateAdapter(ctx, api.Adapter{Name: adapter, Connection: conn, Resource: "actor"}); err != nil {
		t.Fatal(noteErr(err))
	}
	want := fmt.Sprintf(`"msg":"adapter resource not checked","adapter":%q,"connection":%q,"resource":"actor","cause":%q`, adapter, conn, cause)
	if !strings.Contains(logs.String(), want) {
		t.Errorf("no log line %s:\n%s", want, logs)
	}
	rec := ts.runWait(t, adapter)
	noteText(rec.Error)
	if rec.Status != RunFailed || rec.Code != runCodeOfCause[cause] || rec.Error != msg {
		t.Errorf("run through %s: %s %s %q; want code %s and the test's message %q", conn, rec.Status, rec.Code, rec.Error, runCodeOfCause[cause], msg)
	}
}
