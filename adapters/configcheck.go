package adapters

import (
	"context"
	"sort"

	"github.com/snapstore/snapstore/api"
)

// configCheck is the one look a starting service takes at the resources of
// its config file's adapters. An adapter saved through the API is checked
// as it is saved (checkResource); one of the config file would otherwise
// say that its table is missing only when its first run fails, perhaps
// hours after start. The look runs in the background, since sources may be
// slow or down at start, and never refuses an adapter: the table may be
// created later, and a config file is the operator's to change.
type configCheck struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// startConfigCheck checks each active config adapter's resource once, in
// name order, one at a time, and logs each that cannot be read as an error
// naming the adapter, its connection and its resource (a source that does
// not answer is logged by checkResource as a warning). stopConfigCheck
// ends it.
func (s *Service) startConfigCheck() {
	ctx, cancel := context.WithCancel(s.baseCtx)
	c := &configCheck{cancel: cancel, done: make(chan struct{})}
	s.mu.Lock()
	var specs []api.Adapter
	for _, e := range s.adapters.entries() {
		if e.status == statusActive && e.def.origin == OriginConfig {
			specs = append(specs, e.def.spec)
		}
	}
	s.configCheck = c
	s.mu.Unlock()
	sort.Slice(specs, func(i, j int) bool { return specs[i].Name < specs[j].Name })
	go func() {
		defer close(c.done)
		for _, a := range specs {
			if ctx.Err() != nil {
				return
			}
			if _, err := s.checkResource(ctx, a); err != nil && ctx.Err() == nil {
				s.log.Error("config adapter's resource cannot be read; its runs fail until it can",
					"adapter", a.Name, "connection", a.Connection, "resource", a.Resource, "err", err)
			}
		}
	}()
}

// stopConfigCheck cancels the check and waits for it; without one it does
// nothing.
func (s *Service) stopConfigCheck() {
	s.mu.Lock()
	c := s.configCheck
	s.mu.Unlock()
	if c == nil {
		return
	}
	c.cancel()
	<-c.done
}
