package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/snapstore/snapstore/server"
)

// TestCLI_Audit drives `snapstore audit` against a real server: the
// table names who did what and what was refused, --output json is the
// API's entries, the filters and --limit apply, a reader is refused, and
// a bad --since is a usage error.
func TestCLI_Audit(t *testing.T) {
	const adminTok, readerTok = "admin-token-cli-Rr4-audit", "reader-token-cli-Tt5-audit"
	url, _, _ := startServe(t, 0, []server.Token{{Name: "root", Token: adminTok, Role: server.RoleAdmin}, {Name: "viewer", Token: readerTok, Role: server.RoleReader}})
	do := cliAt(t, url)
	do(0, "run", "products", "--token", adminTok)
	do(0, "tag", "products", "first", "--token", adminTok)
	do(1, "gc", "products", "--token", readerTok)

	out, _ := do(0, "audit", "--token", adminTok)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "TIME") {
		t.Fatalf("audit table:\n%s", out)
	}
	for i, want := range [][]string{
		{"viewer", "127.0.0.1", "gc", "dataset=products", "403 forbidden"},
		{"root", "putTag", "dataset=products tag=first", "200"},
		{"root", "startRun", "dataset=products adapter=products", "20"},
	} {
		for _, w := range want {
			if !strings.Contains(lines[i+1], w) {
				t.Errorf("line %d lacks %q: %s", i+1, w, lines[i+1])
			}
		}
	}
	if strings.Contains(out, adminTok) || strings.Contains(out, readerTok) {
		t.Error("the trail shows a token")
	}

	if _, errs := do(1, "audit", "--token", adminTok, "--action", "rollbackDataset"); !strings.Contains(errs, `unknown "rollbackDataset"; the actions are`) {
		t.Errorf("an unknown action: %s", errs)
	}
	out, _ = do(0, "audit", "--token", adminTok, "--action", "putTag", "--output", "json")
	var body struct {
		Entries []server.AuditEntry `json:"entries"`
	}
	if err := json.Unmarshal([]byte(out), &body); err != nil || len(body.Entries) != 1 || body.Entries[0].Params["tag"] != "first" || body.Entries[0].Actor != "root" {
		t.Fatalf("json: %v %s", err, out)
	}
	out, errs := do(0, "audit", "--token", adminTok, "--since", "1h", "--actor", "root", "--limit", "1")
	if strings.Count(strings.TrimSpace(out), "\n") != 1 || !strings.Contains(out, "putTag") || !strings.Contains(errs, "older entries not listed") {
		t.Errorf("--limit 1:\n%s%s", out, errs)
	}
	if out, _ := do(0, "audit", "--token", adminTok, "--until", "2000-01-01T00:00:00Z"); strings.Count(out, "\n") != 1 {
		t.Errorf("--until in the past:\n%s", out)
	}
	// No entry is an empty list, as the API answers, not null.
	if out, _ := do(0, "audit", "--token", adminTok, "--until", "2000-01-01T00:00:00Z", "--output", "json"); !strings.Contains(out, `"entries": []`) {
		t.Errorf("--output json of no entry:\n%s", out)
	}
	// A time copied from the table (to the second, its zone's offset) is
	// the whole of that second: --since and --until both of the putTag
	// line's time find it.
	out, _ = do(0, "audit", "--token", adminTok, "--action", "putTag")
	rows := strings.Split(strings.TrimSpace(out), "\n")
	if f := strings.Fields(rows[len(rows)-1]); len(f) < 2 {
		t.Fatalf("putTag table:\n%s", out)
	} else if out, _ := do(0, "audit", "--token", adminTok, "--action", "putTag", "--since", f[0]+" "+f[1], "--until", f[0]+" "+f[1]); !strings.Contains(out, "tag=first") {
		t.Errorf("--since and --until %q:\n%s", f[0]+" "+f[1], out)
	}
	do(1, "audit", "--token", readerTok)
	_, errs = do(2, "audit", "--token", adminTok, "--since", "yesterday")
	if !strings.Contains(errs, "--since") {
		t.Errorf("bad --since: %s", errs)
	}
}
