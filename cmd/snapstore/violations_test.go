package main

import (
	"strings"
	"testing"

	"github.com/snapstore/snapstore/server"
)

// TestCLI_EveryViolationOfADefinition: a definition the API refuses for
// several fields is printed one line a violation, each naming its field,
// its code where it is not the answer's, and its line in the file; a
// password given is never printed.
func TestCLI_EveryViolationOfADefinition(t *testing.T) {
	const adminTok = "admin-tok-Vb36"
	const secret = "pw-Qz7-never-shown"
	url, _, _ := startServe(t, 0, []server.Token{{Name: "adm", Token: adminTok, Role: server.RoleAdmin}})
	run := func(args ...string) (int, string) {
		t.Helper()
		code, out, errs := cli(t, append(args, "--server", url, "--token", adminTok)...)
		if strings.Contains(out+errs, secret) {
			t.Errorf("%v: the password in the output:\n%s%s", args, out, errs)
		}
		return code, errs
	}

	ad := writeFile(t, "ad.yaml", "name: bad name!\nconnection: src\nresource: products\nretries: 500\nschedule: every tuesday\n")
	code, errs := run("adapters", "create", "-f", ad)
	if code != 1 {
		t.Fatalf("adapters create: exit %d\n%s", code, errs)
	}
	for _, want := range []string{
		"HTTP 400 bad_request: 3 problems:\n",
		"\n  body.name: want the name of ",
		"ad.yaml line 1)\n",
		"\n  body.retries: number must be at most 100 (" + ad + " line 4)\n",
		"\n  schedule: ",
		"every tuesday",
		"(bad_schedule) (" + ad + " line 5)",
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("adapters create: no %q in:\n%s", want, errs)
		}
	}

	conn := writeFile(t, "conn.yaml", "name: c1\ntype: mysql\noptions:\n  port: many\n  bogus: 1\n  password: "+secret+"\n  dsn: \"u:"+secret+"@tcp(h\"\n")
	code, errs = run("connections", "create", "-f", conn)
	if code != 1 || !strings.Contains(errs, "HTTP 400 bad_option: 4 problems:") {
		t.Fatalf("connections create: exit %d\n%s", code, errs)
	}
	for _, want := range []string{"options.port: want an integer", "options.bogus: unknown option", "options.dsn: not a valid", "options.password: not allowed together with dsn"} {
		if !strings.Contains(errs, want) {
			t.Errorf("connections create: no %q in:\n%s", want, errs)
		}
	}

	// A body the command builds from its flags names the flags.
	code, errs = run("tokens", "create", "t1", "--role", "boss", "--datasets", "a/b,[x")
	for _, want := range []string{"HTTP 400 bad_request: 3 problems:", "\n  --role: ", "\n  --datasets: pattern \"a/b\"", "\n  --datasets: pattern \"[x\""} {
		if code != 1 || !strings.Contains(errs, want) {
			t.Errorf("tokens create: exit %d, no %q in:\n%s", code, want, errs)
		}
	}

	// One bad field reads as before: its field, its line.
	one := writeFile(t, "one.yaml", "name: a1\nconnection: src\nresource: products\nschedule: every tuesday\n")
	if code, errs := run("adapters", "create", "-f", one); code != 1 || !strings.Contains(errs, "HTTP 400 bad_schedule (field schedule): ") || !strings.Contains(errs, "one.yaml line 4)") || strings.Contains(errs, "problems") {
		t.Errorf("one bad field: exit %d\n%s", code, errs)
	}
}
