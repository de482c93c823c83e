package adapters

import (
	"context"
	"fmt"
	"sync"

	"github.com/snapstore/snapstore/adapters/source"
)

// handle is a reference-counted open Source of one revision of a shared or
// pooled connection. A run holds it from start to end; replacing or
// dropping the connection retires it: idle pooled connections close at
// once, the Source closes when the last run releases it (N1;
// database/sql's Close alone would not wait for a long stream).
type handle struct {
	name     string
	revision int64
	// mu guards the fields below; held while opening (which does not dial).
	mu      sync.Mutex
	src     Source
	secrets []string
	refs    int
	retired bool
}

// lease is one hold on a connection revision (a run's, or a resource
// check's); release ends it, once.
type lease struct {
	src      Source
	conn     Connector // the revision's connection type
	typ      string
	revision int64
	sharing  Sharing
	maxOpen  int // a pooled connection's max_open, 0: no bound
	secrets  []string
	release  func()
}

// scrub hides the revision's resolved secrets in err (N4).
func (l *lease) scrub(err error) error { return scrubError(err, l.secrets...) }

// acquire takes a lease on the revision of connection name in force now:
// a run started after a replace gets the new revision, one after a drop
// ErrConnectionNotFound (N2). A shared or pooled connection's leases share
// the revision's handle, opened on first use; a single-use lease opens a
// Source of its own, closed at release.
func (s *Service) acquire(ctx context.Context, name string) (*lease, error) {
	s.mu.Lock()
	d, err := s.conns.get(name)
	if err != nil {
		s.mu.Unlock()
		return nil, err
	}
	if Sharing(d.spec.Sharing) == SharingSingleUse {
		s.mu.Unlock()
		src, secrets, err := s.openSource(ctx, d)
		if err != nil {
			return nil, err
		}
		return &lease{src: src, conn: d.conn, typ: d.spec.Type, revision: d.revision, sharing: SharingSingleUse, secrets: secrets, release: func() {
			if err := src.Close(); err != nil {
				s.log.Warn("closing single-use data connection", "connection", name, "err", scrubError(err, secrets...))
			}
		}}, nil
	}
	h := d.h
	if h == nil {
		h = &handle{name: d.spec.Name, revision: d.revision}
		d.h = h
	}
	h.mu.Lock()
	h.refs++
	s.mu.Unlock()
	defer h.mu.Unlock()
	if h.src == nil {
		src, secrets, err := s.openSource(ctx, d)
		if err != nil {
			h.refs--
			return nil, err
		}
		h.src, h.secrets = src, secrets
	}
	l := &lease{src: h.src, conn: d.conn, typ: d.spec.Type, revision: h.revision, sharing: Sharing(d.spec.Sharing), secrets: h.secrets, release: func() { s.releaseHandle(h) }}
	if d.pool.Pooled {
		l.maxOpen = d.pool.MaxOpen
	}
	return l, nil
}

// releaseHandle ends one lease on h, closing a retired h's Source with the
// last one (N1).
func (s *Service) releaseHandle(h *handle) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.refs--
	if h.refs == 0 && h.retired && h.src != nil {
		if err := h.src.Close(); err != nil {
			s.log.Warn("closing retired data connection", "connection", h.name, "revision", h.revision, "err", scrubError(err, h.secrets...))
		}
		h.src = nil
	}
}

// retireLocked retires d's shared handle (replace, drop, Close): a handle
// no lease holds closes now; otherwise its idle pooled connections close
// now and the rest when the last lease is released (N1). Caller holds
// s.mu.
func (s *Service) retireLocked(d *connDef) {
	h := d.h
	if h == nil {
		return
	}
	d.h = nil
	h.mu.Lock()
	defer h.mu.Unlock()
	h.retired = true
	if h.src == nil {
		return
	}
	if h.refs == 0 {
		if err := h.src.Close(); err != nil {
			s.log.Warn("closing data connection", "connection", h.name, "err", scrubError(err, h.secrets...))
		}
		h.src = nil
		return
	}
	if ic, ok := h.src.(IdleCloser); ok {
		ic.CloseIdle()
	}
	s.log.Info("data connection retired while runs hold it; it closes when they end", "connection", h.name, "revision", h.revision, "runs", h.refs)
}

// openSource resolves d's secret references, only now (N4), within the
// connection's connect_timeout and, for an API definition, its limits
// (secretref.go, F2, F3), holds an API definition's file options to
// theirs (fileoptions.go, O2-O4), and opens a Source; it also returns the
// resolved secrets, for scrubError.
func (s *Service) openSource(ctx context.Context, d *connDef) (Source, []string, error) {
	var limits *SecretRefLimits
	if d.origin != OriginConfig {
		limits = &s.secretRefs
	}
	log := s.log.With("connection", d.spec.Name)
	opts := d.opts
	if limits != nil {
		var err error
		if opts, err = s.fileLimits.resolveFileOptions(log, "options.", d.conn, opts); err != nil {
			return nil, nil, fmt.Errorf("opening data connection %q: %w", d.spec.Name, err)
		}
	}
	bound := d.opts.Duration("connect_timeout", source.DefaultConnectTimeout)
	if bound <= 0 {
		bound = source.DefaultConnectTimeout
	}
	rctx, cancel := context.WithTimeout(ctx, bound)
	resolved, err := resolveSecrets(rctx, log, "options.", opts, limits)
	cancel()
	if err != nil {
		return nil, nil, fmt.Errorf("opening data connection %q: %w", d.spec.Name, err)
	}
	var secrets []string
	for _, v := range resolved {
		if sec, ok := v.(Secret); ok {
			secrets = append(secrets, sec.Reveal())
		}
	}
	src, err := d.conn.Open(ctx, SourceConfig{Name: d.spec.Name, Options: resolved, Pool: d.pool, Logger: log})
	if err != nil {
		err = scrubError(err, secrets...)
		if limits != nil {
			err = s.fileLimits.fileOpenError(log, "options.", d.conn.Options(), d.opts, err)
		}
		return nil, nil, fmt.Errorf("opening data connection %q: %w", d.spec.Name, err)
	}
	return src, secrets, nil
}
