package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func readmeText(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// readmeSQL returns the SQL of the README's `bin/snapstore sqlite
// examples/shop.db "..."` line, the change a newcomer makes to the source.
func readmeSQL(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^bin/snapstore sqlite examples/shop\.db "([^"]+)"$`).FindSubmatch(b)
	if m == nil {
		t.Fatal("README.md has no `bin/snapstore sqlite examples/shop.db \"...\"` line")
	}
	return string(m[1])
}

// TestReadmeFirstRun follows the README on the sample: the source from
// examples/shop.sql, the config examples/snapstore.yaml, a first version,
// the tag, the README's change, a second version, the diff and the old
// version read by tag.
func TestReadmeFirstRun(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "shop.db")
	script, err := os.ReadFile("../../examples/shop.sql")
	if err != nil {
		t.Fatal(err)
	}
	if code, out, errs := cli(t, "sqlite", db, string(script)); code != 0 {
		t.Fatalf("creating the sample: %d %s %s", code, out, errs)
	}
	cfg, err := loadConfig(&commonFlags{config: "../../examples/snapstore.yaml", data: filepath.Join(dir, "data"), listen: "127.0.0.1:0"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Connections[0].Options["path"] = db
	for i := range cfg.Adapters {
		cfg.Adapters[i].Schedule = "" // the test starts runs itself
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	errc := make(chan error, 1)
	go func() { errc <- serve(ctx, cfg, nil, slog.New(slog.DiscardHandler), ready) }()
	base := "http://" + <-ready
	defer func() {
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	call := func(method, path string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	run := func() {
		t.Helper()
		if code, body := call("POST", "/v1/adapters/products/runs?wait=true"); code != 200 || !strings.Contains(body, `"status":"succeeded"`) {
			t.Fatalf("run: %d %s", code, body)
		}
	}
	// The sample runs its adapters once at start (run_on_start).
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		_, body := call("GET", "/v1/adapters/products/runs")
		if strings.Contains(body, `"trigger":"start","status":"succeeded"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no succeeded run at start: %s", body)
		}
	}
	if code, body := call("GET", "/v1/datasets/products/rows/2"); code != 200 || !strings.Contains(body, `"name":"Milk jug"`) {
		t.Fatalf("first version: %d %s", code, body)
	}
	if code, body := call("PUT", "/v1/datasets/products/tags/first"); code != 200 {
		t.Fatalf("tag: %d %s", code, body)
	}
	if code, out, errs := cli(t, "sqlite", db, readmeSQL(t)); code != 0 {
		t.Fatalf("the README's change: %d %s %s", code, out, errs)
	}
	run()
	// A later run that finds nothing new commits no version: the default
	// diff still shows the change (the README also diffs from the tag).
	run()
	if code, body := call("GET", "/v1/datasets/products/diff"); code != 200 || strings.Count(body, "\n") != 3 {
		t.Fatalf("default diff after a no-change run: %d %q", code, body)
	}
	code, body := call("GET", "/v1/datasets/products/versions")
	var vl struct {
		Versions []struct {
			Version int64
			Tags    []string
		}
	}
	if err := json.Unmarshal([]byte(body), &vl); code != 200 || err != nil {
		t.Fatalf("versions: %d %v %s", code, err, body)
	}
	var first int64
	for _, v := range vl.Versions {
		for _, tg := range v.Tags {
			if tg == "first" {
				first = v.Version
			}
		}
	}
	if first == 0 {
		t.Fatalf("no version tagged first: %s", body)
	}
	if !strings.Contains(readmeText(t), "diff?from=first") {
		t.Fatal("README.md no longer diffs from the tagged version (diff?from=first)")
	}
	code, body = call("GET", "/v1/datasets/products/diff?from=first")
	if byNumber, numBody := call("GET", fmt.Sprintf("/v1/datasets/products/diff?from=%d", first)); code != 200 || byNumber != 200 || body != numBody {
		t.Fatalf("diff from the tag: %d %s; from its number %d: %d %s", code, body, first, byNumber, numBody)
	}
	ops := map[string]int{}
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		var ch struct{ Op string }
		if err := json.Unmarshal(sc.Bytes(), &ch); err != nil {
			t.Fatal(err)
		}
		ops[ch.Op]++
	}
	if ops["insert"] != 1 || ops["update"] != 1 || ops["delete"] != 1 {
		t.Fatalf("diff %v:\n%s", ops, body)
	}
	if code, body := call("GET", "/v1/datasets/products/rows/5"); code != 404 {
		t.Fatalf("deleted row in the current version: %d %s", code, body)
	}
	if code, body := call("GET", "/v1/datasets/products/rows/5?tag=first"); code != 200 || !strings.Contains(body, `"name":"Tamper"`) {
		t.Fatalf("old version by tag: %d %s", code, body)
	}
}
