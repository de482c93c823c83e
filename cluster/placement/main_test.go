package placement

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that Close leaves no goroutine of serf, memberlist or
// this package behind.
func TestMain(m *testing.M) {
	// A probe memberlist has in flight when it shuts down waits out its
	// ack timeout (memberlist does not cancel it) and then ends by
	// itself: not a goroutine Close leaves behind.
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/hashicorp/memberlist.(*Memberlist).probeNode"))
}
