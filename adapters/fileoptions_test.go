package adapters

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snapstore/snapstore/api"
)

// TestFileOptions_ByOrigin: an API connection's file options may name
// only files under the directories, checked when saved (lexically: ".."
// out and relative paths refused) and when opened (a symbolic link out
// refused, a relative one inside followed); a config connection names any file (O1,
// O2); every file that cannot be used, whatever the cause, gives one
// message (O4); with no directories, AnyFile decides (O3), for stored
// definitions too.
func TestFileOptions_ByOrigin(t *testing.T) {
	ctx := context.Background()
	allowed, outside := t.TempDir(), t.TempDir()
	shop := filepath.Join(allowed, "shop.db")
	sqliteExec(t, shop, `CREATE TABLE items (id INTEGER PRIMARY KEY)`)
	other := filepath.Join(outside, "other.db")
	sqliteExec(t, other, `CREATE TABLE secrets (id INTEGER PRIMARY KEY)`)
	os.WriteFile(filepath.Join(allowed, "text"), []byte("root:x:0:0:root:/root:/bin/bash\n"), 0o600)
	os.WriteFile(filepath.Join(allowed, "unreadable"), []byte("SQLite format 3\x00"), 0o000)
	os.Symlink(other, filepath.Join(allowed, "escape"))
	os.Symlink("shop.db", filepath.Join(allowed, "inside")) // os.Root follows relative links only
	os.Symlink(shop, filepath.Join(allowed, "absolute"))
	os.Mkdir(filepath.Join(allowed, "subdirectory"), 0o700)
	lite := func(name, path string) api.Connection {
		return api.Connection{Name: name, Type: "sqlite", Options: map[string]any{"path": path}}
	}
	cfg := []api.Connection{lite("cfg", other)}
	dir := t.TempDir()
	ts := openStack(t, dir, Options{FileOptions: FileOptionLimits{Dirs: []string{allowed}}, Connections: cfg})
	for _, p := range []string{other, allowed + "/../" + filepath.Base(outside) + "/other.db", "shop.db", allowed} {
		_, err := ts.svc.CreateConnection(ctx, lite("bad", p))
		var oe *OptionError
		if !errors.As(err, &oe) || oe.Key != "options.path" || !errors.Is(err, ErrBadOption) || !strings.Contains(err.Error(), "connection_file_dirs") {
			t.Errorf("API path %s: %v, want a bad_option on options.path naming connection_file_dirs", p, err)
		}
	}
	for _, name := range []string{"ok", "inside"} {
		p := shop
		if name == "inside" {
			p = filepath.Join(allowed, "inside")
		}
		if _, err := ts.svc.CreateConnection(ctx, lite(name, p)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if res, _ := ts.svc.TestConnection(ctx, name); !res.OK {
			t.Errorf("%s: test %+v, want OK", name, res)
		}
		if rs, err := ts.svc.Resources(ctx, name); err != nil || len(rs) != 1 || rs[0].Name != "items" {
			t.Errorf("%s: resources %+v, %v", name, rs, err)
		}
	}
	if res, _ := ts.svc.TestConnection(ctx, "cfg"); !res.OK {
		t.Errorf("config connection outside the directories: test %+v, want OK", res)
	}
	msgs := map[string]bool{}
	unusable := []string{"missing", "text", "escape", "absolute", "subdirectory"}
	if os.Geteuid() != 0 { // root reads a file of mode 0
		unusable = append(unusable, "unreadable")
	}
	for _, name := range unusable {
		if _, err := ts.svc.CreateConnection(ctx, lite("f-"+name, filepath.Join(allowed, name))); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		res, _ := ts.svc.TestConnection(ctx, "f-"+name)
		if res.OK || res.Cause != "config" || !strings.Contains(res.Message, "options.path") {
			t.Errorf("%s: test %+v, want cause config on options.path", name, res)
		}
		msgs[strings.ReplaceAll(res.Message, name, "NAME")] = true
		if _, err := ts.svc.Resources(ctx, "f-"+name); !errors.Is(err, ErrBadOption) {
			t.Errorf("%s: resources: %v, want a bad_option", name, err)
		}
	}
	if len(msgs) != 1 {
		t.Errorf("the causes read differently, telling what exists: %v", msgs)
	}
	// A snapstore connection's certificate files are held alike: a CA
	// file that holds no certificate reads as a missing one.
	msgs = map[string]bool{}
	for _, name := range []string{"missing", "text"} {
		c := api.Connection{Name: "s-" + name, Type: "snapstore", Options: map[string]any{"url": "https://127.0.0.1:1", "ca_file": filepath.Join(allowed, name)}}
		if _, err := ts.svc.CreateConnection(ctx, c); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		res, _ := ts.svc.TestConnection(ctx, "s-"+name)
		if res.Cause != "config" || !strings.Contains(res.Message, "options.ca_file") {
			t.Errorf("ca_file %s: test %+v, want cause config on options.ca_file", name, res)
		}
		msgs[strings.ReplaceAll(res.Message, name, "NAME")] = true
	}
	if len(msgs) != 1 {
		t.Errorf("the ca_file causes read differently: %v", msgs)
	}
	_, err := ts.svc.CreateConnection(ctx, api.Connection{Name: "s-out", Type: "snapstore", Options: map[string]any{"url": "https://127.0.0.1:1", "client_cert": "/etc/ssl/cert.pem", "client_key": filepath.Join(allowed, "text")}})
	if oe := (*OptionError)(nil); !errors.As(err, &oe) || oe.Key != "options.client_cert" {
		t.Errorf("client_cert outside: %v", err)
	}

	// No directories and no AnyFile (a server with tokens): stored API
	// definitions are refused when opened, new ones when saved; the
	// config one still opens.
	ts.close()
	ts = openStack(t, dir, Options{FileOptions: FileOptionLimits{Dirs: []string{}}, Connections: cfg})
	if res, _ := ts.svc.TestConnection(ctx, "ok"); res.Cause != "config" || !strings.Contains(res.Message, "not allowed through the API") || !strings.Contains(res.Message, "connection_file_dirs") {
		t.Errorf("stored definition under no directories: test %+v, want refused", res)
	}
	if _, err := ts.svc.CreateConnection(ctx, lite("new", shop)); !errors.Is(err, ErrBadOption) || !strings.Contains(err.Error(), "not allowed through the API") {
		t.Errorf("new definition under no directories: %v", err)
	}
	if res, _ := ts.svc.TestConnection(ctx, "cfg"); !res.OK {
		t.Errorf("config connection under no directories: %+v", res)
	}

	// No directories with AnyFile (a server without tokens): any file, the
	// driver's own errors.
	ts.close()
	ts = openStack(t, dir, Options{FileOptions: FileOptionLimits{AnyFile: true}, Connections: cfg})
	if _, err := ts.svc.CreateConnection(ctx, lite("any", other)); err != nil {
		t.Fatal(err)
	}
	if res, _ := ts.svc.TestConnection(ctx, "any"); !res.OK {
		t.Errorf("any file: test %+v", res)
	}
}

// TestFileOptionLimits_Validate: a relative directory is refused, naming
// the key.
func TestFileOptionLimits_Validate(t *testing.T) {
	err := FileOptionLimits{Dirs: []string{"/srv/sqlite", "relative"}}.validate()
	if err == nil || !strings.Contains(err.Error(), "connection_file_dirs[1]") || strings.Contains(err.Error(), "[0]") {
		t.Errorf("validate: %v", err)
	}
}
