package api

import (
	"encoding/json"
	"reflect"
	"time"
)

// Duration is a time.Duration written as Go duration text ("36h", "90s");
// "" and "0" mean zero, and it is never negative. In JSON a number is
// refused, so that no one guesses the unit.
type Duration time.Duration

// String is the duration's text, "0s" for zero.
func (d Duration) String() string { return time.Duration(d).String() }

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
	v, ok := ParseDuration(s)
	if !ok {
		return bad
	}
	*d = v
	return nil
}

// ParseDuration parses duration text: Go's syntax (30s, 24h, 0), "" for
// zero, never negative.
func ParseDuration(s string) (Duration, bool) {
	if s == "" || s == "0" {
		return 0, true
	}
	v, err := time.ParseDuration(s)
	if err != nil || v < 0 {
		return 0, false
	}
	return Duration(v), true
}
