package snapshot

import (
	"fmt"
	"strings"
)

// Guard is a commit guard configuration (D7).
type Guard struct {
	// AllowEmpty lets a run commit 0 rows.
	AllowEmpty bool `json:"allow_empty"`
	// MaxShrink is the largest fraction (0..1) of the current version's rows
	// a run may delete; default 0.5; 1 disables the check.
	MaxShrink float64 `json:"max_shrink"`
}

// defaultMaxShrink is Guard.MaxShrink's default.
const defaultMaxShrink = 0.5

// maxShrink returns the guard's MaxShrink, its default when unset.
func (g Guard) maxShrink() float64 {
	if g.MaxShrink == 0 {
		return defaultMaxShrink
	}
	return g.MaxShrink
}

// checkGuards returns ErrGuardRefused when the run's counts break a guard
// (D7), unless RunOptions.Force. The error names the guard; how to force
// the run is the caller's to say (the API's force=true, the CLI's --force).
func (r *Run) checkGuards() error {
	if r.opts.Force {
		return nil
	}
	if r.stats.Rows == 0 && !r.guard.AllowEmpty {
		return fmt.Errorf("%w: the run has 0 rows and allow_empty is not set", ErrGuardRefused)
	}
	maxShrink := r.guard.maxShrink()
	if r.prev != nil && maxShrink < 1 && r.prev.Stats.Rows > 0 {
		frac := float64(r.stats.Deleted) / float64(r.prev.Stats.Rows)
		if frac > maxShrink {
			return fmt.Errorf("%w: the run deletes %d of %d rows (%.1f%% > max_shrink %.1f%%)", ErrGuardRefused,
				r.stats.Deleted, r.prev.Stats.Rows, 100*frac, 100*maxShrink)
		}
	}
	return nil
}

// checkGuards checks D7 for each table of a run of several tables, then
// for the run as a whole. A table new to the dataset, or empty in the
// current version, may be empty without allow_empty: the empty guard
// keeps rows from vanishing at an emptied source, and such a table has
// none to lose (an empty table added at the source would otherwise
// refuse every run of the dataset). A run of 0 rows in every table is
// refused, as a run of one table of 0 rows is. MaxShrink also holds for
// the dataset as a whole, the rows of the tables the run drops
// (TablesRunOptions.DropMissing) counted as deleted: tables that vanish
// from the source at once, as when the snapshot user loses its privilege
// on a schema, would otherwise take every row with them unguarded.
func (tr *TablesRun) checkGuards() error {
	var rows, deleted int64
	for _, w := range tr.writers {
		r := w.r
		rows += r.stats.Rows
		deleted += r.stats.Deleted
		if r.stats.Rows == 0 && (r.prev == nil || r.prev.Stats.Rows == 0) {
			continue
		}
		if err := r.checkGuards(); err != nil {
			return fmt.Errorf("table %q: %w", w.name, err)
		}
	}
	if tr.opts.Force {
		return nil
	}
	if rows == 0 && len(tr.writers) > 0 && !tr.guard.AllowEmpty {
		return fmt.Errorf("%w: the run has 0 rows in every table and allow_empty is not set", ErrGuardRefused)
	}
	dropped := droppedRows(tr.dropped)
	maxShrink := tr.guard.maxShrink()
	if tr.prev == nil || dropped == 0 || maxShrink >= 1 || tr.prev.Stats.Rows == 0 {
		return nil
	}
	deleted += dropped
	if frac := float64(deleted) / float64(tr.prev.Stats.Rows); frac > maxShrink {
		names := make([]string, len(tr.dropped))
		for i, t := range tr.dropped {
			names[i] = t.Name
		}
		return fmt.Errorf("%w: the run deletes %d of the dataset's %d rows, %d of them in the tables it drops (%s) (%.1f%% > max_shrink %.1f%%)", ErrGuardRefused,
			deleted, tr.prev.Stats.Rows, dropped, strings.Join(names, ", "), 100*frac, 100*maxShrink)
	}
	return nil
}
