package daemon

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/snapstore/snapstore/snapshot"
)

// auditTrimInterval is how often the audit trail's retention is applied.
const auditTrimInterval = time.Hour

// collector is the work of one tick of the periodic GC: the server's
// collection of every dataset this node owns and the audit trail's
// retention (server.Server has both).
type collector interface {
	CollectGarbage(ctx context.Context) ([]snapshot.GCReport, error)
	TrimAudit(ctx context.Context)
}

// runGC is the periodic GC: c.CollectGarbage every interval, so that
// retention applies without an operator (snapshot.G1; interval <= 0
// collects nothing), and beside it the audit trail's retention, now and
// every auditTrimInterval whatever the interval. It returns when ctx is
// done, once both loops have.
//
// A read-only process (a reader of a store another process writes,
// snapshot.Options ReadOnly) collects and trims nothing and returns at
// once: GC and retention are the writer's job.
func runGC(ctx context.Context, c collector, readOnly bool, interval time.Duration, log *slog.Logger) {
	if readOnly {
		if interval > 0 {
			log.Info("periodic GC off: this process reads a store another process writes")
		}
		return
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		c.TrimAudit(ctx)
		every(ctx, auditTrimInterval, c.TrimAudit)
	})
	every(ctx, interval, func(ctx context.Context) { _, _ = c.CollectGarbage(ctx) })
	wg.Wait()
}

// every calls f every interval until ctx is done; interval <= 0 returns
// at once.
func every(ctx context.Context, interval time.Duration, f func(context.Context)) {
	if interval <= 0 {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f(ctx)
		}
	}
}
