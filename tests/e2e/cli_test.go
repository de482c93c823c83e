package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCLIMariaDB drives the built binary's commands against a server
// with an admin token (given through SNAPSTORE_TOKEN, as the docs advise)
// and a real MariaDB: a connection and an adapter from YAML files, a test
// and the resource list, a run, a change at the source, a second run and
// the diff naming the changed column before and after; a connection with
// a wrong password fails its test naming the server and the cause. No
// output holds the password or the token.
func TestCLIMariaDB(t *testing.T) {
	e := getMySQLEnv(t)
	dbName := fmt.Sprintf("e2e_cli_%d", os.Getpid())
	src := e.cloneTable(t, dbName, "category")
	const token = "e2e-cli-admin-token-7Hq2"
	p := startServerWith(t, e.Password,
		"auth:\n  tokens:\n    - {name: ops, token: \"env:E2E_ADMIN_TOKEN\", role: admin}\n", "E2E_ADMIN_TOKEN="+token)
	p.token = token
	p.addSecret(token)
	dir := t.TempDir()
	snap := func(wantCode int, args ...string) (string, string) {
		t.Helper()
		cmd := exec.Command(binPath, append(args, "--server", p.base)...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "SNAPSTORE_TOKEN=" + token}
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		for _, secret := range []string{token, e.Password} {
			if strings.Contains(out.String()+errb.String(), secret) {
				t.Errorf("%v printed a secret:\n%s%s", args, out.String(), errb.String())
			}
		}
		if code != wantCode {
			t.Fatalf("snapstore %v: exit %d, want %d\n%s%s", args, code, wantCode, out.String(), errb.String())
		}
		return out.String(), errb.String()
	}
	file := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}

	snap(0, "connections", "create", "-f", file("conn.yaml", fmt.Sprintf(
		"name: sakila\ntype: mysql\noptions:\n  host: %s\n  port: %s\n  user: %s\n  password: env:%s\n  database: %s\n", e.Host, e.Port, e.User, pwEnv, dbName)))
	if out, _ := snap(0, "connections", "test", "sakila"); !strings.Contains(out, "result:     ok") || !strings.Contains(out, "MariaDB") {
		t.Fatalf("connections test:\n%s", out)
	}
	if out, _ := snap(0, "connections", "resources", "sakila"); !strings.Contains(out, dbName) || !strings.Contains(out, "category") {
		t.Fatalf("connections resources:\n%s", out)
	}
	snap(0, "adapters", "create", "-f", file("adapter.yaml", "name: category\nconnection: sakila\nresource: category\nretention: {ttl: 24h, min_versions: 5}\n"))
	out, errs := snap(0, "run", "category")
	if !strings.Contains(out, "status:    succeeded") || !strings.Contains(out, "changes:   16 inserted") || !strings.Contains(errs, "run r") {
		t.Fatalf("first run:\n%s%s", out, errs)
	}
	snap(0, "tag", "category", "before")
	execAll(t, src, []stmt{{"UPDATE category SET name = 'Cartoons' WHERE category_id = 3", 1}})
	snap(0, "adapters", "run", "category")
	out, _ = snap(0, "diff", "category", "--from", "before")
	if !strings.Contains(out, "update  3    name: Children -> Cartoons") || !strings.Contains(out, "0 inserted, 1 updated, 0 deleted") {
		t.Fatalf("diff:\n%s", out)
	}
	if out, _ := snap(0, "get", "category", "3", "--tag", "before"); !strings.Contains(out, `"name":"Children"`) {
		t.Fatalf("get --tag before: %s", out)
	}
	if out, _ := snap(0, "adapters", "list"); !strings.Contains(out, "succeeded") {
		t.Fatalf("adapters list:\n%s", out)
	}

	// A wrong password: the test fails (exit 1) naming the server and
	// the cause; a run through it fails with source_auth.
	snap(0, "connections", "create", "-f", file("bad.yaml", fmt.Sprintf(
		"name: wrongpw\ntype: mysql\noptions: {host: %s, port: %s, user: %s, password: not-the-password, database: %s}\n", e.Host, e.Port, e.User, dbName)))
	out, _ = snap(1, "connections", "test", "wrongpw")
	if !strings.Contains(out, "auth") || !strings.Contains(out, fmt.Sprintf("(mysql at %s:%s): the server refused the credentials", e.Host, e.Port)) {
		t.Fatalf("a wrong password:\n%s", out)
	}
	snap(0, "adapters", "create", "-f", file("bad-adapter.yaml", "name: badpw\nconnection: wrongpw\nresource: category\ndataset: badpw\n"))
	if _, errs := snap(1, "run", "badpw"); !strings.Contains(errs, "source_auth") || strings.Contains(errs, "did not answer") {
		t.Fatalf("a run with a wrong password:\n%s", errs)
	}
}
