package placement

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that Close leaves no goroutine of serf, memberlist or
// this package behind.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
