package server

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/snapstore/snapstore/adapters"
)

// closedPort returns a loopback port nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

// TestSecretRefs_APILimits: through the HTTP API, a connection's secret
// references may name only files under secrets.file_dirs and variables
// with secrets.env_prefix (400 bad_option naming the option otherwise);
// an allowed one resolves when the connection is tested; a FIFO that
// nobody writes fails at connect_timeout rather than blocking the test;
// and a missing file, a FIFO, a directory and a link out of the directory
// give one message, which does not tell which of them exists.
func TestSecretRefs_APILimits(t *testing.T) {
	allowed, outside := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(allowed, "pw"), []byte(knownSecret+"\n"), 0o600)
	os.WriteFile(filepath.Join(outside, "pw"), []byte(knownSecret+"\n"), 0o600)
	os.Symlink("/etc/passwd", filepath.Join(allowed, "passwd"))
	os.Mkdir(filepath.Join(allowed, "subdirectory"), 0o700)
	fifo := filepath.Join(allowed, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	w, err := os.OpenFile(fifo, os.O_RDWR, 0) // a writer that never writes
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	t.Setenv("SNAPSTORE_SECRET_PW", knownSecret)
	t.Setenv("OTHER_PW", knownSecret)
	f := newFixture(t, fixtureOpts{secretRefs: adapters.SecretRefLimits{FileDirs: []string{allowed}, EnvPrefix: "SNAPSTORE_SECRET_"}})
	port := closedPort(t)
	conn := func(name, pw string) string {
		return fmt.Sprintf(`{"name":%q,"type":"mysql","options":{"host":"127.0.0.1","port":%d,"user":"u","password":%q,"connect_timeout":"1s"}}`, name, port, pw)
	}
	for _, pw := range []string{"file:/etc/passwd", "file:" + filepath.Join(outside, "pw"), "file:" + allowed + "/../" + filepath.Base(outside) + "/pw", "env:OTHER_PW", "env:HOME"} {
		f.wantProblem(400, "bad_option", "options.password", "POST", "/v1/connections", conn("c", pw))
	}
	f.must(404, "GET", "/v1/connections/c", "")
	var res adapters.TestResult
	for name, pw := range map[string]string{"file": "file:" + filepath.Join(allowed, "pw"), "env": "env:SNAPSTORE_SECRET_PW"} {
		f.must(201, "POST", "/v1/connections", conn(name, pw))
		f.must(200, "POST", "/v1/connections/"+name+"/test", "").json(t, &res)
		if res.Cause != "unreachable" {
			t.Errorf("%s reference: test %+v, want unreachable (the secret resolved)", name, res)
		}
	}
	msgs := map[string]bool{}
	for _, name := range []string{"missing", "fifo", "subdirectory", "passwd"} {
		f.must(201, "POST", "/v1/connections", conn("f-"+name, "file:"+filepath.Join(allowed, name)))
		start := time.Now()
		f.must(200, "POST", "/v1/connections/f-"+name+"/test", "").json(t, &res)
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s: the test took %v, past connect_timeout 1s", name, d)
		}
		if res.Cause != "config" || strings.Contains(res.Message, "root:") {
			t.Errorf("%s: test %+v, want cause config", name, res)
		}
		msgs[strings.ReplaceAll(res.Message, name, "NAME")] = true
	}
	if len(msgs) != 1 {
		t.Errorf("the causes read differently, telling what exists: %v", msgs)
	}
}

// TestSecretRefs_NoneConfigured: without secrets.file_dirs and
// secrets.env_prefix the API takes no reference at all, only literals.
func TestSecretRefs_NoneConfigured(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	for _, pw := range []string{"file:/etc/passwd", "file:/dev/zero", "env:HOME"} {
		p := f.wantProblem(400, "bad_option", "options.password", "POST", "/v1/connections", fmt.Sprintf(`{"name":"c","type":"mysql","options":{"host":"127.0.0.1","user":"u","password":%q}}`, pw))
		if !strings.Contains(p.Detail, "not allowed through the API") {
			t.Errorf("%s: detail %q", pw, p.Detail)
		}
	}
	f.must(201, "POST", "/v1/connections", `{"name":"c","type":"mysql","options":{"host":"127.0.0.1","user":"u","password":"`+knownSecret+`"}}`)
}

// TestSecretRefs_RedactedNeedsSameEndpoint: a PUT that points a connection
// with a stored literal password at another host (port, user, database,
// type) cannot keep the password with "REDACTED": 400 bad_option naming
// options.password, and the new host never hears from snapstore; with the
// endpoint unchanged, REDACTED keeps the stored password.
func TestSecretRefs_RedactedNeedsSameEndpoint(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	evil, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer evil.Close()
	dialled := make(chan struct{}, 1)
	go func() {
		if c, err := evil.Accept(); err == nil {
			dialled <- struct{}{}
			c.Close()
		}
	}()
	evilPort := evil.Addr().(*net.TCPAddr).Port
	port := closedPort(t)
	f.must(201, "POST", "/v1/connections", fmt.Sprintf(`{"name":"c","type":"mysql","options":{"host":"127.0.0.1","port":%d,"user":"app","password":%q,"database":"shop"}}`, port, knownSecret))
	for _, opts := range []string{
		fmt.Sprintf(`"host":"127.0.0.1","port":%d,"user":"app","password":"REDACTED","database":"shop"`, evilPort),
		fmt.Sprintf(`"host":"localhost","port":%d,"user":"app","password":"REDACTED","database":"shop"`, port),
		fmt.Sprintf(`"host":"127.0.0.1","port":%d,"user":"root","password":"REDACTED","database":"shop"`, port),
		fmt.Sprintf(`"host":"127.0.0.1","port":%d,"user":"app","password":"REDACTED","database":"mysql"`, port),
		fmt.Sprintf(`"host":"127.0.0.1","port":%d,"user":"app","password":"REDACTED"`, port),
	} {
		p := f.wantProblem(400, "bad_option", "options.password", "PUT", "/v1/connections/c", `{"type":"mysql","options":{`+opts+`}}`)
		if !strings.Contains(p.Detail, "changed, so give the secret again") {
			t.Errorf("%s: detail %q", opts, p.Detail)
		}
	}
	f.wantProblem(400, "bad_option", "options.password", "PUT", "/v1/connections/c", `{"type":"postgres","options":{"host":"127.0.0.1","user":"app","password":"REDACTED"}}`)
	var res adapters.TestResult
	f.must(200, "POST", "/v1/connections/c/test", "").json(t, &res)
	select {
	case <-dialled:
		t.Fatal("the stored password's connection went to the new host")
	default:
	}
	// Same endpoint, another setting: REDACTED keeps the password.
	r := f.must(200, "PUT", "/v1/connections/c", fmt.Sprintf(`{"type":"mysql","options":{"host":"127.0.0.1","port":"%d","user":"app","password":"REDACTED","database":"shop","chunk_rows":100}}`, port))
	if !strings.Contains(string(r.body), `"password":"REDACTED"`) {
		t.Errorf("kept password not shown as REDACTED: %s", r.body)
	}
}
