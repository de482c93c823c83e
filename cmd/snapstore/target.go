package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/snapstore/snapstore/config"
	"github.com/snapstore/snapstore/daemon"
	"github.com/snapstore/snapstore/store/hbase"
)

// target is where a client command runs, picked by openTarget: a server,
// or the data directory opened in this process. Either way api speaks the
// HTTP API; on a data directory the API is served in this process over an
// in-memory pipe (daemon.Local), so both give the same answers, checks and
// errors, and each command is written once.
type target struct {
	api *apiClient
	cfg *config.Config
	// local is the opened data directory; nil for a server.
	local *daemon.Local
	// where names the target in messages: "the server at URL", "the data
	// directory DIR".
	where string
	stop  func() error // closes what openTarget opened
}

// close releases the target: on a data directory, the in-process API,
// then the adapters (aborting a run still going), datasets and store.
func (t *target) close() error {
	if t.stop == nil {
		return nil
	}
	return t.stop()
}

// withTarget loads the configuration, opens the target of cf and runs f
// on it; the target is closed when f returns.
func withTarget(ctx context.Context, cf *commonFlags, stderr io.Writer, f func(*target) error) error {
	t, err := openTarget(ctx, cf, stderr)
	if err != nil {
		return err
	}
	defer func() { _ = t.close() }()
	return cf.nameFlag(f(t))
}

// serverProbeTimeout bounds the question "does a server answer at the
// listen address?" of a command given neither --server nor --data.
const serverProbeTimeout = 700 * time.Millisecond

// checkToken refuses a --token (SNAPSTORE_TOKEN) that cannot reach a
// server as given: a control character (a line end read from a file with
// it, "\r" of a file written on Windows) makes Go's client refuse the
// header, which read as "no answer from the server", and a space at
// either end is dropped by the server, which then knows no such token.
// The message never shows the token.
func checkToken(tok string) error {
	bad := strings.TrimSpace(tok) != tok
	for i := 0; i < len(tok) && !bad; i++ {
		bad = tok[i] < 0x20 || tok[i] == 0x7f
	}
	if bad {
		return usageError("--token (or %s): the token has a control character or a space at an end (a line end copied with it?); give the token alone", envToken)
	}
	return nil
}

// parseServerURL reads --server (SNAPSTORE_SERVER): an http:// or
// https:// URL with a host, a port (if any) from 1 to 65535, no query and
// no user name or password. snapstore authenticates with a bearer token;
// a password in the URL would be sent as Basic authentication to every
// server the URL names and printed in each message that names the
// server, so it is refused, and the refusal shows the URL without it.
func parseServerURL(s string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimRight(s, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" {
		return nil, usageError("--server: want a URL such as http://127.0.0.1:8080, got %q", withoutUserinfo(s))
	}
	if u.User != nil {
		return nil, usageError("--server: %s names a user or password, which snapstore does not use; give a token with --token or SNAPSTORE_TOKEN", withoutUserinfo(s))
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 || p[0] == '0' {
			return nil, usageError("--server: port %q is not a port from 1 to 65535", p)
		}
	}
	return u, nil
}

// withoutUserinfo is s with whatever precedes an "@" in the authority of
// a URL (user name and password) replaced by "xxxxx", so that a message
// quoting a mistyped --server does not show a password. It works on text
// that does not parse as a URL too.
func withoutUserinfo(s string) string {
	i := strings.Index(s, "://")
	if i < 0 {
		i = -3
	}
	rest := s[i+3:]
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	at := strings.LastIndex(rest[:end], "@")
	if at < 0 {
		return s
	}
	return s[:i+3] + "xxxxx" + rest[at:]
}

// openTarget picks where a client command runs (the choice is the
// user's, and said): --server URL is that server; --data DIR is that data
// directory, opened here whatever answers on the network (both is a usage
// error); with neither, the server at the configured listen address when
// one answers there, else the configured data directory, and stderr says
// which; when that data directory does not exist either, nothing is
// created and the error names both (exit code 3).
func openTarget(ctx context.Context, cf *commonFlags, stderr io.Writer) (*target, error) {
	cfg, err := loadConfig(cf, os.Environ())
	if err != nil {
		return nil, err
	}
	if !cf.dataSet {
		if err := checkToken(cf.token); err != nil {
			return nil, err
		}
	}
	switch {
	case cf.server != "" && cf.dataSet:
		return nil, usageError("give --server URL (a server) or --data DIR (a data directory in this process), not both")
	case cf.server != "":
		u, err := parseServerURL(cf.server)
		if err != nil {
			return nil, err
		}
		tc, notes, err := clientTLS(cf, cfg)
		if err != nil {
			return nil, err
		}
		return remoteTarget(cfg, u, cf.token, tc, notes), nil
	case cf.dataSet:
		return openLocal(ctx, cfg, stderr)
	}
	tc, notes, err := clientTLS(cf, cfg)
	if err != nil {
		return nil, err
	}
	u := localURL(cfg)
	if at := serverAt(ctx, u, tc); at != nil {
		// Say which server answers: another snapstore on the default port
		// would otherwise answer silently.
		how := ""
		if at.Scheme != u.Scheme {
			how = "it serves HTTPS; "
		}
		fmt.Fprintf(stderr, "snapstore: using the server at %s (%s--server URL or --data DIR to choose)\n", at, how)
		return remoteTarget(cfg, at, cf.token, tc, notes), nil
	}
	if cfg.Storage.Backend != "hbase" {
		// A data directory opened here would be created: a command run
		// where there is none most likely meant a server that is not up.
		if _, err := os.Stat(cfg.Data); errors.Is(err, fs.ErrNotExist) {
			return nil, &exitError{code: exitUnreachable, err: fmt.Errorf("no server at %s and no data directory at %s; give --server URL (or SNAPSTORE_LISTEN, the address of the server) or --data DIR", u, cfg.Data)}
		}
	}
	fmt.Fprintf(stderr, "snapstore: no server at %s; using %s (--server URL or --data DIR to choose)\n", u, storageText(cfg))
	return openLocal(ctx, cfg, stderr)
}

// remoteTarget is the server at u, reached with tc; notes are what a
// refused handshake adds to its message (clientTLS).
func remoteTarget(cfg *config.Config, u *url.URL, token string, tc *tls.Config, notes tlsNotes) *target {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tc
	// No redirect is followed: Go's client keeps the Authorization header
	// on a redirect to the same host name whatever the scheme, so an
	// https:// server redirecting to http:// would have the token sent in
	// clear. The API redirects none of its routes (apiClient.do says
	// where a server pointed).
	hc := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return &target{
		api:   &apiClient{base: u, token: token, hc: hc, tls: notes},
		cfg:   cfg,
		where: "the server at " + u.String(),
		stop:  func() error { hc.CloseIdleConnections(); return nil },
	}
}

// serverAt is the URL of the snapstore server that answers at u's
// address, nil when none does. A server that serves HTTPS answers a
// plain request with 400 "Client sent an HTTP request to an HTTPS
// server" (net/http); for an http:// u (the listen address of a config
// without tls, such as SNAPSTORE_LISTEN alone) that server is asked
// again over HTTPS and, when it answers, is the server at u's address:
// the command then verifies its certificate as usual, rather than take
// the data directory the server holds, or call nothing there.
func serverAt(ctx context.Context, u *url.URL, tc *tls.Config) *url.URL {
	ok, https := probeServer(ctx, u, tc)
	if ok {
		return u
	}
	if !https || u.Scheme != "http" {
		return nil
	}
	s := *u
	s.Scheme = "https"
	if ok, _ := probeServer(ctx, &s, tc); ok {
		return &s
	}
	return nil
}

// snapstoreAnswers reports whether a snapstore server answers /healthz at
// u within serverProbeTimeout. Over https it presents tc's client
// certificate but does not verify the server's: the probe only learns
// whether something answers and sends no secret. A TLS server that
// refuses the handshake with an alert (one that asks for a client
// certificate tc does not have) counts as answering: it is there, and
// the command's request then says why it is refused.
func snapstoreAnswers(ctx context.Context, u *url.URL, tc *tls.Config) bool {
	ok, _ := probeServer(ctx, u, tc)
	return ok
}

// probeServer is snapstoreAnswers, and also reports whether a plain
// request at u was answered as one sent to an HTTPS server.
func probeServer(ctx context.Context, u *url.URL, tc *tls.Config) (answers, https bool) {
	ctx, cancel := context.WithTimeout(ctx, serverProbeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String()+"/healthz", nil)
	if err != nil {
		return false, false
	}
	tr := &http.Transport{}
	if tc != nil {
		tr.TLSClientConfig = tc.Clone()
		tr.TLSClientConfig.InsecureSkipVerify = true
	}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		// crypto/tls reports an alert the server sent as "remote error:
		// tls: ..." and has no exported type for it.
		return u.Scheme == "https" && strings.Contains(err.Error(), "remote error: tls:"), false
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<12))
	if resp.StatusCode == http.StatusBadRequest {
		return false, u.Scheme == "http" && strings.Contains(string(body), "HTTP request to an HTTPS server")
	}
	var h struct {
		Status string `json:"status"`
	}
	return resp.StatusCode == http.StatusOK && json.Unmarshal(body, &h) == nil && h.Status == "ok", false
}

// storageText names the storage a client command opens in this process:
// "the data directory ./data", or with HBase its table and gateway.
func storageText(c *config.Config) string {
	if c.Storage.Backend == "hbase" {
		h := hbase.Options{Addr: c.Storage.HBase.Thrift, Namespace: c.Storage.HBase.Namespace, Table: c.Storage.HBase.Table}
		h.EnsureDefaults()
		return fmt.Sprintf("the HBase table %s:%s through the gateway %s", h.Namespace, h.Table, h.Addr)
	}
	return "the data directory " + c.Data
}

// openLocal opens cfg's data directory in this process
// (daemon.OpenLocal) and speaks the API to it over a pipe. A data
// directory that a server holds is exit code 3, naming --server.
func openLocal(ctx context.Context, cfg *config.Config, stderr io.Writer) (*target, error) {
	lcfg := *cfg
	if lcfg.Log.Level == "info" {
		lcfg.Log.Level = "warn" // the command's output is what the user reads
	}
	log := lcfg.NewLogger(stderr)
	local, err := daemon.OpenLocal(ctx, &lcfg, log, buildVersion())
	if err != nil {
		if ce := configExit(err); ce != err {
			return nil, ce
		}
		if daemon.DirLocked(err) {
			return nil, &exitError{code: exitUnreachable, err: fmt.Errorf("%w: give --server URL to ask it", err)}
		}
		return nil, &exitError{code: exitUnreachable, err: fmt.Errorf("opening %s: %w", storageText(cfg), err)}
	}
	t := &target{
		// The pipe dials no address; the host is loopback because a server
		// without tokens answers no other (server/browser.go).
		api:   &apiClient{base: &url.URL{Scheme: "http", Host: "localhost"}, hc: local.Client(), local: true},
		cfg:   cfg,
		local: local,
		where: storageText(cfg),
		stop:  local.Close,
	}
	return t, nil
}
