package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/signal"
	"syscall"

	"github.com/snapstore/snapstore/adapters"
)

// runCommand is `snapstore run [--force] ADAPTER`: one run of an adapter,
// waited for; it prints the run record as indented JSON and exits 1 unless
// the run succeeded.
type runCommand struct {
	stdout, stderr io.Writer
	force          bool
	hasConfig      bool // --config (or SNAPSTORE_CONFIG) was given
	adapter        string
}

// cmdRun runs one adapter once and exits non-zero unless the run succeeded.
// SIGTERM or SIGINT aborts the run (its version is not committed).
func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, cf := newFlagSet("run", stderr, true)
	c := &runCommand{stdout: stdout, stderr: stderr}
	fs.BoolVar(&c.force, "force", false, "commit even when a guard (allow_empty, max_shrink) would refuse the run")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError("usage: snapstore run [--force] ADAPTER")
	}
	c.adapter, c.hasConfig = pos[0], cf.config != ""
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	return runClient(ctx, cf, stderr, c)
}

func (c *runCommand) remote(ctx context.Context, srv *serverClient) error {
	q := url.Values{"wait": {"true"}}
	if c.force {
		q.Set("force", "true")
	}
	var rec adapters.RunRecord
	if err := srv.decode(ctx, http.MethodPost, "/v1/adapters/"+url.PathEscape(c.adapter)+"/runs", q, "run", &rec); err != nil {
		return err
	}
	if c.force && !rec.Forced {
		fmt.Fprintf(c.stderr, "snapstore: the server at %s did not force the run (it does not take the force parameter); stop it and use run --force --config FILE on the data directory\n", srv.base)
	}
	return c.print(rec)
}

func (c *runCommand) local(ctx context.Context, stk *stack, cfg *Config) error {
	log := newLogger(cfg, c.stderr)
	rec, err := stk.svc.StartRun(ctx, c.adapter, adapters.RunOptions{Trigger: "cli", Force: c.force})
	if errors.Is(err, adapters.ErrAdapterNotFound) && !c.hasConfig {
		return fmt.Errorf("%w; no server answered and no config file was given: an adapter of a config file exists only with --config FILE (or SNAPSTORE_CONFIG), e.g. snapstore run --config examples/snapstore.yaml %s", err, c.adapter)
	}
	if err != nil {
		return err
	}
	log.Info("run started", "run", rec.ID, "adapter", rec.Adapter, "dataset", rec.Dataset, "txn", rec.TxnID)
	rec, err = stk.svc.WaitRun(ctx, rec.ID)
	if err != nil && errors.Is(err, context.Canceled) {
		// Interrupted: closing the service aborts the run.
		return &exitError{code: 1, err: fmt.Errorf("interrupted; run %s aborted", rec.ID)}
	}
	if err != nil {
		return err
	}
	return c.print(rec)
}

// print writes the run record and fails unless the run succeeded.
func (c *runCommand) print(rec adapters.RunRecord) error {
	enc := json.NewEncoder(c.stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(rec); err != nil {
		return err
	}
	if rec.Status != adapters.RunSucceeded {
		return &exitError{code: 1, err: fmt.Errorf("run %s %s: %s", rec.ID, rec.Status, rec.Error)}
	}
	return nil
}
