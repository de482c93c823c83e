package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/snapstore/snapstore/adapters"
	"github.com/snapstore/snapstore/server"
	"github.com/snapstore/snapstore/snapshot"
)

// TestCLI_AgainstServerThenLocal runs run/get/scan/versions through a
// running server (--server, with a token), then, after a clean shutdown, on
// the data directory.
func TestCLI_AgainstServerThenLocal(t *testing.T) {
	tokens := []server.Token{{Name: "ops", Token: "op-token", Role: server.RoleOperator}}
	url, cfg, stop := startServe(t, 0, tokens)
	srv := []string{"--server", url, "--token", "op-token", "--output", "json"}

	code, out, errs := cli(t, append([]string{"run", "products"}, srv...)...)
	var rec adapters.RunRecord
	if code != 0 || json.Unmarshal([]byte(out), &rec) != nil || rec.Status != adapters.RunSucceeded {
		t.Fatalf("run: exit %d, %s %s", code, out, errs)
	}
	code, out, errs = cli(t, append([]string{"get", "products", "2"}, srv...)...)
	if code != 0 || !strings.Contains(out, `"name":"jug"`) || !strings.Contains(out, fmt.Sprintf(`"version":%d`, rec.Version)) {
		t.Fatalf("get: exit %d, %s %s", code, out, errs)
	}
	code, out, errs = cli(t, append([]string{"get", "products", "9"}, srv...)...)
	if code != 1 || !strings.Contains(errs, "row not found") || strings.Contains(errs, "snapshot:") {
		t.Fatalf("get of an absent row: exit %d, %s %s", code, out, errs)
	}
	code, out, errs = cli(t, append([]string{"scan", "products", "--format", "csv"}, srv...)...)
	if code != 0 || out != "id,name\n1,cup\n2,jug\n3,grinder\n" {
		t.Fatalf("scan: exit %d, %q %s", code, out, errs)
	}
	// Parquet and Arrow: whole files, to --out or standard output.
	dir := t.TempDir()
	pq := filepath.Join(dir, "p.parquet")
	code, out, errs = cli(t, append([]string{"scan", "products", "--format", "parquet", "--compression", "snappy", "--out", pq}, srv...)...)
	if b, err := os.ReadFile(pq); code != 0 || err != nil || !bytes.HasPrefix(b, []byte("PAR1")) || !bytes.HasSuffix(b, []byte("PAR1")) {
		t.Fatalf("scan --format parquet: exit %d, %v %q %s", code, err, out, errs)
	}
	code, out, errs = cli(t, append([]string{"scan", "products", "--format", "arrow"}, srv...)...)
	if code != 0 || !strings.Contains(out, "ARROW:") && !strings.Contains(out, "snapstore.dataset") {
		t.Fatalf("scan --format arrow: exit %d, %q %s", code, out, errs)
	}
	code, out, errs = cli(t, append([]string{"export", "products", "--version", strconv.FormatInt(rec.Version, 10), "--out", filepath.Join(dir, "export")}, srv...)...)
	if b, err := os.ReadFile(filepath.Join(dir, "export", "products.parquet")); code != 0 || err != nil || !bytes.HasSuffix(b, []byte("PAR1")) {
		t.Fatalf("export: exit %d, %v %q %s", code, err, out, errs)
	}
	code, _, errs = cli(t, append([]string{"export", "products", "--out", filepath.Join(dir, "x"), "--compression", "lzma"}, srv...)...)
	if code != 1 || !strings.Contains(errs, "compression") {
		t.Fatalf("export with a bad compression: exit %d, %s", code, errs)
	}
	if _, err := os.Stat(filepath.Join(dir, "x", "products.parquet")); err == nil {
		t.Fatalf("a refused export left a file")
	}
	code, out, errs = cli(t, "versions", "products", "--server", url, "--token", "op-token")
	if code != 0 || !strings.Contains(out, fmt.Sprintf("%d ", rec.Version)) || !strings.Contains(out, "*") {
		t.Fatalf("versions: exit %d, %s %s", code, out, errs)
	}
	code, _, errs = cli(t, "get", "products", "2", "--server", url) // no token
	if code != 1 || !strings.Contains(errs, "401 unauthorized") {
		t.Fatalf("without token: exit %d, %s", code, errs)
	}
	code, _, errs = cli(t, append([]string{"run", "nope"}, srv...)...)
	if code != 1 || !strings.Contains(errs, "adapter_not_found") {
		t.Fatalf("run of an unknown adapter: exit %d, %s", code, errs)
	}

	if err := stop(); err != nil {
		t.Fatalf("serve stopped with %v", err)
	}
	// The server is gone: the same commands read the data directory.
	local := []string{"--data", cfg.Data, "--output", "json"}
	code, out, errs = cli(t, append([]string{"get", "products", "3"}, local...)...)
	if code != 0 || !strings.Contains(out, `"name":"grinder"`) {
		t.Fatalf("local get: exit %d, %s %s", code, out, errs)
	}
	// Errors read without Go package prefixes on a data directory too.
	code, _, errs = cli(t, append([]string{"get", "products", "9"}, local...)...)
	if code != 1 || !strings.Contains(errs, "row not found") || strings.Contains(errs, "snapshot:") {
		t.Fatalf("local get of an absent row: exit %d, %s", code, errs)
	}
	code, out, errs = cli(t, append([]string{"scan", "products", "--limit", "2"}, local...)...)
	if code != 0 || strings.Count(out, "\n") != 2 {
		t.Fatalf("local scan: exit %d, %q %s", code, out, errs)
	}
	// A negative limit is refused, not read as "every row".
	code, out, errs = cli(t, append([]string{"scan", "products", "--limit", "-1"}, local...)...)
	if code != exitUsage || out != "" || !strings.Contains(errs, "--limit: want a positive number, or 0 for every row, got -1") {
		t.Fatalf("scan --limit -1: exit %d, %q %s", code, out, errs)
	}
	// A one-shot run on the data directory, with the adapters of a file.
	cfgFile := writeFile(t, "c.yaml", fmt.Sprintf("connections:\n  - {name: src, type: sqlite, options: {path: %q}}\nadapters:\n  - {name: products, connection: src, resource: products}\n  - {name: broken, connection: src, resource: no_such_table}\n",
		cfg.Connections[0].Options["path"]))
	code, out, errs = cli(t, append([]string{"run", "products", "--config", cfgFile}, local...)...)
	if code != 0 || json.Unmarshal([]byte(out), &rec) != nil || rec.Status != adapters.RunSucceeded || rec.Trigger != "cli" {
		t.Fatalf("local run: exit %d, %s %s", code, out, errs)
	}
	code, out, errs = cli(t, append([]string{"run", "broken", "--config", cfgFile}, local...)...)
	if code != 1 || !strings.Contains(errs, "failed") {
		t.Fatalf("failing local run: exit %d, %s %s", code, out, errs)
	}
	code, out, errs = cli(t, append([]string{"versions", "products"}, local...)...)
	var vs struct {
		Versions []snapshot.VersionInfo `json:"versions"`
	}
	// The one-shot run found nothing new: no second version, the first
	// verified.
	if code != 0 || json.Unmarshal([]byte(out), &vs) != nil || len(vs.Versions) != 1 || vs.Versions[0].VerifiedAt == nil {
		t.Fatalf("local versions: exit %d, %s %s", code, out, errs)
	}
}

// TestCLI_SaysWhichServerAnswers: a client command that finds a server on
// the listen address says so on stderr.
func TestCLI_SaysWhichServerAnswers(t *testing.T) {
	url, _, _ := startServe(t, 0, nil)
	addr := strings.TrimPrefix(url, "http://")
	code, _, stderr := cli(t, "versions", "products", "--listen", addr)
	if !strings.Contains(stderr, "using the server at "+url) {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
}

// TestAPIClient_SendsJSONAsNoBrowserDoes: the CLI declares its bodies
// application/json and sends neither Origin nor Sec-Fetch-Site, so the
// server's refusal of what browsers send for other sites
// (server/browser.go) never refuses it; the commands' tests against real
// servers (TestCLI_DatasetsDiffTagsRollbackGC, tests/e2e) run through it.
func TestAPIClient_SendsJSONAsNoBrowserDoes(t *testing.T) {
	got := make(chan http.Header, 1)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer ts.Close()
	base, _ := url.Parse(ts.URL)
	c := &apiClient{base: base, hc: ts.Client()}
	resp, err := c.do(context.Background(), "POST", "/v1/connections", nil, map[string]any{"name": "x"}, "")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	h := <-got
	if h.Get("Content-Type") != "application/json" || h.Get("Origin") != "" || h.Get("Sec-Fetch-Site") != "" {
		t.Errorf("headers %v, want Content-Type application/json and no Origin or Sec-Fetch-Site", h)
	}
}

// TestAPIClient_CertificateForAnotherName: a server reached by a name its
// trusted certificate does not hold is told apart from an untrusted one:
// the message names the name and how to make a certificate for it, not a
// CA to give.
func TestAPIClient_CertificateForAnotherName(t *testing.T) {
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))
	defer ts.Close()
	// httptest's certificate holds 127.0.0.1, ::1 and example.com.
	base, _ := url.Parse(strings.Replace(ts.URL, "127.0.0.1", "localhost", 1))
	c := &apiClient{base: base, hc: ts.Client()}
	_, err := c.do(context.Background(), "GET", "/v1/datasets", nil, nil, "")
	if err == nil {
		t.Fatal("a certificate for other names was accepted")
	}
	msg := err.Error()
	if !strings.Contains(msg, `is not for the name "localhost"`) || !strings.Contains(msg, "cert server DIR --host localhost") || strings.Contains(msg, "--ca-file") {
		t.Errorf("message: %s", msg)
	}
}

// TestAPIError_NamesTheFieldOnce: a problem's field is named once in the
// CLI's text, whether its detail begins with the field or with the
// option it names.
func TestAPIError_NamesTheFieldOnce(t *testing.T) {
	for _, tc := range []struct {
		p    server.Problem
		want string
	}{
		{server.Problem{Code: "connection_not_found", Field: "connection", Detail: `option "connection": data connection "nope" does not exist`},
			`HTTP 404 connection_not_found (field connection): data connection "nope" does not exist`},
		{server.Problem{Code: "bad_request", Field: "body.retention.ttl", Detail: `body.retention.ttl: want a Go duration, got "3600"`},
			`HTTP 404 bad_request (field body.retention.ttl): want a Go duration, got "3600"`},
		{server.Problem{Code: "resource_not_found", Field: "include", Detail: `adapter "x", data connection "c": no table matches include ["a*"]`},
			`HTTP 404 resource_not_found (field include): adapter "x", data connection "c": no table matches include ["a*"]`},
	} {
		if got := (&apiError{Status: 404, Problem: tc.p}).Error(); got != tc.want {
			t.Errorf("text %q\nwant %q", got, tc.want)
		}
	}
}

// TestCLI_AnswerWithoutEnd: what answers at --server with a JSON body of
// more than maxAnswerBytes is refused saying so, not read whole (a
// stream without end would be read until the memory ran out).
func TestCLI_AnswerWithoutEnd(t *testing.T) {
	old := maxAnswerBytes
	maxAnswerBytes = 1 << 20
	t.Cleanup(func() { maxAnswerBytes = old })
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"datasets":[`)
		for i := 0; i < 1<<16; i++ {
			io.WriteString(w, `{"name":"d"},{"name":"e"},`) // 26 bytes each: 1.6 MiB
		}
		io.WriteString(w, `{"name":"f"}]}`)
	}))
	defer ts.Close()
	code, _, errs := cli(t, "datasets", "list", "--server", ts.URL)
	if code != 1 || !strings.Contains(errs, "the answer of GET /v1/datasets is larger than 1048576 bytes, more than a snapstore server sends: does "+ts.URL+" answer as snapstore?") {
		t.Errorf("exit %d %s", code, errs)
	}
}

// TestCLI_RefusalTextIsPrintable: the text of a refusal, which whatever
// answers at --server chooses, reaches the terminal without its control
// characters (ESC, CR, C1's CSI, bytes that are not UTF-8): each is
// written as an escape, problem+json or not.
func TestCLI_RefusalTextIsPrintable(t *testing.T) {
	bodies := map[string]string{
		"/plain":   "\x1b[2Jcleared\rover\x9b",
		"/problem": `{"type":"x","title":"t","status":500,"code":"bad\u001b]0;title\u0007","detail":"\u001b[31mred\u009bcsi, \ufffd kept"}`,
	}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, bodies[r.URL.Query().Get("tag")])
	}))
	defer ts.Close()
	for tag, want := range map[string]string{
		"/plain":   `HTTP 500: \x1b[2Jcleared\rover\x9b`,
		"/problem": `HTTP 500 bad\x1b]0;title\a: \x1b[31mred\u009bcsi, ` + "\ufffd kept",
	} {
		_, _, errs := cli(t, "datasets", "show", "d", "--tag", tag, "--server", ts.URL)
		if !strings.Contains(errs, want) || strings.ContainsAny(errs, "\x1b\r\x07\u009b") {
			t.Errorf("%s: %q, want it to hold %q", tag, errs, want)
		}
	}
}
