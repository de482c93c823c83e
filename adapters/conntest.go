package adapters

import (
	"context"
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

// TestConnection opens the connection's current revision as a fresh
// single-use Source (a test never disturbs a pool) and runs the
// connector's Tester: for mysql, connect, VERSION() and SELECT 1 under
// connect_timeout. A failed test is a TestResult with OK false and a Cause,
// not an error; the error is ErrConnectionNotFound.
func (s *Service) TestConnection(ctx context.Context, name string) (TestResult, error) {
	s.mu.Lock()
	d, err := s.conns.get(name)
	s.mu.Unlock()
	if err != nil {
		return TestResult{}, err
	}
	start := s.now()
	src, secrets, err := s.openSource(ctx, d)
	if err != nil {
		var oe *OptionError
		cause := "error"
		if errors.As(err, &oe) {
			cause = "config"
		}
		return TestResult{Cause: cause, Message: err.Error(), Latency: s.now().Sub(start)}, nil
	}
	defer src.Close()
	t, ok := src.(Tester)
	if !ok {
		return TestResult{OK: true, Message: "connection type has no test", Latency: s.now().Sub(start)}, nil
	}
	res := t.Test(ctx)
	res.Message = scrubError(errors.New(res.Message), secrets...).Error()
	return res, nil
}

// failedTest is the TestResult of a test whose connect failed with err: a
// *SourceError gives its cause.
func failedTest(err error, latency time.Duration) TestResult {
	res := TestResult{Cause: "error", Message: err.Error(), Latency: latency}
	var se *SourceError
	if errors.As(err, &se) {
		res.Cause = se.Cause
	}
	return res
}
