package adapters

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/snapstore/snapstore/api"
)

// TestReadSecretFile_Bounded: a file: read stops at 64 KiB (/dev/zero
// fails at once rather than filling memory) and at the deadline (a FIFO
// whose writer never writes fails at it rather than blocking); a file of
// the cap reads whole (F3).
func TestReadSecretFile_Bounded(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := readSecretFile(ctx, "/dev/zero", nil); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("/dev/zero: %v, want larger than the cap", err)
	}
	exact := filepath.Join(dir, "exact")
	os.WriteFile(exact, []byte(strings.Repeat("x", maxSecretFileBytes)), 0o600)
	if s, err := readSecretFile(ctx, exact, nil); err != nil || len(s) != maxSecretFileBytes {
		t.Errorf("a file of the cap: %d bytes, %v", len(s), err)
	}
	over := filepath.Join(dir, "over")
	os.WriteFile(over, []byte(strings.Repeat("x", maxSecretFileBytes+1)), 0o600)
	if _, err := readSecretFile(ctx, over, nil); err == nil {
		t.Error("a file over the cap read")
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	w, err := os.OpenFile(fifo, os.O_RDWR, 0) // a writer that never writes
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := readSecretFile(ctx, fifo, nil); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("silent FIFO: %v, want the deadline", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("the reads took %v, past the 300ms deadline", d)
	}
}

// TestSecretRefLimits_Check: an API reference names a file under a
// configured directory only, after cleaning ("..") and a variable with the
// prefix only; with none configured, none at all (F2).
func TestSecretRefLimits_Check(t *testing.T) {
	l := SecretRefLimits{FileDirs: []string{"/run/secrets", "/etc/snapstore/secrets/"}, EnvPrefix: "SNAPSTORE_SECRET_"}
	for ref, ok := range map[string]bool{
		"literal":                         true,
		"file:/run/secrets/db":            true,
		"file:/run/secrets/a/b":           true,
		"file:/etc/snapstore/secrets/pw":  true,
		"file:/run/secrets":               false,
		"file:/run/secrets/../../etc/pw":  false,
		"file:/run/secretsX/db":           false,
		"file:/etc/passwd":                false,
		"env:SNAPSTORE_SECRET_DB":         true,
		"env:SNAPSTORE_SECRET_":           true,
		"env:HOME":                        false,
		"env:SNAPSTORE_AUTH_TOKENS_0_TOK": false,
	} {
		err := l.check("options.password", ref)
		if (err == nil) != ok {
			t.Errorf("%s: %v, want allowed %v", ref, err, ok)
		}
		var oe *OptionError
		if err != nil && (!errors.As(err, &oe) || oe.Key != "options.password") {
			t.Errorf("%s: %v, want an OptionError on options.password", ref, err)
		}
	}
	for _, ref := range []string{"file:/run/secrets/db", "env:SNAPSTORE_SECRET_DB"} {
		if err := (SecretRefLimits{}).check("options.password", ref); err == nil {
			t.Errorf("%s allowed with no limits configured", ref)
		}
	}
}

// TestSecretRefs_ByOrigin: through the service, an API connection may
// reference only what the limits allow, checked when saved and again when
// opened (a stored definition under narrower limits); a symbolic link in
// an allowed directory cannot lead out of it; a config connection may
// reference any file (F1, F2); and every file that cannot be used gives
// one message, whatever the cause (F4).
func TestSecretRefs_ByOrigin(t *testing.T) {
	ctx := context.Background()
	allowed, outside := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(allowed, "pw"), []byte(testFilePassword+"\n"), 0o600)
	os.WriteFile(filepath.Join(outside, "pw"), []byte(testFilePassword+"\n"), 0o600)
	os.Symlink(filepath.Join(outside, "pw"), filepath.Join(allowed, "escape"))
	os.Mkdir(filepath.Join(allowed, "subdirectory"), 0o700)
	os.WriteFile(filepath.Join(allowed, "big"), make([]byte, maxSecretFileBytes+1), 0o600)
	t.Setenv("SNAPSTORE_SECRET_PW", testFilePassword)
	t.Setenv("OTHER_PW", testFilePassword)
	mysqlConn := func(name, pw string) api.Connection {
		return api.Connection{Name: name, Type: "mysql", Options: map[string]any{"host": "127.0.0.1", "port": 1, "user": "u", "password": pw, "connect_timeout": "1s"}}
	}
	dir := t.TempDir()
	limits := SecretRefLimits{FileDirs: []string{allowed}, EnvPrefix: "SNAPSTORE_SECRET_"}
	ts := openStack(t, dir, Options{SecretRefs: limits, Connections: []api.Connection{mysqlConn("cfg", "file:"+filepath.Join(outside, "pw"))}})
	for _, pw := range []string{"file:" + filepath.Join(outside, "pw"), "file:" + allowed + "/../" + filepath.Base(outside) + "/pw", "env:OTHER_PW"} {
		_, err := ts.svc.CreateConnection(ctx, mysqlConn("bad", pw))
		var oe *OptionError
		if !errors.As(err, &oe) || oe.Key != "options.password" || !errors.Is(err, ErrBadOption) {
			t.Errorf("API reference %s: %v, want a bad_option on options.password", pw, err)
		}
	}
	// Allowed references resolve: the test gets past the secret to the
	// (closed) port.
	for name, pw := range map[string]string{"file": "file:" + filepath.Join(allowed, "pw"), "env": "env:SNAPSTORE_SECRET_PW"} {
		if _, err := ts.svc.CreateConnection(ctx, mysqlConn(name, pw)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if res, _ := ts.svc.TestConnection(ctx, name); res.Cause != "unreachable" {
			t.Errorf("%s: test %+v, want unreachable (the secret resolved)", name, res)
		}
	}
	if res, _ := ts.svc.TestConnection(ctx, "cfg"); res.Cause != "unreachable" {
		t.Errorf("config reference outside the directories: test %+v, want unreachable (config references name any file)", res)
	}
	// Files that cannot be used, for any reason, read alike.
	msgs := map[string]bool{}
	for _, name := range []string{"missing", "escape", "subdirectory", "big"} {
		p := filepath.Join(allowed, name)
		if _, err := ts.svc.CreateConnection(ctx, mysqlConn("f-"+name, "file:"+p)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		res, _ := ts.svc.TestConnection(ctx, "f-"+name)
		if res.Cause != "config" {
			t.Errorf("%s: test %+v, want cause config", name, res)
		}
		msgs[strings.ReplaceAll(res.Message, name, "NAME")] = true
	}
	if len(msgs) != 1 {
		t.Errorf("the causes read differently, telling what exists: %v", msgs)
	}
	// Reopened with no limits: the stored API definitions are refused when
	// opened, the config one still resolves.
	ts.close()
	ts = openStack(t, dir, Options{SecretRefs: SecretRefLimits{FileDirs: []string{}}, Connections: []api.Connection{mysqlConn("cfg", "file:"+filepath.Join(outside, "pw"))}})
	for _, name := range []string{"file", "env"} {
		if res, _ := ts.svc.TestConnection(ctx, name); res.Cause != "config" || !strings.Contains(res.Message, "not allowed through the API") {
			t.Errorf("stored %s reference under no limits: test %+v, want refused", name, res)
		}
	}
	if res, _ := ts.svc.TestConnection(ctx, "cfg"); res.Cause != "unreachable" {
		t.Errorf("config reference with no limits: %+v", res)
	}
}

// TestPutConnection_RedactedNeedsSameEndpoint: "REDACTED" keeps the stored
// secret only while the type and every Endpoint option stay; a new host,
// port, user, database or TLS setting needs the secret given again, and
// the refusal names the option.
func TestPutConnection_RedactedNeedsSameEndpoint(t *testing.T) {
	ctx := context.Background()
	ts := newStack(t, Options{})
	base := map[string]any{"host": "db1.internal", "port": 3306, "user": "app", "password": "stored-literal-pw", "database": "shop", "tls": "true"}
	if _, err := ts.svc.CreateConnection(ctx, api.Connection{Name: "c", Type: "mysql", Options: base}); err != nil {
		t.Fatal(err)
	}
	with := func(k string, v any) map[string]any {
		o := map[string]any{}
		for k, v := range base {
			o[k] = v
		}
		o["password"] = redacted
		if v == nil {
			delete(o, k)
		} else {
			o[k] = v
		}
		return o
	}
	for _, c := range []struct {
		key string
		val any
	}{{"host", "evil.example"}, {"port", 3307}, {"user", "root"}, {"database", "mysql"}, {"tls", "false"}, {"host", nil}, {"socket", "/tmp/evil.sock"}} {
		_, _, err := ts.svc.PutConnection(ctx, api.Connection{Name: "c", Type: "mysql", Options: with(c.key, c.val)})
		var oe *OptionError
		if !errors.As(err, &oe) || oe.Key != "options.password" || !strings.Contains(err.Error(), "options."+c.key+" changed") {
			t.Errorf("%s=%v with REDACTED: %v, want refused naming options.%s", c.key, c.val, err, c.key)
		}
	}
	_, _, err := ts.svc.PutConnection(ctx, api.Connection{Name: "c", Type: "postgres", Options: map[string]any{"host": "db1.internal", "user": "app", "password": redacted}})
	if err == nil || !strings.Contains(err.Error(), "type") {
		t.Errorf("another type with REDACTED: %v", err)
	}
	// The same endpoint (a port as text is the same port) keeps it; a new
	// host with the secret given again is fine.
	if _, _, err := ts.svc.PutConnection(ctx, api.Connection{Name: "c", Type: "mysql", Options: with("port", "3306")}); err != nil {
		t.Errorf("same endpoint: %v", err)
	}
	o := with("host", "db2.internal")
	o["password"] = "given-again"
	if _, _, err := ts.svc.PutConnection(ctx, api.Connection{Name: "c", Type: "mysql", Options: o}); err != nil {
		t.Errorf("new host, secret given: %v", err)
	}
}
