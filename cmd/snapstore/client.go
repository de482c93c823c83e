package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/snapstore/snapstore/server"
	"github.com/snapstore/snapstore/snapshot"
)

// clientCommand is a client command (run, get, scan, versions) once its
// flags and arguments are parsed: one request that is either sent to a
// running server or answered from the data directory. runClient picks the
// side; each command implements both, with the same output.
type clientCommand interface {
	// remote sends the request to a server.
	remote(ctx context.Context, srv *serverClient) error
	// local answers it from the data directory, opened as stk with the
	// configuration cfg.
	local(ctx context.Context, stk *stack, cfg *Config) error
}

// runClient loads the configuration, opens the target (openTarget) and runs
// c on it; a data directory it opened is closed when c returns.
func runClient(ctx context.Context, cf *commonFlags, stderr io.Writer, c clientCommand) error {
	cfg, err := loadConfig(cf, os.Environ())
	if err != nil {
		return err
	}
	srv, stk, err := openTarget(ctx, cf, cfg, stderr)
	if err != nil {
		return err
	}
	if srv != nil {
		return c.remote(ctx, srv)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = stk.close(ctx)
	}()
	return c.local(ctx, stk, cfg)
}

// openTarget picks where a client command runs: the server named by
// --server, else a server answering on the configured listen address, else
// the local data directory. It returns the server or the opened stack.
func openTarget(ctx context.Context, cf *commonFlags, cfg *Config, stderr io.Writer) (*serverClient, *stack, error) {
	hc := &http.Client{}
	if cf.server != "" {
		u, err := url.Parse(strings.TrimRight(cf.server, "/"))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, nil, usageError("--server: want a URL such as http://127.0.0.1:8080, got %q", cf.server)
		}
		return &serverClient{base: u, token: cf.token, hc: hc}, nil, nil
	}
	u := &url.URL{Scheme: "http", Host: cfg.Listen}
	pctx, cancel := context.WithTimeout(ctx, 700*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(pctx, http.MethodGet, u.String()+"/healthz", nil)
	if resp, err := hc.Do(req); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			// Say which server answers: another snapstore on the default
			// port would otherwise answer silently.
			fmt.Fprintf(stderr, "snapstore: using the server at %s (--server URL to choose another)\n", u)
			return &serverClient{base: u, token: cf.token, hc: hc}, nil, nil
		}
	}
	// No server: open the data directory. Logs go to stderr at warn.
	lcfg := *cfg
	if lcfg.Log.Level == "info" {
		lcfg.Log.Level = "warn"
	}
	stk, err := openStack(ctx, &lcfg, newLogger(&lcfg, stderr), nil, false)
	if err != nil {
		return nil, nil, fmt.Errorf("no server answers at %s and the data dir could not be opened (%w); start `snapstore serve` or give --server", u, err)
	}
	return nil, stk, nil
}

// serverClient sends the requests of the client commands to a server.
type serverClient struct {
	base  *url.URL
	token string // bearer token; "" sends none
	hc    *http.Client
}

// do sends one request; a non-2xx answer becomes an error carrying the
// problem's code and detail.
func (s *serverClient) do(ctx context.Context, method, path string, q url.Values, accept string) (*http.Response, error) {
	u := *s.base
	u.RawPath = u.Path + path
	u.Path, _ = url.PathUnescape(u.RawPath)
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, method, u.String(), nil)
	if err != nil {
		return nil, err
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	return s.roundTrip(req)
}

// send sends one request with a JSON body (nil for none) and decodes the
// JSON answer into v (nil for none); what names the answer in an error.
func (s *serverClient) send(ctx context.Context, method, path string, body any, what string, v any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.base.String()+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.roundTrip(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if v == nil {
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return fmt.Errorf("decoding the %s: %w", what, err)
	}
	return nil
}

// roundTrip sends req with the bearer token; a non-2xx answer becomes an
// error carrying the problem's code and detail.
func (s *serverClient) roundTrip(req *http.Request) (*http.Response, error) {
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		var p server.Problem
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		if json.Unmarshal(body, &p) == nil && p.Code != "" {
			if p.Field != "" {
				return nil, fmt.Errorf("HTTP %d %s (field %s): %s", resp.StatusCode, p.Code, p.Field, p.Detail)
			}
			return nil, fmt.Errorf("HTTP %d %s: %s", resp.StatusCode, p.Code, p.Detail)
		}
		return nil, fmt.Errorf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(body)))
	}
	return resp, nil
}

// copyGet sends a GET and copies the response body to w: get and scan print
// what the server sends.
func (s *serverClient) copyGet(ctx context.Context, w io.Writer, path string, q url.Values, accept string) error {
	resp, err := s.do(ctx, http.MethodGet, path, q, accept)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(w, resp.Body)
	return err
}

// decode sends one request and decodes its JSON answer into v; what names
// the answer in an error.
func (s *serverClient) decode(ctx context.Context, method, path string, q url.Values, what string, v any) error {
	resp, err := s.do(ctx, method, path, q, "application/json")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return fmt.Errorf("decoding the %s: %w", what, err)
	}
	return nil
}

// atFlags are the version selector flags of the read commands (get, scan).
type atFlags struct {
	version int64
	asOf    string
	tag     string
}

func (a *atFlags) register(fs *flag.FlagSet) {
	fs.Int64Var(&a.version, "version", 0, "read this version")
	fs.StringVar(&a.asOf, "as-of", "", "read the version current at this RFC 3339 time")
	fs.StringVar(&a.tag, "tag", "", "read the version with this tag")
}

// query sets the selector's query parameters of the HTTP API.
func (a *atFlags) query(q url.Values) {
	if a.version != 0 {
		q.Set("version", strconv.FormatInt(a.version, 10))
	}
	if a.asOf != "" {
		q.Set("as_of", a.asOf)
	}
	if a.tag != "" {
		q.Set("tag", a.tag)
	}
}

// reader opens a reader of dataset at the selected version.
func (a *atFlags) reader(ctx context.Context, db *snapshot.DB, dataset string) (*snapshot.Reader, error) {
	at := snapshot.At{Version: a.version, Tag: a.tag}
	if a.asOf != "" {
		t, err := time.Parse(time.RFC3339Nano, a.asOf)
		if err != nil {
			return nil, usageError("--as-of: want an RFC 3339 time, got %q", a.asOf)
		}
		at.AsOf = &t
	}
	return db.Reader(ctx, dataset, at)
}
