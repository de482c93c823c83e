package server

import (
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"
	"github.com/snapstore/snapstore/snapshot"
)

func (s *Server) listVersions(c echo.Context) error {
	ds, err := pathParam(c, "dataset")
	if err != nil {
		return err
	}
	vs, err := s.db.Versions(c.Request().Context(), ds)
	if err != nil {
		return err
	}
	if vs == nil {
		vs = []snapshot.VersionInfo{}
	}
	return c.JSON(http.StatusOK, map[string]any{"versions": vs})
}

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
	c.Response().Header().Set(versionHeader, strconv.FormatInt(info.Version, 10))
	return c.JSON(http.StatusOK, info)
}

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
	s.log.Info("dataset rolled back", "dataset", ds, "version", info.Version, "token", c.Get("token"))
	return c.JSON(http.StatusOK, info)
}

// versionRef is the body of tag and rollback requests.
type versionRef struct {
	Version int64 `json:"version"`
}
