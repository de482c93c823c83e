package server

import (
	"encoding/json"
	"reflect"
	"time"

	"github.com/snapstore/snapstore/adapters"
	"github.com/snapstore/snapstore/snapshot"
)

// duration is a time.Duration written in JSON as Go duration text ("36h",
// "90s"), read as adapters.ParseDuration reads it (also "30d"); "" and "0"
// mean zero.
type duration time.Duration

// MarshalJSON writes the duration text, "0s" for zero.
func (d duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads duration text; numbers are refused so that no one
// guesses the unit.
func (d *duration) UnmarshalJSON(b []byte) error {
	// An *json.UnmarshalTypeError gets the field path from the decoder.
	bad := &json.UnmarshalTypeError{Value: string(b), Type: reflect.TypeFor[duration]()}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return bad
	}
	v, err := adapters.ParseDuration(s)
	if err != nil {
		return bad
	}
	*d = duration(v)
	return nil
}

// retentionJSON is snapshot.Retention on the wire.
type retentionJSON struct {
	TTL         duration `json:"ttl"`
	MinVersions int      `json:"min_versions"`
}

func retentionToJSON(r snapshot.Retention) retentionJSON {
	return retentionJSON{TTL: duration(r.TTL), MinVersions: r.MinVersions}
}
