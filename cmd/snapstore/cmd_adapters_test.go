package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/snapstore/snapstore/adapters"
	"github.com/snapstore/snapstore/api"
	"github.com/snapstore/snapstore/server"
)

// TestCLI_DefinitionsAndRuns drives connections, adapters and runs
// through the CLI against a real server with tokens and a SQLite source:
// create from YAML files (an error placed on its line), show, test,
// resources, list with the last run's status, run followed to its end,
// runs list/show/follow, delete; a reader token is refused admin work
// with 403, and no token ever shows in an output.
func TestCLI_DefinitionsAndRuns(t *testing.T) {
	const adminTok, readerTok = "admin-tok-Zq81", "reader-tok-Pw27"
	url, _, _ := startServe(t, 0, []server.Token{
		{Name: "adm", Token: adminTok, Role: server.RoleAdmin},
		{Name: "rd", Token: readerTok, Role: server.RoleReader},
	})
	var outputs []string
	run := func(tok string, args ...string) (int, string, string) {
		t.Helper()
		code, out, errs := cli(t, append(args, "--server", url, "--token", tok)...)
		outputs = append(outputs, out, errs)
		return code, out, errs
	}
	admin := func(args ...string) string {
		t.Helper()
		code, out, errs := run(adminTok, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, errs)
		}
		return out
	}
	defer func() {
		for _, o := range outputs {
			if strings.Contains(o, adminTok) || strings.Contains(o, readerTok) {
				t.Errorf("a token in an output: %s", o)
			}
		}
	}()

	// A second SQLite source, defined from a file.
	dir := t.TempDir()
	src2 := filepath.Join(dir, "tools.db")
	db := sqliteSource(t, src2, `CREATE TABLE tools (id INTEGER PRIMARY KEY, name TEXT NOT NULL, weight REAL);
		INSERT INTO tools VALUES (1,'saw',1.5),(2,'drill',2.25);`)
	connFile := writeFile(t, "conn.yaml", fmt.Sprintf("name: tools\ntype: sqlite\noptions:\n  path: %s\n", src2))
	if out := admin("connections", "create", "-f", connFile); !strings.Contains(out, "connection tools: sqlite") {
		t.Fatalf("connections create: %s", out)
	}
	if code, _, errs := run(adminTok, "connections", "create", "-f", connFile); code != 1 || !strings.Contains(errs, "connection_exists") || !strings.Contains(errs, "snapstore connections create -f "+connFile+" --replace replaces it") {
		t.Fatalf("a second connections create: exit %d %s", code, errs)
	}
	if out := admin("connections", "list"); !strings.Contains(out, "tools") || !strings.Contains(out, "src") {
		t.Fatalf("connections list:\n%s", out)
	}
	if out := admin("connections", "show", "tools"); !strings.Contains(out, "options.path:") || !strings.Contains(out, src2) {
		t.Fatalf("connections show:\n%s", out)
	}
	if out := admin("connections", "test", "tools"); !strings.Contains(out, "result:     ok") || !strings.Contains(out, "SQLite") {
		t.Fatalf("connections test:\n%s", out)
	}
	if out := admin("connections", "resources", "tools"); !strings.Contains(out, "tools") || !strings.Contains(out, "table") {
		t.Fatalf("connections resources:\n%s", out)
	} else if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 2 || !strings.HasSuffix(lines[1], " id") {
		t.Errorf("connections resources: the tools table's KEY is not id:\n%s", out)
	}
	// A failing test is exit code 1 with its cause.
	badFile := writeFile(t, "bad.yaml", "name: gone\ntype: sqlite\noptions: {path: /nonexistent/x.db}\n")
	admin("connections", "create", "-f", badFile)
	if code, out, errs := run(adminTok, "connections", "test", "gone"); code != 1 || !strings.Contains(out, "unreachable") || !strings.Contains(out, "cannot open the file") {
		t.Fatalf("a failing test: exit %d\n%s%s", code, out, errs)
	}
	// An adapter of that connection is saved, with the warning shown.
	goneFile := writeFile(t, "gone-adapter.yaml", "name: gone\nconnection: gone\nresource: x\n")
	if code, out, errs := run(adminTok, "adapters", "create", "-f", goneFile); code != 0 || !strings.Contains(out, "adapter gone: gone/x") ||
		!strings.Contains(errs, `warning: resource "x" not checked: `) || !strings.Contains(errs, "cannot open the file") {
		t.Fatalf("an adapter of an unreachable source: exit %d\n%s%s", code, out, errs)
	}
	if out := admin("adapters", "create", "-f", goneFile, "--replace", "--output", "json"); !strings.Contains(out, `"warnings": [`) {
		t.Fatalf("a replace's warnings in JSON: %s", out)
	}
	admin("adapters", "delete", "gone")
	// An adapter of several tables says what selects its tables.
	allFile := writeFile(t, "all-adapter.yaml", "name: all\nconnection: tools\ninclude: [\"*\"]\nexclude: [\"audit_*\"]\n")
	if out := admin("adapters", "create", "-f", allFile); !strings.Contains(out, "adapter all: tools/{include * exclude audit_*} into dataset all") {
		t.Fatalf("adapters create of several tables: %s", out)
	}
	admin("adapters", "delete", "all")

	// An adapter from a file: a bad value is refused naming its line.
	adFile := filepath.Join(dir, "tools-adapter.yaml")
	os.WriteFile(adFile, []byte("name: tools\nconnection: tools\nresource: tools\nretention:\n  ttl: 3600\n"), 0o600)
	code, _, errs := run(adminTok, "adapters", "create", "-f", adFile)
	if code != 1 || !strings.Contains(errs, "body.retention.ttl") || !strings.Contains(errs, "tools-adapter.yaml line 5") {
		t.Fatalf("a bad ttl: exit %d %s", code, errs)
	}
	os.WriteFile(adFile, []byte("name: tools\nconnection: tools\nresource: tools\nschedule: \"@every 1h\"\nretention:\n  ttl: 90d\n  min_versions: 3\n"), 0o600)
	if out := admin("adapters", "create", "-f", adFile); !strings.Contains(out, "adapter tools: tools/tools into dataset tools") {
		t.Fatalf("adapters create: %s", out)
	}
	if code, _, errs := run(adminTok, "adapters", "create", "-f", adFile); code != 1 || !strings.Contains(errs, "adapter_exists") || !strings.Contains(errs, "snapstore adapters create -f "+adFile+" --replace replaces it") {
		t.Fatalf("a second create: exit %d %s", code, errs)
	}
	admin("adapters", "create", "-f", adFile, "--replace")
	// partition_key and transfer_compression go through to the API: a
	// column the resource lacks is refused naming it.
	pkFile := filepath.Join(dir, "spread-adapter.yaml")
	os.WriteFile(pkFile, []byte("name: spread\nconnection: tools\nresource: tools\nstrategy: partition-by-key\ntransfer_compression: all\npartition_key: [colour]\n"), 0o600)
	if code, _, errs := run(adminTok, "adapters", "create", "-f", pkFile); code != 1 || !strings.Contains(errs, `partition_key[0]`) || !strings.Contains(errs, `"colour" is not a column of tools`) {
		t.Fatalf("a partition key the resource lacks: exit %d %s", code, errs)
	}
	os.WriteFile(pkFile, []byte("name: spread\nconnection: tools\nresource: tools\nstrategy: partition-by-key\ntransfer_compression: all\npartition_key: [weight]\n"), 0o600)
	admin("adapters", "create", "-f", pkFile)
	// An adapter that never ran leaves no dataset, and says so.
	if out := admin("adapters", "delete", "spread"); out != "adapter spread deleted; its dataset spread does not exist (never written, or dropped)\n" {
		t.Errorf("adapters delete of an adapter that never ran: %q", out)
	}

	// A run followed to its end (no terminal: a line a phase on stderr),
	// the record on stdout.
	code, out, errs := run(adminTok, "adapters", "run", "tools")
	if code != 0 || !strings.Contains(out, "status:    succeeded") || !strings.Contains(out, "changes:   2 inserted") || !strings.Contains(errs, "run r") {
		t.Fatalf("adapters run: exit %d\n%s%s", code, out, errs)
	}
	// Every phase, however fast, once and in order.
	var phases []string
	for _, m := range regexp.MustCompile(`(?m)^run r\S+: (\w+)`).FindAllStringSubmatch(errs, -1) {
		phases = append(phases, m[1])
	}
	if strings.Join(phases, " ") != "connect read commit" {
		t.Errorf("adapters run without a terminal: phases %q, want connect read commit once each:\n%s", phases, errs)
	}
	if !strings.Contains(out, "read:      all rows (full)") {
		t.Errorf("adapters run: no read mode:\n%s", out)
	}
	// A dataset derived from tools through a snapstore connection to
	// this server: source_options go through to the API, are refused
	// naming them, and show as the connection's options do.
	selfFile := writeFile(t, "self.yaml", fmt.Sprintf("name: self\ntype: snapstore\noptions:\n  url: %s\n  token: %s\n", url, readerTok))
	admin("connections", "create", "-f", selfFile)
	derivedFile := filepath.Join(dir, "names-adapter.yaml")
	os.WriteFile(derivedFile, []byte("name: names\nconnection: self\nresource: tools\nsource_options:\n  columns: [name]\n"), 0o600)
	if code, _, errs := run(adminTok, "adapters", "create", "-f", derivedFile); code != 1 || !strings.Contains(errs, "source_options.columns") || !strings.Contains(errs, `the key column "id"`) {
		t.Fatalf("a derived copy without its key: exit %d %s", code, errs)
	}
	os.WriteFile(derivedFile, []byte("name: names\nconnection: self\nresource: tools\nsource_options:\n  columns: [id, name]\n  end: [2]\n"), 0o600)
	admin("adapters", "create", "-f", derivedFile)
	if out := admin("adapters", "show", "names"); !regexp.MustCompile(`(?m)^source_options.columns: +\["id","name"\]$`).MatchString(out) || !strings.Contains(out, `source_options.end:`) {
		t.Errorf("adapters show of a derived copy:\n%s", out)
	}
	if out := admin("run", "names"); !strings.Contains(out, "status:    succeeded") || !strings.Contains(out, "1 inserted") {
		t.Errorf("run of a derived copy:\n%s", out)
	}
	if out := admin("adapters", "delete", "names"); out != "adapter names deleted; its dataset names stays (snapstore datasets drop names drops it)\n" {
		t.Errorf("adapters delete of an adapter that wrote its dataset: %q", out)
	}
	// A retention TTL shows as the definition writes it, not as "2160h".
	if out := admin("adapters", "show", "tools"); !regexp.MustCompile(`(?m)^retention: +ttl 90d, min versions 3$`).MatchString(out) {
		t.Errorf("adapters show: the TTL not as written:\n%s", out)
	}
	if out := admin("datasets", "list"); !regexp.MustCompile(`(?m)^tools .* 90d +3$`).MatchString(out) {
		t.Errorf("datasets list: the TTL not as written:\n%s", out)
	}
	if out := admin("datasets", "show", "tools"); !regexp.MustCompile(`(?m)^retention: +ttl 90d, min versions 3$`).MatchString(out) {
		t.Errorf("datasets show: the TTL not as written:\n%s", out)
	}
	// Nothing changed: the current version verified, said so.
	code, out, errs = run(adminTok, "run", "tools")
	if code != 0 || !regexp.MustCompile(`(?m)^version: +\d+ verified \(nothing changed, no version committed\)$`).MatchString(out) {
		t.Fatalf("a run that changed nothing: exit %d\n%s%s", code, out, errs)
	}
	if _, out, _ = run(adminTok, "versions", "tools"); !regexp.MustCompile(`(?m)^VERSION +COMMITTED +VERIFIED`).MatchString(out) || !regexp.MustCompile(`(?m)^\d+ +[-\d]{10} [:\d]{8}`+zone+` +[-\d]{10} [:\d]{8}`+zone+` `).MatchString(out) {
		t.Errorf("versions of a verified dataset:\n%s", out)
	}
	// A failed run is exit code 1 with its code.
	if _, err := db.Exec(`DROP TABLE tools`); err != nil {
		t.Fatal(err)
	}
	code, out, errs = run(adminTok, "run", "tools", "--output", "json")
	var failed adapters.RunRecord
	if code != 1 || json.Unmarshal([]byte(out), &failed) != nil || failed.Code != "resource_not_found" || !strings.Contains(errs, "resource_not_found") {
		t.Fatalf("a failing run: exit %d\n%s%s", code, out, errs)
	}
	// The adapter list says each adapter's last run and its status.
	out = admin("adapters", "list")
	if !strings.Contains(out, "failed (resource_not_found)") || !strings.Contains(out, "in ") {
		t.Fatalf("adapters list:\n%s", out)
	}
	// Every time shown has its zone; next run, of a schedule in the
	// local zone, nothing more.
	if out := admin("adapters", "show", "tools"); !regexp.MustCompile(`(?m)^next run: +[-\d]{10} [:\d]{8}`+zone+`$`).MatchString(out) || !regexp.MustCompile(`(?m)^last run: +\S+ failed.*, [-\d]{10} [:\d]{8}`+zone+`$`).MatchString(out) {
		t.Errorf("adapters show: a time without its zone:\n%s", out)
	}
	if out := admin("adapters", "show", "tools"); !strings.Contains(out, failed.ID+" failed") || !strings.Contains(out, "@every 1h") || !regexp.MustCompile(`(?m)^commit unchanged: +false$`).MatchString(out) {
		t.Fatalf("adapters show:\n%s", out)
	}
	if out := admin("runs", "list", "--adapter", "tools", "--status", "failed"); !strings.Contains(out, failed.ID) || strings.Count(out, "\n") != 2 {
		t.Fatalf("runs list:\n%s", out)
	}
	if out := admin("runs", "show", failed.ID); !strings.Contains(out, "error: resource \"tools\" through data connection \"tools\"") || !strings.Contains(out, "PHASE") {
		t.Fatalf("runs show:\n%s", out)
	}
	if code, out, _ := run(readerTok, "runs", "follow", failed.ID); code != 1 || !strings.Contains(out, "status:    failed") {
		t.Fatalf("runs follow of an ended run: exit %d\n%s", code, out)
	}

	// A reader may read but not change anything: 403, exit code 1.
	if code, out, _ := run(readerTok, "adapters", "list", "--output", "json"); code != 0 || !json.Valid([]byte(out)) {
		t.Fatalf("a reader lists adapters: exit %d %s", code, out)
	}
	for _, args := range [][]string{{"adapters", "delete", "tools"}, {"connections", "list"}, {"run", "products"}} {
		if code, _, errs := run(readerTok, args...); code != 1 || !strings.Contains(errs, "403 forbidden") {
			t.Errorf("%v as a reader: exit %d %s", args, code, errs)
		}
	}
	if code, _, errs := run("wrong-token-Xy", "datasets", "list"); code != 1 || !strings.Contains(errs, "401 unauthorized") || !strings.Contains(errs, "the server refused the token given") {
		t.Errorf("a wrong token: exit %d %s", code, errs)
	}
	if code, _, errs := run("", "datasets", "list"); code != 1 || !strings.Contains(errs, "401 unauthorized") || !strings.Contains(errs, "--token or, better, SNAPSTORE_TOKEN") {
		t.Errorf("no token: exit %d %s", code, errs)
	}

	// Deletes: a connection in use needs --force.
	if code, _, errs := run(adminTok, "connections", "delete", "tools"); code != 1 || !strings.Contains(errs, "connection_in_use") {
		t.Fatalf("deleting a connection in use: exit %d %s", code, errs)
	}
	// With --output json a delete (204 from the API) prints what it deleted.
	if out := admin("adapters", "delete", "tools", "--json"); strings.TrimSpace(out) != "{\n  \"deleted\": \"tools\"\n}" {
		t.Errorf("adapters delete --json: %q", out)
	}
	if out := admin("connections", "delete", "tools", "--output", "json"); !strings.Contains(out, `"deleted": "tools"`) {
		t.Errorf("connections delete --output json: %q", out)
	}
	if code, _, errs := run(adminTok, "adapters", "delete", "products"); code != 1 || !strings.Contains(errs, "adapter_read_only") {
		t.Fatalf("deleting a config adapter: exit %d %s", code, errs)
	}
}

// TestTablesFields checks what adapters show lists of the table options:
// an adapter of one resource shows its parallelism only when it was set
// (the connections its checksums are computed over), one of several
// tables every option, its table keys sorted by table.
func TestTablesFields(t *testing.T) {
	if got := tablesFields(api.Adapter{Resource: "orders"}); got != nil {
		t.Fatalf("one resource, no parallelism: %q", got)
	}
	if got := tablesFields(api.Adapter{Resource: "orders", Parallelism: 3}); !slices.Equal(got, []string{"parallelism", "3"}) {
		t.Fatalf("one resource, parallelism 3: %q", got)
	}
	got := tablesFields(api.Adapter{Include: []string{"public.*"}})
	if i := slices.Index(got, "parallelism"); i < 0 || got[i+1] != "the connection's default" || !slices.Contains(got, "public.*") {
		t.Fatalf("several tables: %q", got)
	}
	got = tablesFields(api.Adapter{Include: []string{"public.*"}, TableKeys: map[string][]string{"public.log": {"id"}, "public.events": {"at", "kind"}}})
	if i := slices.Index(got, "table keys"); i < 0 || got[i+1] != "public.events: at, kind; public.log: id" {
		t.Fatalf("several tables with table keys: %q", got)
	}
}

// TestSourceText checks the SOURCE TABLE cell of adapters list: an
// adapter of several tables shows what selects its tables, never an
// empty resource.
func TestSourceText(t *testing.T) {
	for _, c := range []struct {
		a    api.Adapter
		want string
	}{
		{api.Adapter{Connection: "shop", Resource: "orders"}, "shop/orders"},
		{api.Adapter{Connection: "pg", Include: []string{"public.*"}, Exclude: []string{"audit_*"}}, "pg/{include public.* exclude audit_*}"},
		{api.Adapter{Connection: "pg", Resources: []string{"a", "b"}}, "pg/{a,b}"},
	} {
		if got := sourceText(c.a); got != c.want {
			t.Errorf("sourceText(%+v) = %q, want %q", c.a, got, c.want)
		}
	}
}

// TestNextRunText: the next run of a schedule of another zone is also
// said in that zone, the one its fields are read in; in the local zone,
// once.
func TestNextRunText(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err) // the Go tool chain's tzdata
	}
	next := time.Date(2026, 12, 7, 2, 30, 0, 0, berlin)
	for _, c := range []struct{ schedule, want string }{
		{"CRON_TZ=Europe/Berlin 30 2 * * *", timeText(&next) + " (2026-12-07 02:30:00+01:00 in Europe/Berlin)"},
		{"TZ=Europe/Berlin 30 2 * * *", timeText(&next) + " (2026-12-07 02:30:00+01:00 in Europe/Berlin)"},
		{"@every 1h", timeText(&next)},
		{"CRON_TZ=Nowhere/Atall 30 2 * * *", timeText(&next)},
	} {
		if time.Local.String() == "Europe/Berlin" && strings.HasSuffix(c.schedule, "* * *") {
			c.want = "2026-12-07 02:30:00+01:00"
		}
		if got := nextRunText(&next, c.schedule); got != c.want {
			t.Errorf("%s: %q, want %q", c.schedule, got, c.want)
		}
	}
	if nextRunText(nil, "@every 1h") != "" {
		t.Error("no next run: want nothing")
	}
}

// TestCLI_DefinitionBounds: a definition file is read and its aliases
// expanded only up to what the server takes. An alias inside its own
// anchor, aliases that multiply ("billion laughs") and a file larger than
// a body are refused before anything is sent, each naming the file; an
// ordinary alias still expands, and the adapter it defines is created.
func TestCLI_DefinitionBounds(t *testing.T) {
	url, _, _ := startServe(t, 0, nil)
	create := func(file string) (int, string) {
		t.Helper()
		code, _, errs := cli(t, "adapters", "create", "-f", file, "--server", url)
		return code, errs
	}
	// Ten to the sixth values from six lines.
	var bomb strings.Builder
	bomb.WriteString("name: bomb\nconnection: src\nresource: products\nx0: &a0 [q,q,q,q,q,q,q,q,q,q]\n")
	for i := 1; i <= 5; i++ {
		fmt.Fprintf(&bomb, "x%d: &a%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*a%d,", i-1), 10), ","))
	}
	for _, c := range []struct{ name, text, want string }{
		{"self.yaml", "name: self\nconnection: src\nresource: products\nx: &a [*a]\n", "self.yaml line 4: x[0]: alias *a refers to a value holding it"},
		{"bomb.yaml", bomb.String(), "the aliases expand to more than the server takes"},
		{"huge.yaml", "name: huge\nconnection: src\nresource: products\n#" + strings.Repeat("z", 2<<20) + "\n", "reading the definition: larger than 1048576 bytes"},
	} {
		code, errs := create(writeFile(t, c.name, c.text))
		if code != exitUsage || !strings.Contains(errs, c.want) {
			t.Errorf("%s: exit %d, want %d with %q:\n%s", c.name, code, exitUsage, c.want, errs)
		}
	}
	code, errs := create(writeFile(t, "alias.yaml", "name: aliased\nconnection: src\nresource: products\nret: &r {ttl: 36h}\nretention: *r\n"))
	if code != 1 || !strings.Contains(errs, `property "ret" is unsupported`) {
		t.Fatalf("an unknown key beside an alias: exit %d\n%s", code, errs)
	}
	if code, errs = create(writeFile(t, "alias.yaml", "name: aliased\nconnection: src\nresource: products\nretention: &r {ttl: 36h, min_versions: 2}\n")); code != 0 {
		t.Fatalf("an anchored value: exit %d\n%s", code, errs)
	}
	code, out, errs := cli(t, "adapters", "list", "--server", url)
	if code != 0 || !strings.Contains(out, "aliased") || strings.Contains(out, "bomb") || strings.Contains(out, "self") || strings.Contains(out, "huge") {
		t.Fatalf("adapters list: exit %d\n%s%s", code, out, errs)
	}
}
