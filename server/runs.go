package server

import (
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"
	"github.com/snapstore/snapstore/adapters"
)

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
	// The run outlives the request; StartRunWith must not tie it to ctx.
	run, err := s.svc.StartRunWith(ctx, name, adapters.RunOptions{Trigger: "api", Force: force})
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

func (s *Server) listRuns(c echo.Context) error {
	name, err := pathParam(c, "name")
	if err != nil {
		return err
	}
	limit := 0
	if v := c.QueryParam("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 || limit > 1000 {
			return badField("limit", "want an integer from 1 to 1000, got %q", v)
		}
	}
	if _, err := s.svc.GetAdapter(c.Request().Context(), name); err != nil {
		return err
	}
	runs, err := s.svc.ListRuns(c.Request().Context(), name, limit)
	if err != nil {
		return err
	}
	if runs == nil {
		runs = []adapters.RunRecord{}
	}
	return c.JSON(http.StatusOK, map[string]any{"runs": runs})
}

func (s *Server) getRun(c echo.Context) error {
	id, err := pathParam(c, "id")
	if err != nil {
		return err
	}
	run, err := s.svc.GetRun(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, run)
}
