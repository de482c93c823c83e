package api

import (
	"encoding/json"
	"errors"
	"testing"
	"time"
)

func TestDuration_JSON(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Duration
	}{
		{`"36h"`, Duration(36 * time.Hour)},
		{`"90s"`, Duration(90 * time.Second)},
		{`""`, 0},
		{`"0"`, 0},
	} {
		var d Duration
		if err := json.Unmarshal([]byte(tc.in), &d); err != nil || d != tc.want {
			t.Errorf("%s: %v %v, want %v", tc.in, d, err, tc.want)
		}
	}
	for _, in := range []string{`3600`, `"-1s"`, `"a day"`, `true`} {
		var d Duration
		var te *json.UnmarshalTypeError
		if err := json.Unmarshal([]byte(in), &d); !errors.As(err, &te) {
			t.Errorf("%s: %v, want a type error", in, err)
		}
	}
	b, err := json.Marshal(Retention{TTL: Duration(24 * time.Hour)})
	if err != nil || string(b) != `{"ttl":"24h0m0s","min_versions":0}` {
		t.Errorf("%s %v", b, err)
	}
}
