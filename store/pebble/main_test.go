package pebble

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no test leaves a goroutine behind (Pebble's
// background work included), as Prometheus's tsdb tests do.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
