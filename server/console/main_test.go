package console

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no test leaves a goroutine behind (Prometheus's
// tsdb/db_test.go does the same).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
