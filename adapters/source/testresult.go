package source

import (
	"errors"
	"time"
)

// TestResult is the outcome of testing a connection.
type TestResult struct {
	OK            bool   `json:"ok"`
	ServerVersion string `json:"server_version,omitempty"`
	// Cause classifies a failure: "unreachable", "auth", "unknown_database",
	// "timeout", "config", "error".
	Cause   string        `json:"cause,omitempty"`
	Message string        `json:"message,omitempty"`
	Latency time.Duration `json:"latency_ns"`
}

// FailedTest is the TestResult of a test whose connect failed with err: a
// *SourceError gives its cause.
func FailedTest(err error, latency time.Duration) TestResult {
	res := TestResult{Cause: "error", Message: err.Error(), Latency: latency}
	var se *SourceError
	if errors.As(err, &se) {
		res.Cause = se.Cause
	}
	return res
}
