package server

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// putTag answers PUT /v1/datasets/{dataset}/tags/{tag}: tags the version
// of the body, the current one without, and answers that version.
func (s *Server) putTag(c echo.Context) error {
	ctx := c.Request().Context()
	ds, tag, err := tagParams(c)
	if err != nil {
		return err
	}
	var ref versionRef
	if err := decodeBody(c, &ref, false); err != nil {
		return err
	}
	if ref.Version < 0 {
		return BadField("body.version", "want a positive version")
	}
	if ref.Version == 0 {
		if ref.Version, err = s.currentVersion(ctx, ds, "tagging"); err != nil {
			return err
		}
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

// deleteTag answers DELETE /v1/datasets/{dataset}/tags/{tag}.
func (s *Server) deleteTag(c echo.Context) error {
	ds, tag, err := tagParams(c)
	if err != nil {
		return err
	}
	return answerNoContent(c, s.db.Untag(c.Request().Context(), ds, tag))
}

// tagParams returns the unescaped dataset and tag of a tag's path.
func tagParams(c echo.Context) (ds, tag string, err error) {
	if ds, err = pathParam(c, "dataset"); err != nil {
		return "", "", err
	}
	tag, err = pathParam(c, "tag")
	return ds, tag, err
}
