package console

import (
	"fmt"
	"net/http"
	"time"

	"github.com/snapstore/snapstore/adapters"
	"github.com/snapstore/snapstore/server"
)

// The run pages: the history with a status filter, and one run with its
// phases, its error in full and a live progress bar.

// runsListed is the most runs the history shows.
const runsListed = 200

// runsView is the run history.
type runsView struct {
	Runs     []adapters.RunRecord
	Status   string
	Adapter  string
	Statuses []adapters.RunStatus
	Adapters []string
}

// runs answers GET /ui/runs?status=&adapter=: the newest runs of every
// adapter (or of one), those of one status if asked.
func (c *console) runs(w http.ResponseWriter, r *http.Request, v viewer) error {
	q := r.URL.Query()
	view := runsView{Status: q.Get("status"), Adapter: q.Get("adapter"), Statuses: server.RunStatuses}
	for _, a := range server.FilterGranted(v.Grant, c.s.svc.ListAdapters(), server.AdapterDataset) {
		view.Adapters = append(view.Adapters, a.Name)
	}
	var err error
	if view.Runs, err = c.s.FindRuns(r.Context(), v.Grant, view.Adapter, view.Status, runsListed); err != nil {
		return err
	}
	return c.render(w, r, http.StatusOK, "runs", v, view)
}

// runView is one run.
type runView struct {
	adapters.RunRecord
	// Duration is the run's time so far, or in all once it ended.
	Duration time.Duration
	// Phases pairs each phase with its duration.
	Phases []phaseItem
}

// phaseItem is one phase of the run page.
type phaseItem struct {
	adapters.RunPhase
	Duration time.Duration
}

// runViewOf adds the durations a page shows to rec, at now.
func runViewOf(rec adapters.RunRecord, now time.Time) runView {
	v := runView{RunRecord: rec}
	end := now
	if rec.End != nil {
		end = *rec.End
	}
	v.Duration = end.Sub(rec.Start)
	for _, p := range rec.Phases {
		pe := end
		if p.End != nil {
			pe = *p.End
		}
		v.Phases = append(v.Phases, phaseItem{RunPhase: p, Duration: pe.Sub(p.Start)})
	}
	return v
}

// readText says how a run read its source, after "read", for each mode
// of RunRecord.Mode (adapters.ModeFull and the others); "" when the
// record says none. A mode this build does not know is named as it is.
func readText(rec adapters.RunRecord) string {
	switch rec.Mode {
	case "":
		return ""
	case adapters.ModeFull:
		if full, all := rec.TablesInFull(); all > 0 && full < all {
			return fmt.Sprintf("%s of %s tables in full; each table's read below", formatCount(full), formatCount(all))
		}
		return inFull(rec.ModeReason)
	case adapters.ModeChunks:
		return fmt.Sprintf("the changed key ranges: %s of %s", formatCount(rec.Chunks-rec.ChunksSkipped), formatCount(rec.Chunks))
	case adapters.ModeVerify:
		if len(rec.Tables) > 0 {
			// A run of several tables is verify when no table changed,
			// however each was read (its own mode, in the tables' lines).
			return "as each table below says; no table changed"
		}
		return "no rows: every key range's checksum matched"
	case adapters.ModeDiff:
		return "the source's changes since the version the current one copied (diff)"
	}
	return "by mode " + rec.Mode
}

// tableReadText is readText for one table t of run rec, of several
// tables; "" for a table the run did not read, unless it dropped it (or,
// a run that did not succeed, would have).
func tableReadText(rec adapters.RunRecord, t adapters.RunTable) string {
	switch {
	case t.Dropped && rec.Status == adapters.RunSucceeded:
		return "dropped: gone from the source or the selection, its rows deleted"
	case t.Dropped:
		return "would have been dropped: gone from the source or the selection; nothing was committed"
	}
	switch t.Mode {
	case "":
		return ""
	case adapters.ModeFull:
		return inFull(t.ModeReason)
	case adapters.ModeChunks:
		return fmt.Sprintf("%s of %s key ranges", formatCount(t.Chunks-t.ChunksSkipped), formatCount(t.Chunks))
	case adapters.ModeVerify:
		return "no rows: every key range's checksum matched"
	case adapters.ModeDiff:
		return "the source's changes (diff)"
	}
	return "by mode " + t.Mode
}

// inFull says a table was read in full, and why when its source has
// checksums (RunRecord.ModeReason).
func inFull(why string) string {
	if why == "" {
		return "in full"
	}
	return "in full (" + why + ")"
}

// run answers GET /ui/runs/{id}.
func (c *console) run(w http.ResponseWriter, r *http.Request, v viewer) error {
	rec, err := c.s.svc.GetRun(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	return c.render(w, r, http.StatusOK, "run", v, runViewOf(rec, c.s.now()))
}

// runLive answers GET /ui/runs/{id}/live: the part of the run page that
// changes while it runs (status, progress bar, stats, phases, error). htmx
// polls it while the run goes on; the fragment of an ended run no longer
// asks to be polled.
func (c *console) runLive(w http.ResponseWriter, r *http.Request, v viewer) error {
	rec, err := c.s.svc.GetRun(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	return c.fragment(w, http.StatusOK, "run", "live", v, runViewOf(rec, c.s.now()))
}
