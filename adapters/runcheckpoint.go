package adapters

import (
	"context"
	"time"
)

// Checkpoints of a running run's record.
//
// A run's record is saved when the run starts (phase connect) and when it
// ends. A process killed in between leaves the first one, which the next
// start marks aborted (abandonRuns): without more, that record would say
// nothing of how far the run got. So the live record is also saved, best
// effort, when the run gets its transaction id (with the estimate of the
// rows, as the read phase starts) and when it enters the commit phase
// (with the rows read): a record left by a crash names the phase the run
// was in, its counts, and the transaction the restart invalidated. Never
// per row: a checkpoint costs one metadata write.

// checkpointTimeout bounds one checkpoint write: a store that does not
// answer delays the run this long at most, at a phase change.
const checkpointTimeout = 5 * time.Second

// checkpoint saves ar's live record, best effort: a failure is logged
// and the run goes on (its final record is saved, or queued, at its end).
func (s *Service) checkpoint(ctx context.Context, ar *activeRun) {
	rec := ar.snapshot()
	ctx, cancel := context.WithTimeout(ctx, checkpointTimeout)
	defer cancel()
	if err := s.saveRun(ctx, rec); err != nil {
		phase := ""
		if n := len(rec.Phases); n > 0 {
			phase = rec.Phases[n-1].Name
		}
		s.log.Warn("saving the record of a running run", "run", rec.ID, "adapter", rec.Adapter, "phase", phase, "err", err)
	}
}
