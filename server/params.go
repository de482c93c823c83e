package server

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/labstack/echo/v4"
)

// pathParam returns the unescaped path parameter name. Echo matches on the
// raw path when the request has one (an escaped "/" in a segment), and then
// leaves parameters escaped.
func pathParam(c echo.Context, name string) (string, error) {
	v := c.Param(name)
	if c.Request().URL.RawPath == "" {
		return v, nil
	}
	u, err := url.PathUnescape(v)
	if err != nil {
		return "", badField(name, "bad URL escape: %v", err)
	}
	return u, nil
}

func parseVersion(field, v string) (int64, error) {
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil || id < 1 {
		return 0, badField(field, "want a positive integer version, got %q", v)
	}
	return id, nil
}

func parseBoolQuery(c echo.Context, name string) (bool, error) {
	v := c.QueryParam(name)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, badField(name, "want true or false, got %q", v)
	}
	return b, nil
}

// nameFromPath checks that a body's name, if given, matches the path.
func nameFromPath(c echo.Context, bodyName *string) error {
	name, err := pathParam(c, "name")
	if err != nil {
		return err
	}
	if *bodyName != "" && *bodyName != name {
		return badField("body.name", "%q differs from the name in the path, %q", *bodyName, name)
	}
	*bodyName = name
	return nil
}

func createdStatus(created bool) int {
	if created {
		return http.StatusCreated
	}
	return http.StatusOK
}
