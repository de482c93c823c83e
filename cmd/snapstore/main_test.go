package main

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that serve and the client commands leave no goroutine
// behind.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
