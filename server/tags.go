package server

import (
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/snapstore/snapstore/snapshot"
)

func (s *Server) putTag(c echo.Context) error {
	ctx := c.Request().Context()
	ds, err := pathParam(c, "dataset")
	if err != nil {
		return err
	}
	tag, err := pathParam(c, "tag")
	if err != nil {
		return err
	}
	var ref versionRef
	if err := decodeBody(c, &ref, false); err != nil {
		return err
	}
	if ref.Version < 0 {
		return badField("body.version", "want a positive version")
	}
	if ref.Version == 0 {
		d, err := s.db.Dataset(ctx, ds)
		if err != nil {
			return err
		}
		if d.Current == 0 {
			return fmt.Errorf("server: tagging %q: %w", ds, snapshot.ErrNoVersion)
		}
		ref.Version = d.Current
	}
	if err := s.db.Tag(ctx, ds, tag, ref.Version); err != nil {
		return err
	}
	info, err := s.db.VersionInfo(ctx, ds, ref.Version)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, info)
}

func (s *Server) deleteTag(c echo.Context) error {
	ds, err := pathParam(c, "dataset")
	if err != nil {
		return err
	}
	tag, err := pathParam(c, "tag")
	if err != nil {
		return err
	}
	if err := s.db.Untag(c.Request().Context(), ds, tag); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
