package adapters

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"time"
)

// Day is the length of the "d" unit of ParseDuration: 24 hours, whatever
// the calendar (retention counts elapsed time, not dates).
const Day = 24 * time.Hour

// ParseDuration parses a duration of a definition (a retention TTL, a
// timeout): Go's syntax ("90s", "36h", "1h30m"), optionally after a whole
// number of days ("30d", "1d12h"), which is what people write for
// retention. "" and "0" are zero; negative durations and bare numbers
// other than 0 are refused, so that nobody guesses the unit.
func ParseDuration(s string) (time.Duration, error) {
	if s == "" || s == "0" {
		return 0, nil
	}
	bad := errors.New("want a duration such as 90s, 36h or 30d")
	var d time.Duration
	if days, rest, ok := strings.Cut(s, "d"); ok {
		n, err := strconv.ParseUint(days, 10, 16)
		if err != nil {
			return 0, bad
		}
		d = time.Duration(n) * Day
		if s = rest; s == "" {
			return d, nil
		}
	}
	v, err := time.ParseDuration(s)
	if err != nil || v < 0 || strings.HasPrefix(s, "+") || v > math.MaxInt64-d {
		return 0, bad
	}
	return d + v, nil
}
