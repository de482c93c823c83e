package server

import (
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/snapstore/snapstore/adapters"
	"github.com/snapstore/snapstore/snapshot"
)

// adapterJSON is adapters.AdapterSpec on the wire, with durations as text.
type adapterJSON struct {
	Name         string         `json:"name,omitempty"`
	Connection   string         `json:"connection"`
	Resource     string         `json:"resource"`
	Dataset      string         `json:"dataset,omitempty"`
	KeyColumns   []string       `json:"key_columns,omitempty"`
	Schedule     string         `json:"schedule,omitempty"`
	Retention    retentionJSON  `json:"retention"`
	Guard        snapshot.Guard `json:"guard"`
	Retries      int            `json:"retries,omitempty"`
	RetryBackoff duration       `json:"retry_backoff,omitempty"`
	RunOnStart   bool           `json:"run_on_start"`
	EmbedJSON    bool           `json:"embed_json"`
	// CommitUnchanged: adapters.AdapterSpec.CommitUnchanged.
	CommitUnchanged bool `json:"commit_unchanged"`
	// AuditReads: adapters.AdapterSpec.AuditReads (audit.go).
	AuditReads bool   `json:"audit_reads"`
	Strategy   string `json:"strategy,omitempty"`
	// TransferCompression and PartitionKey apply to strategy
	// partition-by-key only (adapters.AdapterSpec).
	TransferCompression string   `json:"transfer_compression,omitempty"`
	PartitionKey        []string `json:"partition_key,omitempty"`
}

func (a adapterJSON) spec() adapters.AdapterSpec {
	return adapters.AdapterSpec{
		Name:            a.Name,
		Connection:      a.Connection,
		Resource:        a.Resource,
		Dataset:         a.Dataset,
		KeyColumns:      a.KeyColumns,
		Schedule:        a.Schedule,
		Retention:       snapshot.Retention{TTL: time.Duration(a.Retention.TTL), MinVersions: a.Retention.MinVersions},
		Guard:           a.Guard,
		Retries:         a.Retries,
		RetryBackoff:    time.Duration(a.RetryBackoff),
		RunOnStart:      a.RunOnStart,
		EmbedJSON:       a.EmbedJSON,
		CommitUnchanged: a.CommitUnchanged,
		AuditReads:      a.AuditReads,
		Strategy:        adapters.Strategy(a.Strategy),

		TransferCompression: a.TransferCompression,
		PartitionKey:        a.PartitionKey,
	}
}

// adapterOut is adapters.Adapter on the wire.
type adapterOut struct {
	adapterJSON
	Source    adapters.Origin `json:"source"`
	Revision  int64           `json:"revision"`
	CreatedAt time.Time       `json:"created_at"`
	UpdatedAt time.Time       `json:"updated_at"`
	NextRun   *time.Time      `json:"next_run,omitempty"`
	// Owner and SingleNode: where the adapter's runs happen in a cluster.
	Owner      string `json:"owner,omitempty"`
	SingleNode string `json:"single_node,omitempty"`
	// LastRun is the adapter's newest run, running or ended; absent before
	// the first.
	LastRun *adapters.RunRecord `json:"last_run,omitempty"`
}

func toAdapterOut(a adapters.Adapter) adapterOut {
	sp := a.AdapterSpec
	return adapterOut{
		adapterJSON: adapterJSON{
			Name:            sp.Name,
			Connection:      sp.Connection,
			Resource:        sp.Resource,
			Dataset:         sp.Dataset,
			KeyColumns:      sp.KeyColumns,
			Schedule:        sp.Schedule,
			Retention:       retentionToJSON(sp.Retention),
			Guard:           sp.Guard,
			Retries:         sp.Retries,
			RetryBackoff:    duration(sp.RetryBackoff),
			RunOnStart:      sp.RunOnStart,
			EmbedJSON:       sp.EmbedJSON,
			CommitUnchanged: sp.CommitUnchanged,
			AuditReads:      sp.AuditReads,
			Strategy:        string(sp.Strategy),

			TransferCompression: sp.TransferCompression,
			PartitionKey:        sp.PartitionKey,
		},
		Source:     a.Source,
		Revision:   a.Revision,
		CreatedAt:  a.CreatedAt,
		UpdatedAt:  a.UpdatedAt,
		NextRun:    a.NextRun,
		Owner:      a.Owner,
		SingleNode: a.SingleNode,
	}
}

// listAdapters answers GET /v1/adapters: every adapter, from the config
// file and the API, with its next and its last run.
func (s *Server) listAdapters(c echo.Context) error {
	as := s.svc.ListAdapters()
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
	var in adapterJSON
	if err := decodeDefinition(c, &in, &in.Name, "an adapter"); err != nil {
		return err
	}
	setAuditTarget(c, "adapter", in.Name)
	a, err := s.svc.CreateAdapter(c.Request().Context(), in.spec())
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
	var in adapterJSON
	if err := decodeDefinition(c, &in, &in.Name, "an adapter"); err != nil {
		return err
	}
	a, created, err := s.svc.PutAdapter(c.Request().Context(), in.spec())
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
