package server

import (
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/snapstore/snapstore/adapters"
)

func (s *Server) listConnections(c echo.Context) error {
	cs, err := s.svc.ListConnections(c.Request().Context())
	if err != nil {
		return err
	}
	return answerList(c, "connections", cs)
}

func (s *Server) createConnection(c echo.Context) error {
	var spec adapters.ConnectionSpec
	if err := decodeDefinition(c, &spec, &spec.Name, "a connection"); err != nil {
		return err
	}
	conn, err := s.svc.CreateConnection(c.Request().Context(), spec)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, conn)
}

func (s *Server) getConnection(c echo.Context) error {
	return answerByParam(c, "name", s.svc.GetConnection)
}

func (s *Server) putConnection(c echo.Context) error {
	var spec adapters.ConnectionSpec
	if err := decodeDefinition(c, &spec, &spec.Name, "a connection"); err != nil {
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
	return answerNoContent(c, s.svc.DropConnection(c.Request().Context(), name, force))
}

func (s *Server) testConnection(c echo.Context) error {
	return answerByParam(c, "name", s.svc.TestConnection)
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
	return answerList(c, "resources", rs)
}
