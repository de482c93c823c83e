package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/labstack/echo/v4"
	"github.com/snapstore/snapstore/adapters"
	"github.com/snapstore/snapstore/api"
)

// adapterOut is adapters.Adapter on the wire, with its last run.
type adapterOut struct {
	adapters.Adapter
	// LastRun is the adapter's newest run, running or ended; absent before
	// the first.
	LastRun *adapters.RunRecord `json:"last_run,omitempty"`
}

func toAdapterOut(a adapters.Adapter) adapterOut { return adapterOut{Adapter: a} }

// listAdapters answers GET /v1/adapters: every adapter whose dataset is in
// the token's grant, from the config file and the API, with its next and
// its last run.
func (s *Server) listAdapters(c echo.Context) error {
	as := FilterGranted(grantOf(c), s.svc.ListAdapters(), AdapterDataset)
	last, err := s.svc.LastRuns(c.Request().Context())
	if err != nil {
		return err
	}
	out := make([]adapterOut, 0, len(as))
	for _, a := range as {
		o := toAdapterOut(a)
		if r, ok := last[a.Name]; ok {
			o.LastRun = &r
		}
		out = append(out, o)
	}
	return answerList(c, "adapters", out)
}

// createAdapter answers POST /v1/adapters: defines a new adapter (409
// adapter_exists when the name is taken).
func (s *Server) createAdapter(c echo.Context) error {
	var in api.Adapter
	err := decodeDefinition(c, &in, &in.Name, "an adapter", func() error { return s.ValidateAdapter(in) })
	if in.Name != "" {
		setAuditTarget(c, "adapter", in.Name)
	}
	if err != nil {
		return err
	}
	a, err := s.svc.CreateAdapter(c.Request().Context(), in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, toAdapterOut(a))
}

// getAdapter answers GET /v1/adapters/{name}.
func (s *Server) getAdapter(c echo.Context) error {
	return answerByParam(c, "name", func(ctx context.Context, name string) (adapterOut, error) {
		a, err := s.svc.GetAdapter(ctx, name)
		if err != nil {
			return adapterOut{}, err
		}
		o := toAdapterOut(a)
		runs, err := s.svc.ListRuns(ctx, name, 1)
		if err != nil {
			return adapterOut{}, err
		}
		if len(runs) > 0 {
			o.LastRun = &runs[0]
		}
		return o, nil
	})
}

// putAdapter answers PUT /v1/adapters/{name}: creates the adapter (201) or
// replaces it (200).
func (s *Server) putAdapter(c echo.Context) error {
	var in api.Adapter
	if err := decodeDefinition(c, &in, &in.Name, "an adapter", func() error { return s.ValidateAdapter(in) }); err != nil {
		return err
	}
	a, created, err := s.svc.PutAdapter(c.Request().Context(), in)
	if err != nil {
		return err
	}
	return c.JSON(createdStatus(created), toAdapterOut(a))
}

// deleteAdapter answers DELETE /v1/adapters/{name}.
func (s *Server) deleteAdapter(c echo.Context) error {
	name, err := pathParam(c, "name")
	if err != nil {
		return err
	}
	return answerNoContent(c, s.svc.DeleteAdapter(c.Request().Context(), name))
}

// ValidateAdapter checks an adapter definition as far as it can without
// the source: the adapters package's checks (adapters.ValidateAdapter)
// and CheckNotify, every problem at once, joined.
func (s *Server) ValidateAdapter(in api.Adapter) error {
	return errors.Join(s.CheckNotify(in), adapters.ValidateAdapter(in))
}

// CheckNotify refuses an adapter whose notify list names a webhook the
// configuration of this server does not have (notify.webhooks): its
// events would reach nobody. Each such name is one *adapters.OptionError,
// joined.
func (s *Server) CheckNotify(in api.Adapter) error {
	var known []string
	if s.notifier != nil {
		known = s.notifier.Webhooks()
	}
	var errs []error
	for i, name := range in.Notify {
		if !slices.Contains(known, name) {
			errs = append(errs, &adapters.OptionError{Key: fmt.Sprintf("notify[%d]", i), Msg: fmt.Sprintf("no webhook named %q in notify.webhooks of the configuration", name)})
		}
	}
	return errors.Join(errs...)
}
