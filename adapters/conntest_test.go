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
	e := mysqlEnv(t)
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
	cases := []struct {
		name  string
		opts  map[string]any
		cause string
	}{
		{"ok", e.literalOptions("sakila"), ""},
		{"auth", map[string]any{"host": e.Host, "port": e.Port, "user": e.User, "password": "file:" + pwFile}, "auth"},
		{"authenv", map[string]any{"host": e.Host, "port": e.Port, "user": e.User, "password": "env:SNAPSTORE_TEST_FILE_PW"}, "auth"},
		{"unknowndb", e.literalOptions("no_such_db_snapstore"), "unknown_database"},
		{"unreachable", map[string]any{"host": "127.0.0.1", "port": closedPort, "user": "u", "password": e.Password}, "unreachable"},
		{"timeout", map[string]any{"host": "127.0.0.1", "port": silent.Addr().(*net.TCPAddr).Port, "user": "u", "password": e.Password, "connect_timeout": "300ms"}, "timeout"},
		{"config", map[string]any{"host": e.Host, "user": e.User, "password": "env:SNAPSTORE_TEST_UNSET_VARIABLE"}, "config"},
		{"dsn", map[string]any{"dsn": fmt.Sprintf("%s:%s@tcp(%s:%s)/sakila", e.User, e.Password, e.Host, e.Port)}, ""},
		{"socket", map[string]any{"socket": e.Socket, "user": e.User, "password": e.Password}, ""},
		{"dsnauth", map[string]any{"dsn": fmt.Sprintf("%s:%s@tcp(%s:%s)/sakila", e.User, testFilePassword, e.Host, e.Port)}, "auth"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "socket" && e.Socket == "" {
				t.Skip("SNAPSTORE_TEST_MYSQL_SOCKET unset")
			}
			if _, _, err := ts.svc.PutConnection(ctx, ConnectionSpec{Name: tc.name, Type: "mysql", Options: tc.opts}); err != nil {
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
				if !res.OK || !strings.Contains(res.ServerVersion, "MariaDB") {
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
