package api

import (
	"encoding/json"
	"errors"
	"strings"
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

func TestParseDuration(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
	}{
		{"", 0},
		{"0", 0},
		{"0s", 0},
		{"90s", 90 * time.Second},
		{"1h30m", 90 * time.Minute},
		{"1.5h", 90 * time.Minute},
		{"250ms", 250 * time.Millisecond},
		{"30d", 30 * 24 * time.Hour},
		{"0d", 0},
		{"1d12h", 36 * time.Hour},
		{"7d1h30m", 7*24*time.Hour + 90*time.Minute},
	} {
		got, err := ParseDuration(c.in)
		if err != nil || got != Duration(c.want) {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"3600", "-1s", "-1d", "+1d", "d", "1.5d", "1d-1h", "1d+1h", "1h1d", "1dd", "1d1d", "day", "30 d"} {
		if got, err := ParseDuration(in); err == nil || !strings.Contains(err.Error(), "such as") {
			t.Errorf("ParseDuration(%q) = %v, %v; want an error giving examples", in, got, err)
		}
	}
	// Durations past time.Duration's range say so.
	for _, in := range []string{"2562048h", "106752d", "99999999999999999999d", "106751d24h", "9999999999999999999ns"} {
		if got, err := ParseDuration(in); err == nil || !strings.Contains(err.Error(), "at most 106751d") {
			t.Errorf("ParseDuration(%q) = %v, %v; want an error giving the largest", in, got, err)
		}
	}
	if got, err := ParseDuration("106751d23h"); err != nil || got < Duration(106751*Day) {
		t.Errorf("ParseDuration of the largest days = %v, %v", got, err)
	}
}

// TestDuration_Text pins the text people read: days when whole, else Go's
// text without zero units at the end, and ParseDuration reads it back.
func TestDuration_Text(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{90 * Day, "90d"},
		{Day, "1d"},
		{36 * time.Hour, "36h"},
		{90 * time.Minute, "1h30m"},
		{90 * time.Second, "1m30s"},
		{time.Hour + 30*time.Second, "1h0m30s"},
		{1500 * time.Millisecond, "1.5s"},
		{250 * time.Millisecond, "250ms"},
		{Day + time.Second, "24h0m1s"},
		{0, "0s"},
	} {
		got := Duration(c.d).Text()
		if got != c.want {
			t.Errorf("%v: %q, want %q", c.d, got, c.want)
		}
		if back, err := ParseDuration(got); err != nil || time.Duration(back) != c.d {
			t.Errorf("%q reads back as %v %v, want %v", got, back, err, c.d)
		}
	}
}
