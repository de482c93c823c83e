package server

import (
	"testing"
	"time"
)

func TestFormatDuration(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0ms"},
		{400 * time.Microsecond, "0ms"},
		{42*time.Millisecond + 600*time.Microsecond, "43ms"},
		{999 * time.Millisecond, "999ms"},
		{999600 * time.Microsecond, "1.0s"},
		{time.Second, "1.0s"},
		{1440 * time.Millisecond, "1.4s"},
		{59 * time.Second, "59.0s"},
		{2*time.Minute + 31*time.Second + 400*time.Millisecond, "2m31s"},
	} {
		if got := formatDuration(c.d); got != c.want {
			t.Errorf("formatDuration(%v) = %q, want %q", c.d, got, c.want)
		}
	}
}
