package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"os/signal"
	"syscall"

	"github.com/snapstore/snapstore/adapters"
)

const runHelp = `One run of an adapter, followed to its end: a progress bar on a terminal
(rows read out of the estimate, rate, time left), one line a phase
elsewhere, both on stderr; then the run record on stdout. Exit code 0 when
the run succeeded, 1 when it failed or a guard refused it (the record says
why: code and error).

Against a server the run is the server's: Ctrl-C stops following and the
run goes on (snapstore runs follow ID). On a data directory the run is this
process's: Ctrl-C aborts it, and nothing is committed. An adapter of the
config file exists there only with --config FILE.

--force commits even when a guard (allow_empty, max_shrink) would refuse
the run. --detach (a server only) prints the started run and returns.`

// cmdRun is `snapstore run ADAPTER`; `snapstore adapters run` is the same.
func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runAdapter(ctx, "run", args, stdout, stderr)
}

// runAdapter is the command `name` (run, adapters run): it parses args and
// runs the adapter they name.
func runAdapter(ctx context.Context, name string, args []string, stdout, stderr io.Writer) error {
	c := newCmdLine(name, "ADAPTER [--force] [--detach]", runHelp, flagsClient, stdout)
	force := c.fs.Bool("force", false, "commit even when a guard (allow_empty, max_shrink) would refuse the run")
	detach := c.fs.Bool("detach", false, "print the started run and return (a server only)")
	pos, err := c.parseN(args, 1, 1)
	if err != nil {
		return err
	}
	adapter := pos[0]
	sigCtx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	return withTarget(ctx, c.cf, stderr, func(t *target) error {
		var rec adapters.RunRecord
		if t.local != nil {
			if *detach {
				return usageError("--detach needs a server: a run on a data directory ends with this process")
			}
			var err error
			rec, err = t.local.Stack.Adapters.StartRun(ctx, adapter, adapters.RunOptions{Trigger: "cli", Force: *force})
			if errors.Is(err, adapters.ErrAdapterNotFound) && c.cf.config == "" {
				return fmt.Errorf("%w; an adapter of a config file exists here only with --config FILE (or %s), e.g. snapstore run --config examples/snapstore.yaml %s", err, envConfig, adapter)
			}
			if err != nil {
				return err
			}
		} else {
			q := url.Values{}
			if *force {
				q.Set("force", "true")
			}
			raw, err := t.api.send(ctx, http.MethodPost, pathOf("/v1/adapters/", adapter, "/runs"), q, nil, &rec)
			if err != nil {
				return err
			}
			if *detach {
				if c.cf.json() {
					return printJSON(stdout, raw)
				}
				return printRun(stdout, rec)
			}
		}
		ended, err := followRun(sigCtx, t.api, rec.ID, stderr, isTerminal(stderr), terminalWidth(stderr))
		if err != nil && sigCtx.Err() != nil && ctx.Err() == nil {
			if t.local != nil {
				return &exitError{code: exitInterrupted, err: fmt.Errorf("interrupted; run %s aborted, nothing committed", rec.ID)}
			}
			return errInterruptedFollow(rec.ID, t.where)
		}
		if err != nil {
			return err
		}
		return runResult(stdout, c.cf, ended, nil)
	})
}
