package main

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/snapstore/snapstore/adapters"
	"github.com/snapstore/snapstore/server"
	"github.com/snapstore/snapstore/snapshot"
)

// target is where a client command reads: a server over HTTP or the local
// data directory.
type target struct {
	base  *url.URL // set for HTTP
	token string
	hc    *http.Client
	stk   *stack // set for local
}

// openTarget picks the server named by --server, else a server answering on
// the configured listen address, else the local data directory.
func openTarget(ctx context.Context, cf *commonFlags, cfg *Config, stderr io.Writer) (*target, error) {
	hc := &http.Client{}
	if cf.server != "" {
		u, err := url.Parse(strings.TrimRight(cf.server, "/"))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, usageError("--server: want a URL such as http://127.0.0.1:8080, got %q", cf.server)
		}
		return &target{base: u, token: cf.token, hc: hc}, nil
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
			return &target{base: u, token: cf.token, hc: hc}, nil
		}
	}
	// No server: open the data directory. Logs go to stderr at warn.
	lcfg := *cfg
	if lcfg.Log.Level == "info" {
		lcfg.Log.Level = "warn"
	}
	stk, err := openStack(ctx, &lcfg, newLogger(&lcfg, stderr), nil, false)
	if err != nil {
		return nil, fmt.Errorf("no server answers at %s and the data dir could not be opened (%w); start `snapstore serve` or give --server", u, err)
	}
	return &target{stk: stk}, nil
}

func (t *target) close() error {
	if t.stk == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return t.stk.close(ctx)
}

// do sends one request; a non-2xx answer becomes an error carrying the
// problem's code and detail.
func (t *target) do(ctx context.Context, method, path string, q url.Values, accept string) (*http.Response, error) {
	u := *t.base
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
	if t.token != "" {
		req.Header.Set("Authorization", "Bearer "+t.token)
	}
	resp, err := t.hc.Do(req)
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

// atFlags are the version selector flags of read commands.
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

func (a *atFlags) at() (snapshot.At, error) {
	at := snapshot.At{Version: a.version, Tag: a.tag}
	if a.asOf != "" {
		t, err := time.Parse(time.RFC3339Nano, a.asOf)
		if err != nil {
			return at, usageError("--as-of: want an RFC 3339 time, got %q", a.asOf)
		}
		at.AsOf = t
	}
	return at, nil
}

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func splitColumns(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func cmdGet(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, cf := newFlagSet("get", stderr, true)
	var at atFlags
	at.register(fs)
	columns := fs.String("columns", "", "comma-separated columns to return")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) < 2 {
		return usageError("usage: snapstore get DATASET KEY... (one argument per key column)")
	}
	cfg, err := loadConfig(cf, os.Environ())
	if err != nil {
		return err
	}
	t, err := openTarget(ctx, cf, cfg, stderr)
	if err != nil {
		return err
	}
	defer t.close()
	ds, key := pos[0], pos[1:]
	if t.base != nil {
		q := url.Values{}
		at.query(q)
		if *columns != "" {
			q.Set("columns", *columns)
		}
		path := "/v1/datasets/" + url.PathEscape(ds) + "/rows"
		for _, k := range key {
			path += "/" + url.PathEscape(k)
		}
		resp, err := t.do(ctx, http.MethodGet, path, q, "application/json")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		_, err = io.Copy(stdout, resp.Body) // the body ends with a newline
		return err
	}
	sel, err := at.at()
	if err != nil {
		return err
	}
	r, err := t.stk.db.Reader(ctx, ds, sel)
	if err != nil {
		return err
	}
	defer r.Close()
	k, err := r.ParseKey(key)
	if err != nil {
		return err
	}
	row, err := r.Get(ctx, k, splitColumns(*columns))
	if err != nil {
		return err
	}
	v := r.Version()
	_, err = stdout.Write(append(server.AppendRowResult(nil, v.Dataset, v.Version, row), '\n'))
	return err
}

func cmdScan(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, cf := newFlagSet("scan", stderr, true)
	var at atFlags
	at.register(fs)
	var start, end, prefix listFlag
	fs.Var(&start, "start", "first key included (repeat once per key column)")
	fs.Var(&end, "end", "first key excluded (repeat once per key column)")
	fs.Var(&prefix, "prefix", "key prefix (repeat once per key column)")
	columns := fs.String("columns", "", "comma-separated columns to return")
	limit := fs.Int("limit", 0, "most rows (0: all)")
	format := fs.String("format", "ndjson", "ndjson or csv")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError("usage: snapstore scan DATASET [--format ndjson|csv] [--start K]... [--limit N]")
	}
	if *format != "ndjson" && *format != "csv" {
		return usageError("--format: want ndjson or csv, got %q", *format)
	}
	cfg, err := loadConfig(cf, os.Environ())
	if err != nil {
		return err
	}
	t, err := openTarget(ctx, cf, cfg, stderr)
	if err != nil {
		return err
	}
	defer t.close()
	ds := pos[0]
	if t.base != nil {
		q := url.Values{}
		at.query(q)
		for _, f := range []struct {
			n string
			v listFlag
		}{{"start", start}, {"end", end}, {"prefix", prefix}} {
			for _, v := range f.v {
				q.Add(f.n, v)
			}
		}
		if *columns != "" {
			q.Set("columns", *columns)
		}
		if *limit > 0 {
			q.Set("limit", strconv.Itoa(*limit))
		}
		accept := "application/x-ndjson"
		if *format == "csv" {
			accept = "text/csv"
		}
		resp, err := t.do(ctx, http.MethodGet, "/v1/datasets/"+url.PathEscape(ds)+"/rows", q, accept)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		_, err = io.Copy(stdout, resp.Body)
		return err
	}
	sel, err := at.at()
	if err != nil {
		return err
	}
	r, err := t.stk.db.Reader(ctx, ds, sel)
	if err != nil {
		return err
	}
	defer r.Close()
	opts := snapshot.ScanOptions{Columns: splitColumns(*columns), Limit: *limit}
	for _, f := range []struct {
		v   listFlag
		dst *[]snapshot.Value
	}{{start, &opts.Start}, {end, &opts.End}, {prefix, &opts.Prefix}} {
		if len(f.v) > 0 {
			if *f.dst, err = r.ParseKey(f.v); err != nil {
				return err
			}
		}
	}
	it, err := r.Scan(ctx, opts)
	if err != nil {
		return err
	}
	defer it.Close()
	bw := bufio.NewWriter(stdout)
	defer bw.Flush()
	var cw *csv.Writer
	if *format == "csv" {
		cw = csv.NewWriter(bw)
		defer cw.Flush()
	}
	var b []byte
	var rec []string
	n := 0
	for it.Next() {
		row := it.Row()
		if cw != nil {
			if n == 0 {
				_ = cw.Write(row.Columns)
			}
			rec = rec[:0]
			for _, v := range row.Values {
				rec = append(rec, server.ValueText(v))
			}
			_ = cw.Write(rec)
		} else {
			b = append(server.AppendRowJSON(b[:0], row), '\n')
			if _, err := bw.Write(b); err != nil {
				return err
			}
		}
		n++
	}
	return it.Err()
}

func cmdVersions(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, cf := newFlagSet("versions", stderr, true)
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError("usage: snapstore versions DATASET [--json]")
	}
	cfg, err := loadConfig(cf, os.Environ())
	if err != nil {
		return err
	}
	t, err := openTarget(ctx, cf, cfg, stderr)
	if err != nil {
		return err
	}
	defer t.close()
	var vs []snapshot.VersionInfo
	if t.base != nil {
		resp, err := t.do(ctx, http.MethodGet, "/v1/datasets/"+url.PathEscape(pos[0])+"/versions", nil, "application/json")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		var body struct {
			Versions []json.RawMessage `json:"versions"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			return fmt.Errorf("decoding the versions: %w", err)
		}
		if *asJSON {
			return json.NewEncoder(stdout).Encode(body)
		}
		for _, raw := range body.Versions {
			var v versionRow
			if err := json.Unmarshal(raw, &v); err != nil {
				return fmt.Errorf("decoding a version: %w", err)
			}
			vs = append(vs, snapshot.VersionInfo{Version: v.Version, CommittedAt: v.CommittedAt, Stats: v.Stats, Tags: v.Tags, Current: v.Current})
		}
	} else {
		if vs, err = t.stk.db.Versions(ctx, pos[0]); err != nil {
			return err
		}
		if *asJSON {
			return json.NewEncoder(stdout).Encode(map[string]any{"versions": vs})
		}
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "VERSION\tCOMMITTED\tROWS\tINSERTED\tUPDATED\tDELETED\tTAGS\tCURRENT")
	for _, v := range vs {
		cur := ""
		if v.Current {
			cur = "*"
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%d\t%d\t%s\t%s\n", v.Version, v.CommittedAt.Local().Format(time.DateTime), v.Stats.Rows, v.Stats.Inserted, v.Stats.Updated, v.Stats.Deleted, strings.Join(v.Tags, ","), cur)
	}
	return tw.Flush()
}

// versionRow is the part of a version the table shows.
type versionRow struct {
	Version     int64             `json:"version"`
	CommittedAt time.Time         `json:"committed_at"`
	Stats       snapshot.RunStats `json:"stats"`
	Tags        []string          `json:"tags"`
	Current     bool              `json:"current"`
}

// cmdRun runs one adapter once and exits non-zero unless the run succeeded.
// SIGTERM or SIGINT aborts the run (its version is not committed).
func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, cf := newFlagSet("run", stderr, true)
	force := fs.Bool("force", false, "commit even when a guard (allow_empty, max_shrink) would refuse the run")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError("usage: snapstore run [--force] ADAPTER")
	}
	cfg, err := loadConfig(cf, os.Environ())
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	t, err := openTarget(ctx, cf, cfg, stderr)
	if err != nil {
		return err
	}
	defer t.close()
	var rec adapters.RunRecord
	if t.base != nil {
		q := url.Values{"wait": {"true"}}
		if *force {
			q.Set("force", "true")
		}
		resp, err := t.do(ctx, http.MethodPost, "/v1/adapters/"+url.PathEscape(pos[0])+"/runs", q, "application/json")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(&rec); err != nil {
			return fmt.Errorf("decoding the run: %w", err)
		}
		if *force && !rec.Forced {
			fmt.Fprintf(stderr, "snapstore: the server at %s did not force the run (it does not take the force parameter); stop it and use run --force --config FILE on the data directory\n", t.base)
		}
	} else {
		log := newLogger(cfg, stderr)
		rec, err = t.stk.svc.StartRunWith(ctx, pos[0], adapters.RunOptions{Trigger: "cli", Force: *force})
		if errors.Is(err, adapters.ErrAdapterNotFound) && cf.config == "" {
			return fmt.Errorf("%w; no server answered and no config file was given: an adapter of a config file exists only with --config FILE (or SNAPSTORE_CONFIG), e.g. snapstore run --config examples/snapstore.yaml %s", err, pos[0])
		}
		if err != nil {
			return err
		}
		log.Info("run started", "run", rec.ID, "adapter", rec.Adapter, "dataset", rec.Dataset, "txn", rec.TxnID)
		rec, err = t.stk.svc.WaitRun(ctx, rec.ID)
		if err != nil && errors.Is(err, context.Canceled) {
			// Interrupted: closing the service aborts the run.
			return &exitError{code: 1, err: fmt.Errorf("interrupted; run %s aborted", rec.ID)}
		}
		if err != nil {
			return err
		}
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(rec); err != nil {
		return err
	}
	if rec.Status != adapters.RunSucceeded {
		return &exitError{code: 1, err: fmt.Errorf("run %s %s: %s", rec.ID, rec.Status, rec.Error)}
	}
	return nil
}
