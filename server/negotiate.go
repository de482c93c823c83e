package server

import (
	"errors"
	"fmt"
	"mime"
	"slices"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"
)

// Media types of row streams.
const (
	mediaNDJSON = "application/x-ndjson"
	mediaCSV    = "text/csv"
	mediaJSON   = "application/json"
	// mediaArrowStream is an Apache Arrow IPC stream.
	mediaArrowStream = "application/vnd.apache.arrow.stream"
	// mediaParquet is an Apache Parquet file.
	mediaParquet = "application/vnd.apache.parquet"
)

// formats maps the values of the format parameter to media types.
var formats = map[string]string{
	"json":    mediaJSON,
	"ndjson":  mediaNDJSON,
	"csv":     mediaCSV,
	"arrow":   mediaArrowStream,
	"parquet": mediaParquet,
}

// answerFormat picks the media type of a read: the format parameter when
// given (400 bad_format for an unknown one), else Accept (negotiate,
// dflt when it names none of offered). A format the route does not offer
// is refused, 406 format_not_offered, before anything is read.
func answerFormat(c echo.Context, dflt string, offered ...string) (string, error) {
	if v := c.QueryParam("format"); v != "" {
		media, ok := formats[v]
		if !ok {
			return "", WithField(&refusal{kind: errBadFormat, msg: fmt.Sprintf("format: want one of json, ndjson, csv, arrow, parquet, got %q", v)}, "format")
		}
		if !slices.Contains(offered, media) {
			return "", WithField(&refusal{kind: errFormatNotOffered, msg: fmt.Sprintf("format: %s is not offered here; this route answers %s", v, formatNames(offered))}, "format")
		}
		return media, nil
	}
	media := negotiate(c.Request().Header.Get(echo.HeaderAccept), offered...)
	if media == "" {
		media = dflt
	}
	return media, nil
}

// formatNames lists the format parameter's names of media.
func formatNames(media []string) string {
	var names []string
	for _, m := range media {
		for name, fm := range formats {
			if fm == m {
				names = append(names, name)
			}
		}
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// Refusals of a read's format.
var (
	errBadFormat        = errors.New("server: bad format")
	errFormatNotOffered = errors.New("server: format not offered")
)

// negotiate picks a read's media type from Accept: the type of offered
// with the highest q (the first listed among equals); q=0 means "not this
// one". "" when Accept names none of offered.
func negotiate(accept string, offered ...string) string {
	best, bestQ := "", 0.0
	for _, part := range strings.Split(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		q := 1.0
		if v, ok := params["q"]; ok {
			if q, err = strconv.ParseFloat(v, 64); err != nil {
				continue
			}
		}
		var media string
		switch mt {
		case mediaNDJSON, "application/jsonl", "application/x-jsonlines":
			media = mediaNDJSON
		case mediaCSV:
			media = mediaCSV
		case mediaJSON, mediaArrowStream, mediaParquet:
			media = mt
		default:
			continue
		}
		if !slices.Contains(offered, media) {
			continue
		}
		if q > 0 && q > bestQ {
			best, bestQ = media, q
		}
	}
	return best
}
