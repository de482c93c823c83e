package server

import (
	"mime"
	"strconv"
	"strings"
)

// Media types of row streams.
const (
	mediaNDJSON = "application/x-ndjson"
	mediaCSV    = "text/csv"
	mediaJSON   = "application/json"
)

// negotiate picks the scan's media type from Accept: the known type with
// the highest q (the first listed among equals), NDJSON, CSV or JSON; q=0
// means "not this one". JSON pages when none is asked for.
func negotiate(accept string) string {
	best, bestQ := mediaJSON, 0.0
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
		case mediaJSON:
			media = mediaJSON
		default:
			continue
		}
		if q > 0 && q > bestQ {
			best, bestQ = media, q
		}
	}
	return best
}
