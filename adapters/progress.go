package adapters

import (
	"math"
	"time"
)

// The phases of a run, in the order they happen. A run that fails ends in
// the phase it failed in.
const (
	// PhaseConnect: the data connection's lease, the source table opened
	// and described, in chunk and verify modes the key ranges' checksums
	// computed (checksums.go), the snapshot run begun (a transaction id
	// allocated).
	PhaseConnect = "connect"
	// PhaseRead: rows streamed from the source into the run (snapshot.D5).
	PhaseRead = "read"
	// PhaseCommit: deleted rows found, the guards checked, the version
	// committed (snapshot.D3).
	PhaseCommit = "commit"
)

// RunPhase is one step of a run, with when it started and, once the next
// one started or the run ended, when it ended.
type RunPhase struct {
	Name  string     `json:"name"`
	Start time.Time  `json:"started_at"`
	End   *time.Time `json:"ended_at,omitempty"`
}

// RunProgress says how far a run has come. It is computed from the record
// each time the record is read (GetRun, ListRuns, StartRun, WaitRun) and is
// never stored.
//
// The total is an estimate: RunRecord.RowsEstimated is what the source
// says before the read (MySQL's information_schema.TABLES.TABLE_ROWS,
// which InnoDB samples and may be tens of percent off; SQLite's COUNT(*)
// inside the run's read transaction) or, when the source says nothing (a
// view, statistics not computed yet), the row count of the dataset's
// current version. So percent and seconds left are estimates too.
type RunProgress struct {
	// Phase is the phase in progress, "" once the run ended.
	Phase string `json:"phase,omitempty"`
	// Percent is the rows read out of the estimate, 0 to 100, one
	// decimal. A run reaches 100 only when it commits: until then it
	// stays at most 99, whatever the estimate says. Absent when there is
	// no estimate and the run did not succeed.
	Percent *float64 `json:"percent,omitempty"`
	// RowsPerSecond is the read rate: rows read over the time spent in the
	// read phase (to now while it goes on), one decimal; 0 before reading.
	RowsPerSecond float64 `json:"rows_per_second"`
	// SecondsLeft estimates the rest of the read phase: the rows the
	// estimate still expects at the current rate, one decimal. Absent
	// outside the read phase, without an estimate, or once the rows read
	// pass it.
	SecondsLeft *float64 `json:"seconds_left,omitempty"`
}

// progressCap is the most Percent says for a run that has not committed.
const progressCap = 99

// beginPhaseLocked ends the current phase at now and starts phase name.
// The caller holds ar.mu.
func (ar *activeRun) beginPhaseLocked(name string, now time.Time) {
	endPhases(ar.rec.Phases, now)
	ar.rec.Phases = append(ar.rec.Phases, RunPhase{Name: name, Start: now})
}

// endPhases sets the end of the last phase, if it has none, to now.
func endPhases(ps []RunPhase, now time.Time) {
	if n := len(ps); n > 0 && ps[n-1].End == nil {
		ps[n-1].End = &now
	}
}

// withProgress returns rec with Progress computed at now. rec's Phases
// slice is not modified.
func withProgress(rec RunRecord, now time.Time) RunRecord {
	p := &RunProgress{}
	running := rec.Status == RunRunning
	var read *RunPhase
	for i := range rec.Phases {
		if rec.Phases[i].Name == PhaseRead {
			read = &rec.Phases[i]
		}
	}
	if running && len(rec.Phases) > 0 {
		p.Phase = rec.Phases[len(rec.Phases)-1].Name
	}
	// The read phase's span, or, for a record without phases, the run's.
	from, to := rec.Start, now
	if read != nil {
		from = read.Start
		if read.End != nil {
			to = *read.End
		}
	} else if rec.End != nil {
		to = *rec.End
	}
	if secs := to.Sub(from).Seconds(); secs > 0 && (read != nil || len(rec.Phases) == 0) {
		p.RowsPerSecond = round1(float64(rec.RowsRead) / secs)
	}
	switch {
	case rec.Status == RunSucceeded:
		p.Percent = ptr(100.0)
	case rec.RowsEstimated > 0:
		p.Percent = ptr(round1(math.Min(100*float64(rec.RowsRead)/float64(rec.RowsEstimated), progressCap)))
	}
	if running && p.Phase == PhaseRead && rec.RowsEstimated > rec.RowsRead && p.RowsPerSecond > 0 {
		p.SecondsLeft = ptr(round1(float64(rec.RowsEstimated-rec.RowsRead) / p.RowsPerSecond))
	}
	rec.Progress = p
	return rec
}

func round1(f float64) float64 { return math.Round(f*10) / 10 }

func ptr[T any](v T) *T { return &v }
