package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Duration is a time.Duration written as duration text ("36h", "90s",
// "30d": ParseDuration); "" and "0" mean zero, and it is never negative. In JSON a number is
// refused, so that no one guesses the unit.
type Duration time.Duration

// String is the duration's text as Go writes it, "0s" for zero: what the
// API answers (MarshalJSON), which clients may parse. Text is what a
// person reads.
func (d Duration) String() string { return time.Duration(d).String() }

// Text is the duration as a definition would write it, which
// ParseDuration reads back: whole days as days ("90d", never "2160h"),
// else Go's text without its zero units at the end ("36h", "1h30m",
// "1m30s", "1.5s", not "36h0m0s"); "0s" for zero. The CLI and the console
// show durations of definitions (a retention TTL, a retry backoff) with
// it.
func (d Duration) Text() string {
	if d > 0 && time.Duration(d)%Day == 0 {
		return strconv.FormatInt(int64(time.Duration(d)/Day), 10) + "d"
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// MarshalJSON writes the duration text, "0s" for zero.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(d.String())
}

// UnmarshalJSON reads duration text. Its error is a
// *json.UnmarshalTypeError, which the decoder completes with the field's
// path.
func (d *Duration) UnmarshalJSON(b []byte) error {
	bad := &json.UnmarshalTypeError{Value: string(b), Type: reflect.TypeFor[Duration]()}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return bad
	}
	v, err := ParseDuration(s)
	if err != nil {
		return bad
	}
	*d = v
	return nil
}

// Day is the length of the "d" unit of ParseDuration: 24 hours, whatever
// the calendar (retention counts elapsed time, not dates).
const Day = 24 * time.Hour

// ParseDuration parses a duration of a definition (a retention TTL, a
// timeout): Go's syntax ("90s", "36h", "1h30m"), optionally after a whole
// number of days ("30d", "1d12h"), which is what people write for
// retention. "" and "0" are zero; negative durations and bare numbers
// other than 0 are refused, so that nobody guesses the unit.
func ParseDuration(s string) (Duration, error) {
	if s == "" || s == "0" {
		return 0, nil
	}
	bad := errors.New("want a duration such as 90s, 36h or 30d")
	var d time.Duration
	if days, rest, ok := strings.Cut(s, "d"); ok {
		n, err := strconv.ParseUint(days, 10, 64)
		switch {
		case errors.Is(err, strconv.ErrRange) || err == nil && n > uint64(math.MaxInt64/Day):
			return 0, errTooLong
		case err != nil:
			return 0, bad
		}
		d = time.Duration(n) * Day
		if s = rest; s == "" {
			return Duration(d), nil
		}
	}
	v, err := time.ParseDuration(s)
	switch {
	case err != nil && goDuration.MatchString(s):
		return 0, errTooLong // Go's syntax: only the size is refused
	case err != nil || v < 0 || strings.HasPrefix(s, "+"):
		return 0, bad
	case v > math.MaxInt64-d:
		return 0, errTooLong
	}
	return Duration(d + v), nil
}

// errTooLong refuses a duration past time.Duration's range.
var errTooLong = fmt.Errorf("want a duration of at most %dd (about 292 years)", math.MaxInt64/Day)

// goDuration is the syntax time.ParseDuration reads, unsigned: one or
// more numbers, each with its unit.
var goDuration = regexp.MustCompile(`^([0-9]*(\.[0-9]*)?(ns|us|µs|μs|ms|s|m|h))+$`)
