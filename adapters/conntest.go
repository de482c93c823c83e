package adapters

import (
	"context"
	"errors"

	"github.com/snapstore/snapstore/internal/errtext"
)

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
		return TestResult{Cause: cause, Message: errtext.Text(err), Latency: s.now().Sub(start)}, nil
	}
	defer src.Close()
	t, ok := src.(Tester)
	if !ok {
		return TestResult{OK: true, Message: "connection type has no test", Latency: s.now().Sub(start)}, nil
	}
	res := t.Test(ctx)
	res.Message = errtext.Text(scrubError(errors.New(res.Message), secrets...))
	return res, nil
}
