package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os/signal"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/snapstore/snapstore/adapters"
)

const runsHelp = `Runs of the adapters: the newest ones, one run with its phases and its error
in full, and a running run followed to its end with a progress bar.`

// cmdRuns is `snapstore runs list|show|follow`.
func cmdRuns(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runGroup(ctx, "runs", runsHelp, []subcommand{
		{"list", "[--adapter A] [--status S] [--limit N]", "the newest runs, newest first", runsList},
		{"show", "RUN", "one run: phases, stats, error", runsShow},
		{"follow", "RUN", "follow a running run to its end (a progress bar on a terminal)", runsFollow},
	}, args, stdout, stderr)
}

func runsList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newCmdLine("runs list", "[--adapter ADAPTER] [--status STATUS] [--limit N]",
		"The newest runs of every adapter, or of one, newest first; --status running, waiting, succeeded, failed, aborted or skipped keeps those.", flagsClient, stdout)
	adapter := c.fs.String("adapter", "", "only this `adapter`'s runs")
	status := c.fs.String("status", "", "only runs of this `status`")
	limit := c.intFlag("limit", 20, "most `runs`, 1 to 1000")
	request := func([]string) (string, url.Values) {
		q := url.Values{"limit": {strconv.Itoa(*limit)}}
		if *adapter != "" {
			q.Set("adapter", *adapter)
		}
		if *status != "" {
			q.Set("status", *status)
		}
		return "/v1/runs", q
	}
	type answer struct {
		Runs []adapters.RunRecord `json:"runs"`
	}
	return readCommand(ctx, c, args, stderr, 0, request, func(_ []string, body answer) error { return runsTable(stdout, body.Runs) })
}

// runsTable prints runs, one a line: id, adapter, status (and code),
// trigger, start, duration, rows read, the version committed.
func runsTable(w io.Writer, runs []adapters.RunRecord) error {
	now := time.Now()
	// In a cluster (some run names its node) the table says where each
	// run ran and which node placed it there.
	clustered := slices.ContainsFunc(runs, func(r adapters.RunRecord) bool { return r.Node != "" || r.PlacedBy != "" })
	header := []string{"RUN", "ADAPTER", "STATUS", "TRIGGER", "STARTED", "TOOK", "ROWS READ", "VERSION"}
	if clustered {
		header = append(header, "NODE", "PLACED BY")
	}
	tb := newTable(w, header...)
	for _, r := range runs {
		status := runStatusText(r)
		took := ""
		switch {
		case r.End != nil:
			took = shortDuration(r.End.Sub(r.Start))
		case r.Status == adapters.RunRunning:
			took = shortDuration(now.Sub(r.Start)) + "..."
		}
		version := ""
		if r.Version != 0 {
			version = fmt.Sprint(r.Version)
		}
		cells := []string{r.ID, r.Adapter, status, r.Trigger, timeText(&r.Start), took, count(r.RowsRead), version}
		if clustered {
			cells = append(cells, r.Node, r.PlacedBy)
		}
		tb.row(cells...)
	}
	return tb.flush()
}

func runsShow(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newCmdLine("runs show", "RUN", "One run: adapter, dataset, status and code, trigger, times, rows, the changes it committed, its phases, and its error in full.", flagsClient, stdout)
	request := func(pos []string) (string, url.Values) { return pathOf("/v1/runs/", pos[0]), nil }
	return readCommand(ctx, c, args, stderr, 1, request, func(_ []string, rec adapters.RunRecord) error { return printRun(stdout, rec) })
}

const runsFollowHelp = `Follow a run to its end: a progress bar on a terminal (rows read out of the
estimate, rate, time left), one line a phase elsewhere, both on stderr;
then the run record on stdout. Exit code 0 when the run succeeded, 1
otherwise. Ctrl-C stops following; a server's run goes on.`

func runsFollow(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newCmdLine("runs follow", "RUN", runsFollowHelp, flagsClient, stdout)
	pos, err := c.parseN(args, 1, 1)
	if err != nil {
		return err
	}
	sigCtx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	return withTarget(ctx, c.cf, stderr, func(t *target) error {
		rec, err := followRun(sigCtx, t.api, pos[0], stderr, isTerminal(stderr), terminalWidth(stderr))
		if err != nil && sigCtx.Err() != nil && ctx.Err() == nil {
			return errInterruptedFollow(pos[0], t.where)
		}
		if err != nil {
			return err
		}
		var raw []byte
		if c.cf.json() {
			raw, _ = json.Marshal(rec)
		}
		return runResult(stdout, c.cf, rec, raw)
	})
}

// runStatusText is a run's status with its code when that says more:
// "failed (resource_not_found)".
func runStatusText(r adapters.RunRecord) string {
	status := string(r.Status)
	if r.Code != "" && r.Code != status {
		status += " (" + r.Code + ")"
	}
	return status
}
