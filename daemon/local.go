package daemon

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/snapstore/snapstore/config"
	"github.com/snapstore/snapstore/server"
)

// Local is a data directory opened in this process, without the
// scheduler (no run starts on its own), its HTTP API served over
// in-memory pipes: what a client command speaks to when it is given a data
// directory rather than a server, so that both give the same answers,
// checks and errors.
type Local struct {
	// Stack is the opened storage, datasets and adapters.
	Stack  *Stack
	hs     *http.Server
	tr     *http.Transport
	served chan struct{}
}

// OpenLocal opens cfg's storage and serves the API on a pipe listener,
// which no other process can reach. Errors are OpenStack's.
func OpenLocal(ctx context.Context, cfg *config.Config, log *slog.Logger, buildVersion string) (*Local, error) {
	stk, err := OpenStack(ctx, cfg, log, nil, false)
	if err != nil {
		return nil, err
	}
	srv, err := server.New(server.Options{DB: stk.DB, Adapters: stk.Adapters, Logger: log, BuildVersion: buildVersion, Cache: cacheOf(stk.Store)})
	if err != nil {
		return nil, errors.Join(err, stk.Close(context.Background()))
	}
	pl := newPipeListener()
	l := &Local{
		Stack:  stk,
		hs:     &http.Server{Handler: srv.Handler()},
		tr:     &http.Transport{DialContext: pl.dialContext, DisableCompression: true},
		served: make(chan struct{}),
	}
	go func() { defer close(l.served); _ = l.hs.Serve(pl) }()
	return l, nil
}

// Client is an HTTP client of the API; any host name reaches it.
func (l *Local) Client() *http.Client { return &http.Client{Transport: l.tr} }

// Close drains the API, then stops the adapters (aborting a run still
// going) and closes datasets and store.
func (l *Local) Close() error {
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l.tr.CloseIdleConnections()
	err := l.hs.Shutdown(sctx)
	<-l.served
	return errors.Join(err, l.Stack.Close(sctx))
}
