package server

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snapstore/snapstore/adapters"
)

// TestFileOptions_APILimits: on a server with tokens, an API SQLite
// connection may name only a database under connection_file_dirs (400
// bad_option naming options.path otherwise); one inside is tested and
// run; a missing file, a file that is not a database and a symbolic link
// out of the directory fail the test with one message, which tells
// neither what exists nor what it holds; the config file's connection,
// outside the directories, still runs.
func TestFileOptions_APILimits(t *testing.T) {
	allowed, outside := t.TempDir(), t.TempDir()
	for _, p := range []string{filepath.Join(allowed, "plant.db"), filepath.Join(outside, "other.db")} {
		db, err := sql.Open("sqlite", p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(`CREATE TABLE readings (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO readings VALUES (1, 'one'), (2, 'two')`); err != nil {
			t.Fatal(err)
		}
		db.Close()
	}
	os.WriteFile(filepath.Join(allowed, "text"), []byte("root:x:0:0:root:/root:/bin/bash\n"), 0o600)
	os.Symlink(filepath.Join(outside, "other.db"), filepath.Join(allowed, "escape"))
	const token = "admin-token-long-enough"
	f := newFixture(t, fixtureOpts{
		tokens:      []Token{{Name: "admin", Token: token, Role: RoleAdmin}},
		fileOptions: &adapters.FileOptionLimits{Dirs: []string{allowed}},
	})
	f.token = token
	conn := func(name, path string) string {
		return fmt.Sprintf(`{"name":%q,"type":"sqlite","options":{"path":%q}}`, name, path)
	}
	for _, p := range []string{filepath.Join(outside, "other.db"), allowed + "/../" + filepath.Base(outside) + "/other.db", "plant.db"} {
		pr := f.wantProblem(400, "bad_option", "options.path", "POST", "/v1/connections", conn("c", p))
		if !strings.Contains(pr.Detail, "connection_file_dirs") {
			t.Errorf("%s: detail %q, want it to name connection_file_dirs", p, pr.Detail)
		}
	}
	f.must(404, "GET", "/v1/connections/c", "")

	f.must(201, "POST", "/v1/connections", conn("plant", filepath.Join(allowed, "plant.db")))
	var res adapters.TestResult
	f.must(200, "POST", "/v1/connections/plant/test", "").json(t, &res)
	if !res.OK {
		t.Fatalf("test of a database under the directory: %+v", res)
	}
	f.must(201, "POST", "/v1/adapters", `{"name":"readings","connection":"plant","resource":"readings"}`)
	f.run("readings")
	f.must(200, "GET", "/v1/datasets/readings/rows/2", "")

	msgs := map[string]bool{}
	for _, name := range []string{"missing", "text", "escape"} {
		f.must(201, "POST", "/v1/connections", conn("f-"+name, filepath.Join(allowed, name)))
		f.must(200, "POST", "/v1/connections/f-"+name+"/test", "").json(t, &res)
		if res.OK || res.Cause != "config" || strings.Contains(res.Message, "root:") {
			t.Errorf("%s: test %+v, want cause config", name, res)
		}
		msgs[strings.ReplaceAll(res.Message, name, "NAME")] = true
	}
	if len(msgs) != 1 {
		t.Errorf("the causes read differently, telling what exists: %v", msgs)
	}
	if logs := f.logs.String(); !strings.Contains(logs, "file option refused") {
		t.Error("the log does not have the causes")
	}

	// The config file's connection names a file outside the directories.
	f.run("products")
}

// TestFileOptions_TokensNoDirs: a server with tokens and no
// connection_file_dirs takes no API option that names a file, and says
// which key to set; other API connections are unaffected.
func TestFileOptions_TokensNoDirs(t *testing.T) {
	const token = "admin-token-long-enough"
	f := newFixture(t, fixtureOpts{
		tokens:      []Token{{Name: "admin", Token: token, Role: RoleAdmin}},
		fileOptions: &adapters.FileOptionLimits{},
	})
	f.token = token
	pr := f.wantProblem(400, "bad_option", "options.path", "POST", "/v1/connections", `{"name":"c","type":"sqlite","options":{"path":"/etc/passwd"}}`)
	if !strings.Contains(pr.Detail, "not allowed through the API") || !strings.Contains(pr.Detail, "connection_file_dirs") {
		t.Errorf("detail %q", pr.Detail)
	}
	f.wantProblem(400, "bad_option", "options.ca_file", "POST", "/v1/connections", `{"name":"c","type":"snapstore","options":{"url":"https://127.0.0.1:1","ca_file":"/nonexistent"}}`)
	f.must(201, "POST", "/v1/connections", `{"name":"c","type":"snapstore","options":{"url":"https://127.0.0.1:1"}}`)
	f.run("products")
}
