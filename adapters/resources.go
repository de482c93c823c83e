package adapters

import (
	"context"
	"fmt"
)

// Resources lists the tables and views reachable through connection name
// (its ResourceLister), under a lease like a run's.
func (s *Service) Resources(ctx context.Context, name string) ([]Resource, error) {
	l, err := s.acquire(ctx, name)
	if err != nil {
		return nil, err
	}
	defer l.release()
	rl, ok := l.src.(ResourceLister)
	if !ok {
		return nil, fmt.Errorf("adapters: data connection %q cannot list resources", name)
	}
	res, err := rl.Resources(ctx)
	return res, l.scrub(err)
}
