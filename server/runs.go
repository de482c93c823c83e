package server

import (
	"net/http"

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

// getRun answers GET /v1/runs/{id}.
func (s *Server) getRun(c echo.Context) error {
	return answerByParam(c, "id", s.svc.GetRun)
}

// maxRunsListed is the largest limit of a list of runs.
const maxRunsListed = 1000
