package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/snapstore/snapstore/adapters"
)

// followPoll is how often a followed run's record is read again.
var followPoll = 250 * time.Millisecond

// followRun reads run id's record until the run ends and returns the
// ended record. On a terminal (bar) it redraws a progress bar on w: rows
// read out of the estimate, rate, time left, phase; elsewhere it writes
// one line a phase, in the order of the record's phases, each once when
// it is first seen: a log shows where a run spent its time. A phase that
// began and ended between two polls is written with how long it took, a
// read in progress with where it is (progressText). ctx ends the
// following, not the run.
func followRun(ctx context.Context, api *apiClient, id string, w io.Writer, bar bool, width int) (adapters.RunRecord, error) {
	var rec adapters.RunRecord
	said := 0 // rec.Phases[:said] have had their line
	sayPhases := func() {
		for ; said < len(rec.Phases); said++ {
			p := rec.Phases[said]
			switch {
			case p.End != nil:
				fmt.Fprintf(w, "run %s: %s (took %s)\n", rec.ID, p.Name, shortDuration(p.End.Sub(p.Start)))
			case p.Name == adapters.PhaseRead && rec.Progress != nil && rec.Progress.Phase == p.Name:
				fmt.Fprintf(w, "run %s: %s\n", rec.ID, progressText(rec))
			default:
				fmt.Fprintf(w, "run %s: %s\n", rec.ID, p.Name)
			}
		}
	}
	drawn := false
	clear := func() {
		if drawn {
			fmt.Fprint(w, "\r\x1b[K")
			drawn = false
		}
	}
	defer clear()
	tick := time.NewTicker(followPoll)
	defer tick.Stop()
	for {
		rec = adapters.RunRecord{}
		if _, err := api.get(ctx, pathOf("/v1/runs/", id), nil, &rec); err != nil {
			return rec, err
		}
		if !bar {
			sayPhases()
		}
		if rec.Status != adapters.RunRunning {
			return rec, nil
		}
		if bar {
			fmt.Fprint(w, "\r"+progressLine(rec, width)+"\x1b[K")
			drawn = true
		}
		select {
		case <-ctx.Done():
			return rec, ctx.Err()
		case <-tick.C:
		}
	}
}

// progressLine is the progress bar of a running run, at most width
// characters:
//
//	products read [██████████░░░░░░░░░░]  52.3%  104,448/~200,000 rows  20,480/s  4s left
func progressLine(rec adapters.RunRecord, width int) string {
	text := progressText(rec)
	pct := -1.0
	if rec.Progress != nil && rec.Progress.Percent != nil {
		pct = *rec.Progress.Percent
	}
	// The bar keeps its width while the text beside it grows, as long as
	// that text is shorter than a typical one ("read   39.6%
	// 118,784/~300,000 rows  411,368/s  400ms left").
	const textRoom = 50
	barWidth := min(40, width-1-len([]rune(rec.Adapter))-len(" [] ")-max(textRoom, len([]rune(text))))
	if barWidth < 10 {
		return truncate(rec.Adapter+" "+text, width-1)
	}
	fill := 0
	if pct >= 0 {
		fill = int(math.Round(pct / 100 * float64(barWidth)))
	}
	b := strings.Repeat("█", fill) + strings.Repeat("░", barWidth-fill)
	if pct < 0 {
		// No estimate: a bar that says so rather than a made-up share.
		b = strings.Repeat("·", barWidth)
	}
	return truncate(fmt.Sprintf("%s [%s] %s", rec.Adapter, b, text), width-1)
}

// progressText says where a running run is: phase, percent, rows read out
// of the estimate, rate, time left.
func progressText(rec adapters.RunRecord) string {
	parts := []string{phaseOf(rec)}
	p := rec.Progress
	if p != nil && p.Percent != nil {
		parts = append(parts, fmt.Sprintf("%5.1f%%", *p.Percent))
	}
	if rec.RowsRead > 0 || phaseOf(rec) != adapters.PhaseConnect {
		rows := count(rec.RowsRead)
		if rec.RowsEstimated > 0 {
			rows += "/~" + count(rec.RowsEstimated)
		}
		parts = append(parts, rows+" rows")
	}
	if p != nil && p.RowsPerSecond > 0 {
		parts = append(parts, count(int64(p.RowsPerSecond))+"/s")
	}
	if p != nil && p.SecondsLeft != nil {
		parts = append(parts, shortDuration(time.Duration(*p.SecondsLeft*float64(time.Second)))+" left")
	}
	return strings.Join(parts, "  ")
}

// phaseOf is the phase a run is in: connect, read or commit.
func phaseOf(rec adapters.RunRecord) string {
	if rec.Progress != nil && rec.Progress.Phase != "" {
		return rec.Progress.Phase
	}
	return string(rec.Status)
}

// truncate cuts s to n runes.
func truncate(s string, n int) string {
	r := []rune(s)
	if n < 1 || len(r) <= n {
		return s
	}
	return string(r[:n])
}

// runResult prints an ended run (a table, or its JSON record with
// --output json) and is the command's error: nil when it succeeded, else
// exit code 1 with the run's code and error.
func runResult(w io.Writer, cf *commonFlags, rec adapters.RunRecord, raw []byte) error {
	var err error
	if cf.json() {
		if raw == nil {
			err = encodeJSON(w, rec)
		} else {
			err = printJSON(w, raw)
		}
	} else {
		err = printRun(w, rec)
	}
	if err != nil {
		return err
	}
	if rec.Status != adapters.RunSucceeded {
		return &exitError{code: exitFailed, err: fmt.Errorf("run %s %s (%s): %s", rec.ID, rec.Status, rec.Code, runErrorText(rec))}
	}
	return nil
}

// printRun prints one run record as fields, its phases and its error in
// full.
func printRun(w io.Writer, rec adapters.RunRecord) error {
	now := time.Now()
	took := ""
	if rec.End != nil {
		took = shortDuration(rec.End.Sub(rec.Start))
	} else if !rec.Start.IsZero() {
		took = shortDuration(now.Sub(rec.Start)) + " so far"
	}
	version := ""
	switch {
	case rec.Verified:
		version = fmt.Sprintf("%d verified (nothing changed, no version committed)", rec.Version)
	case rec.Version != 0:
		version = fmt.Sprint(rec.Version)
	}
	st := rec.Stats
	kv := []string{
		"run", rec.ID,
		"adapter", rec.Adapter,
		"dataset", rec.Dataset,
		"status", string(rec.Status),
	}
	if rec.Code != "" {
		kv = append(kv, "code", rec.Code)
	}
	kv = append(kv,
		"trigger", rec.Trigger,
	)
	if rec.Node != "" || rec.PlacedBy != "" {
		kv = append(kv, "node", rec.Node, "placed by", rec.PlacedBy)
	}
	kv = append(kv,
		"started", timeText(&rec.Start),
		"took", took,
		"version", version,
		"read", readModeText(rec),
		"rows read", count(rec.RowsRead),
		"rows", count(st.Rows),
		"changes", fmt.Sprintf("%s inserted, %s updated, %s deleted", count(st.Inserted), count(st.Updated), count(st.Deleted)),
	)
	if rec.Status == adapters.RunRunning {
		kv = append(kv, "progress", progressText(rec))
	}
	if rec.Forced {
		kv = append(kv, "forced", "yes")
	}
	if err := printFields(w, kv...); err != nil {
		return err
	}
	if err := printRunTables(w, rec); err != nil {
		return err
	}
	if len(rec.Phases) > 0 {
		fmt.Fprintln(w)
		t := newTable(w, "PHASE", "STARTED", "TOOK")
		for _, p := range rec.Phases {
			d := ""
			if p.End != nil {
				d = shortDuration(p.End.Sub(p.Start))
			}
			t.row(p.Name, timeText(&p.Start), d)
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	if rec.Error != "" {
		fmt.Fprintf(w, "\nerror: %s\n", runErrorText(rec))
	}
	return nil
}

// printRunTables prints, for a run of several tables, the point of the
// source it read them at and each table's counts, and, when one was read
// in full although its source has checksums, why.
func printRunTables(w io.Writer, rec adapters.RunRecord) error {
	if p := rec.Point; p != nil {
		text := fmt.Sprintf("%s over %d connection(s)", p.Mode, p.Connections)
		if p.Position != "" {
			text += " at " + p.Position
		}
		if p.Reason != "" {
			text += "; " + p.Reason
		}
		fmt.Fprintf(w, "\npoint: %s\n", text)
	}
	if len(rec.Tables) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	header := []string{"TABLE", "READ", "ROWS READ", "ROWS", "INSERTED", "UPDATED", "DELETED"}
	why := slices.ContainsFunc(rec.Tables, func(tb adapters.RunTable) bool { return tb.ModeReason != "" })
	if why {
		header = append(header, "WHY")
	}
	t := newTable(w, header...)
	for _, tb := range rec.Tables {
		read := tb.Mode
		switch {
		case tb.Dropped && rec.Status == adapters.RunSucceeded:
			read = "dropped"
		case tb.Dropped:
			read = "would drop" // nothing was committed
		case tb.Mode == adapters.ModeChunks:
			read = fmt.Sprintf("chunks %d/%d", tb.Chunks-tb.ChunksSkipped, tb.Chunks)
		}
		row := []string{tb.Name, read, count(tb.RowsRead), count(tb.Stats.Rows), count(tb.Stats.Inserted), count(tb.Stats.Updated), count(tb.Stats.Deleted)}
		if why {
			row = append(row, tb.ModeReason)
		}
		t.row(row...)
	}
	return t.flush()
}

// readModeText says how a run read its source (RunRecord.Mode), "" when
// it did not say.
func readModeText(rec adapters.RunRecord) string {
	switch rec.Mode {
	case adapters.ModeChunks:
		return fmt.Sprintf("the changed key ranges: %s of %s (chunks)", count(int64(rec.Chunks-rec.ChunksSkipped)), count(int64(rec.Chunks)))
	case adapters.ModeVerify:
		if len(rec.Tables) > 0 {
			// A run of several tables is verify when no table changed,
			// however each was read (its own mode, in the tables' lines).
			return fmt.Sprintf("no table changed (verify): each table's read below, %s rows in all", count(rec.RowsRead))
		}
		return fmt.Sprintf("no rows: the checksums of all %s key ranges matched (verify)", count(int64(rec.Chunks)))
	case adapters.ModeFull:
		if full, all := rec.TablesInFull(); all > 0 && full < all {
			return fmt.Sprintf("%s of %s tables in full, each table's read below: %s rows (full)", count(int64(full)), count(int64(all)), count(rec.RowsRead))
		}
		if rec.ModeReason != "" {
			return "all rows (full): " + rec.ModeReason
		}
		return "all rows (full)"
	case adapters.ModeDiff:
		return "the source's changes since the version the current one copied (diff)"
	}
	return ""
}

// runErrorText is a run's error as the CLI says it, without control
// characters (printable: a source's error may quote a name or a value
// that holds some); the API's hint to start a refused run again with
// force=true names the flag here.
func runErrorText(rec adapters.RunRecord) string {
	text := printable(rec.Error)
	if rec.Code == "guard_refused" {
		return strings.Replace(text, "with force=true", "with --force", 1)
	}
	return text
}

// errInterruptedFollow is the error of a follow ended by Ctrl-C while the
// run goes on (a server's run); exit code 130.
func errInterruptedFollow(id string, where string) error {
	return &exitError{code: exitInterrupted, err: errors.New("stopped following; run " + id + " goes on in " + where + " (snapstore runs follow " + id + ")")}
}
