package console

import (
	"strings"
	"testing"
	"time"

	"github.com/snapstore/snapstore/adapters"
	"github.com/snapstore/snapstore/snapshot"
)

func TestFormatDuration(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0ms"},
		{400 * time.Microsecond, "0ms"},
		{42*time.Millisecond + 600*time.Microsecond, "43ms"},
		{999 * time.Millisecond, "999ms"},
		{999600 * time.Microsecond, "1.0s"},
		{time.Second, "1.0s"},
		{1440 * time.Millisecond, "1.4s"},
		{59 * time.Second, "59.0s"},
		{2*time.Minute + 31*time.Second + 400*time.Millisecond, "2m31s"},
	} {
		if got := formatDuration(c.d); got != c.want {
			t.Errorf("formatDuration(%v) = %q, want %q", c.d, got, c.want)
		}
	}
}

// TestRowsSparkline: the line is drawn from zero rows, so 200,000 ->
// 199,902 -> 200,000 is nearly flat, at the top; a drop to half is half
// the height; the title and labels say the range.
func TestRowsSparkline(t *testing.T) {
	vs := func(rows ...int64) []snapshot.VersionInfo { // newest first, as Versions lists them
		out := make([]snapshot.VersionInfo, len(rows))
		for i, r := range rows {
			out[len(rows)-1-i].Stats.Rows = r
		}
		return out
	}
	s := rowsSparkline(vs(200000, 199902, 200000))
	if s.Points != "0.0,2.0 50.0,2.0 100.0,2.0" || s.Min != "199,902" || s.Max != "200,000" || !strings.Contains(s.Title, "drawn from zero, between 199,902 and 200,000") {
		t.Errorf("a small change: %+v", s)
	}
	// The title says which way the rows went, not only their range.
	if s = rowsSparkline(vs(4, 3)); s.Title != "rows over 2 kept versions, oldest 4, newest 3; the line is drawn from zero, between 3 and 4" {
		t.Errorf("a shrink: title %q", s.Title)
	}
	if s = rowsSparkline(vs(100, 50, 0)); s.Points != "0.0,2.0 50.0,12.0 100.0,22.0" {
		t.Errorf("to half, then none: %q", s.Points)
	}
	if s = rowsSparkline(vs(0, 0)); s.Points != "0.0,22.0 100.0,22.0" {
		t.Errorf("no rows: %q", s.Points)
	}
	if rowsSparkline(vs(5)) != nil {
		t.Error("a line of one version")
	}
}

// TestReadTextSeveralTables: the run page of a run of several tables of
// mode full says how many tables were read in full when not all were.
func TestReadTextSeveralTables(t *testing.T) {
	rec := adapters.RunRecord{Mode: adapters.ModeFull, Tables: []adapters.RunTable{
		{Name: "a", Mode: adapters.ModeFull}, {Name: "b", Mode: adapters.ModeChunks}, {Name: "c", Mode: adapters.ModeChunks}}}
	if got, want := readText(rec), "1 of 3 tables in full; each table's read below"; got != want {
		t.Errorf("readText = %q, want %q", got, want)
	}
	for i := range rec.Tables {
		rec.Tables[i].Mode = adapters.ModeFull
	}
	if got := readText(rec); got != "in full" {
		t.Errorf("every table in full: readText = %q, want %q", got, "in full")
	}
}

// TestReadTextReason: a run or a table read in full although its source
// has checksums says why (RunRecord.ModeReason, RunTable.ModeReason).
func TestReadTextReason(t *testing.T) {
	why := "its schema changed since the current version"
	if got, want := readText(adapters.RunRecord{Mode: adapters.ModeFull, ModeReason: why}), "in full ("+why+")"; got != want {
		t.Errorf("readText = %q, want %q", got, want)
	}
	ok := adapters.RunRecord{Status: adapters.RunSucceeded}
	if got, want := tableReadText(ok, adapters.RunTable{Mode: adapters.ModeFull, ModeReason: why}), "in full ("+why+")"; got != want {
		t.Errorf("tableReadText = %q, want %q", got, want)
	}
	// A table a run drops, and one a failed run would have dropped.
	if got := tableReadText(ok, adapters.RunTable{Dropped: true}); !strings.HasPrefix(got, "dropped:") {
		t.Errorf("a table dropped by a run that succeeded: %q", got)
	}
	failed := adapters.RunRecord{Status: adapters.RunFailed}
	if got := tableReadText(failed, adapters.RunTable{Dropped: true}); !strings.HasPrefix(got, "would have been dropped:") {
		t.Errorf("a table a failed run would have dropped: %q", got)
	}
}
