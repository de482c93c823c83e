package server

import (
	"context"
	"net/http"
	"slices"

	"github.com/labstack/echo/v4"
	"github.com/snapstore/snapstore/adapters"
)

// startRun answers POST /v1/adapters/{name}/runs: starts a run (202 with
// its record and Location) or, with wait=true, waits for its end (200);
// force=true commits a run the guard refuses.
func (s *Server) startRun(c echo.Context) error {
	name, err := pathParam(c, "name")
	if err != nil {
		return err
	}
	wait, err := parseBoolQuery(c, "wait")
	if err != nil {
		return err
	}
	force, err := parseBoolQuery(c, "force")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	// The run outlives the request; StartRun must not tie it to ctx.
	run, err := s.svc.StartRun(ctx, name, adapters.RunOptions{Trigger: "api", Force: force})
	if err != nil {
		return err
	}
	if !wait {
		c.Response().Header().Set(echo.HeaderLocation, "/v1/runs/"+run.ID)
		return c.JSON(http.StatusAccepted, run)
	}
	run, err = s.svc.WaitRun(ctx, run.ID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, run)
}

// listRuns answers GET /v1/adapters/{name}/runs: the adapter's runs,
// newest first, at most limit (adapters' default without).
func (s *Server) listRuns(c echo.Context) error {
	name, err := pathParam(c, "name")
	if err != nil {
		return err
	}
	limit, err := parseLimit(c, maxRunsListed)
	if err != nil {
		return err
	}
	if _, err := s.svc.GetAdapter(c.Request().Context(), name); err != nil {
		return err
	}
	runs, err := s.svc.ListRuns(c.Request().Context(), name, limit)
	if err != nil {
		return err
	}
	return answerList(c, "runs", runs)
}

// listAllRuns answers GET /v1/runs?adapter=&status=&limit=: the newest
// runs of every adapter, or of one, those of one status if asked.
func (s *Server) listAllRuns(c echo.Context) error {
	limit, err := parseLimit(c, maxRunsListed)
	if err != nil {
		return err
	}
	runs, err := s.FindRuns(c.Request().Context(), grantOf(c), c.QueryParam("adapter"), c.QueryParam("status"), limit)
	if OutsideGrant(err) {
		c.Set(ctxOutsideGrant, true)
		setAuditTarget(c, "adapter", c.QueryParam("adapter"))
	}
	if err != nil {
		return err
	}
	return answerList(c, "runs", runs)
}

// FindRuns returns the newest runs of adapter ("" for every adapter) with
// the status ("" for any), at most limit (0: defaultRunsListed), of the
// datasets in the grant g. With a status or a limited grant it looks
// through the newest maxRunsListed runs. An adapter that does not exist,
// or whose dataset is outside g, is adapters.ErrAdapterNotFound naming the
// field adapter (outside g, also OutsideGrant, which the audit trail
// records as a refusal); a status that is none is a bad request.
func (s *Server) FindRuns(ctx context.Context, g Grant, adapter, status string, limit int) ([]adapters.RunRecord, error) {
	if adapter != "" {
		a, err := s.svc.GetAdapter(ctx, adapter)
		if err != nil {
			return nil, WithField(err, "adapter")
		}
		if !g.Allows(AdapterDataset(a)) {
			// Answered as missing, and a refusal for the audit trail.
			return nil, &outsideGrantError{WithField(adapterNotFound(adapter), "adapter")}
		}
	}
	if status != "" && !slices.Contains(RunStatuses, adapters.RunStatus(status)) {
		return nil, BadField("status", "want running, waiting, succeeded, failed, aborted or skipped, got %q", status)
	}
	if limit == 0 {
		limit = defaultRunsListed
	}
	look := limit
	if status != "" || !g.All() {
		look = maxRunsListed // filtered below: look further back
	}
	all, err := s.svc.ListRuns(ctx, adapter, look)
	if err != nil {
		return nil, err
	}
	var out []adapters.RunRecord
	for _, run := range all {
		if (status == "" || string(run.Status) == status) && g.Allows(run.Dataset) {
			out = append(out, run)
		}
		if len(out) == limit {
			break
		}
	}
	return out, nil
}

// RunStatuses are the statuses of a run, in the order the console's
// filter shows them.
var RunStatuses = []adapters.RunStatus{adapters.RunRunning, adapters.RunWaiting, adapters.RunSucceeded, adapters.RunFailed, adapters.RunAborted, adapters.RunSkipped}

// defaultRunsListed is the length of a list of runs without a limit.
const defaultRunsListed = 100

// getRun answers GET /v1/runs/{id}.
func (s *Server) getRun(c echo.Context) error {
	return answerByParam(c, "id", s.svc.GetRun)
}

// maxRunsListed is the largest limit of a list of runs.
const maxRunsListed = 1000
