package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/snapstore/snapstore/adapters"
	"github.com/snapstore/snapstore/snapshot"
)

// decodeBody decodes a JSON request body strictly into v: unknown fields,
// trailing data, a wrong type or an empty required body are 400 problems
// naming the field.
func decodeBody(c echo.Context, v any, required bool) error {
	data, err := io.ReadAll(c.Request().Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return echo.NewHTTPError(http.StatusRequestEntityTooLarge, fmt.Sprintf("request body over %d bytes", mbe.Limit))
		}
		return badField("body", "reading the body: %v", err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		if required {
			return badField("body", "a JSON body is required")
		}
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			return badJSON("not valid JSON at offset %d: %v", se.Offset, err)
		case errors.As(err, &te):
			want := te.Type.String()
			if te.Type == reflect.TypeFor[duration]() {
				want = `a duration such as "24h" or "90s"`
			}
			return badField("body."+te.Field, "want %s, got %s", want, te.Value)
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			name, _ := strconv.Unquote(strings.TrimPrefix(err.Error(), "json: unknown field "))
			return badField("body."+name, "unknown field %q", name)
		case errors.Is(err, io.ErrUnexpectedEOF):
			return badJSON("truncated JSON")
		}
		return badField("body", "%v", err)
	}
	// More is false before a stray "}" or "]": ask for the next token.
	if _, err := dec.Token(); err != io.EOF {
		return badJSON("trailing data after the JSON value")
	}
	return nil
}

// duration is a time.Duration written in JSON as Go duration text ("36h",
// "90s"); "" and "0" mean zero.
type duration time.Duration

// MarshalJSON writes the duration text, "0s" for zero.
func (d duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads duration text; numbers are refused so that no one
// guesses the unit.
func (d *duration) UnmarshalJSON(b []byte) error {
	// An *json.UnmarshalTypeError gets the field path from the decoder.
	bad := &json.UnmarshalTypeError{Value: string(b), Type: reflect.TypeFor[duration]()}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return bad
	}
	if s == "" || s == "0" {
		*d = 0
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil || v < 0 {
		return bad
	}
	*d = duration(v)
	return nil
}

// retentionJSON is snapshot.Retention on the wire.
type retentionJSON struct {
	TTL         duration `json:"ttl"`
	MinVersions int      `json:"min_versions"`
}

func retentionToJSON(r snapshot.Retention) retentionJSON {
	return retentionJSON{TTL: duration(r.TTL), MinVersions: r.MinVersions}
}

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
}

func (a adapterJSON) spec() adapters.AdapterSpec {
	return adapters.AdapterSpec{
		Name:         a.Name,
		Connection:   a.Connection,
		Resource:     a.Resource,
		Dataset:      a.Dataset,
		KeyColumns:   a.KeyColumns,
		Schedule:     a.Schedule,
		Retention:    snapshot.Retention{TTL: time.Duration(a.Retention.TTL), MinVersions: a.Retention.MinVersions},
		Guard:        a.Guard,
		Retries:      a.Retries,
		RetryBackoff: time.Duration(a.RetryBackoff),
		RunOnStart:   a.RunOnStart,
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
}

func toAdapterOut(a adapters.Adapter) adapterOut {
	sp := a.AdapterSpec
	return adapterOut{
		adapterJSON: adapterJSON{
			Name:         sp.Name,
			Connection:   sp.Connection,
			Resource:     sp.Resource,
			Dataset:      sp.Dataset,
			KeyColumns:   sp.KeyColumns,
			Schedule:     sp.Schedule,
			Retention:    retentionToJSON(sp.Retention),
			Guard:        sp.Guard,
			Retries:      sp.Retries,
			RetryBackoff: duration(sp.RetryBackoff),
			RunOnStart:   sp.RunOnStart,
		},
		Source:    a.Source,
		Revision:  a.Revision,
		CreatedAt: a.CreatedAt,
		UpdatedAt: a.UpdatedAt,
		NextRun:   a.NextRun,
	}
}

// nameFromPath checks that a body's name, if given, matches the path.
func nameFromPath(c echo.Context, bodyName *string) error {
	name, err := pathParam(c, "name")
	if err != nil {
		return err
	}
	if *bodyName != "" && *bodyName != name {
		return badField("body.name", "%q differs from the name in the path, %q", *bodyName, name)
	}
	*bodyName = name
	return nil
}

func createdStatus(created bool) int {
	if created {
		return http.StatusCreated
	}
	return http.StatusOK
}

func parseBoolQuery(c echo.Context, name string) (bool, error) {
	v := c.QueryParam(name)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, badField(name, "want true or false, got %q", v)
	}
	return b, nil
}

// Connections.

func (s *Server) listConnections(c echo.Context) error {
	cs := s.svc.ListConnections()
	if cs == nil {
		cs = []adapters.Connection{}
	}
	return c.JSON(http.StatusOK, map[string]any{"connections": cs})
}

func (s *Server) createConnection(c echo.Context) error {
	var spec adapters.ConnectionSpec
	if err := decodeBody(c, &spec, true); err != nil {
		return err
	}
	if spec.Name == "" {
		return badField("body.name", "a connection needs a name")
	}
	conn, err := s.svc.CreateConnection(c.Request().Context(), spec)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, conn)
}

func (s *Server) getConnection(c echo.Context) error {
	name, err := pathParam(c, "name")
	if err != nil {
		return err
	}
	conn, err := s.svc.GetConnection(c.Request().Context(), name)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, conn)
}

func (s *Server) putConnection(c echo.Context) error {
	var spec adapters.ConnectionSpec
	if err := decodeBody(c, &spec, true); err != nil {
		return err
	}
	if err := nameFromPath(c, &spec.Name); err != nil {
		return err
	}
	conn, created, err := s.svc.PutConnection(c.Request().Context(), spec)
	if err != nil {
		return err
	}
	return c.JSON(createdStatus(created), conn)
}

func (s *Server) dropConnection(c echo.Context) error {
	name, err := pathParam(c, "name")
	if err != nil {
		return err
	}
	force, err := parseBoolQuery(c, "force")
	if err != nil {
		return err
	}
	if err := s.svc.DropConnection(c.Request().Context(), name, force); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) testConnection(c echo.Context) error {
	name, err := pathParam(c, "name")
	if err != nil {
		return err
	}
	res, err := s.svc.TestConnection(c.Request().Context(), name)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, res)
}

func (s *Server) listResources(c echo.Context) error {
	name, err := pathParam(c, "name")
	if err != nil {
		return err
	}
	rs, err := s.svc.Resources(c.Request().Context(), name)
	if err != nil {
		return err
	}
	if rs == nil {
		rs = []adapters.Resource{}
	}
	return c.JSON(http.StatusOK, map[string]any{"resources": rs})
}

// Adapters and runs.

func (s *Server) listAdapters(c echo.Context) error {
	as := s.svc.ListAdapters()
	out := make([]adapterOut, 0, len(as))
	for _, a := range as {
		out = append(out, toAdapterOut(a))
	}
	return c.JSON(http.StatusOK, map[string]any{"adapters": out})
}

func (s *Server) createAdapter(c echo.Context) error {
	var in adapterJSON
	if err := decodeBody(c, &in, true); err != nil {
		return err
	}
	if in.Name == "" {
		return badField("body.name", "an adapter needs a name")
	}
	a, err := s.svc.CreateAdapter(c.Request().Context(), in.spec())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, toAdapterOut(a))
}

func (s *Server) getAdapter(c echo.Context) error {
	name, err := pathParam(c, "name")
	if err != nil {
		return err
	}
	a, err := s.svc.GetAdapter(c.Request().Context(), name)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toAdapterOut(a))
}

func (s *Server) putAdapter(c echo.Context) error {
	var in adapterJSON
	if err := decodeBody(c, &in, true); err != nil {
		return err
	}
	if err := nameFromPath(c, &in.Name); err != nil {
		return err
	}
	a, created, err := s.svc.PutAdapter(c.Request().Context(), in.spec())
	if err != nil {
		return err
	}
	return c.JSON(createdStatus(created), toAdapterOut(a))
}

func (s *Server) deleteAdapter(c echo.Context) error {
	name, err := pathParam(c, "name")
	if err != nil {
		return err
	}
	if err := s.svc.DeleteAdapter(c.Request().Context(), name); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) startRun(c echo.Context) error {
	name, err := pathParam(c, "name")
	if err != nil {
		return err
	}
	wait, err := parseBoolQuery(c, "wait")
	if err != nil {
		return err
	}
	force, err := parseBoolQuery(c, "force")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	// The run outlives the request; StartRunWith must not tie it to ctx.
	run, err := s.svc.StartRunWith(ctx, name, adapters.RunOptions{Trigger: "api", Force: force})
	if err != nil {
		return err
	}
	if !wait {
		c.Response().Header().Set(echo.HeaderLocation, "/v1/runs/"+run.ID)
		return c.JSON(http.StatusAccepted, run)
	}
	run, err = s.svc.WaitRun(ctx, run.ID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, run)
}

func (s *Server) listRuns(c echo.Context) error {
	name, err := pathParam(c, "name")
	if err != nil {
		return err
	}
	limit := 0
	if v := c.QueryParam("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 || limit > 1000 {
			return badField("limit", "want an integer from 1 to 1000, got %q", v)
		}
	}
	if _, err := s.svc.GetAdapter(c.Request().Context(), name); err != nil {
		return err
	}
	runs, err := s.svc.ListRuns(c.Request().Context(), name, limit)
	if err != nil {
		return err
	}
	if runs == nil {
		runs = []adapters.RunRecord{}
	}
	return c.JSON(http.StatusOK, map[string]any{"runs": runs})
}

func (s *Server) getRun(c echo.Context) error {
	id, err := pathParam(c, "id")
	if err != nil {
		return err
	}
	run, err := s.svc.GetRun(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, run)
}

// Dataset administration.

func (s *Server) dropDataset(c echo.Context) error {
	ds, err := pathParam(c, "dataset")
	if err != nil {
		return err
	}
	if err := s.db.DropDataset(c.Request().Context(), ds); err != nil {
		return err
	}
	s.log.Info("dataset dropped", "dataset", ds, "token", c.Get("token"))
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) gc(c echo.Context) error {
	ds, err := pathParam(c, "dataset")
	if err != nil {
		return err
	}
	dry, err := parseBoolQuery(c, "dry_run")
	if err != nil {
		return err
	}
	rep, err := s.db.GC(c.Request().Context(), ds, dry)
	if err != nil {
		return err
	}
	if !dry {
		s.metrics.gcBytes.WithLabelValues(ds).Add(float64(rep.BytesReclaimed))
		s.metrics.gcCells.WithLabelValues(ds).Add(float64(rep.CellsDeleted))
		s.log.Info("garbage collected", "dataset", ds, "versions_expired", len(rep.VersionsExpired), "cells_deleted", rep.CellsDeleted,
			"bytes_reclaimed", rep.BytesReclaimed, "invalid_txns_pruned", rep.InvalidTxnsPruned, "token", c.Get("token"))
	}
	if rep.VersionsExpired == nil {
		rep.VersionsExpired = []int64{}
	}
	return c.JSON(http.StatusOK, rep)
}

// versionRef is the body of tag and rollback requests.
type versionRef struct {
	Version int64 `json:"version"`
}

func (s *Server) putTag(c echo.Context) error {
	ctx := c.Request().Context()
	ds, err := pathParam(c, "dataset")
	if err != nil {
		return err
	}
	tag, err := pathParam(c, "tag")
	if err != nil {
		return err
	}
	var ref versionRef
	if err := decodeBody(c, &ref, false); err != nil {
		return err
	}
	if ref.Version < 0 {
		return badField("body.version", "want a positive version")
	}
	if ref.Version == 0 {
		d, err := s.db.Dataset(ctx, ds)
		if err != nil {
			return err
		}
		if d.Current == 0 {
			return fmt.Errorf("server: tagging %q: %w", ds, snapshot.ErrNoVersion)
		}
		ref.Version = d.Current
	}
	if err := s.db.Tag(ctx, ds, tag, ref.Version); err != nil {
		return err
	}
	info, err := s.db.VersionInfo(ctx, ds, ref.Version)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, info)
}

func (s *Server) deleteTag(c echo.Context) error {
	ds, err := pathParam(c, "dataset")
	if err != nil {
		return err
	}
	tag, err := pathParam(c, "tag")
	if err != nil {
		return err
	}
	if err := s.db.Untag(c.Request().Context(), ds, tag); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) rollback(c echo.Context) error {
	ds, err := pathParam(c, "dataset")
	if err != nil {
		return err
	}
	var ref versionRef
	if err := decodeBody(c, &ref, true); err != nil {
		return err
	}
	if ref.Version < 1 {
		return badField("body.version", "want the positive version to roll back to")
	}
	info, err := s.db.Rollback(c.Request().Context(), ds, ref.Version)
	if err != nil {
		return err
	}
	s.log.Info("dataset rolled back", "dataset", ds, "version", info.Version, "token", c.Get("token"))
	return c.JSON(http.StatusOK, info)
}
