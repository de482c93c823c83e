package adapters

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConnectionTestCauses classifies failed connection tests.
func TestConnectionTestCauses(t *testing.T) {
	forEachSource(t, func(t *testing.T, e sourceEnv) { testConnectionCauses(t, e) })
}

func testConnectionCauses(t *testing.T, e sourceEnv) {
	ctx := context.Background()
	ts := newStack(t, Options{})
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
			if _, _, err := ts.svc.PutConnection(ctx, ConnectionSpec{Name: tc.name, Type: e.typ(), Options: tc.opts}); err != nil {
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
		})
	}
	if _, err := ts.svc.TestConnection(ctx, "nope"); !errors.Is(err, ErrConnectionNotFound) {
		t.Fatalf("unknown: %v", err)
	}
	// A pull through a connection with a wrong password fails with
	// ErrSourceAuth in its error text, never the password.
	if _, err := ts.svc.CreateAdapter(ctx, AdapterSpec{Name: "a", Connection: "dsnauth", Resource: "actor"}); err != nil {
		t.Fatal(err)
	}
	rec := ts.runWait(t, "a")
	if rec.Status != RunFailed || !strings.Contains(rec.Error, "refused the credentials") {
		t.Fatalf("run with bad password: %+v", rec)
	}
}
