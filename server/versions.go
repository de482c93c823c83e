package server

import (
	"context"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/snapstore/snapstore/snapshot"
)

// listVersions answers GET /v1/datasets/{dataset}/versions: the kept
// versions.
func (s *Server) listVersions(c echo.Context) error {
	ds, err := pathParam(c, "dataset")
	if err != nil {
		return err
	}
	vs, err := s.db.Versions(c.Request().Context(), ds)
	if err != nil {
		return err
	}
	return answerList(c, "versions", vs)
}

// getVersion answers GET /v1/datasets/{dataset}/versions/{version}.
func (s *Server) getVersion(c echo.Context) error {
	ds, err := pathParam(c, "dataset")
	if err != nil {
		return err
	}
	v, err := parseVersion("version", c.Param("version"))
	if err != nil {
		return err
	}
	info, err := s.db.VersionInfo(c.Request().Context(), ds, v)
	if err != nil {
		return err
	}
	setVersionHeader(c, info.Version)
	return c.JSON(http.StatusOK, info)
}

// rollback answers POST /v1/datasets/{dataset}/rollback: commits a new
// version with a kept version's content (snapshot.D11) and answers it.
func (s *Server) rollback(c echo.Context) error {
	ds, err := pathParam(c, "dataset")
	if err != nil {
		return err
	}
	var ref versionRef
	if err := decodeBody(c, &ref, true); err != nil {
		return err
	}
	if ref.Version < 1 {
		return badField("body.version", "want the positive version to roll back to")
	}
	info, err := s.db.Rollback(c.Request().Context(), ds, ref.Version)
	if err != nil {
		return err
	}
	s.log.Info("dataset rolled back", "dataset", ds, "version", info.Version, "restored_from", info.RestoredFrom, "token", c.Get("token"))
	return c.JSON(http.StatusOK, info)
}

// currentVersion returns the current version of ds, for a request that
// defaults to it; snapshot.ErrNoVersion, wrapped with what the request does
// ("tagging"), when nothing was committed.
func (s *Server) currentVersion(ctx context.Context, ds, what string) (int64, error) {
	d, err := s.db.Dataset(ctx, ds)
	if err != nil {
		return 0, err
	}
	if d.Current == 0 {
		return 0, fmt.Errorf("server: %s %q: %w", what, ds, snapshot.ErrNoVersion)
	}
	return d.Current, nil
}

// versionRef is the body of tag and rollback requests.
type versionRef struct {
	Version int64 `json:"version"`
}
