package server

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/snapstore/snapstore/adapters"
	"github.com/snapstore/snapstore/api"
)

// listConnections answers GET /v1/connections: every data connection,
// secrets redacted; for a token limited to some datasets, those that their
// adapters use, naming only those adapters.
func (s *Server) listConnections(c echo.Context) error {
	return answerList(c, "connections", s.ConnectionsInGrant(grantOf(c), s.svc.ListConnections()))
}

// createConnection answers POST /v1/connections: defines a new connection
// (409 connection_exists when the name is taken).
func (s *Server) createConnection(c echo.Context) error {
	var in api.Connection
	err := decodeDefinition(c, &in, &in.Name, "a connection", func() error { return s.svc.ValidateConnection(in) })
	if in.Name != "" {
		setAuditTarget(c, "connection", in.Name)
	}
	if err != nil {
		return err
	}
	conn, err := s.svc.CreateConnection(c.Request().Context(), in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, conn)
}

// getConnection answers GET /v1/connections/{name}, secrets redacted; for
// a token limited to some datasets it names only their adapters.
func (s *Server) getConnection(c echo.Context) error {
	return answerByParam(c, "name", func(ctx context.Context, name string) (adapters.Connection, error) {
		conn, err := s.svc.GetConnection(ctx, name)
		return s.ConnectionInGrant(grantOf(c), conn), err
	})
}

// putConnection answers PUT /v1/connections/{name}: creates the connection
// (201) or replaces it (200).
func (s *Server) putConnection(c echo.Context) error {
	var in api.Connection
	if err := decodeDefinition(c, &in, &in.Name, "a connection", func() error { return s.svc.ValidateConnection(in) }); err != nil {
		return err
	}
	conn, created, err := s.svc.PutConnection(c.Request().Context(), in)
	if err != nil {
		return err
	}
	return c.JSON(createdStatus(created), conn)
}

// dropConnection answers DELETE /v1/connections/{name}; force=true drops a
// connection that adapters name (else 409 connection_in_use).
func (s *Server) dropConnection(c echo.Context) error {
	name, err := pathParam(c, "name")
	if err != nil {
		return err
	}
	force, err := parseBoolQuery(c, "force")
	if err != nil {
		return err
	}
	return answerNoContent(c, s.svc.DropConnection(c.Request().Context(), name, force))
}

// testConnection answers POST /v1/connections/{name}/test: reaches the
// source and reports how that went.
func (s *Server) testConnection(c echo.Context) error {
	return answerByParam(c, "name", s.svc.TestConnection)
}

// listResources answers GET /v1/connections/{name}/resources: the tables
// and views of the source.
func (s *Server) listResources(c echo.Context) error {
	name, err := pathParam(c, "name")
	if err != nil {
		return err
	}
	rs, err := s.svc.Resources(c.Request().Context(), name)
	if err != nil {
		return err
	}
	return answerList(c, "resources", rs)
}
