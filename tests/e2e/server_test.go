package e2e

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// pwEnv is the environment variable through which the server gets the
// MariaDB password: connections name it as "env:E2E_MYSQL_PW", so the
// password itself is never in a request.
const pwEnv = "E2E_MYSQL_PW"

// proc is one snapstore server process on its own data directory, started
// from the binary TestMain built. Its stdout and stderr go to one log file
// that survives restarts; at cleanup every line is checked for the secret.
type proc struct {
	t       *testing.T
	dir     string
	cfgPath string
	logPath string
	env     []string
	secrets []string // must never appear in a response body or a log line

	cmd    *exec.Cmd
	exited chan struct{}
	base   string // http://host:port of the running process
	client *http.Client
	// token, when set, is sent as the bearer token of call.
	token string
}

// startServer writes a config (data dir in a temp dir, a free loopback
// port, debug logs as text) and starts the server with secret in its
// environment as pwEnv. extraEnv adds variables.
func startServer(t *testing.T, secret string, extraEnv ...string) *proc {
	t.Helper()
	return startServerWith(t, secret, "", extraEnv...)
}

// newServerWith makes the process of startServerWith, not started: its
// config (extraConfig, YAML, appended to startServer's) and environment.
func newServerWith(t *testing.T, secret, extraConfig string, extraEnv ...string) *proc {
	t.Helper()
	if binPath == "" {
		t.Skip("the snapstore binary was not built: -short, or no test service is set")
	}
	dir := t.TempDir()
	p := &proc{
		t:       t,
		dir:     dir,
		cfgPath: filepath.Join(dir, "snapstore.yaml"),
		logPath: filepath.Join(dir, "server.log"),
		secrets: []string{},
		client:  &http.Client{Timeout: 5 * time.Minute},
	}
	// The tests' API connections give their passwords as env:E2E_*
	// references, which an API reference may name only with a prefix
	// (secrets.env_prefix).
	// A free loopback port unless extraConfig names the listen address
	// (a client given this file then finds the server at it).
	listen := "listen: 127.0.0.1:0\n"
	if topListen.MatchString(extraConfig) {
		listen = ""
	}
	cfg := fmt.Sprintf("data: %s\n%slog: {level: debug, format: text}\nshutdown_timeout: 10s\nsecrets: {env_prefix: E2E_}\n", filepath.Join(dir, "data"), listen) + extraConfig
	if err := os.WriteFile(p.cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	// A clean environment: no SNAPSTORE_* variable of the test run can reach
	// the server's configuration.
	p.env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TMPDIR=" + os.TempDir(), pwEnv + "=" + secret}
	p.env = append(p.env, extraEnv...)
	// A server with tls.cert_file is asked over https, trusting the CA
	// and presenting the client certificate the CLI would be given
	// (SNAPSTORE_CA_FILE, SNAPSTORE_CLIENT_CERT, SNAPSTORE_CLIENT_KEY,
	// which serve ignores).
	var tc *tls.Config
	var clientCert, clientKey string
	for _, kv := range extraEnv {
		name, v, _ := strings.Cut(kv, "=")
		switch name {
		case "SNAPSTORE_CA_FILE":
			pem, err := os.ReadFile(v)
			if err != nil {
				t.Fatal(err)
			}
			pool := x509.NewCertPool()
			pool.AppendCertsFromPEM(pem)
			tc = &tls.Config{RootCAs: pool}
		case "SNAPSTORE_CLIENT_CERT":
			clientCert = v
		case "SNAPSTORE_CLIENT_KEY":
			clientKey = v
		}
	}
	if tc != nil {
		if clientCert != "" {
			kp, err := tls.LoadX509KeyPair(clientCert, clientKey)
			if err != nil {
				t.Fatal(err)
			}
			tc.Certificates = []tls.Certificate{kp}
		}
		p.client.Transport = &http.Transport{TLSClientConfig: tc}
	}
	p.addSecret(secret)
	t.Cleanup(p.cleanup)
	return p
}

// topListen matches a top-level listen key of a YAML config.
var topListen = regexp.MustCompile(`(?m)^listen:`)

var listenRE = regexp.MustCompile(`msg="snapstore serving" listen=(\S+)(?: \S+)*? tls=(true|false)`)

// start starts the process and waits until it serves /readyz.
func (p *proc) start() {
	p.t.Helper()
	if p.startOrConflict() {
		p.t.Fatalf("server exited before serving:\n%s", p.logTail(40))
	}
}

// startOrConflict is start, but reports a server that exited before
// serving because an address it was given to listen on was taken (a port
// the test picked free, taken by another process before the server bound
// it) instead of failing the test: the caller picks others.
func (p *proc) startOrConflict() (conflict bool) {
	t := p.t
	t.Helper()
	if p.cmd != nil {
		t.Fatal("server already running")
	}
	logf, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	off, _ := logf.Seek(0, io.SeekEnd)
	fmt.Fprintf(logf, "--- e2e: starting server at %s\n", time.Now().UTC().Format(time.RFC3339Nano))
	cmd := exec.Command(binPath, "serve", "--config", p.cfgPath)
	cmd.Env = p.env
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Dir = p.dir
	if err := cmd.Start(); err != nil {
		logf.Close()
		t.Fatal(err)
	}
	logf.Close()
	p.cmd = cmd
	p.exited = make(chan struct{})
	go func(c *exec.Cmd, done chan struct{}) { c.Wait(); close(done) }(cmd, p.exited)

	deadline := time.Now().Add(60 * time.Second)
	for {
		b, _ := os.ReadFile(p.logPath)
		if int64(len(b)) > off {
			if m := listenRE.FindSubmatch(b[off:]); m != nil {
				p.base = "http://" + string(m[1])
				if string(m[2]) == "true" {
					p.base = "https://" + string(m[1])
				}
				break
			}
		}
		select {
		case <-p.exited:
			p.cmd = nil
			if strings.Contains(p.logTail(40), "bind: address already in use") {
				return true
			}
			t.Fatalf("server exited before serving:\n%s", p.logTail(40))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("server did not log its listen address within 60s:\n%s", p.logTail(40))
		}
		time.Sleep(20 * time.Millisecond)
	}
	for {
		resp, err := p.client.Get(p.base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("server not ready within 60s (last: %v):\n%s", err, p.logTail(40))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// addSecret adds a string that no response body and no log line may hold.
// Not safe for concurrent use with requests.
func (p *proc) addSecret(s string) {
	if len(s) < 4 {
		p.t.Fatalf("secret %q too short to search for", s)
	}
	p.secrets = append(p.secrets, s)
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *proc) kill() {
	p.t.Helper()
	if p.cmd == nil {
		return
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		p.t.Fatalf("SIGKILL: %v", err)
	}
	<-p.exited
	p.cmd = nil
}

// stop sends SIGTERM and waits (SIGKILL after 20s).
func (p *proc) stop() {
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(20 * time.Second):
		p.t.Errorf("server did not stop within 20s of SIGTERM; killing it")
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.exited
	}
	p.cmd = nil
}

// cleanup stops the server and checks its whole log: no secret, no panic,
// no data race report.
func (p *proc) cleanup() {
	if p.cmd != nil {
		// The metrics and the connection list go through call's check too.
		for _, path := range []string{"/metrics", "/v1/connections", "/v1/adapters"} {
			if r, err := p.call("GET", path, nil); err != nil || r.status != http.StatusOK {
				p.t.Errorf("GET %s at cleanup: %v status %d", path, err, r.status)
			}
		}
	}
	p.stop()
	f, err := os.Open(p.logPath)
	if err != nil {
		p.t.Errorf("reading the server log: %v", err)
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		for _, sec := range p.secrets {
			if strings.Contains(line, sec) {
				p.t.Errorf("server log line %d contains a password: %s", n, line)
			}
		}
		if strings.HasPrefix(line, "panic:") || strings.Contains(line, "DATA RACE") {
			p.t.Errorf("server log line %d: %s", n, line)
		}
	}
	if err := sc.Err(); err != nil {
		p.t.Errorf("scanning the server log: %v", err)
	}
	p.t.Logf("server log: %d lines checked for the password", n)
}

func (p *proc) logTail(n int) string {
	b, _ := os.ReadFile(p.logPath)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// response is one HTTP exchange's outcome.
type response struct {
	status int
	header http.Header
	body   []byte
}

// call does one request and checks that the body holds no secret. body is
// marshalled as JSON unless it is nil or already []byte.
func (p *proc) call(method, path string, body any, header ...string) (response, error) {
	var rd io.Reader
	if body != nil {
		b, ok := body.([]byte)
		if !ok {
			var err error
			if b, err = json.Marshal(body); err != nil {
				return response{}, err
			}
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, p.base+path, rd)
	if err != nil {
		return response{}, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	if p.token != "" && req.Header.Get("Authorization") == "" {
		req.Header.Set("Authorization", "Bearer "+p.token)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return response{}, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return response{}, fmt.Errorf("%s %s: reading body: %w", method, path, err)
	}
	r := response{status: resp.StatusCode, header: resp.Header, body: b}
	for _, sec := range p.secrets {
		if bytes.Contains(b, []byte(sec)) {
			return r, fmt.Errorf("%s %s: the response body contains a password: %s", method, path, b)
		}
	}
	return r, nil
}

// mustCall is call that fails the test on a transport error, a leaked
// secret or a status other than want.
func (p *proc) mustCall(t testing.TB, want int, method, path string, body any, header ...string) response {
	t.Helper()
	r, err := p.call(method, path, body, header...)
	if err != nil {
		t.Fatal(err)
	}
	if r.status != want {
		t.Fatalf("%s %s: status %d, want %d: %s", method, path, r.status, want, r.body)
	}
	return r
}

// jsonCall is mustCall that decodes the body into out (if not nil).
func (p *proc) jsonCall(t testing.TB, want int, method, path string, body, out any) {
	t.Helper()
	r := p.mustCall(t, want, method, path, body)
	if out != nil {
		if err := json.Unmarshal(r.body, out); err != nil {
			t.Fatalf("%s %s: decoding %s: %v", method, path, r.body, err)
		}
	}
}

// problem is an RFC 9457 problem details body.
type problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
	Code   string `json:"code"`
}

// wantProblem checks that r is a problem+json of status and code.
func wantProblem(t testing.TB, what string, r response, status int, code string) problem {
	t.Helper()
	var pr problem
	if r.status != status {
		t.Errorf("%s: status %d, want %d: %s", what, r.status, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/problem+json") {
		t.Errorf("%s: Content-Type %q, want application/problem+json", what, ct)
	}
	if err := json.Unmarshal(r.body, &pr); err != nil {
		t.Errorf("%s: problem body %s: %v", what, r.body, err)
		return pr
	}
	if pr.Code != code || pr.Status != status || pr.Title == "" {
		t.Errorf("%s: problem %+v, want code %q status %d and a title", what, pr, code, status)
	}
	return pr
}

// The API's records, as far as the tests read them.

type runRecord struct {
	ID            string   `json:"id"`
	Adapter       string   `json:"adapter"`
	Dataset       string   `json:"dataset"`
	TxnID         int64    `json:"txn_id"`
	Trigger       string   `json:"trigger"`
	Status        string   `json:"status"`
	StartedAt     string   `json:"started_at"`
	EndedAt       string   `json:"ended_at"`
	RowsRead      int64    `json:"rows_read"`
	RowsEstimated int64    `json:"rows_estimated"`
	Stats         runStats `json:"stats"`
	Version       int64    `json:"version"`
	Verified      bool     `json:"verified"`
	Error         string   `json:"error"`
	Code          string   `json:"code"`
	Node          string   `json:"node"`
	PlacedBy      string   `json:"placed_by"`
	Phases        []struct {
		Name string `json:"name"`
	} `json:"phases"`
}

type runStats struct {
	Rows      int64 `json:"rows"`
	Inserted  int64 `json:"inserted"`
	Updated   int64 `json:"updated"`
	Deleted   int64 `json:"deleted"`
	Unchanged int64 `json:"unchanged"`
}

type versionInfo struct {
	Dataset     string    `json:"dataset"`
	Version     int64     `json:"version"`
	CommittedAt time.Time `json:"committed_at"`
	Schema      struct {
		Columns []struct {
			Name       string `json:"name"`
			Kind       string `json:"kind"`
			SourceType string `json:"source_type"`
		} `json:"columns"`
		Key []string `json:"key"`
	} `json:"schema"`
	RestoredFrom int64      `json:"restored_from"`
	Tags         []string   `json:"tags"`
	Current      bool       `json:"current"`
	VerifiedAt   *time.Time `json:"verified_at"`
}

type datasetInfo struct {
	Name           string      `json:"name"`
	CurrentVersion int64       `json:"current_version"`
	Current        versionInfo `json:"current"`
	Versions       int         `json:"versions"`
}

type diffStats struct {
	From     int64 `json:"from"`
	To       int64 `json:"to"`
	Inserted int64 `json:"inserted"`
	Updated  int64 `json:"updated"`
	Deleted  int64 `json:"deleted"`
}

type gcReport struct {
	Dataset           string  `json:"dataset"`
	DryRun            bool    `json:"dry_run"`
	VersionsExpired   []int64 `json:"versions_expired"`
	CellsDeleted      int64   `json:"cells_deleted"`
	BytesReclaimed    int64   `json:"bytes_reclaimed"`
	InvalidTxnsPruned int64   `json:"invalid_txns_pruned"`
}

// createMySQLConnection creates data connection name to database db of the
// MariaDB at host:port, with the password by env: reference.
func (p *proc) createMySQLConnection(t testing.TB, name, host, port, user, db string) {
	t.Helper()
	spec := map[string]any{
		"name": name,
		"type": "mysql",
		"options": map[string]any{
			"host": host, "port": atoi(t, port), "user": user, "password": "env:" + pwEnv, "database": db,
		},
	}
	var got struct {
		Name    string         `json:"name"`
		Options map[string]any `json:"options"`
	}
	p.jsonCall(t, http.StatusCreated, "POST", "/v1/connections", spec, &got)
	if got.Options["password"] != "env:"+pwEnv {
		t.Errorf("connection %s shows password option %v, want the reference env:%s", name, got.Options["password"], pwEnv)
	}
	var res struct {
		OK      bool   `json:"ok"`
		Message string `json:"message"`
	}
	p.jsonCall(t, http.StatusOK, "POST", "/v1/connections/"+name+"/test", nil, &res)
	if !res.OK {
		t.Fatalf("connection %s test failed: %s", name, res.Message)
	}
}

// createAdapter creates an adapter from spec (a JSON object).
func (p *proc) createAdapter(t testing.TB, spec map[string]any) {
	t.Helper()
	p.jsonCall(t, http.StatusCreated, "POST", "/v1/adapters", spec, nil)
}

// runWait starts a run of adapter and waits for its end.
func (p *proc) runWait(adapter string) (runRecord, error) {
	r, err := p.call("POST", "/v1/adapters/"+adapter+"/runs?wait=true", nil)
	if err != nil {
		return runRecord{}, err
	}
	if r.status != http.StatusOK {
		return runRecord{}, fmt.Errorf("run of %s: status %d: %s", adapter, r.status, r.body)
	}
	var rec runRecord
	if err := json.Unmarshal(r.body, &rec); err != nil {
		return rec, fmt.Errorf("run of %s: %s: %w", adapter, r.body, err)
	}
	return rec, nil
}

// mustRun runs adapter to its end and requires success.
func (p *proc) mustRun(t testing.TB, adapter string) runRecord {
	t.Helper()
	rec, err := p.runWait(adapter)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != "succeeded" || rec.Version == 0 {
		t.Fatalf("run of %s: status %q version %d error %q", adapter, rec.Status, rec.Version, rec.Error)
	}
	return rec
}

func (p *proc) getRun(t testing.TB, id string) runRecord {
	t.Helper()
	var rec runRecord
	p.jsonCall(t, http.StatusOK, "GET", "/v1/runs/"+id, nil, &rec)
	return rec
}

func (p *proc) dataset(t testing.TB, name string) datasetInfo {
	t.Helper()
	var d datasetInfo
	p.jsonCall(t, http.StatusOK, "GET", "/v1/datasets/"+name, nil, &d)
	return d
}

func (p *proc) versions(t testing.TB, name string) []versionInfo {
	t.Helper()
	var out struct {
		Versions []versionInfo `json:"versions"`
	}
	p.jsonCall(t, http.StatusOK, "GET", "/v1/datasets/"+name+"/versions", nil, &out)
	return out.Versions
}

func versionIDs(vs []versionInfo) []int64 {
	ids := make([]int64, len(vs))
	for i, v := range vs {
		ids[i] = v.Version
	}
	return ids
}

// poll calls f until it returns true or the deadline passes.
func poll(t testing.TB, within time.Duration, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, within)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// startServerWith is startServer with extraConfig (YAML) appended to the
// config file.
func startServerWith(t *testing.T, secret, extraConfig string, extraEnv ...string) *proc {
	t.Helper()
	p := newServerWith(t, secret, extraConfig, extraEnv...)
	p.start()
	return p
}
