package server

import (
	"net/url"
	"strconv"

	"github.com/labstack/echo/v4"
	"github.com/snapstore/snapstore/snapshot"
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
		return "", BadField(name, "bad URL escape: %v", err)
	}
	return u, nil
}

// ParseVersion reads a version number given as input field: canonical
// decimal digits, at least 1 (snapshot.ParseVersionNumber); anything else
// is 400 bad_request naming field.
func ParseVersion(field, v string) (int64, error) {
	id, err := snapshot.ParseVersionNumber(v)
	if err != nil {
		return 0, BadField(field, "want a version number, decimal digits from 1 without a sign or a leading zero, got %q", v)
	}
	return id, nil
}

// parseBoolQuery reads the boolean query parameter name (strconv.ParseBool
// forms); false when absent.
func parseBoolQuery(c echo.Context, name string) (bool, error) {
	v := c.QueryParam(name)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, BadField(name, "want true or false, got %q", v)
	}
	return b, nil
}

// parseLimit reads the limit query parameter: 0 when absent, else an
// integer from 1 to most.
func parseLimit(c echo.Context, most int) (int, error) {
	v := c.QueryParam("limit")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > most {
		return 0, BadField("limit", "want an integer from 1 to %d, got %q", most, v)
	}
	return n, nil
}
