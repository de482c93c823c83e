package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/parquet/file"

	"github.com/snapstore/snapstore/api"
	"github.com/snapstore/snapstore/config"
	"github.com/snapstore/snapstore/snapshot"
)

// asTerminal makes the CLI take stdin for a terminal that answers
// answer, for the test.
func asTerminal(t *testing.T, answer string) {
	t.Helper()
	oldTerm, oldIn := isTerminal, stdin
	isTerminal = func(f any) bool { return f == stdin }
	stdin = strings.NewReader(answer)
	t.Cleanup(func() { isTerminal, stdin = oldTerm, oldIn })
}

// TestCLI_DatasetsDiffTagsRollbackGC drives the dataset commands through
// the CLI against a real server on a SQLite source: a diff after a change
// at the source names the changed column, before and after; tags; a
// rollback and a drop ask first and say what they will do, and refuse
// without a terminal unless --yes; gc reports.
func TestCLI_DatasetsDiffTagsRollbackGC(t *testing.T) {
	url, cfg, _ := startServe(t, 0, nil)
	srv := []string{"--server", url}
	do := cliAt(t, url)
	src := sqliteSource(t, cfg.Connections[0].Options["path"].(string), "SELECT 1")
	if out, errs := do(0, "datasets", "list"); !strings.Contains(out, "DATASET") || !strings.Contains(errs, "no datasets") {
		t.Errorf("datasets list of none: %s %s", out, errs)
	}
	do(0, "run", "products")
	// One version: nothing to diff it with, and the error says what
	// makes a second rather than ask for a --from that cannot be given.
	code, _, errs := cli(t, append([]string{"diff", "products"}, srv...)...)
	if code == 0 || !strings.Contains(errs, "bad_request: --from: version ") || !strings.Contains(errs, " is the only kept version of products: a diff needs two") || strings.Contains(errs, "give --from") {
		t.Errorf("diff of one version: exit %d: %s", code, errs)
	}
	do(0, "tag", "products", "first")
	if _, err := src.Exec(`UPDATE products SET name = 'pitcher' WHERE id = 2; DELETE FROM products WHERE id = 3; INSERT INTO products VALUES (4, 'tray')`); err != nil {
		t.Fatal(err)
	}
	do(0, "run", "products")

	out, errs := do(0, "diff", "products", "--from", "first")
	for _, want := range []string{"update  2    name: jug -> pitcher", "delete  3    id=3 name=grinder", "insert  4    id=4 name=tray", "1 inserted, 1 updated, 1 deleted"} {
		if !strings.Contains(out, want) {
			t.Errorf("diff lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errs, "products: from version") {
		t.Errorf("diff says no versions: %s", errs)
	}
	// To the oldest of two: --from may still name the other, and the
	// error names the flag.
	if code, _, errs := cli(t, append([]string{"diff", "products", "--to", "first"}, srv...)...); code != 1 || !strings.Contains(errs, "bad_request: --from: no kept version older than ") || !strings.HasSuffix(strings.TrimSpace(errs), "; give --from") {
		t.Errorf("diff to the oldest version: exit %d: %s", code, errs)
	}
	// A time is a valid tag name: a diff --from one, which no tag has,
	// says that --from takes no time and where the versions' times are.
	if _, errs := do(1, "diff", "products", "--from", "2026-12-07T00:22:41Z"); !strings.Contains(errs, "tag_not_found") ||
		!strings.Contains(errs, "--from takes a version number or a tag, not a time: snapstore versions products lists the versions with their commit times") {
		t.Errorf("diff --from a time:\n%s", errs)
	}
	if _, errs := do(1, "diff", "products", "--from", "nosuchtag"); !strings.Contains(errs, "tag_not_found") || strings.Contains(errs, "not a time") {
		t.Errorf("diff --from a tag that does not exist:\n%s", errs)
	}
	if _, errs := do(1, "diff", "products", "--from", "2026-12-07T00:22:41Z", "--to", "nosuchtag"); !strings.Contains(errs, "--to: tag not found") || strings.Contains(errs, "not a time") {
		t.Errorf("diff --from a time, --to a tag that does not exist:\n%s", errs)
	}
	out, _ = do(0, "diff", "products", "--from", "first", "--output", "json")
	var upd struct {
		Op      string
		Changed []string
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.Contains(line, `"update"`) && json.Unmarshal([]byte(line), &upd) != nil {
			t.Fatalf("diff NDJSON: %s", line)
		}
	}
	if upd.Op != "update" || fmt.Sprint(upd.Changed) != "[name]" {
		t.Errorf("diff --output json: %+v\n%s", upd, out)
	}
	if out, _ = do(0, "diff", "products", "--from", "first", "--stats"); !strings.Contains(out, "inserted: 1") {
		t.Errorf("diff --stats:\n%s", out)
	}
	testDiffFormats(t, do)

	// Versions and datasets.
	if out, _ = do(0, "versions", "products"); !strings.Contains(out, "first") || strings.Count(out, "\n") != 3 {
		t.Errorf("versions:\n%s", out)
	}
	if out, _ = do(0, "versions", "products", "--limit", "1"); strings.Count(out, "\n") != 2 {
		t.Errorf("versions --limit 1:\n%s", out)
	}
	if out, _ = do(0, "datasets", "list"); !strings.Contains(out, "products") || !strings.Contains(out, "ago") {
		t.Errorf("datasets list:\n%s", out)
	}
	if out, _ = do(0, "datasets", "show", "products", "--tag", "first"); !strings.Contains(out, "tags:") || !strings.Contains(out, "COLUMN") || !strings.Contains(out, "id      int") {
		t.Errorf("datasets show --tag first:\n%s", out)
	}

	// Rollback: refused without a terminal and --yes, asks on one.
	var vs struct {
		Versions []struct{ Version int64 }
	}
	out, _ = do(0, "versions", "products", "--output", "json")
	if err := json.Unmarshal([]byte(out), &vs); err != nil || len(vs.Versions) != 2 {
		t.Fatalf("versions --output json: %v %s", err, out)
	}
	first, second := vs.Versions[1].Version, vs.Versions[0].Version
	if out, _ := do(0, "tag", "products", "second"); strings.Contains(out, "moved") {
		t.Errorf("a new tag said it moved: %s", out)
	}
	if out, _ := do(0, "tag", "products", "moving", "--version", fmt.Sprint(first)); strings.Contains(out, "moved") {
		t.Errorf("a new tag said it moved: %s", out)
	}
	if out, _ := do(0, "tag", "products", "moving"); !strings.Contains(out, fmt.Sprintf("is tagged moving (moved from version %d)", first)) {
		t.Errorf("tagging again: %s", out)
	}
	do(0, "untag", "products", "moving")
	_, errs = do(2, "rollback", "products", fmt.Sprint(first))
	if !strings.Contains(errs, "--yes") || !strings.Contains(errs, fmt.Sprintf("The later version (%d) stays readable", second)) {
		t.Errorf("rollback without a terminal:\n%s", errs)
	}
	asTerminal(t, "n\n")
	do(1, "rollback", "products", fmt.Sprint(first))
	if out, _ = do(0, "get", "products", "2"); !strings.Contains(out, "pitcher") {
		t.Fatalf("answered no, yet rolled back: %s", out)
	}
	if _, errs = do(1, "rollback", "products", "nosuchtag"); !strings.Contains(errs, `no kept version tagged "nosuchtag"`) {
		t.Errorf("rollback to an unknown tag: %s", errs)
	}
	if _, errs = do(2, "rollback", "products", "0"); !strings.Contains(errs, `want a version number, decimal digits from 1 without a sign or a leading zero, got "0" or a tag name`) {
		t.Errorf("rollback to version 0: %s", errs)
	}
	// To a tag, as diff, get and scan take one; saying that the next run
	// undoes it.
	asTerminal(t, "y\n")
	out, errs = do(0, "rollback", "products", "first")
	if !strings.Contains(errs, "[y/N]") || !strings.Contains(errs, fmt.Sprintf("Roll products back to version %d", first)) {
		t.Errorf("rollback did not ask: %s", errs)
	}
	if !strings.Contains(out, fmt.Sprintf("restored from version %d", first)) {
		t.Errorf("rollback's answer: %s", out)
	}
	if !strings.Contains(errs, "next run of the adapter that feeds products reads the source again") {
		t.Errorf("rollback does not say the next run undoes it: %s", errs)
	}
	if out, _ = do(0, "get", "products", "2"); !strings.Contains(out, `"name":"jug"`) {
		t.Fatalf("after the rollback: %s", out)
	}
	// versions names the version the rollback restored.
	if out, _ = do(0, "versions", "products"); !strings.Contains(out, "RESTORED") || !regexp.MustCompile(fmt.Sprintf(`(?m)\*\s+%d$`, first)).MatchString(out) {
		t.Errorf("versions after a rollback:\n%s", out)
	}
	if out, _ = do(0, "datasets", "show", "products"); !strings.Contains(out, fmt.Sprintf("made by:         rollback, restored from version %d", first)) || strings.Contains(out, "\nrun:") {
		t.Errorf("datasets show after the rollback:\n%s", out)
	}
	// What the question said: the later version stays, with its tag.
	do(0, "datasets", "show", "products", "--version", fmt.Sprint(second))
	if out, _ = do(0, "get", "products", "2", "--tag", "second"); !strings.Contains(out, "pitcher") {
		t.Errorf("the later version's tag after the rollback: %s", out)
	}
	do(1, "rollback", "products", "999999")
	if out, _ = do(0, "untag", "products", "first", "--json"); !strings.Contains(out, `"dataset": "products"`) || !strings.Contains(out, `"deleted": "first"`) {
		t.Errorf("untag --json: %q", out)
	}
	do(1, "untag", "products", "first")

	// GC: a dry run, then every dataset.
	if out, _ = do(0, "gc", "products", "--dry-run"); !strings.Contains(out, "products  yes") {
		t.Errorf("gc --dry-run:\n%s", out)
	}
	if out, _ = do(0, "gc", "--all", "--output", "json"); !strings.Contains(out, `"reports"`) || !strings.Contains(out, `"dataset": "products"`) {
		t.Errorf("gc --all --output json:\n%s", out)
	}
	do(2, "gc")

	// Drop: refused without a terminal and --yes; --yes drops.
	asTerminal(t, "")
	isTerminal = func(any) bool { return false }
	if _, errs = do(2, "datasets", "drop", "products"); !strings.Contains(errs, "Drop dataset products") {
		t.Errorf("drop without a terminal: %s", errs)
	}
	do(0, "datasets", "drop", "products", "--yes")
	if _, errs = do(1, "datasets", "show", "products"); !strings.Contains(errs, "has nothing committed yet") {
		t.Errorf("after the drop: %s", errs)
	}
}

// testDiffFormats reads the diff of TestCLI_DatasetsDiffTagsRollbackGC
// (one insert, one update, one delete since the tag first) with --format:
// NDJSON as the API sends it, an Arrow stream to a file and Parquet to a
// non-terminal stdout, each read back by arrow-go's readers; a format the
// endpoint does not offer and a binary format bound for a terminal are
// refused before any request, as scan refuses Arrow and Parquet for a
// terminal.
func testDiffFormats(t *testing.T, do func(int, ...string) (string, string)) {
	t.Helper()
	if out, _ := do(0, "diff", "products", "--from", "first", "--format", "ndjson"); strings.Count(out, "\n") != 3 || !strings.Contains(out, `"op":"update"`) {
		t.Errorf("diff --format ndjson:\n%s", out)
	}
	name := filepath.Join(t.TempDir(), "diff.arrows")
	do(0, "diff", "products", "--from", "first", "--format", "arrow", "--out", name)
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	r, err := ipc.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("diff --format arrow: %v", err)
	}
	var rows int64
	for r.Next() {
		rows += r.RecordBatch().NumRows()
	}
	if r.Err() != nil || rows != 3 || r.Schema().FieldIndices("_change") == nil {
		t.Errorf("diff --format arrow: %d rows, schema %v, err %v", rows, r.Schema(), r.Err())
	}
	r.Release()
	out, _ := do(0, "diff", "products", "--from", "first", "--format", "parquet", "--compression", "snappy")
	pf, err := file.NewParquetReader(bytes.NewReader([]byte(out)))
	if err != nil {
		t.Fatalf("diff --format parquet: %v", err)
	}
	if pf.NumRows() != 3 {
		t.Errorf("diff --format parquet: %d rows, want 3", pf.NumRows())
	}
	pf.Close()

	for _, args := range [][]string{{"--format", "csv"}, {"--format", "json"}, {"--format", "arrow", "--stats"}, {"--out", name}, {"--format", "arrow", "--compression", "zstd"}} {
		if _, errs := do(exitUsage, append([]string{"diff", "products"}, args...)...); !strings.Contains(errs, "--") {
			t.Errorf("diff %v: %s", args, errs)
		}
	}
	old := isTerminal
	isTerminal = func(any) bool { return true }
	defer func() { isTerminal = old }()
	if _, errs := do(exitUsage, "diff", "products", "--format", "parquet"); !strings.Contains(errs, "binary") {
		t.Errorf("diff --format parquet to a terminal: %s", errs)
	}
	for _, f := range []string{"arrow", "parquet"} {
		if _, errs := do(exitUsage, "scan", "products", "--format", f); !strings.Contains(errs, "binary") {
			t.Errorf("scan --format %s to a terminal: %s", f, errs)
		}
	}
	do(0, "scan", "products", "--format", "csv")
	do(0, "scan", "products", "--format", "parquet", "--out", name)
	do(0, "diff", "products", "--from", "first", "--format", "arrow", "--out", name)
}

// TestVersionSourceText: datasets show names a version's adapter and
// connection, and a resource only when the run recorded one.
func TestVersionSourceText(t *testing.T) {
	for _, c := range []struct {
		src  snapshot.SourceInfo
		want string
	}{
		{snapshot.SourceInfo{Adapter: "products", Connection: "shop", Resource: "products"}, "adapter products, shop/products"},
		{snapshot.SourceInfo{Adapter: "crm", Connection: "crm"}, "adapter crm, connection crm"},
		{snapshot.SourceInfo{Adapter: "copy", Connection: "edge", Resource: "crm@11"}, "adapter copy, edge/crm@11"},
		{snapshot.SourceInfo{}, ""},
	} {
		if got := versionSourceText(c.src); got != c.want {
			t.Errorf("%+v: %q, want %q", c.src, got, c.want)
		}
	}
}

// TestKeptVersions: the count of a drop's question in the singular for one.
func TestKeptVersions(t *testing.T) {
	for n, want := range map[int]string{0: "0 kept versions", 1: "1 kept version", 2: "2 kept versions", 11: "11 kept versions"} {
		if got := keptVersions(n); got != want {
			t.Errorf("keptVersions(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestCLI_SourceNamesPrintable: a column named with an ESC sequence or a
// line end (valid SQL) prints in the tables and fields of the CLI as an
// escape, on one line: it neither reaches the terminal nor breaks the
// columns.
func TestCLI_SourceNamesPrintable(t *testing.T) {
	weird := filepath.Join(t.TempDir(), "weird.db")
	sqliteSource(t, weird, "CREATE TABLE w (id INTEGER PRIMARY KEY, \"a\nb\" TEXT, \"e\x1b[31m\" INTEGER); INSERT INTO w VALUES (1, 'v', 2);")
	url, _, _ := startServeWith(t, 0, nil, func(c *config.Config) {
		c.Connections = append(c.Connections, api.Connection{Name: "weird", Type: "sqlite", Options: map[string]any{"path": weird}})
		c.Adapters = append(c.Adapters, api.Adapter{Name: "w", Connection: "weird", Resource: "w"})
	})
	if code, _, errs := cli(t, "run", "w", "--server", url); code != 0 {
		t.Fatalf("run: exit %d %s", code, errs)
	}
	code, out, errs := cli(t, "datasets", "show", "w", "--server", url)
	if code != 0 {
		t.Fatalf("datasets show: exit %d %s", code, errs)
	}
	for _, want := range []string{"\na\\nb ", "\ne\\x1b[31m "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.ContainsAny(out, "\x1b\r") || strings.Contains(out, "\nb ") {
		t.Errorf("a control character printed as it is:\n%q", out)
	}
}
