package snapshot

import "fmt"

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

// checkGuards returns ErrGuardRefused when the run's counts break a guard
// (D7), unless RunOptions.Force.
func (r *Run) checkGuards() error {
	if r.opts.Force {
		return nil
	}
	if r.stats.Rows == 0 && !r.guard.AllowEmpty {
		return fmt.Errorf("%w: the run has 0 rows (set allow_empty or force)", ErrGuardRefused)
	}
	maxShrink := r.guard.MaxShrink
	if maxShrink == 0 {
		maxShrink = defaultMaxShrink
	}
	if r.prev != nil && maxShrink < 1 && r.prev.Stats.Rows > 0 {
		frac := float64(r.stats.Deleted) / float64(r.prev.Stats.Rows)
		if frac > maxShrink {
			return fmt.Errorf("%w: the run deletes %d of %d rows (%.1f%% > max_shrink %.1f%%)", ErrGuardRefused,
				r.stats.Deleted, r.prev.Stats.Rows, 100*frac, 100*maxShrink)
		}
	}
	return nil
}
